/**
 * A member's write requests as the Raft entries etcd writes to its WAL: etcd's InternalRaftRequest, whose
 * field number says which request it is (put 4, delete_range 5, txn 6, compaction 7, lease_grant 8,
 * lease_revoke 9, alarm 10, auth_enable 1000, ... auth_role_revoke_permission 1204) and whose header (100)
 * names the user the proposing member resolved from the token — so that applying the entry again, after a
 * restart, checks the same user's permissions whatever tokens exist then. A request the member made itself
 * (the expiry of a lease, a NOSPACE alarm raised by the quota) has no user, as in etcd.
 *
 * journaledServices() hands each request the member applied to a sink, encoded, once it succeeded: the
 * outermost one only (a Lock's Txn is recorded as that Txn; a call that wraps another records the outer
 * call), and those inside a call that failed afterwards on their own. A request whose ID the member chose
 * (LeaseGrant with ID 0) is recorded with that ID, as etcd's leader fills it in before proposing. Reads,
 * Authenticate (its tokens live in memory only, as etcd's simple tokens) and membership changes (their IDs
 * are random; a restarted member keeps its own membership) are not entries here.
 *
 * Requests are encoded with etcd's own messages (src/proto), bytes as they came off the wire, so an entry
 * etcd wrote decodes here too.
 */
import { etcdPackageDefinition } from '../proto/index.js';
import type { EtcdServer, EtcdServices } from './etcd_server.js';
import type { AppliedCallContext, CallContext } from './call_context.js';
import type { AuthInfo } from '../auth/index.js';
import type * as M from './messages.js';
import { asGrpc } from './errors.js';
import { header } from './convert.js';
import { decodeFields, ProtoFormatError } from '../snapshot/index.js';
import { LEN, VARINT, WireWriter, tag, varintSize } from '../mvcc/index.js';

/** The requests that are entries: which service method, its InternalRaftRequest field, its gRPC method. */
const CALLS = [
  ['kv', 'put', 4, 'KV', 'Put'],
  ['kv', 'deleteRange', 5, 'KV', 'DeleteRange'],
  ['kv', 'txn', 6, 'KV', 'Txn'],
  ['kv', 'compact', 7, 'KV', 'Compact'],
  ['lease', 'leaseGrant', 8, 'Lease', 'LeaseGrant'],
  ['lease', 'leaseRevoke', 9, 'Lease', 'LeaseRevoke'],
  ['maintenance', 'alarm', 10, 'Maintenance', 'Alarm'],
  ['auth', 'authEnable', 1000, 'Auth', 'AuthEnable'],
  ['auth', 'authDisable', 1011, 'Auth', 'AuthDisable'],
  ['auth', 'userAdd', 1100, 'Auth', 'UserAdd'],
  ['auth', 'userDelete', 1101, 'Auth', 'UserDelete'],
  ['auth', 'userChangePassword', 1103, 'Auth', 'UserChangePassword'],
  ['auth', 'userGrantRole', 1104, 'Auth', 'UserGrantRole'],
  ['auth', 'userRevokeRole', 1105, 'Auth', 'UserRevokeRole'],
  ['auth', 'roleAdd', 1200, 'Auth', 'RoleAdd'],
  ['auth', 'roleDelete', 1201, 'Auth', 'RoleDelete'],
  ['auth', 'roleGrantPermission', 1203, 'Auth', 'RoleGrantPermission'],
  ['auth', 'roleRevokePermission', 1204, 'Auth', 'RoleRevokePermission'],
] as const;

type Journaled = (typeof CALLS)[number];

/** Each request's InternalRaftRequest field, by its service method's name (the names are unique across services). */
export const RAFT_REQUEST_FIELDS = Object.freeze(Object.fromEntries(CALLS.map((c) => [c[1], c[2]]))) as { readonly [K in Journaled[1]]: Extract<Journaled, readonly [unknown, K, ...unknown[]]>[2] };
type ServiceName = Journaled[0];
const HEADER_FIELD = 100;
const ALARM_FIELD = 10;
const LEASE_REVOKE_FIELD = 9;

interface MethodCodec {
  requestSerialize(req: unknown): Buffer;
  requestDeserialize(b: Buffer): unknown;
}

