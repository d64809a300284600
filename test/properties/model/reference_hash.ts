/**
 * Naive references for the store's two hashes, computed from the reference model's retained changes
 * (reference_kv.ts) and nothing of src/mvcc: etcd's HashKV value (Maintenance.HashKV, what members compare
 * to find corruption) and the simulator's own history digest (MvccStore.hash, "nothing changed").
 *
 * HashKV, as etcd 3.4–3.7 computes it (mvcc hashByRev; /work/shared/reference/etcd-semantics.md and
 * src/mvcc/hash_kv.ts's header, observed on 3.4.23): a CRC-32C over the bucket name "key" and then, in
 * revision then sub-revision order, each stored entry's backend key (8-byte big-endian main revision, '_',
 * 8-byte big-endian sub-revision, and 't' for a tombstone) and its mvccpb.KeyValue in protobuf form (a
 * tombstone's holds only its key). Entries above the hashed revision do not count; at or below the
 * compaction revision only those Keep(hashed revision) names: each key's newest stored change at the hashed
 * revision, unless it is a tombstone — and when Keep names none, every stored one. The protobuf encoding
 * here is written out by hand (fields in number order, zero values omitted, int64 as a 64-bit varint), so
 * it checks src/mvcc/wire.ts too.
 */
import CRC32C from 'crc-32/crc32c.js';
import type { Change, ReferenceKV } from './reference_kv.js';

function bytesOf(s: string): number[] {
  return Array.from(s, (c) => c.charCodeAt(0));
}

/** A protobuf varint of an int64 (negative numbers as their 64-bit two's complement: ten bytes). */
export function varint(n: bigint): number[] {
  let v = BigInt.asUintN(64, n);
  const out: number[] = [];
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}

/** mvccpb.KeyValue of a put as etcd's backend stores it; a tombstone stores only its key. */
function keyValueProto(c: Change, create: number, version: number): number[] {
  const key = bytesOf(c.key);
  const out = [0x0a, ...varint(BigInt(key.length)), ...key];
  if (c.value === undefined) return out;
  const int = (field: number, n: bigint): void => {
    if (n !== 0n) out.push(field << 3, ...varint(n));
  };
  int(2, BigInt(create));
  int(3, BigInt(c.rev));
  int(4, BigInt(version));
  if (c.value.length > 0) out.push(0x2a, ...varint(BigInt(c.value.length)), ...bytesOf(c.value));
  int(6, c.lease);
  return out;
}

/** Each change of the log with the create revision and version it has (from a replay of the whole log). */
function withCounters(log: readonly Change[]): Map<Change, { create: number; version: number }> {
  const live = new Map<string, { create: number; version: number }>();
  const out = new Map<Change, { create: number; version: number }>();
  for (const c of log) {
    if (c.value === undefined) {
      live.delete(c.key);
      out.set(c, { create: 0, version: 0 });
      continue;
    }
    const prev = live.get(c.key);
    const now = { create: prev?.create ?? c.rev, version: (prev?.version ?? 0) + 1 };
    live.set(c.key, now);
    out.set(c, now);
  }
  return out;
}

/** etcd's HashKV value of the reference's store at `revision` (compaction < revision <= current). */
export function referenceHashKV(ref: ReferenceKV, revision: number): number {
  const counters = withCounters(ref.log);
  const stored = ref.retainedChanges().filter((c) => c.rev <= revision);
  const newest = new Map<string, Change>();
  for (const c of stored) newest.set(c.key, c);
  const keep = new Set([...newest.values()].filter((c) => c.value !== undefined));
  const counted = stored.filter((c) => c.rev > ref.compactRev || keep.size === 0 || keep.has(c));
  counted.sort((a, b) => a.rev - b.rev || a.sub - b.sub);
  let crc = CRC32C.buf(Uint8Array.from(bytesOf('key')));
  for (const c of counted) {
    const backendKey = new Uint8Array(c.value === undefined ? 18 : 17);
    const view = new DataView(backendKey.buffer);
    view.setBigUint64(0, BigInt(c.rev));
    backendKey[8] = 0x5f;
    view.setBigUint64(9, BigInt(c.sub));
    if (c.value === undefined) backendKey[17] = 0x74;
    const { create, version } = counters.get(c)!;
    crc = CRC32C.buf(backendKey, crc);
    crc = CRC32C.buf(Uint8Array.from(keyValueProto(c, create, version)), crc);
  }
  return crc >>> 0;
}

const FNV_PRIME = 0x01000193;

/**
 * The simulator's history digest at `revision`: FNV-1a over the compaction revision and then, key by key in
 * byte order and each key's stored changes in revision order up to `revision`, the key and its length, the
 * mod and create revisions, the version, the value and its length and the lease's low and high 32 bits.
 * A number is mixed as two 32-bit halves.
 */
export function referenceDigest(ref: ReferenceKV, revision: number): number {
  const counters = withCounters(ref.log);
  let h = 0x811c9dc5;
  const mix = (x: number): void => {
    h = Math.imul(h ^ x, FNV_PRIME);
  };
  const num = (n: number): void => {
    mix(n >>> 0);
    mix(Math.floor(n / 2 ** 32));
  };
  num(ref.compactRev);
  const stored = ref.retainedChanges().filter((c) => c.rev <= revision);
  const keys = [...new Set(stored.map((c) => c.key))].sort();
  for (const key of keys) {
    for (const c of stored) {
      if (c.key !== key) continue;
      const { create, version } = counters.get(c)!;
      const value = c.value ?? '';
      for (const b of bytesOf(key)) mix(b);
      num(key.length);
      num(c.rev);
      num(create);
      num(version);
      for (const b of bytesOf(value)) mix(b);
      num(value.length);
      num(Number(c.lease & 0xffffffffn));
      num(Number(c.lease >> 32n));
    }
  }
  return h >>> 0;
}
