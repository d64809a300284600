/**
 * etcd 3.4's backend layout (its bbolt file, which is also its snapshot): which buckets exist and how each
 * one's keys and values are encoded. Everything here is a pure translation between that layout and plain
 * data; src/snapshot/member.ts maps the plain data to and from a simulated member.
 *
 *   key              revision key (main u64 BE, '_', sub u64 BE, + 't' for a delete) → mvccpb.KeyValue
 *                    (a delete stores only the key) — mvcc/kvstore.go, revision.go
 *   meta             consistent_index → u64 BE; scheduledCompactRev / finishedCompactRev → revision key
 *                    {compact revision, 0}, present once a compaction happened — cindex, mvcc/kvstore.go
 *   lease            lease ID as int64 BE → leasepb.Lease {ID, TTL, RemainingTTL} — lease/lessor.go
 *   auth             authEnabled → 1 byte (1/0); authRevision → u64 BE — auth/store.go
 *   authUsers        name → authpb.User {name, password (bcrypt text), roles, options}
 *   authRoles        name → authpb.Role {name, keyPermission[] {permType, key, range_end}}
 *   members          member ID in hex → JSON {id, peerURLs, name, clientURLs} — membership/store.go
 *   members_removed  member ID in hex → "removed"
 *   cluster          clusterVersion → "3.4.0"
 *   alarm            marshalled etcdserverpb.AlarmMember → empty
 *
 * Size: over the 600-line budget for now — etcd's bucket layout in both directions; to be split (test/layout/budget.test.ts names it).
 */
import { Buffer } from '../sim/bytes_platform.js';
import { createHash } from '../sim/crypto_platform.js';
import type { KeyPermission, PermissionType } from '../auth/index.js';
import type { KeyValue } from '../mvcc/index.js';
import { LEN, VARINT, WireWriter, bytesFieldSize, int64FieldSize, keyValueSize, marshalKeyValue, tag, varintSize, writeBytesField, writeInt64Field, writeKeyValue } from '../mvcc/wire.js';
import { boltKey, childBucket, compareKeys, isBucketEntry, type BoltBucket, type BoltEntry, type BoltEntrySource } from './bbolt.js';
import { layoutBolt, type BoltLayout } from './bbolt_writer.js';
import { readBolt } from './bbolt_reader.js';
import { ProtoFormatError, asInt64, decodeFields, safeNumber } from './proto_reader.js';

/** One entry of the key bucket: a revision {main, sub} of a key, a put or (tombstone) a delete. */
export interface StoredRevision {
  readonly main: number;
  readonly sub: number;
  readonly tombstone: boolean;
  /** For a tombstone: the key, modRevision = main, everything else zero (what the simulator's store keeps). */
  readonly kv: KeyValue;
}

/** leasepb.Lease as the lease bucket stores it. */
export interface StoredLease {
  readonly id: bigint;
  /** Granted TTL in seconds (already raised to the minimum when granted). */
  readonly ttl: number;
  /** Checkpointed remaining TTL in seconds (0: none; only with lease checkpointing). */
  readonly remainingTTL: number;
}

/** authpb.User as stored: the password is the hash text as written (bcrypt "$2a$..." for a real etcd). */
export interface StoredUser {
  readonly name: string;
  readonly password: Uint8Array;
  readonly roles: readonly string[];
  readonly noPassword: boolean;
}

export interface StoredRole {
  readonly name: string;
  readonly perms: readonly KeyPermission[];
}

/** A member record of the members bucket (membership.Member as JSON). */
export interface StoredMember {
  readonly id: bigint;
  readonly name: string;
  readonly peerURLs: readonly string[];
  readonly clientURLs: readonly string[];
  readonly isLearner: boolean;
}