let codecs: Map<number, MethodCodec> | undefined;
/** Each entry field's request codec (etcd's .proto, loaded once). */
function codecOf(field: number): MethodCodec | undefined {
  if (codecs === undefined) {
    const pd = etcdPackageDefinition() as unknown as Record<string, Record<string, MethodCodec>>;
    codecs = new Map(CALLS.map(([, , f, svc, method]) => [f, pd[`etcdserverpb.${svc}`]![method]!]));
  }
  return codecs.get(field);
}

/** The user a request runs as, as etcd's RequestHeader carries it; undefined: the member's own request. */
export interface RaftRequestHeader {
  readonly username: string;
  readonly authRevision: number;
  /**
   * The proposing member's request ID (RequestHeader.ID): a member of a cluster of processes answers its
   * caller when it applies the entry carrying its ID (etcd's wait registry). 0n or absent: none.
   */
  readonly id?: bigint | undefined;
}

/** etcd's InternalRaftRequest bytes: the header (when there is a caller), then the request in its field. */
export function encodeRaftRequest(field: number, request: unknown, header: RaftRequestHeader | undefined): Uint8Array {
  const codec = codecOf(field);
  if (codec === undefined) throw new RangeError(`raft request: no request has field ${field}`);
  const body = new Uint8Array(codec.requestSerialize(request));
  return internalRaftRequest(field, body, header);
}

/** InternalRaftRequest of an encoded request body: the header (field 100), then the body in `field`. */
function internalRaftRequest(field: number, body: Uint8Array, header: RaftRequestHeader | undefined): Uint8Array {
  let head: Uint8Array | undefined;
  if (header !== undefined) {
    const name = new TextEncoder().encode(header.username);
    const id = header.id ?? 0n;
    const size =
      (id > 0n ? varintSize(tag(1, VARINT)) + varintSize(id) : 0) +
      (name.length > 0 ? varintSize(tag(2, LEN)) + varintSize(name.length) + name.length : 0) +
      (header.authRevision > 0 ? varintSize(tag(3, VARINT)) + varintSize(header.authRevision) : 0);
    const w = new WireWriter(size);
    if (id > 0n) {
      w.varint(tag(1, VARINT));
      w.varint(id);
    }
    if (name.length > 0) w.bytes(2, name);
    if (header.authRevision > 0) {
      w.varint(tag(3, VARINT));
      w.varint(header.authRevision);
    }
    head = w.buf;
  }
  const size = (head === undefined ? 0 : varintSize(tag(HEADER_FIELD, LEN)) + varintSize(head.length) + head.length) + varintSize(tag(field, LEN)) + varintSize(body.length) + body.length;
  const w = new WireWriter(size);
  if (head !== undefined) w.bytes(HEADER_FIELD, head);
  w.bytes(field, body);
  return new Uint8Array(w.buf.buffer, w.buf.byteOffset, w.buf.length);
}

/** An entry's data that is no request this member can apply. */
export class RaftRequestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RaftRequestError';
  }
}

/** A decoded InternalRaftRequest: the request's field, the request as the services take it, the header. */
export interface RaftRequest {
  readonly field: number;
  readonly request: unknown;
  readonly header: RaftRequestHeader | undefined;
}

/**
 * InternalAuthenticateRequest (field 1013): the name the proposing member checked the password of, and the
 * simple token's random part it drew — every member assigns `<simpleToken>.<entry index>` when it applies
 * the entry, so the token is valid on every member, as in etcd (the password is not in the entry: the
 * proposer checked it, as etcd 3.4's Authenticate does).
 */
export const AUTHENTICATE_FIELD = 1013;
/**
 * ClusterMemberAttrSetRequest (field 1300, etcd 3.5's form of 3.4's publish request): a member's name and
 * client URLs, which it publishes through Raft once it has joined.
 */
export const MEMBER_ATTR_SET_FIELD = 1300;

/**
 * ClusterVersionSetRequest (field 1301, etcd 3.5's form of 3.4's v2 PUT of /0/version): the leader sets the
 * cluster version once every member has published itself. One entry; nothing of the store changes.
 */
export const CLUSTER_VERSION_SET_FIELD = 1301;

/**
 * LeaseCheckpointRequest (field 11): the leader's lessor records each lease's remaining TTL through Raft
 * (--experimental-enable-lease-checkpoint), so a later leader's lessor starts it from there. No header.
 */
export const LEASE_CHECKPOINT_FIELD = 11;

