/**
 * The watchable store (etcd server/storage/mvcc/watchable_store.go). Watchers live in one of three places:
 *  - synced: caught up; every committed revision is pushed to them from the write path (notify), one
 *    response per revision;
 *  - unsynced: behind (a past start revision, a restore, a victim that recovered); a periodic sync step
 *    replays history to them in batches of at most 1000 revisions, or cancels them with the compaction
 *    revision when the history they need is gone;
 *  - victims: their stream's channel was full; the batch they could not take is retried periodically.
 * The periodic steps run on the simulator's Ticker (virtual time), or by hand through syncWatchers()
 * and moveVictims() when no ticker is given.
 */
import { type Event, type KeyString, type MvccStore, type StoreSnapshot, type RangeEnd } from '../mvcc/index.js';
import type { Clock, SimRandom, Ticker } from '../sim/index.js';
import { WatcherGroup } from './watcher_group.js';
import { EventBatch, Watcher } from './watcher.js';
import { WatchStream } from './watch_stream.js';

/** etcd's defaults (watchable_store.go, watcher_group.go, v3rpc/watch.go). @public */
export const WATCH_DEFAULTS = {
  syncIntervalMs: 100,
  victimIntervalMs: 10,
  chanBufLen: 128,
  maxWatchersPerSync: 512,
  watchBatchMaxRevs: 1000,
  progressNotifyIntervalMs: 10 * 60 * 1000,
  /** grpc-go's per-stream write quota (defaultWriteQuota): what Send accepts before it blocks. */
  sendWindowBytes: 64 * 1024,
} as const;

/** @public */
export interface WatchableStoreOptions {
  /** @internal Drives the sync and victim steps; without one, call syncWatchers()/moveVictims() yourself. */
  readonly ticker?: Ticker | undefined;
  /** Needed for periodic progress notifications (per stream, like etcd's sendLoop ticker). */
  readonly clock?: Clock | undefined;
  /** @internal Jitter of the progress interval (etcd adds up to 10%); without it there is no jitter. */
  readonly random?: SimRandom | undefined;
  readonly syncIntervalMs?: number | undefined;
  readonly victimIntervalMs?: number | undefined;
  /** Responses a stream buffers before its watchers become victims (etcd chanBufLen). */
  readonly chanBufLen?: number | undefined;
  /** Bytes a stream's transport holds unread before its send loop waits (see WatchStream). */
  readonly sendWindowBytes?: number | undefined;
  readonly maxWatchersPerSync?: number | undefined;
  readonly watchBatchMaxRevs?: number | undefined;
  /** --experimental-watch-progress-notify-interval (etcd default 10 min). */
  readonly progressNotifyIntervalMs?: number | undefined;
  /** The response-size limit for fragmenting (etcd: --max-request-bytes + 512 KiB). */
  readonly maxResponseBytes?: number | undefined;
  /**
   * etcd PR #20281 (issue #20221): a sync step never lowers a watcher's minRev, so a future-revision
   * watcher moved to unsynced by a restore receives nothing below its start revision. `false`
   * reproduces the bug (minRev = current+1) for teaching runs.
   */
  readonly restoreKeepsFutureMinRev?: boolean | undefined;
  /**
   * etcd PR #20229 (issue #20221): no progress notification below a watcher's start revision.
   * `false` reproduces the bug.
   */
  readonly progressRespectsStartRev?: boolean | undefined;
  /** Names of the ticker steps, when several stores share one ticker. */
  readonly stepPrefix?: string | undefined;
}

/** @public */
export class WatchableStore {
  /** @internal */
  readonly synced = new WatcherGroup();
  /** @internal */
  unsynced = new WatcherGroup();
  /** @internal Batches that could not be delivered, each retried as a whole (etcd watcherBatch list). */
  victims: Map<Watcher, EventBatch>[] = [];
  readonly chanBufLen: number;
  readonly sendWindowBytes: number;
  readonly maxWatchersPerSync: number;
  readonly watchBatchMaxRevs: number;
  readonly progressNotifyIntervalMs: number;
  readonly maxResponseBytes: number;
  readonly restoreKeepsFutureMinRev: boolean;
  readonly progressRespectsStartRev: boolean;
  readonly clock: Clock | undefined;
  /** @internal */
  readonly random: SimRandom | undefined;
  /**
   * A sync step made progress but left work: etcd yields for as long as the step took, then syncs again.
   * Here the retry runs one victim step later ('pending' → 'armed' → sync), never at the same instant.
   */
  private syncAgain: 'no' | 'pending' | 'armed' = 'no';
  private streamSeq = 0;

