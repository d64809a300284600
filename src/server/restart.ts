/**
 * What a member's snapshot and restart carry and report (EtcdServer.snapshot, restart and
 * crashDuringCompaction): a killed etcd rebuilds itself from its bbolt backend, and these say what the
 * rebuild found and what the member's clients lost.
 */
import type { AuthSnapshot } from '../auth/index.js';
import type { KeyValue, StoreSnapshot } from '../mvcc/index.js';
import type { InterruptedCompaction } from '../snapshot/index.js';
import type * as M from './messages.js';

/** A member's snapshot (EtcdServer.snapshot()): the store's state plus the auth store's persistent state. @public */
export interface MemberSnapshot extends StoreSnapshot {
  readonly auth?: AuthSnapshot | undefined;
}

/**
 * What a restart did (EtcdServer.restart): the member as its backend rebuilt it, and what its clients lost.
 * @public
 */
export interface MemberRestart {
  /** The store's revision and compaction point after the rebuild (and after a resumed compaction). */
  readonly revision: number;
  readonly compactRevision: number;
  /** The finished compaction the backend recorded (-1: none) and the one scheduled but unfinished, if any. */
  readonly finishedCompactRevision: number;
  readonly resumedCompactRevision: number | undefined;
  /** Keys in the rebuilt index (before the resumed compaction). */
  readonly keys: number;
  /**
   * Keys whose first stored revision was a tombstone, with it: restored into the index as etcd does since PR
   * #19188 (`loneTombstonesRestored`), or left out of it as before.
   */
  readonly loneTombstones: readonly KeyValue[];
  readonly loneTombstonesRestored: boolean;
  /** Watch and LeaseKeepAlive streams the kill broke. */
  readonly brokenStreams: number;
}

/** A compaction the member was killed in the middle of, and its restart (EtcdServer.crashDuringCompaction). @public */
export interface CompactionCrash {
  /** The Compact RPC's answer: it returns once the compaction is scheduled, before the deletions. */
  readonly response: M.CompactionResponse;
  /** How far the backend's deletions got, and the backend the kill left. */
  readonly progress: InterruptedCompaction;
  readonly restart: MemberRestart;
}
