/**
 * etcd's hash of its whole backend (Maintenance.Hash: mvcc backend.Hash with the store's ignore list) — a
 * CRC-32C (Castagnoli) over every bolt bucket in name order: the bucket's name, then each key and value in
 * key order, leaving out only meta/consistent_index. It depends on what each bucket holds, not on bolt's
 * page layout, so it is computed from the same bucket tree a snapshot writes (backend_file.ts): one layout,
 * two uses. Checked against etcd 3.4.23: a fresh member, added and removed members, keys, leases,
 * compactions and roles agree.
 *
 * Where it cannot agree: users with a password (etcd stores a bcrypt hash with a random salt, so no two etcds
 * agree either), an auth store disabled after being enabled (etcd then keeps authEnabled = 0; the simulator
 * does not remember it was ever enabled). The 3.5+ profiles' meta keys: term and storageVersion are left
 * out as etcd leaves them out, confState is hashed as etcd hashes it (not checked against a real 3.5+ etcd,
 * none is installed).
 */
import CRC32C from 'crc-32/crc32c.js';
import { boltKey, compareKeys, isBucketEntry, type BoltBucket } from './bbolt.js';
import type { EtcdBackend } from './etcd_backend.js';
import { encodeEtcdBackend } from './backend_file.js';

const META = boltKey('meta');
/**
 * meta keys etcd leaves out of the hash: consistent_index (3.4), plus term (3.5) and storageVersion (3.6),
 * which change without any request of a user's. A 3.4 backend has neither of the latter, so one list does.
 */
const IGNORED_META = [boltKey('consistent_index'), boltKey('term'), boltKey('storageVersion')];

/** The backend hash a real etcd with this content reports (uint32). */
export function backendHash(b: EtcdBackend): number {
  let crc = 0;
  for (const top of encodeEtcdBackend(b).entries) {
    if (!isBucketEntry(top)) continue;
    crc = CRC32C.buf(top.key, crc);
    crc = hashEntries(top.bucket, crc, compareKeys(top.key, META) === 0);
  }
  return crc >>> 0;
}

function hashEntries(bucket: BoltBucket, crc: number, isMeta: boolean): number {
  for (const e of bucket.entries) {
    if (isMeta && IGNORED_META.some((k) => compareKeys(e.key, k) === 0)) continue;
    if (isBucketEntry(e)) continue; // etcd's buckets hold no nested buckets
    crc = CRC32C.buf(e.key, crc);
    crc = CRC32C.buf(e.value, crc);
  }
  return crc;
}
