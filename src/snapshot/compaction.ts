/**
 * The physical half of an etcd compaction, as its backend goes through it (etcd's scheduleCompaction,
 * server/storage/mvcc/kvstore_compaction.go): the compaction revision is recorded first (meta
 * `scheduledCompactRev`), the index is compacted at once, and then the key bucket is walked in revision
 * order up to the compaction revision, `batchLimit` entries at a time (--experimental-compaction-batch-limit,
 * 1000), deleting each entry the index compaction did not keep. Every full batch is committed on its own,
 * with a pause (10 ms) before the next one; the first batch with fewer entries than the limit deletes the
 * rest and records `finishedCompactRev` in the same transaction.
 *
 * The simulator compacts in one step. This models where a member killed in the middle of that walk leaves
 * its backend: the deletions of the batches committed so far, the compaction scheduled but not finished.
 */
import type { EtcdBackend, StoredRevision } from './etcd_backend.js';

/** etcd's default --experimental-compaction-batch-limit: key-bucket entries per compaction batch. */
export const DEFAULT_COMPACTION_BATCH_LIMIT = 1000;

/** Where a compaction stood when its member died, and the backend it left. @public */
export interface InterruptedCompaction {
  /** The compaction revision (meta scheduledCompactRev). */
  readonly rev: number;
  /** Batches the whole walk takes: the full ones, then the shorter one that records finishedCompactRev. */
  readonly batches: number;
  /** Batches committed before the member died (at most `batches`). */
  readonly committed: number;
  /** Whether the last batch, and with it finishedCompactRev, was committed: nothing is left to resume. */
  readonly finished: boolean;
  /** Revisions the committed batches deleted, and those the compaction still had to delete. */
  readonly deleted: number;
  readonly remaining: number;
  /** The revision of the last key-bucket entry the committed batches walked (0: none). */
  readonly walkedTo: number;
  /** @internal The backend after the crash (a member restarts from it: CompactionCrash.restart). */
  readonly backend: EtcdBackend;
}

/**
 * The backend a compaction at `rev` leaves when its member dies after `afterBatches` committed batches.
 * `before` is the backend as the compaction found it; `kept` holds every revision the index compaction
 * kept (the same backend after the simulator's complete compaction: what etcd's `keep` set names).
 */
export function interruptCompaction(
  before: EtcdBackend,
  kept: EtcdBackend,
  rev: number,
  afterBatches: number,
  batchLimit: number = DEFAULT_COMPACTION_BATCH_LIMIT,
): InterruptedCompaction {
  if (!Number.isSafeInteger(afterBatches) || afterBatches < 0) throw new RangeError(`interruptCompaction: afterBatches must be an integer >= 0, got ${afterBatches}`);
  if (!Number.isSafeInteger(batchLimit) || batchLimit < 1) throw new RangeError(`interruptCompaction: batchLimit must be an integer >= 1, got ${batchLimit}`);
  const keep = new Set<string>();
  for (const r of kept.revisions) if (r.main <= rev) keep.add(revKey(r));
  // The walk covers the key bucket up to the compaction revision; it is in revision order.
  let walk = 0;
  while (walk < before.revisions.length && before.revisions[walk]!.main <= rev) walk++;
  const batches = Math.floor(walk / batchLimit) + 1;
  const committed = Math.min(afterBatches, batches);
  const finished = committed === batches;
  const walked = finished ? walk : committed * batchLimit;
  const revisions: StoredRevision[] = [];
  let deleted = 0;
  let remaining = 0;
  for (let i = 0; i < before.revisions.length; i++) {
    const r = before.revisions[i]!;
    if (i < walk && !keep.has(revKey(r))) {
      if (i < walked) {
        deleted++;
        continue;
      }
      remaining++;
    }
    revisions.push(r);
  }
  return {
    rev,
    batches,
    committed,
    finished,
    deleted,
    remaining,
    walkedTo: walked > 0 ? before.revisions[walked - 1]!.main : 0,
    backend: {
      ...before,
      // The Compact entry itself was applied (scheduledCompactRev is written with its consistent index).
      consistentIndex: kept.consistentIndex,
      revisions,
      scheduledCompactRev: rev,
      finishedCompactRev: finished ? rev : before.finishedCompactRev,
    },
  };
}

function revKey(r: StoredRevision): string {
  return `${r.main}_${r.sub}`;
}
