/**
 * A member's alarms (etcd's v3alarm store and the appliers it switches on): which alarms are raised, by
 * which member, and what they make the member refuse. The refusal check lives here and only here; the
 * services call `refuseUnderAlarm` where etcd's applier would refuse (KVService put / txn / deleteRange /
 * compact, LeaseService leaseGrant / leaseRevoke), so every front door meets it.
 *
 * What etcd does (3.4 etcdserver/apply.go and corrupt.go; 3.6 server/etcdserver/apply/):
 *  - NOSPACE caps the store: Put, a Txn with a Put among its top-level success or failure ops (the quota's
 *    cost, which looks no deeper), and LeaseGrant fail with ResourceExhausted "etcdserver: mvcc: database
 *    space exceeded"; reads, deletes, a Txn without puts, lease revokes, compactions and auth go on.
 *  - CORRUPT refuses every proposed KV and lease request — Put, DeleteRange, a writing Txn, Compact,
 *    LeaseGrant, LeaseRevoke — with DataLoss "etcdserver: corrupt cluster"; Range and read-only Txns are
 *    served without the applier and go on.
 *  - The refusal comes at apply time, outside the auth applier: the request was proposed (one Raft entry),
 *    it fails before any permission is checked, and it changes nothing.
 * Which refusals are in force follows the release (ServerCompat.alarmRefusalsFollowStore).
 *
 * Not modelled: 3.4 and 3.5 put the new applier over the bare backend applier when an alarm is raised or
 * the last one taken off at run time, leaving out the auth applier until the member restarts — observed on
 * 3.4.23: with NOSPACE raised, a user without any role deletes a key and adds a user. Here the permission
 * checks stay in force. The space quota raises NOSPACE by itself: quota.ts.
 */
import { EtcdError, GrpcCode, errorKind, type EtcdErrorKind, type EtcdVersion } from '../etcd/index.js';
import { decodeFields } from '../snapshot/index.js';
import { serverCompat } from './compat.js';
import { invalidArgument } from './errors.js';
import type { EtcdServer } from './etcd_server.js';
import type * as M from './messages.js';

/** etcdserverpb.AlarmType's numbers. */
export const ALARM_NONE = 0;
export const ALARM_NOSPACE = 1;
export const ALARM_CORRUPT = 2;

const TYPE_NAMES: readonly string[] = ['NONE', 'NOSPACE', 'CORRUPT'];

/** etcd's ErrNoSpace and ErrCorrupt as v3rpc maps them (rpctypes.ErrGRPCNoSpace, ErrGRPCCorrupt). */
export const ErrNoSpace = errorKind(GrpcCode.RESOURCE_EXHAUSTED, 'etcdserver: mvcc: database space exceeded');
export const ErrCorrupt = errorKind(GrpcCode.DATA_LOSS, 'etcdserver: corrupt cluster');

/** One raised alarm: the member it names and its type (a number; etcd stores unknown types as given). */
export interface RaisedAlarm {
  readonly memberId: bigint;
  readonly type: number;
}

/** The requests an alarm may refuse (the applier's methods etcd overrides). */
export type GuardedRequest = 'put' | 'txn' | 'deleteRange' | 'compact' | 'leaseGrant' | 'leaseRevoke';

/** An AlarmType given by name or number (an unknown number passes, as protobuf keeps open enums). */
export function alarmTypeNumber(t: M.AlarmType | number | string | undefined | null): number {
  if (t === undefined || t === null) return ALARM_NONE;
  if (typeof t === 'number') {
    if (!Number.isInteger(t) || t < -(2 ** 31) || t >= 2 ** 31) throw invalidArgument(`etcdsim: alarm type ${t} is not an int32`);
    return t;
  }
  const i = TYPE_NAMES.indexOf(t);
  if (i < 0) throw invalidArgument(`etcdsim: unknown alarm type ${JSON.stringify(t)}`);
  return i;
}

/** The enum's name, or its number for a value the enum does not name (Go's String() of an open enum). */
export function alarmTypeName(t: number): string {
  return TYPE_NAMES[t] ?? String(t);
}

/** An alarm in message form (AlarmMember); an unnamed type stays a number, as a decoder gives it. */
export function alarmMemberOut(a: RaisedAlarm): M.AlarmMember {
  return { memberID: String(a.memberId), alarm: (TYPE_NAMES[a.type] ?? a.type) as M.AlarmType };
}

const byAlarm = (a: RaisedAlarm, b: RaisedAlarm): number => a.type - b.type || (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0);

export class AlarmStore {
  private readonly raised = new Map<string, RaisedAlarm>();
  /** The refusals in force (etcd's applier chain: capped, corrupt, or both after a restart). */
  private capped = false;
  private corrupt = false;

  constructor(private readonly version: EtcdVersion) {}

  /** The raised alarms of `type`, every one for NONE; by type, then member ID (etcd lists in Go's map order). */
  list(type: number = ALARM_NONE): RaisedAlarm[] {
    const all = [...this.raised.values()];
    return (type === ALARM_NONE ? all : all.filter((a) => a.type === type)).sort(byAlarm);
  }

  get size(): number {
    return this.raised.size;
  }

