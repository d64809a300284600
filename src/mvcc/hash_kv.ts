/**
 * etcd's HashKV value, bit for bit (mvcc HashByRev / unsafeHashByRev, unchanged from 3.4 to 3.7 because
 * members of different versions compare it to detect corruption): a CRC-32C (Castagnoli) over the bucket
 * name "key", then over every entry of the backend's key bucket in revision order — the 17-byte revision
 * key (8-byte big-endian main, '_', 8-byte big-endian sub, plus 't' for a tombstone) followed by the stored
 * mvccpb.KeyValue in protobuf form (a tombstone stores only its key).
 *
 * Which entries count: every stored one with main <= the hashed revision, except that at or below the
 * compaction revision only what Keep(hashed revision) names counts — each key's newest revision at the hashed
 * revision, never a tombstone. So an old revision the compaction kept drops out of the hash once its key
 * changes again (observed on 3.4.23; etcd 3.6+ also keeps a tombstone at exactly the compaction revision in
 * its backend, and Keep leaves it out too). If Keep names nothing at all, etcd skips that filter and hashes
 * everything stored below the compaction point.
 *
 * The sub-revision of each change is its position in its txn (etcd numbers a txn's changes 0, 1, 2, …).
 */
import CRC32C from 'crc-32/crc32c.js';
import { isTombstone } from './key_index.js';
import type { Storage } from './store.js';
import { subRevision } from './sub_revision.js';
import type { KeyValue } from './types.js';

/** The backend key of a revision (mvcc revToBytes, plus the tombstone mark). */
function revisionKey(main: number, sub: number, tombstone: boolean): Uint8Array {
  const b = new Uint8Array(tombstone ? 18 : 17);
  const v = new DataView(b.buffer);
  v.setBigUint64(0, BigInt(main));
  b[8] = 0x5f; // '_'
  v.setBigUint64(9, BigInt(sub));
  if (tombstone) b[17] = 0x74; // 't'
  return b;
}

/** An int64 field's bytes (tag, varint; two's complement for negatives), or nothing at its default 0. */
function int64Field(field: number, v: number | bigint): number[] {
  if (v === 0 || v === 0n) return [];
  let u = BigInt.asUintN(64, BigInt(v));
  const out = [field << 3];
  while (u >= 0x80n) {
    out.push(Number(u & 0x7fn) | 0x80);
    u >>= 7n;
  }
  out.push(Number(u));
  return out;
}

/** A bytes field's head (tag, length), or nothing when empty. */
function bytesHead(field: number, len: number): number[] {
  if (len === 0) return [];
  const out = [(field << 3) | 2];
  let u = len;
  while (u >= 0x80) {
    out.push((u & 0x7f) | 0x80);
    u >>>= 7;
  }
  out.push(u);
  return out;
}

/** The stored value: mvccpb.KeyValue as Go's protobuf writes it (field order, defaults left out). */
function marshal(kv: KeyValue, tombstone: boolean): Uint8Array {
  const parts: (number[] | Uint8Array)[] = [bytesHead(1, kv.key.length), kv.key];
  if (!tombstone) {
    parts.push(int64Field(2, kv.createRevision), int64Field(3, kv.modRevision), int64Field(4, kv.version));
    parts.push(bytesHead(5, kv.value.length), kv.value, int64Field(6, kv.lease));
  }
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const KEY_BUCKET = new TextEncoder().encode('key');

/** etcd's HashKV hash of the store at `revision` (the caller has checked it against compaction and current). */
export function hashKV(s: Storage, revision: number): number {
  const entries: { kv: KeyValue; sub: number }[] = [];
  // At or below the compaction point, only what Keep(revision) names counts: each key's newest revision at
  // `revision`, unless that is a tombstone. When Keep names nothing, everything stored there counts.
  const below: { kv: KeyValue; kept: boolean }[] = [];
  let keepIsEmpty = true;
  s.index.forEachPair((_key, ki) => {
    const revs = ki.revs;
    let newest: KeyValue | undefined;
    for (const kv of revs) {
      if (kv.modRevision > revision) break; // revisions are in order
      newest = kv;
    }
    if (newest === undefined) return;
    const kept = !isTombstone(newest);
    if (kept) keepIsEmpty = false;
    for (const kv of revs) {
      if (kv.modRevision > revision) break;
      if (kv.modRevision > s.compactRev) entries.push({ kv, sub: subRevision(kv) });
      else below.push({ kv, kept: kept && kv === newest });
    }
  });
  for (const { kv, kept } of below) if (kept || keepIsEmpty) entries.push({ kv, sub: subRevision(kv) });
  entries.sort((a, b) => a.kv.modRevision - b.kv.modRevision || a.sub - b.sub);
  let crc = CRC32C.buf(KEY_BUCKET);
  for (const { kv, sub } of entries) {
    const tomb = isTombstone(kv);
    crc = CRC32C.buf(revisionKey(kv.modRevision, sub, tomb), crc);
    crc = CRC32C.buf(marshal(kv, tomb), crc);
  }
  return crc >>> 0;
}