/** Everything an etcd 3.4 backend holds, decoded. */
export interface EtcdBackend {
  /** The key bucket, in its (revision) order. */
  readonly revisions: readonly StoredRevision[];
  readonly consistentIndex: bigint;
  /** Absent before the first compaction. */
  readonly scheduledCompactRev?: number | undefined;
  readonly finishedCompactRev?: number | undefined;
  readonly leases: readonly StoredLease[];
  readonly authEnabled: boolean;
  readonly authRevision: number;
  readonly users: readonly StoredUser[];
  readonly roles: readonly StoredRole[];
  readonly members: readonly StoredMember[];
  readonly removedMembers: readonly bigint[];
  /** The cluster bucket's clusterVersion ("3.4.0"), if set. */
  readonly clusterVersion?: string | undefined;
  /** The alarm bucket's keys (marshalled AlarmMember), kept as they are. */
  readonly alarms: readonly Uint8Array[];
  // From etcd 3.5 on (absent in a 3.4 backend; see docs/version-differences.md):
  /** meta/term: the raft term of the last applied entry, written with consistent_index (3.5+). */
  readonly term?: bigint | undefined;
  /** meta/confState: the raft configuration as JSON, written on every conf change (3.5+). */
  readonly confState?: StoredConfState | undefined;
  /** meta/storageVersion: the schema version ("3.6.0"), written once the member runs 3.6 or later. */
  readonly storageVersion?: string | undefined;
  /** cluster/downgrade: a downgrade's target and whether it is enabled (3.5+, once one was started). */
  readonly downgrade?: { readonly targetVersion: string; readonly enabled: boolean } | undefined;
}

/** raftpb.ConfState as etcd 3.5+ stores it in meta/confState (Go's JSON of the message). */
export interface StoredConfState {
  readonly voters: readonly bigint[];
  readonly learners: readonly bigint[];
  readonly votersOutgoing: readonly bigint[];
  readonly learnersNext: readonly bigint[];
  readonly autoLeave: boolean;
}

/** A snapshot or backend file that etcd's layout does not explain, naming the bucket and what is wrong. */
export class SnapshotFormatError extends Error {
  constructor(message: string) {
    super(`snapshot: ${message}`);
    this.name = 'SnapshotFormatError';
  }
}

const PERM_TYPES: readonly PermissionType[] = ['READ', 'WRITE', 'READWRITE'];
const text = new TextDecoder('utf-8', { fatal: false });

// ---------------------------------------------------------------------------------------------------
// Revision keys

/** mvcc revToBytes, plus etcd's tombstone mark 't' for a delete. */
export function revisionKey(main: number, sub: number, tombstone: boolean): Uint8Array {
  const b = new Uint8Array(tombstone ? 18 : 17);
  writeRevisionKey(b, 0, main, sub, tombstone);
  return b;
}

/** revisionKey's bytes written at `at` of `b`. */
function writeRevisionKey(b: Uint8Array, at: number, main: number, sub: number, tombstone: boolean): void {
  // Byte by byte, no DataView or BigInt per key: a snapshot writes millions of these.
  putU64be(b, at, main);
  b[at + 8] = 0x5f;
  putU64be(b, at + 9, sub);
  if (tombstone) b[at + 17] = 0x74;
}

/** A non-negative safe integer as 8 big-endian bytes at `at`. */
function putU64be(b: Uint8Array, at: number, v: number): void {
  let hi = Math.floor(v / 0x100000000);
  let lo = v >>> 0;
  for (let i = 7; i >= 4; i--) {
    b[at + i] = lo & 0xff;
    lo >>>= 8;
  }
  for (let i = 3; i >= 0; i--) {
    b[at + i] = hi & 0xff;
    hi >>>= 8;
  }
}

function parseRevisionKey(k: Uint8Array, what: string): { main: number; sub: number; tombstone: boolean } {
  if ((k.length !== 17 && k.length !== 18) || k[8] !== 0x5f || (k.length === 18 && k[17] !== 0x74)) {
    throw new SnapshotFormatError(`${what}: ${Buffer.from(k).toString('hex')} is not a revision key`);
  }
  const mainHi = u32be(k, 0);
  const subHi = u32be(k, 9);
  if (mainHi > 0x1fffff || subHi !== 0) throw new SnapshotFormatError(`${what}: revision ${Buffer.from(k.subarray(0, 17)).toString('hex')} out of range`);
  return { main: mainHi * 0x100000000 + u32be(k, 4), sub: u32be(k, 13), tombstone: k.length === 18 };
}

function u32be(b: Uint8Array, at: number): number {
  return ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
}

const u64be = (v: bigint): Uint8Array => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt.asUintN(64, v));
  return b;
};

function readU64be(b: Uint8Array, what: string): bigint {
  if (b.length !== 8) throw new SnapshotFormatError(`${what}: expected 8 bytes, found ${b.length}`);
  return new DataView(b.buffer, b.byteOffset, 8).getBigUint64(0);
}

