/**
 * How etcd's backend encodes each record (the buckets: etcd_backend.ts): revision keys, the protobuf
 * messages of the lease and auth buckets, the JSON of the membership buckets and big-endian counters —
 * both ways, every decoded record checked.
 */
import { Buffer } from '../sim/index.js';
import type { KeyPermission, PermissionType } from '../auth/index.js';
import { type KeyValue, LEN, VARINT, WireWriter, bytesFieldSize, int64FieldSize, tag, varintSize, writeBytesField, writeInt64Field } from '../mvcc/index.js';
import { boltKey } from './bbolt.js';
import { asInt64, decodeFields, safeNumber } from './proto_reader.js';
import { SnapshotFormatError, type StoredConfState, type StoredLease, type StoredMember, type StoredRole, type StoredUser } from './etcd_backend.js';

const PERM_TYPES: readonly PermissionType[] = ['READ', 'WRITE', 'READWRITE'];
export const text = new TextDecoder('utf-8', { fatal: false });

/** mvcc revToBytes, plus etcd's tombstone mark 't' for a delete. */
export function revisionKey(main: number, sub: number, tombstone: boolean): Uint8Array {
  const b = new Uint8Array(tombstone ? 18 : 17);
  writeRevisionKey(b, 0, main, sub, tombstone);
  return b;
}

/** revisionKey's bytes written at `at` of `b`. */
export function writeRevisionKey(b: Uint8Array, at: number, main: number, sub: number, tombstone: boolean): void {
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

export function parseRevisionKey(k: Uint8Array, what: string): { main: number; sub: number; tombstone: boolean } {
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

export const u64be = (v: bigint): Uint8Array => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt.asUintN(64, v));
  return b;
};

export function readU64be(b: Uint8Array, what: string): bigint {
  if (b.length !== 8) throw new SnapshotFormatError(`${what}: expected 8 bytes, found ${b.length}`);
  return new DataView(b.buffer, b.byteOffset, 8).getBigUint64(0);
}

export function marshalLease(l: StoredLease): Uint8Array {
  const o = new WireWriter(int64FieldSize(1, l.id) + int64FieldSize(2, l.ttl) + int64FieldSize(3, l.remainingTTL));
  writeInt64Field(o, 1, l.id);
  writeInt64Field(o, 2, l.ttl);
  writeInt64Field(o, 3, l.remainingTTL);
  return o.buf;
}

export const utf8 = (s: string): Uint8Array => boltKey(s);

/** authpb.User; options is always present (etcd's UserAdd stores the request's options message). */
export function marshalUser(u: StoredUser): Uint8Array {
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

export function marshalRole(r: StoredRole): Uint8Array {
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
export function unmarshalKeyValue(b: Uint8Array, rev: { main: number; sub: number; tombstone: boolean }): KeyValue {
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

export const EMPTY = new Uint8Array(0);

export function unmarshalLease(b: Uint8Array, what: string): StoredLease {
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

export function unmarshalUser(b: Uint8Array, what: string): StoredUser {
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

export function unmarshalRole(b: Uint8Array, what: string): StoredRole {
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
export function memberJson(m: StoredMember): string {
  let json = `{"id":${m.id},"peerURLs":${JSON.stringify(m.peerURLs)}`;
  if (m.isLearner) json += ',"isLearner":true';
  if (m.name !== '') json += `,"name":${JSON.stringify(m.name)}`;
  if (m.clientURLs.length > 0) json += `,"clientURLs":${JSON.stringify(m.clientURLs)}`;
  return `${json}}`;
}

export function parseMember(key: Uint8Array, value: Uint8Array, what: string): StoredMember {
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

export function parseMemberId(key: Uint8Array, what: string): bigint {
  const s = text.decode(key);
  if (!/^[0-9a-f]{1,16}$/.test(s)) throw new SnapshotFormatError(`${what}: ${JSON.stringify(s)} is not a member ID`);
  return BigInt(`0x${s}`);
}

/**
 * meta/confState's JSON as Go marshals raftpb.ConfState: the four ID lists only when non-empty
 * (omitempty), auto_leave always; uint64 IDs as bare numbers, written exactly.
 */
export function confStateJson(c: StoredConfState): string {
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

export function parseConfState(value: Uint8Array): StoredConfState {
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

export function parseDowngrade(value: Uint8Array): { targetVersion: string; enabled: boolean } {
  const o = parseJsonExact(value, 'cluster downgrade');
  return { targetVersion: typeof o['target-version'] === 'string' ? o['target-version'] : '', enabled: o['enabled'] === true };
}

/** version.DowngradeInfo as Go's JSON. */
export const downgradeJson = (d: { targetVersion: string; enabled: boolean }): string => `{"target-version":${JSON.stringify(d.targetVersion)},"enabled":${d.enabled}}`;