  /**
   * Raises an alarm (v3alarm Activate): the alarm itself, or the one already raised for that member and type.
   * The first alarm of a type switches that type's refusals on.
   */
  activate(memberId: bigint, type: number): RaisedAlarm {
    const k = keyOf(memberId, type);
    const had = this.raised.get(k);
    if (had !== undefined) return had;
    const first = this.list(type).length === 0;
    const a = Object.freeze({ memberId, type });
    this.raised.set(k, a);
    if (serverCompat(this.version).alarmRefusalsFollowStore) this.recompute();
    else if (first && type === ALARM_NOSPACE) [this.capped, this.corrupt] = [true, false];
    else if (first && type === ALARM_CORRUPT) [this.capped, this.corrupt] = [false, true];
    return a;
  }

  /** Takes an alarm off (v3alarm Deactivate): the alarm, or undefined when it was not raised. */
  deactivate(memberId: bigint, type: number): RaisedAlarm | undefined {
    const k = keyOf(memberId, type);
    const a = this.raised.get(k);
    if (a === undefined) return undefined;
    this.raised.delete(k);
    if (serverCompat(this.version).alarmRefusalsFollowStore) this.recompute();
    else if ((type === ALARM_NOSPACE || type === ALARM_CORRUPT) && this.list(type).length === 0) [this.capped, this.corrupt] = [false, false];
    return a;
  }

  /**
   * The error etcd's applier answers `req` with under the refusals in force, if any (CORRUPT's wraps
   * NOSPACE's, so it answers first). `txnCost`: a Txn's quota cost (quota.ts costTxn), which the capped
   * applier refuses when positive.
   */
  refusal(req: GuardedRequest, txnCost = 0): EtcdErrorKind | undefined {
    if (this.corrupt) return ErrCorrupt;
    if (!this.capped) return undefined;
    if (req === 'put' || req === 'leaseGrant') return ErrNoSpace;
    if (req === 'txn' && txnCost > 0) return ErrNoSpace;
    return undefined;
  }

  /** The alarm bucket's keys (each a marshalled AlarmMember; the value is empty). */
  bucketKeys(): Uint8Array[] {
    return this.list().map(marshalAlarmMember);
  }

  /**
   * Replaces the alarms with those of an alarm bucket and puts their refusals in force, as etcd's
   * restoreAlarms does at start and when it installs a snapshot. A key that is no AlarmMember is skipped.
   */
  restore(keys: readonly Uint8Array[]): void {
    this.raised.clear();
    for (const k of keys) {
      const a = unmarshalAlarmMember(k);
      if (a !== undefined) this.raised.set(keyOf(a.memberId, a.type), a);
    }
    this.recompute();
  }

  private recompute(): void {
    this.capped = this.list(ALARM_NOSPACE).length > 0;
    this.corrupt = this.list(ALARM_CORRUPT).length > 0;
  }
}

/**
 * The one alarm check of the write paths: when an alarm refuses `req` on this member, the request still
 * was a Raft entry (etcd refuses it when applying), and its error is thrown before anything changes.
 */
export function refuseUnderAlarm(server: EtcdServer, req: GuardedRequest, txnCost?: number): void {
  const kind = server.services.maintenance.alarms.refusal(req, txnCost);
  if (kind === undefined) return;
  server.noteRaftEntry();
  throw new EtcdError(kind);
}

/**
 * Status.errors' line for a raised alarm: the AlarmMember's text form, fields at their default left out
 * (gogo's `memberID:<id> alarm:NOSPACE `, or protobuf-go's, see ServerCompat.alarmTextProtobufGo).
 */
export function alarmText(a: RaisedAlarm, version: EtcdVersion): string {
  const fields: string[] = [];
  if (a.memberId !== 0n) fields.push(`memberID:${a.memberId}`);
  if (a.type !== ALARM_NONE) fields.push(`alarm:${alarmTypeName(a.type)}`);
  return serverCompat(version).alarmTextProtobufGo ? fields.join(' ') : fields.map((f) => `${f} `).join('');
}

function keyOf(memberId: bigint, type: number): string {
  return `${type}/${memberId}`;
}

/** AlarmMember's wire form: memberID (1, uint64) and alarm (2, enum), each left out at 0. */
function marshalAlarmMember(a: RaisedAlarm): Uint8Array {
  const out: number[] = [];
  const varint = (v: bigint): void => {
    while (v >= 0x80n) {
      out.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    out.push(Number(v));
  };
  if (a.memberId !== 0n) {
    out.push(0x08);
    varint(a.memberId);
  }
  if (a.type !== 0) {
    out.push(0x10);
    varint(BigInt.asUintN(64, BigInt(a.type)));
  }
  return Uint8Array.from(out);
}

function unmarshalAlarmMember(b: Uint8Array): RaisedAlarm | undefined {
  let memberId = 0n;
  let type = 0;
  try {
    for (const f of decodeFields(b, 'AlarmMember')) {
      if (!('varint' in f)) continue;
      if (f.field === 1) memberId = f.varint;
      else if (f.field === 2) type = Number(BigInt.asIntN(32, f.varint));
    }
  } catch {
    return undefined;
  }
  return Object.freeze({ memberId, type });
}