// ---------------------------------------------------------------------------------------------------
// Messages

function marshalLease(l: StoredLease): Uint8Array {
  const o = new WireWriter(int64FieldSize(1, l.id) + int64FieldSize(2, l.ttl) + int64FieldSize(3, l.remainingTTL));
  writeInt64Field(o, 1, l.id);
  writeInt64Field(o, 2, l.ttl);
  writeInt64Field(o, 3, l.remainingTTL);
  return o.buf;
}

const utf8 = (s: string): Uint8Array => boltKey(s);

/** authpb.User; options is always present (etcd's UserAdd stores the request's options message). */
function marshalUser(u: StoredUser): Uint8Array {
  const name = utf8(u.name);
  const roles = u.roles.map(utf8);
  const optionsLen = u.noPassword ? 2 : 0;
  let size = bytesFieldSize(1, name) + bytesFieldSize(2, u.password) + 1 + varintSize(optionsLen) + optionsLen;
  for (const r of roles) size += varintSize(tag(3, LEN)) + varintSize(r.length) + r.length;
  const o = new WireWriter(size);
  writeBytesField(o, 1, name);
  writeBytesField(o, 2, u.password);
  for (const r of roles) o.bytes(3, r);
  o.varint(tag(4, LEN));
  o.varint(optionsLen);
  if (u.noPassword) {
    o.varint(tag(1, VARINT));
    o.varint(1);
  }
  return o.buf;
}

function marshalPermission(p: KeyPermission): Uint8Array {
  const t = PERM_TYPES.indexOf(p.permType);
  const o = new WireWriter(int64FieldSize(1, t) + bytesFieldSize(2, p.key) + bytesFieldSize(3, p.rangeEnd));
  writeInt64Field(o, 1, t);
  writeBytesField(o, 2, p.key);
  writeBytesField(o, 3, p.rangeEnd);
  return o.buf;
}

function marshalRole(r: StoredRole): Uint8Array {
  const name = utf8(r.name);
  const perms = r.perms.map(marshalPermission);
  let size = bytesFieldSize(1, name);
  for (const p of perms) size += varintSize(tag(2, LEN)) + varintSize(p.length) + p.length;
  const o = new WireWriter(size);
  writeBytesField(o, 1, name);
  for (const p of perms) o.bytes(2, p);
  return o.buf;
}

/**
 * mvccpb.KeyValue from its stored bytes: one pass, no closure or string per entry (a snapshot holds
 * millions). Revisions and versions must be safe integers; the lease is an exact int64.
 */
function unmarshalKeyValue(b: Uint8Array, rev: { main: number; sub: number; tombstone: boolean }): KeyValue {
  let key: Uint8Array = EMPTY;
  let value: Uint8Array = EMPTY;
  let createRevision = 0;
  let modRevision = 0;
  let version = 0;
  let lease = 0n;
  const n = b.length;
  let pos = 0;
  while (pos < n) {
    const tagByte = b[pos++]!;
    if (tagByte & 0x80) throw kvError(rev, 'unexpected field number');
    const field = tagByte >> 3;
    const wire = tagByte & 7;
    // A varint as a number while it stays below 2^49; longer ones only for the lease (negative int64).
    let v = 0;
    let big: bigint | undefined;
    for (let shift = 0; ; shift += 7) {
      if (pos >= n) throw kvError(rev, 'truncated varint');
      if (shift > 63) throw kvError(rev, 'varint longer than 10 bytes');
      const byte = b[pos++]!;
      if (shift < 49) v += (byte & 0x7f) * 2 ** shift;
      else big = (big ?? BigInt(v)) | (BigInt(byte & 0x7f) << BigInt(shift));
      if ((byte & 0x80) === 0) break;
    }
    if (wire === 2) {
      if (big !== undefined || pos + v > n) throw kvError(rev, `field ${field} runs past the message`);
      if (field === 1) key = b.subarray(pos, pos + v);
      else if (field === 5) value = b.subarray(pos, pos + v);
      pos += v;
    } else if (wire === 0) {
      if (field === 6) lease = BigInt.asIntN(64, big ?? BigInt(v));
      else if (big !== undefined) throw kvError(rev, `field ${field} out of range`);
      else if (field === 2) createRevision = v;
      else if (field === 3) modRevision = v;
      else if (field === 4) version = v;
    } else throw kvError(rev, `unexpected wire type ${wire} (field ${field})`);
  }
  if (rev.tombstone) return { key, createRevision: 0, modRevision: rev.main, version: 0, value: EMPTY, lease: 0n };
  if (modRevision !== rev.main) throw kvError(rev, `mod_revision ${modRevision} differs from its revision key's ${rev.main}`);
  return { key, createRevision, modRevision, version, value, lease };
}