  /** @internal */
  constructor(
    readonly kv: MvccStore,
    opts: WatchableStoreOptions = {},
  ) {
    this.chanBufLen = opts.chanBufLen ?? WATCH_DEFAULTS.chanBufLen;
    this.sendWindowBytes = opts.sendWindowBytes ?? WATCH_DEFAULTS.sendWindowBytes;
    this.maxWatchersPerSync = opts.maxWatchersPerSync ?? WATCH_DEFAULTS.maxWatchersPerSync;
    this.watchBatchMaxRevs = opts.watchBatchMaxRevs ?? WATCH_DEFAULTS.watchBatchMaxRevs;
    this.progressNotifyIntervalMs = opts.progressNotifyIntervalMs ?? WATCH_DEFAULTS.progressNotifyIntervalMs;
    this.maxResponseBytes = opts.maxResponseBytes ?? kv.maxRequestBytes + 512 * 1024;
    this.restoreKeepsFutureMinRev = opts.restoreKeepsFutureMinRev ?? true;
    this.progressRespectsStartRev = opts.progressRespectsStartRev ?? true;
    this.clock = opts.clock;
    this.random = opts.random;
    // A commit's events are built only for a watcher that may want them (notify returns at once without one).
    kv.storage.subscribeLazy((rev, events) => {
      if (this.synced.size > 0) this.notify(rev, events());
    });
    const ticker = opts.ticker;
    if (ticker !== undefined) {
      const prefix = opts.stepPrefix ?? 'watch';
      ticker.add(`${prefix}.sync`, opts.syncIntervalMs ?? WATCH_DEFAULTS.syncIntervalMs, () => {
        if (this.unsynced.size > 0) this.syncWatchers();
      });
      ticker.add(`${prefix}.victims`, opts.victimIntervalMs ?? WATCH_DEFAULTS.victimIntervalMs, () => {
        while (this.moveVictims() !== 0) {
          // keep going while victims make progress, as etcd's syncVictimsLoop does
        }
        if (this.syncAgain === 'armed') this.syncWatchers();
        else if (this.syncAgain === 'pending') this.syncAgain = 'armed';
      });
    }
  }

  /** A new watch stream (one gRPC Watch call); many watchers share its channel. */
  newWatchStream(): WatchStream {
    return new WatchStream(this, this.streamSeq++);
  }

  /** The store's current revision (watchStream.Rev). */
  rev(): number {
    return this.kv.currentRevision;
  }

  /**
   * @internal Registers a watcher (watchableStore.watch). Start revision 0 or in the future: synced, waiting for
   * minRev = max(current+1, startRev). A past start revision: unsynced, to be replayed by the sync step.
   */
  watch(stream: WatchStream, id: number, key: KeyString, end: RangeEnd, startRev: number, noPut: boolean, noDelete: boolean): Watcher {
    const w = new Watcher(id, key, end, startRev, noPut, noDelete, stream);
    const cur = this.kv.currentRevision;
    if (startRev > cur || startRev === 0) {
      w.minRev = Math.max(cur + 1, startRev);
      this.synced.add(w);
    } else {
      this.unsynced.add(w);
    }
    return w;
  }

  /** @internal Removes a watcher wherever it is (cancelWatcher). */
  cancelWatcher(w: Watcher): void {
    this.unsynced.delete(w);
    this.synced.delete(w);
    for (const batch of this.victims) batch.delete(w);
  }

  /**
   * notify: pushes one committed revision to every synced watcher it concerns. A watcher whose channel
   * is full becomes a victim with that revision's batch. minRev always moves past the revision.
   */
  notify(rev: number, events: readonly Event[]): void {
    if (this.synced.size === 0) return;
    let victims: Map<Watcher, EventBatch> | undefined;
    if (events.length === 1) {
      // The common case: one change, one shared events array for every watcher.
      const kv = events[0]!.kv;
      for (const w of this.synced.matching(kv.key)) {
        if (kv.modRevision >= w.minRev && !this.sendNotified(w, events, rev)) (victims ??= new Map()).set(w, batchOf(events));
      }
    } else {
      const batches = new Map<Watcher, Event[]>();
      for (const ev of events) {
        for (const w of this.synced.matching(ev.kv.key)) {
          if (ev.kv.modRevision < w.minRev) continue;
          const b = batches.get(w);
          if (b === undefined) batches.set(w, [ev]);
          else b.push(ev);
        }
      }
      for (const [w, evs] of batches) if (!this.sendNotified(w, evs, rev)) (victims ??= new Map()).set(w, batchOf(evs));
    }
    if (victims !== undefined) this.victims.push(victims);
  }

