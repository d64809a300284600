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
import { marshalKeyValue } from './wire.js';

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

const KEY_BUCKET = new TextEncoder().encode('key');

/** etcd's HashKV hash of the store at `revision` (the caller has checked it against compaction and current). */
export function hashKV(s: Storage, revision: number): number {
  const entries: { kv: KeyValue; sub: number }[] = [];
  // At or below the compaction point, only what Keep(revision) names counts: each key's newest revision at
  // `revision`, unless that is a tombstone. When Keep names nothing, everything stored there counts.
  const below: { kv: KeyValue; kept: boolean }[] = [];
  let keepIsEmpty = true;
  s.index.forEachRevs((_key, _keyBytes, revs) => {
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
    crc = CRC32C.buf(marshalKeyValue(kv, tomb), crc);
  }
  return crc >>> 0;
}