function kvError(rev: { main: number; sub: number }, what: string): SnapshotFormatError {
  return new SnapshotFormatError(`bucket key, revision ${rev.main}_${rev.sub}: ${what}`);
}

const EMPTY = new Uint8Array(0);

function unmarshalLease(b: Uint8Array, what: string): StoredLease {
  let id = 0n;
  let ttl = 0;
  let remainingTTL = 0;
  for (const f of decodeFields(b, what)) {
    if (!('varint' in f)) continue;
    if (f.field === 1) id = asInt64(f.varint);
    else if (f.field === 2) ttl = safeNumber(f.varint, `${what} TTL`);
    else if (f.field === 3) remainingTTL = safeNumber(f.varint, `${what} RemainingTTL`);
  }
  return { id, ttl, remainingTTL };
}

function unmarshalUser(b: Uint8Array, what: string): StoredUser {
  let name = '';
  let password: Uint8Array = new Uint8Array(0);
  const roles: string[] = [];
  let noPassword = false;
  for (const f of decodeFields(b, what)) {
    if (!('bytes' in f)) continue;
    if (f.field === 1) name = text.decode(f.bytes);
    else if (f.field === 2) password = f.bytes.slice();
    else if (f.field === 3) roles.push(text.decode(f.bytes));
    else if (f.field === 4) for (const o of decodeFields(f.bytes, `${what} options`)) if ('varint' in o && o.field === 1) noPassword = o.varint !== 0n;
  }
  return { name, password, roles, noPassword };
}

function unmarshalRole(b: Uint8Array, what: string): StoredRole {
  let name = '';
  const perms: KeyPermission[] = [];
  for (const f of decodeFields(b, what)) {
    if (!('bytes' in f)) continue;
    if (f.field === 1) name = text.decode(f.bytes);
    else if (f.field === 2) {
      let t = 0;
      let key: Uint8Array = new Uint8Array(0);
      let rangeEnd: Uint8Array = new Uint8Array(0);
      for (const p of decodeFields(f.bytes, `${what} permission`)) {
        if ('varint' in p && p.field === 1) t = Number(p.varint);
        else if ('bytes' in p && p.field === 2) key = p.bytes.slice();
        else if ('bytes' in p && p.field === 3) rangeEnd = p.bytes.slice();
      }
      const permType = PERM_TYPES[t];
      if (permType === undefined) throw new SnapshotFormatError(`${what}: unknown permission type ${t}`);
      perms.push({ permType, key, rangeEnd });
    }
  }
  return { name, perms };
}

/** membership.Member as etcd 3.4 marshals it (the uint64 ID as a bare JSON number, written exactly). */
/**
 * membership.Member in Go's JSON: id, peerURLs, then isLearner, name and clientURLs only when set
 * (omitempty: a member added but not started has no name and no client URLs yet).
 */
function memberJson(m: StoredMember): string {
  let json = `{"id":${m.id},"peerURLs":${JSON.stringify(m.peerURLs)}`;
  if (m.isLearner) json += ',"isLearner":true';
  if (m.name !== '') json += `,"name":${JSON.stringify(m.name)}`;
  if (m.clientURLs.length > 0) json += `,"clientURLs":${JSON.stringify(m.clientURLs)}`;
  return `${json}}`;
}

function parseMember(key: Uint8Array, value: Uint8Array, what: string): StoredMember {
  const id = parseMemberId(key, what);
  let o: unknown;
  try {
    o = JSON.parse(text.decode(value));
  } catch {
    throw new SnapshotFormatError(`${what}: member ${text.decode(key)} is not JSON`);
  }
  const rec = (typeof o === 'object' && o !== null ? o : {}) as Record<string, unknown>;
  const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  return {
    id,
    name: typeof rec['name'] === 'string' ? rec['name'] : '',
    peerURLs: strings(rec['peerURLs']),
    clientURLs: strings(rec['clientURLs']),
    isLearner: rec['isLearner'] === true,
  };
}

