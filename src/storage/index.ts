/**
 * A member's state on disk, in etcd's layout and formats: what etcd's wal package, its member/snap
 * directory and its backend file keep, so that a member restarted on its --data-dir finds everything it
 * acknowledged. It knows nothing of what the entries mean: it keeps Raft's hard state, Raft log entries
 * with opaque data, the metadata naming the member and cluster, and snapshot marks, for one member or for
 * each member of a cluster alike. Below src/server: it imports only mvcc's wire encoder and the snapshot
 * format's protobuf reader.
 *
 * How to use it (a member's start, then its steady state):
 *
 *   const layout = dataDirLayout(dataDir);                  // DATA-DIR/member/{wal,snap/db}
 *   if (walExists(layout.walDir)) {                         // restart: etcd's "already initialized"
 *     const { wal, contents } = Wal.open(layout.walDir);    // WalError: corrupt (etcd's words); a torn tail is repaired
 *     const db = readBackendFile(layout);                   // the last backend, or undefined
 *     // state = db (its consistent index C), then apply contents.entries with index > C, in order;
 *     // Raft resumes from contents.hardState (term, vote, commit) and contents.metadata's IDs.
 *   } else {
 *     mkdirSync(layout.snapDir, { recursive: true });
 *     wal = Wal.create(layout.walDir, { nodeId, clusterId });
 *   }
 *   wal.save(hardState, [entry, ...]);                      // synced when it returns: only then answer
 *   // every so often (--snapshot-count entries): fold the log into the backend, then
 *   writeBackendFile(layout, db); wal.saveSnapshot({ index, term }); wal.cut(); wal.releaseTo(index); wal.purge(0);
 *
 * Entries are raftpb.Entry (term, index, type, data): a single member of etcdsim puts etcd's
 * InternalRaftRequest encoding in `data` (src/server/raft_request.ts); conf changes go as type
 * 'confChange' with raftpb.ConfChange data, as etcd's do.
 */
export {
  WalError,
  rollCrc,
  type EntryType,
  type HardState,
  type WalEntry,
  type WalMetadata,
  type WalSnapshot,
} from './wal_record.js';
export { Wal, walExists, syncDir, SEGMENT_BYTES, type WalContents } from './wal.js';
export { dataDirLayout, readBackendFile, writeBackendFile, removeLeftovers, type DataDirLayout } from './data_dir.js';

// For the floors above, which import this folder only through this index (test/layout/index_imports.test.ts).
export { encodeFields } from './wal_record.js';
