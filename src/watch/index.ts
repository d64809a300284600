/** The watchable store: etcd's watch semantics over the MVCC store. */
export { WatchableStore, WATCH_DEFAULTS, type WatchableStoreOptions } from './watchable_store.js';
export { WatchStream, INVALID_WATCH_ID } from './watch_stream.js';
export type { WatchCreateRequest, WatchEvent, WatchFilter, WatchResponse } from './types.js';
export {
  checkWatch,
  assertWatchGuarantees,
  recordHistory,
  historyFromStore,
  isProgressNotify,
  formatViolations,
  type WatchGuarantee,
  type WatchViolation,
  type CommittedHistory,
  type HistoryRevision,
} from './guarantees.js';