function parseMemberId(key: Uint8Array, what: string): bigint {
  const s = text.decode(key);
  if (!/^[0-9a-f]{1,16}$/.test(s)) throw new SnapshotFormatError(`${what}: ${JSON.stringify(s)} is not a member ID`);
  return BigInt(`0x${s}`);
}

/**
 * meta/confState's JSON as Go marshals raftpb.ConfState: the four ID lists only when non-empty
 * (omitempty), auto_leave always; uint64 IDs as bare numbers, written exactly.
 */
function confStateJson(c: StoredConfState): string {
  const list = (name: string, ids: readonly bigint[]): string => (ids.length === 0 ? '' : `"${name}":[${ids.join(',')}],`);
  return `{${list('voters', c.voters)}${list('learners', c.learners)}${list('voters_outgoing', c.votersOutgoing)}${list('learners_next', c.learnersNext)}"auto_leave":${c.autoLeave}}`;
}

/** JSON whose bare integers (uint64 IDs) are read as decimal strings, so none loses precision. */
function parseJsonExact(value: Uint8Array, what: string): Record<string, unknown> {
  const src = text.decode(value);
  // Quote every bare integer that stands as a value (after ':', '[' or ','), leaving strings alone.
  const quoted = src.replace(/"(?:[^"\\]|\\.)*"|(-?\d+)(?![\d.eE])/g, (m: string, num: string | undefined) => (num === undefined ? m : `"${num}"`));
  let o: unknown;
  try {
    o = JSON.parse(quoted);
  } catch {
    throw new SnapshotFormatError(`${what}: not JSON`);
  }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new SnapshotFormatError(`${what}: not a JSON object`);
  return o as Record<string, unknown>;
}

function parseConfState(value: Uint8Array): StoredConfState {
  const what = 'meta confState';
  const o = parseJsonExact(value, what);
  const ids = (name: string): bigint[] => {
    const v = o[name];
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v) || !v.every((x): x is string => typeof x === 'string' && /^\d+$/.test(x))) throw new SnapshotFormatError(`${what}: ${name} is not a list of IDs`);
    return v.map((x) => BigInt(x));
  };
  return { voters: ids('voters'), learners: ids('learners'), votersOutgoing: ids('voters_outgoing'), learnersNext: ids('learners_next'), autoLeave: o['auto_leave'] === true };
}

function parseDowngrade(value: Uint8Array): { targetVersion: string; enabled: boolean } {
  const o = parseJsonExact(value, 'cluster downgrade');
  return { targetVersion: typeof o['target-version'] === 'string' ? o['target-version'] : '', enabled: o['enabled'] === true };
}

/** version.DowngradeInfo as Go's JSON. */
const downgradeJson = (d: { targetVersion: string; enabled: boolean }): string => `{"target-version":${JSON.stringify(d.targetVersion)},"enabled":${d.enabled}}`;

// ---------------------------------------------------------------------------------------------------
// The whole backend

const sorted = (entries: BoltEntry[]): BoltEntry[] => entries.sort((a, b) => compareKeys(a.key, b.key));
const bucket = (name: string, entries: BoltEntry[]): BoltEntry => ({ key: boltKey(name), bucket: { entries: sorted(entries) } });

/**
 * The key bucket as a member hands it to the writer: in key-bucket order (main, then sub), each revision's
 * main and sub revision, whether it is a delete, and its KeyValue, side by side — no object per revision
 * (a tombstone's value stores only its key).
 */
export interface KeyBucketColumns {
  readonly kvs: readonly KeyValue[];
  readonly mains: Float64Array;
  readonly subs: Uint32Array;
  /** 1 for a tombstone (a delete), else 0. */
  readonly tombstones: Uint8Array;
}

/** Where a backend built from a member keeps its KeyBucketColumns (not enumerable: a spread copy drops it). */
const COLUMNS = Symbol('etcdsim.keyBucketColumns');

/**
 * A backend whose key bucket comes as columns: `revisions` is made from them only when someone reads it
 * (Hash, a restart), while a snapshot writes the columns straight into the file. `rest` is every other
 * field of the backend.
 */