export interface LeaseCheckpointEntry {
  readonly checkpoints: ReadonlyArray<{ readonly id: bigint; readonly remaining: number }>;
}

/** The entry of a batch of lease checkpoints (see LEASE_CHECKPOINT_FIELD): each a LeaseCheckpoint {ID, remaining_TTL}. */
export function encodeLeaseCheckpoint(e: LeaseCheckpointEntry): Uint8Array {
  const items = e.checkpoints.map((c) => {
    const id = BigInt.asUintN(64, c.id);
    const ttl = BigInt(c.remaining);
    const w = new WireWriter(varintSize(tag(1, VARINT)) + varintSize(id) + varintSize(tag(2, VARINT)) + varintSize(ttl));
    w.varint(tag(1, VARINT));
    w.varint(id);
    w.varint(tag(2, VARINT));
    w.varint(ttl);
    return w.buf;
  });
  const w = new WireWriter(items.reduce((n, b) => n + varintSize(tag(1, LEN)) + varintSize(b.length) + b.length, 0));
  for (const b of items) w.bytes(1, b);
  return internalRaftRequest(LEASE_CHECKPOINT_FIELD, w.buf, undefined);
}

/** The entry setting the cluster version (see CLUSTER_VERSION_SET_FIELD). */
export function encodeClusterVersion(version: string): Uint8Array {
  const v = new TextEncoder().encode(version);
  const w = new WireWriter(varintSize(tag(1, LEN)) + varintSize(v.length) + v.length);
  w.bytes(1, v);
  return internalRaftRequest(CLUSTER_VERSION_SET_FIELD, w.buf, undefined);
}

export interface AuthenticateEntry {
  readonly name: string;
  readonly simpleToken: string;
}

export interface MemberAttributesEntry {
  readonly memberId: bigint;
  readonly name: string;
  readonly clientUrls: readonly string[];
}

/** The entry of an Authenticate the member checked (see AUTHENTICATE_FIELD). */
export function encodeAuthenticate(a: AuthenticateEntry, header: RaftRequestHeader): Uint8Array {
  const name = new TextEncoder().encode(a.name);
  const token = new TextEncoder().encode(a.simpleToken);
  const w = new WireWriter(varintSize(tag(1, LEN)) + varintSize(name.length) + name.length + varintSize(tag(3, LEN)) + varintSize(token.length) + token.length);
  w.bytes(1, name);
  w.bytes(3, token);
  return internalRaftRequest(AUTHENTICATE_FIELD, w.buf, header);
}

/** The entry publishing a member's attributes (see MEMBER_ATTR_SET_FIELD). */
export function encodeMemberAttributes(a: MemberAttributesEntry, header: RaftRequestHeader): Uint8Array {
  const enc = new TextEncoder();
  const name = enc.encode(a.name);
  const urls = a.clientUrls.map((u) => enc.encode(u));
  const attrSize = varintSize(tag(1, LEN)) + varintSize(name.length) + name.length + urls.reduce((n, u) => n + varintSize(tag(2, LEN)) + varintSize(u.length) + u.length, 0);
  const attrs = new WireWriter(attrSize);
  attrs.bytes(1, name);
  for (const u of urls) attrs.bytes(2, u);
  const w = new WireWriter(varintSize(tag(1, VARINT)) + varintSize(a.memberId) + varintSize(tag(2, LEN)) + varintSize(attrSize) + attrSize);
  w.varint(tag(1, VARINT));
  w.varint(a.memberId);
  w.bytes(2, attrs.buf);
  return internalRaftRequest(MEMBER_ATTR_SET_FIELD, w.buf, header);
}

export function decodeRaftRequest(data: Uint8Array): RaftRequest {
  try {
    return decodeFieldsOf(data);
  } catch (err) {
    if (err instanceof ProtoFormatError) throw new RaftRequestError(err.message);
    throw err;
  }
}

