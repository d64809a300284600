/**
 * What `etcdctl snapshot status` reports for a snapshot file (etcd 3.4's snapshot Status): a CRC-32C
 * (Castagnoli) over every top-level bucket's name followed by each of its entries' key and value, in
 * bbolt's order; the main revision of the key bucket's last entry; how many entries all buckets hold; and
 * the database's size (pages in use times the page size). Computing it here lets tests and users check a
 * file without etcd, and compare with what etcdctl prints.
 */
import CRC32C from 'crc-32/crc32c.js';
import { isBucketEntry, boltKey, compareKeys } from './bbolt.js';
import { readBolt } from './bbolt_reader.js';
import { SnapshotFormatError } from './etcd_backend.js';

/** etcd's snapshot.Status. */
export interface SnapshotStatus {
  readonly hash: number;
  readonly revision: number;
  readonly totalKey: number;
  readonly totalSize: number;
}

const KEY_BUCKET = boltKey('key');

/** `etcdctl snapshot status` of a snapshot file (with or without its SHA-256 trailer, which it ignores). */
export function snapshotStatus(file: Uint8Array): SnapshotStatus {
  const db = readBolt(file.length % 512 === 32 ? file.subarray(0, file.length - 32) : file);
  let crc = 0;
  let revision = 0;
  let totalKey = 0;
  for (const b of db.root.entries) {
    if (!isBucketEntry(b)) continue;
    crc = CRC32C.buf(b.key, crc);
    const isKey = compareKeys(b.key, KEY_BUCKET) === 0;
    for (const e of b.bucket.entries) {
      crc = CRC32C.buf(e.key, crc);
      // A nested bucket's value is bbolt's nil for ForEach: nothing is hashed for it.
      if (!isBucketEntry(e)) crc = CRC32C.buf(e.value, crc);
      if (isKey) {
        if (e.key.length < 8) throw new SnapshotFormatError('bucket key: a key shorter than a revision');
        const v = new DataView(e.key.buffer, e.key.byteOffset, 8);
        revision = v.getUint32(0) * 0x100000000 + v.getUint32(4);
      }
      totalKey++;
    }
  }
  return { hash: crc >>> 0, revision, totalKey, totalSize: db.pageCount * db.pageSize };
}