export function backendWithKeyColumns(rest: Omit<EtcdBackend, 'revisions'>, cols: KeyBucketColumns): EtcdBackend {
  let revisions: StoredRevision[] | undefined;
  const b: EtcdBackend = {
    ...rest,
    get revisions(): readonly StoredRevision[] {
      if (revisions === undefined) {
        const n = cols.kvs.length;
        revisions = new Array<StoredRevision>(n);
        for (let i = 0; i < n; i++) revisions[i] = { main: cols.mains[i]!, sub: cols.subs[i]!, tombstone: cols.tombstones[i] === 1, kv: cols.kvs[i]! };
      }
      return revisions;
    },
  };
  Object.defineProperty(b, COLUMNS, { value: cols, enumerable: false });
  return b;
}

/** A backend's key bucket as columns: those it was built with, or made from its revisions. */
function keyColumnsOf(b: EtcdBackend): KeyBucketColumns {
  const own = (b as { readonly [COLUMNS]?: KeyBucketColumns })[COLUMNS];
  if (own !== undefined) return own;
  const revs = b.revisions;
  const n = revs.length;
  const cols = { kvs: new Array<KeyValue>(n), mains: new Float64Array(n), subs: new Uint32Array(n), tombstones: new Uint8Array(n) };
  for (let i = 0; i < n; i++) {
    const r = revs[i]!;
    cols.kvs[i] = r.kv;
    cols.mains[i] = r.main;
    cols.subs[i] = r.sub;
    cols.tombstones[i] = r.tombstone ? 1 : 0;
  }
  return cols;
}

/**
 * The key bucket for writing: revision keys and marshalled KeyValues laid out straight into bbolt's pages,
 * with no object per revision (a snapshot of a million revisions otherwise spends most of its time
 * collecting them). Revisions must be in strictly ascending order, as the key bucket sorts them.
 */
function keyBucketSource(b: EtcdBackend): BoltEntrySource {
  const { kvs, mains, subs, tombstones } = keyColumnsOf(b);
  const n = kvs.length;
  // Each value's size once (the writer asks for it when planning and again when writing).
  const valueSizes = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const kv = kvs[i]!;
    if (i > 0 && (mains[i - 1]! > mains[i]! || (mains[i - 1] === mains[i] && subs[i - 1]! >= subs[i]!))) throw new RangeError(`snapshot: revisions out of order at ${mains[i]}_${subs[i]}`);
    valueSizes[i] = tombstones[i] === 1 ? keyValueSize(kv.key, 0, 0, 0, EMPTY, 0) : keyValueSize(kv.key, kv.createRevision, kv.modRevision, kv.version, kv.value, kv.lease);
  }
  // Values are encoded straight into the page being laid out (the file, or a piece of it; see bbolt_writer.ts
  // BoltLayout) through one cursor over the buffer it lives in: no buffer per value, no copy.
  let cursor: WireWriter | undefined;
  return {
    count: n,
    keySize: (i) => (tombstones[i] === 1 ? 18 : 17),
    valueSize: (i) => valueSizes[i]!,
    writeKey: (i, dst, at) => writeRevisionKey(dst, at, mains[i]!, subs[i]!, tombstones[i] === 1),
    writeValue: (i, dst, at) => {
      const kv = kvs[i]!;
      if (cursor === undefined || cursor.buf.buffer !== dst.buffer) cursor = new WireWriter(0, Buffer.from(dst.buffer, 0, dst.buffer.byteLength));
      cursor.pos = dst.byteOffset + at;
      if (tombstones[i] === 1) writeKeyValue(cursor, kv.key, 0, 0, 0, EMPTY, 0);
      else writeKeyValue(cursor, kv.key, kv.createRevision, kv.modRevision, kv.version, kv.value, kv.lease);
    },
  };
}

/**
 * The bucket tree of a backend, in etcd's layout. With `lazyKeys` the key bucket is a source for
 * writeBolt (no entries to iterate): what writeEtcdSnapshot uses; without, every bucket has its entries.
 */