function decodeFieldsOf(data: Uint8Array): RaftRequest {
  const text = (b: Uint8Array): string => new TextDecoder().decode(b);
  let header: RaftRequestHeader | undefined;
  let found: RaftRequest | undefined;
  for (const f of decodeFields(data, 'InternalRaftRequest')) {
    if (!('bytes' in f)) continue;
    if (f.field === HEADER_FIELD) {
      let username = '';
      let authRevision = 0;
      let id = 0n;
      for (const h of decodeFields(f.bytes, 'RequestHeader')) {
        if (h.field === 1 && 'varint' in h) id = h.varint;
        if (h.field === 2 && 'bytes' in h) username = text(h.bytes);
        if (h.field === 3 && 'varint' in h) authRevision = Number(h.varint);
      }
      header = { username, authRevision, ...(id > 0n ? { id } : {}) };
      continue;
    }
    if (f.field === AUTHENTICATE_FIELD) {
      let name = '';
      let simpleToken = '';
      for (const a of decodeFields(f.bytes, 'InternalAuthenticateRequest')) {
        if (a.field === 1 && 'bytes' in a) name = text(a.bytes);
        if (a.field === 3 && 'bytes' in a) simpleToken = text(a.bytes);
      }
      found = { field: f.field, request: { name, simpleToken } satisfies AuthenticateEntry, header: undefined };
      continue;
    }
    if (f.field === CLUSTER_VERSION_SET_FIELD) {
      found = { field: f.field, request: {}, header: undefined };
      continue;
    }
    if (f.field === LEASE_CHECKPOINT_FIELD) {
      const checkpoints: { id: bigint; remaining: number }[] = [];
      for (const c of decodeFields(f.bytes, 'LeaseCheckpointRequest')) {
        if (c.field !== 1 || !('bytes' in c)) continue;
        let id = 0n;
        let remaining = 0;
        for (const x of decodeFields(c.bytes, 'LeaseCheckpoint')) {
          if (x.field === 1 && 'varint' in x) id = BigInt.asIntN(64, x.varint);
          if (x.field === 2 && 'varint' in x) remaining = Number(BigInt.asIntN(64, x.varint));
        }
        checkpoints.push({ id, remaining });
      }
      found = { field: f.field, request: { checkpoints } satisfies LeaseCheckpointEntry, header: undefined };
      continue;
    }
    if (f.field === MEMBER_ATTR_SET_FIELD) {
      let memberId = 0n;
      let name = '';
      const clientUrls: string[] = [];
      for (const a of decodeFields(f.bytes, 'ClusterMemberAttrSetRequest')) {
        if (a.field === 1 && 'varint' in a) memberId = a.varint;
        if (a.field === 2 && 'bytes' in a) {
          for (const at of decodeFields(a.bytes, 'Attributes')) {
            if (at.field === 1 && 'bytes' in at) name = text(at.bytes);
            if (at.field === 2 && 'bytes' in at) clientUrls.push(text(at.bytes));
          }
        }
      }
      found = { field: f.field, request: { memberId, name, clientUrls } satisfies MemberAttributesEntry, header: undefined };
      continue;
    }
    const codec = codecOf(f.field);
    if (codec !== undefined) found = { field: f.field, request: codec.requestDeserialize(Buffer.from(f.bytes.buffer, f.bytes.byteOffset, f.bytes.length)), header: undefined };
  }
  if (found === undefined) throw new RaftRequestError('InternalRaftRequest: no request this member applies');
  return { ...found, header };
}

/**
 * Applies a decoded entry to `server` as the member first applied it: through the same service call, as
 * the header's user (a request without one is the member's own: a lease expiry revokes the lease, a quota
 * alarm is raised). `index`: the entry's raft index (an Authenticate's token names it). Returns what the
 * call answered; throws what it throws. A member's published attributes and the cluster version are not the
 * services' (the caller applies them to its membership): they answer undefined here.
 */
