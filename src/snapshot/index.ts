/**
 * Snapshots in etcd's own format: bbolt's file format (bbolt.ts) with its writer and reader, etcd 3.4's
 * backend layout (etcd_backend.ts; its records: backend_records.ts; the whole file: backend_file.ts) and the
 * mapping to and from a simulated member (member.ts).
 */
export { BoltFormatError, childBucket, isBucketEntry, boltKey, type BoltBucket, type BoltEntry, type BoltDatabase, type BoltEntrySource } from './bbolt.js';
export { writeBolt, type BoltWriteOptions } from './bbolt_writer.js';
export { readBolt } from './bbolt_reader.js';
export { readEtcdSnapshot, writeEtcdSnapshot, encodeEtcdBackend, decodeEtcdBackend } from './backend_file.js';
export { memberJson, parseMember, revisionKey } from './backend_records.js';
export {
  SnapshotFormatError,
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

// For the floors above, which import this folder only through this index (test/layout/index_imports.test.ts).
export { decodeFields, ProtoFormatError } from './proto_reader.js';
export type { ProtoField } from './proto_reader.js';
export { layoutEtcdBackend } from './backend_file.js';
export type { BoltLayout } from './bbolt_writer.js';