export function encodeEtcdBackend(b: EtcdBackend, opts: { readonly lazyKeys?: boolean } = {}): BoltBucket {
  const keys: BoltEntry[] = opts.lazyKeys === true ? [] : b.revisions.map((r) => ({ key: revisionKey(r.main, r.sub, r.tombstone), value: marshalKeyValue(r.kv, r.tombstone) }));
  const meta: BoltEntry[] = [{ key: boltKey('consistent_index'), value: u64be(b.consistentIndex) }];
  if (b.scheduledCompactRev !== undefined) meta.push({ key: boltKey('scheduledCompactRev'), value: revisionKey(b.scheduledCompactRev, 0, false) });
  if (b.finishedCompactRev !== undefined) meta.push({ key: boltKey('finishedCompactRev'), value: revisionKey(b.finishedCompactRev, 0, false) });
  if (b.term !== undefined) meta.push({ key: boltKey('term'), value: u64be(b.term) });
  if (b.confState !== undefined) meta.push({ key: boltKey('confState'), value: utf8(confStateJson(b.confState)) });
  if (b.storageVersion !== undefined) meta.push({ key: boltKey('storageVersion'), value: utf8(b.storageVersion) });
  const cluster: BoltEntry[] = [];
  if (b.clusterVersion !== undefined) cluster.push({ key: boltKey('clusterVersion'), value: utf8(b.clusterVersion) });
  if (b.downgrade !== undefined) cluster.push({ key: boltKey('downgrade'), value: utf8(downgradeJson(b.downgrade)) });
  const root: BoltEntry[] = [
    bucket('alarm', b.alarms.map((a) => ({ key: a, value: new Uint8Array(0) }))),
    // etcd writes authEnabled the first time auth is enabled or disabled; a store never enabled has none.
    bucket('auth', [
      ...(b.authEnabled ? [{ key: boltKey('authEnabled'), value: Uint8Array.of(1) }] : []),
      { key: boltKey('authRevision'), value: u64be(BigInt(b.authRevision)) },
    ]),
    bucket('authRoles', b.roles.map((r) => ({ key: utf8(r.name), value: marshalRole(r) }))),
    bucket('authUsers', b.users.map((u) => ({ key: utf8(u.name), value: marshalUser(u) }))),
    bucket('cluster', cluster),
    // Revision keys sort as revisions do: main, then sub (fixed width, big-endian).
    { key: boltKey('key'), bucket: { entries: keys, source: opts.lazyKeys === true ? keyBucketSource(b) : undefined } },
    bucket('lease', b.leases.map((l) => ({ key: u64be(l.id), value: marshalLease(l) }))),
    bucket('members', b.members.map((m) => ({ key: utf8(m.id.toString(16)), value: utf8(memberJson(m)) }))),
    bucket('members_removed', b.removedMembers.map((id) => ({ key: utf8(id.toString(16)), value: utf8('removed') }))),
    bucket('meta', meta),
  ];
  return { entries: root };
}