  /**
   * Sends a notified revision's events to a synced watcher; false when its channel is full: it leaves the
   * synced group as a victim. Its minRev moves past the revision either way.
   */
  private sendNotified(w: Watcher, evs: readonly Event[], rev: number): boolean {
    const sent = w.send(evs, rev);
    if (!sent) {
      w.victim = true;
      this.synced.delete(w);
    }
    w.minRev = rev + 1;
    return sent;
  }

  /**
   * syncWatchers: picks up to maxWatchersPerSync unsynced watchers; cancels those behind the compaction
   * point with the compaction revision; replays history from the lowest minRev to the current revision,
   * at most watchBatchMaxRevs revisions per watcher; caught-up watchers move to synced. Returns how many
   * watchers remain unsynced.
   */
  syncWatchers(): number {
    this.syncAgain = 'no';
    const before = this.unsynced.size;
    const curRev = this.kv.currentRevision;
    const compactRev = this.kv.compactRevision;
    const chosen = new WatcherGroup();
    let minRev = Infinity;
    for (const w of this.unsynced.watchers) {
      if (chosen.size >= this.maxWatchersPerSync) break;
      // A restore may have left its minRev in the future (checkValid allows that only until this sync).
      w.restore = false;
      if (w.minRev < compactRev) {
        // The history this watcher needs is gone: cancel it with the compaction revision.
        if (w.stream.offer(w.id, NO_EVENTS, 0, compactRev)) {
          w.compacted = true;
          this.unsynced.delete(w);
        }
        continue;
      }
      chosen.add(w);
      minRev = Math.min(minRev, w.minRev);
    }
    const batches = this.collectBatches(chosen, minRev, curRev);
    let victims: Map<Watcher, EventBatch> | undefined;
    for (const w of chosen.watchers) {
      w.minRev = this.restoreKeepsFutureMinRev ? Math.max(curRev + 1, w.minRev) : curRev + 1;
      const eb = batches.get(w);
      if (eb === undefined) {
        this.synced.add(w);
        this.unsynced.delete(w);
        continue;
      }
      if (eb.moreRev !== 0) w.minRev = eb.moreRev;
      if (!w.send(eb.evs, curRev)) {
        w.victim = true;
        victims ??= new Map();
        victims.set(w, eb);
      } else if (eb.moreRev !== 0) {
        continue; // more history to read: stays unsynced
      } else {
        this.synced.add(w);
      }
      this.unsynced.delete(w);
    }
    if (victims !== undefined) this.victims.push(victims);
    const after = this.unsynced.size;
    this.syncAgain = after > 0 && after < before ? 'pending' : 'no';
    return after;
  }

  /** Events in [minRev, curRev] for the chosen watchers, read revision by revision from the log. */
  private collectBatches(chosen: WatcherGroup, minRev: number, curRev: number): Map<Watcher, EventBatch> {
    const batches = new Map<Watcher, EventBatch>();
    const maxRevs = this.watchBatchMaxRevs;
    let open = chosen.size; // watchers whose batch can still grow (none chosen: minRev is Infinity, nothing is read)
    for (let r = Math.max(minRev, 1); r <= curRev && open > 0; r++) {
      for (const ev of this.kv.eventsAt(r)) {
        for (const w of chosen.matching(ev.kv.key)) {
          // minRev below 1 only for etcd 3.4's negative start revision, which replayed nothing.
          if (ev.kv.modRevision < w.minRev || w.minRev < 1) continue;
          let eb = batches.get(w);
          if (eb === undefined) {
            eb = new EventBatch();
            batches.set(w, eb);
          } else if (eb.moreRev !== 0) {
            continue; // full: the next batch starts at its moreRev
          }
          eb.add(ev, maxRevs);
          if (eb.moreRev !== 0) open--;
        }
      }
    }
    return batches;
  }

  /**
   * moveVictims: retries each victim batch (header revision minRev-1); delivered watchers go back to
   * unsynced if they are behind, or to synced. Returns how many were delivered.
   */
  moveVictims(): number {
    const victims = this.victims;
    this.victims = [];
    let moved = 0;
    const stillBlocked = new Map<Watcher, EventBatch>();
    const curRev = this.kv.currentRevision;
    for (const batch of victims) {
      for (const [w, eb] of batch) {
        if (!w.send(eb.evs, w.minRev - 1)) {
          stillBlocked.set(w, eb);
          continue;
        }
        moved++;
        w.victim = false;
        // A catch-up batch's watcher already waits at the batch's moreRev (syncWatchers set it before the send).
        if (w.minRev <= curRev) this.unsynced.add(w);
        else this.synced.add(w);
      }
    }
    if (stillBlocked.size > 0) this.victims.push(stillBlocked);
    return moved;
  }