export function applyRaftRequest(server: EtcdServer, r: RaftRequest, index = server.raftIndex + 1): unknown {
  if (r.header === undefined && r.field === LEASE_REVOKE_FIELD) {
    return server.lessor.revoke(BigInt((r.request as M.LeaseRevokeRequest).ID ?? 0));
  }
  if (r.header === undefined && r.field === ALARM_FIELD) {
    return server.services.maintenance.applyAlarm(r.request as M.AlarmRequest);
  }
  if (r.field === MEMBER_ATTR_SET_FIELD || r.field === CLUSTER_VERSION_SET_FIELD) return undefined;
  if (r.field === LEASE_CHECKPOINT_FIELD) {
    // etcd's apply of a checkpoint (lessor.Checkpoint); a negative remaining TTL no lessor wrote is skipped.
    for (const c of (r.request as LeaseCheckpointEntry).checkpoints) if (Number.isSafeInteger(c.remaining) && c.remaining >= 0) server.lessor.checkpoint(c.id, c.remaining);
    return undefined;
  }
  if (r.field === AUTHENTICATE_FIELD) {
    const a = r.request as AuthenticateEntry;
    const token = asGrpc(() => server.auth.assignToken(a.name, index, a.simpleToken));
    return { header: header(server.identity, server.mvcc.currentRevision), token } satisfies M.AuthenticateResponse;
  }
  const call = CALLS.find((c) => c[2] === r.field)!;
  const authInfo: AuthInfo | undefined = r.header === undefined || r.header.username === '' ? undefined : { username: r.header.username, ...(r.header.authRevision > 0 ? { revision: r.header.authRevision } : {}) };
  const ctx: AppliedCallContext = { appliedAuthInfo: authInfo };
  const svc = server.services[call[0]] as unknown as Record<string, (req: unknown, ctx: CallContext) => unknown>;
  return svc[call[1]]!.call(svc, r.request, ctx);
}

/** Where journaledServices() hands each applied request: etcd's entry data. */
export type RaftRequestSink = (data: Uint8Array) => void;

/**
 * `services` with every request in CALLS handed to `sink` once applied (see the module comment), plus the
 * member's own requests: `internal(field, request)` records one (lease expiry, quota alarm).
 */
export function journaledServices(server: EtcdServer, services: EtcdServices, sink: RaftRequestSink): { services: EtcdServices; internal(field: number, request: unknown): void } {
  // The calls in progress, outermost first; each collects what its inner calls recorded.
  const stack: Uint8Array[][] = [];
  const emit = (records: readonly Uint8Array[]): void => {
    const parent = stack[stack.length - 1];
    if (parent !== undefined) parent.push(...records);
    else for (const r of records) sink(r);
  };
  const wrap = (name: ServiceName): object => {
    const target = services[name] as unknown as Record<string | symbol, unknown>;
    const calls = new Map<string, Journaled>(CALLS.filter((c) => c[0] === name).map((c) => [c[1], c]));
    const bound = new Map<string | symbol, unknown>();
    return new Proxy(target, {
      get(t, prop) {
        let v = bound.get(prop);
        if (v !== undefined) return v;
        const value = t[prop];
        if (typeof value !== 'function') return value;
        const fn = value as (...args: unknown[]) => unknown;
        const call = typeof prop === 'string' ? calls.get(prop) : undefined;
        // The quota's NOSPACE alarm: the member's own request (Alarm applies it through `this`, unseen here).
        const own = name === 'maintenance' && prop === 'applyAlarm';
        v =
          call === undefined && !own
            ? fn.bind(t)
            : (req: unknown, ctx?: CallContext): unknown => {
                const header = own ? undefined : headerOf(server, ctx);
                const inner: Uint8Array[] = [];
                stack.push(inner);
                let res: unknown;
                try {
                  res = fn.call(t, req, ctx);
                } catch (err) {
                  stack.pop();
                  emit(inner);
                  throw err;
                }
                stack.pop();
                const recorded = call?.[1] === 'leaseGrant' ? { ...(req as M.LeaseGrantRequest), ID: (res as M.LeaseGrantResponse).ID } : req;
                emit([encodeRaftRequest(call?.[2] ?? ALARM_FIELD, recorded, header)]);
                return res;
              };
        bound.set(prop, v);
        return v;
      },
    });
  };
  const wrapped: EtcdServices = {
    ...services,
    kv: wrap('kv') as EtcdServices['kv'],
    lease: wrap('lease') as EtcdServices['lease'],
    maintenance: wrap('maintenance') as EtcdServices['maintenance'],
    auth: wrap('auth') as EtcdServices['auth'],
  };
  return { services: wrapped, internal: (field, request) => emit([encodeRaftRequest(field, request, undefined)]) };
}

/** The caller's user as the entry's header names it (an invalid token fails the call itself, unrecorded). */
function headerOf(server: EtcdServer, ctx: CallContext | undefined): RaftRequestHeader {
  let ai: AuthInfo | undefined;
  try {
    ai = server.authInfo(ctx);
  } catch {
    ai = undefined;
  }
  return { username: ai?.username ?? '', authRevision: ai?.revision ?? 0 };
}

export { LEASE_REVOKE_FIELD, ALARM_FIELD };