/** Decodes a backend's bucket tree; a bucket etcd 3.4 always has but that is missing reads as empty. */
export function decodeEtcdBackend(root: BoltBucket): EtcdBackend {
  const values = (name: string): { key: Uint8Array; value: Uint8Array }[] => {
    const b = childBucket(root, name);
    if (b === undefined) return [];
    return b.entries.map((e) => {
      if (isBucketEntry(e)) throw new SnapshotFormatError(`bucket ${name}: unexpected nested bucket ${JSON.stringify(text.decode(e.key))}`);
      return e;
    });
  };
  const at = (name: string, key: string): Uint8Array | undefined => values(name).find((e) => compareKeys(e.key, boltKey(key)) === 0)?.value;
  if (childBucket(root, 'key') === undefined || childBucket(root, 'meta') === undefined) {
    throw new SnapshotFormatError('not an etcd backend: no "key" or "meta" bucket');
  }
  const keyEntries = values('key');
  const revisions: StoredRevision[] = new Array<StoredRevision>(keyEntries.length);
  for (let i = 0; i < keyEntries.length; i++) {
    const e = keyEntries[i]!;
    const rev = parseRevisionKey(e.key, 'bucket key');
    revisions[i] = { main: rev.main, sub: rev.sub, tombstone: rev.tombstone, kv: unmarshalKeyValue(e.value, rev) };
  }
  const compactRev = (name: string): number | undefined => {
    const v = at('meta', name);
    return v === undefined ? undefined : parseRevisionKey(v, `meta ${name}`).main;
  };
  const ci = at('meta', 'consistent_index');
  const enabled = at('auth', 'authEnabled');
  const authRev = at('auth', 'authRevision');
  const cv = at('cluster', 'clusterVersion');
  const term = at('meta', 'term');
  const confState = at('meta', 'confState');
  const storageVersion = at('meta', 'storageVersion');
  const downgrade = at('cluster', 'downgrade');
  try {
    return {
      revisions,
      consistentIndex: ci === undefined ? 0n : readU64be(ci, 'meta consistent_index'),
      scheduledCompactRev: compactRev('scheduledCompactRev'),
      finishedCompactRev: compactRev('finishedCompactRev'),
      leases: values('lease').map(({ key, value }) => {
        const l = unmarshalLease(value, 'bucket lease');
        if (l.id !== asInt64(readU64be(key, 'bucket lease key'))) throw new SnapshotFormatError(`bucket lease: lease ${l.id} stored under another ID`);
        return l;
      }),
      authEnabled: enabled !== undefined && enabled.length === 1 && enabled[0] === 1,
      authRevision: authRev === undefined ? 0 : Number(readU64be(authRev, 'auth authRevision')),
      users: values('authUsers').map(({ value }) => unmarshalUser(value, 'bucket authUsers')),
      roles: values('authRoles').map(({ value }) => unmarshalRole(value, 'bucket authRoles')),
      members: values('members').map(({ key, value }) => parseMember(key, value, 'bucket members')),
      removedMembers: values('members_removed').map(({ key }) => parseMemberId(key, 'bucket members_removed')),
      clusterVersion: cv === undefined ? undefined : text.decode(cv),
      alarms: values('alarm').map(({ key }) => key),
      term: term === undefined ? undefined : readU64be(term, 'meta term'),
      confState: confState === undefined ? undefined : parseConfState(confState),
      // 3.6 writes an empty storageVersion first (its migration's placeholder), then "3.6.0".
      storageVersion: storageVersion === undefined ? undefined : text.decode(storageVersion),
      downgrade: downgrade === undefined ? undefined : parseDowngrade(downgrade),
    };
  } catch (err) {
    if (err instanceof ProtoFormatError) throw new SnapshotFormatError(err.message);
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------------
// Snapshot files

const SHA256_SIZE = 32;

/**
 * A snapshot as etcd's Snapshot RPC sends it (and `etcdctl snapshot save` stores it): the bbolt file followed
 * by the SHA-256 of the file.
 */
export function writeEtcdSnapshot(b: EtcdBackend): Uint8Array {
  const layout = layoutEtcdBackend(b);
  const out = new Uint8Array(layout.size + SHA256_SIZE);
  layout.writeTo(out);
  out.set(createHash('sha256').update(out.subarray(0, layout.size)).digest(), layout.size);
  return out;
}

/**
 * A backend's bbolt file laid out, its key bucket's leaves still to be written (bbolt_writer.ts BoltLayout): what
 * the Snapshot stream sends piece by piece, with the same bytes as writeEtcdSnapshot's file.
 */
export function layoutEtcdBackend(b: EtcdBackend): BoltLayout {
  return layoutBolt(encodeEtcdBackend(b, { lazyKeys: true }));
}

/**
 * Reads a snapshot file: a bbolt database in etcd's layout, with or without the SHA-256 trailer (etcd's
 * restore tells them apart the same way: a trailer makes the size 32 more than a multiple of 512). A trailer
 * that does not match, a bad bbolt file or an entry etcd's layout does not explain is a SnapshotFormatError.
 */
export function readEtcdSnapshot(file: Uint8Array): EtcdBackend {
  // One copy of the whole file: what is read from it (keys, values) are views into this copy, which the
  // caller's buffer can then no longer change.
  let db = file.slice();
  if (file.length % 512 === SHA256_SIZE) {
    db = db.subarray(0, file.length - SHA256_SIZE);
    const want = file.subarray(file.length - SHA256_SIZE);
    const got = createHash('sha256').update(db).digest();
    if (compareKeys(got, want) !== 0) throw new SnapshotFormatError('SHA-256 trailer does not match the database (corrupt or truncated file)');
  } else if (file.length % 512 !== 0) {
    throw new SnapshotFormatError(`size ${file.length} is neither whole pages nor pages plus a SHA-256 trailer (truncated?)`);
  }
  try {
    return decodeEtcdBackend(readBolt(db).root);
  } catch (err) {
    if (err instanceof Error && err.name === 'BoltFormatError') throw new SnapshotFormatError(err.message);
    throw err;
  }
}