  /**
   * @internal progressIfSync: a progress notification (no events, current revision) goes out only if every given
   * watcher is synced and the current revision has reached each one's start revision (PR #20229).
   */
  progressIfSync(watchers: Iterable<Watcher>, responseWatchId: number): boolean {
    const rev = this.kv.currentRevision;
    let first: Watcher | undefined;
    for (const w of watchers) {
      if (!this.synced.has(w)) return false;
      if (this.progressRespectsStartRev && rev < w.startRev) return false;
      first ??= w;
    }
    if (first !== undefined) first.stream.offer(responseWatchId, NO_EVENTS, rev, 0);
    return true;
  }

  /**
   * Restore (what a follower does with the leader's snapshot): replaces the store's state and moves every
   * synced watcher to unsynced, flagged `restore` since its minRev may now lie in the future. A follower
   * only ever restores forward; the simulator also allows an older snapshot, so it flags the watchers
   * that were already unsynced too (one mid catch-up may have read past the snapshot's revision).
   */
  restore(snapshot: StoreSnapshot): void {
    this.kv.restore(snapshot);
    for (const w of this.unsynced.watchers) w.restore = true;
    for (const w of this.synced.watchers) {
      w.restore = true;
      this.unsynced.add(w);
    }
    for (const w of [...this.synced.watchers]) this.synced.delete(w);
  }

  // Stryker disable all: an invariant checker is the properties' oracle (docs/mutation.md)
  /**
   * The store's invariants, checked after every step of the property tests (etcd keeps them implicitly;
   * a break here is a watcher that silently stops receiving, or receives twice). Returns the first
   * violation found, or undefined:
   *  - every watcher is in exactly one place: synced, unsynced or one victim batch, and flagged a victim
   *    exactly when it is in a victim batch;
   *  - no synced watcher is behind: no revision from its minRev to the current one holds an event it
   *    watches (the write path delivered each one and moved minRev past it);
   *  - an unsynced watcher is ahead of the current revision only after a restore.
   */
  checkValid(): string | undefined {
    const place = new Map<Watcher, string>();
    const file = (w: Watcher, where: string): string | undefined => {
      const before = place.get(w);
      if (before !== undefined) return `watcher ${w.id} is both ${before} and ${where}`;
      place.set(w, where);
      return undefined;
    };
    for (const [name, group] of [['synced', this.synced], ['unsynced', this.unsynced]] as const) {
      const bad = group.checkValid();
      if (bad !== undefined) return `${name}: ${bad}`;
      for (const w of group.watchers) {
        const twice = file(w, name);
        if (twice !== undefined) return twice;
        if (w.victim) return `watcher ${w.id} is ${name} but flagged a victim`;
        if (w.compacted) return `watcher ${w.id} is ${name} but was canceled by compaction`;
      }
    }
    for (const [i, batch] of this.victims.entries()) {
      for (const w of batch.keys()) {
        const twice = file(w, `in victim batch ${i}`);
        if (twice !== undefined) return twice;
        if (!w.victim) return `watcher ${w.id} is in victim batch ${i} but not flagged a victim`;
      }
    }
    const cur = this.kv.currentRevision;
    for (const w of this.unsynced.watchers) {
      if (w.minRev > cur && !w.restore) return `unsynced watcher ${w.id} waits for ${w.minRev}, past the current revision ${cur}, without a restore`;
    }
    const from = this.kv.compactRevision + 1;
    for (const w of this.synced.watchers) {
      for (let r = Math.max(w.minRev, from); r <= cur; r++) {
        const missed = this.kv.eventsAt(r).find((ev) => this.synced.matching(ev.kv.key).includes(w));
        if (missed !== undefined) return `synced watcher ${w.id} (minRev ${w.minRev}) was never sent revision ${r}`;
      }
    }
    return undefined;
  }
  // Stryker restore all
}

const NO_EVENTS: readonly Event[] = Object.freeze([]);

/** A victim's batch: the events it could not take, retried whole. */
function batchOf(evs: readonly Event[]): EventBatch {
  const eb = new EventBatch();
  for (const ev of evs) eb.add(ev, Infinity);
  return eb;
}
