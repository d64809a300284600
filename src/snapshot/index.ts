/**
 * Snapshots in etcd's own format: a bbolt reader and writer (bbolt.ts), etcd 3.4's backend layout
 * (etcd_backend.ts) and the mapping to and from a simulated member (member.ts).
 */
export { BoltFormatError, readBolt, writeBolt, childBucket, isBucketEntry, boltKey, type BoltBucket, type BoltEntry, type BoltDatabase, type BoltWriteOptions, type BoltEntrySource } from './bbolt.js';
export {
  SnapshotFormatError,
  readEtcdSnapshot,
  writeEtcdSnapshot,
  encodeEtcdBackend,
  decodeEtcdBackend,
  revisionKey,
  type EtcdBackend,
  type StoredLease,
  type StoredMember,
  type StoredRevision,
  type StoredRole,
  type StoredUser,
} from './etcd_backend.js';
export { backendOfMember, memberOfBackend, type LoadedMember, type MemberSnapshotSource, type RebuildOptions } from './member.js';
export { interruptCompaction, DEFAULT_COMPACTION_BATCH_LIMIT, type InterruptedCompaction } from './compaction.js';
export { snapshotStatus, type SnapshotStatus } from './status.js';
export { backendHash } from './backend_hash.js';
