/**
 * A watcher (etcd server/storage/mvcc/watchable_store.go `watcher`): a key or range, the next revision
 * it still needs (minRev), the revision it asked to start at, its filters, and the stream it sends to.
 */
import { keyBytes, type Event, type KeyString, type RangeEnd } from '../mvcc/index.js';
import type { WatchStream } from './watch_stream.js';

export class Watcher {
  /** The revision the client asked for; progress is never reported below it (etcd PR #20229). */
  readonly startRev: number;
  /** The lowest revision whose events this watcher still has to receive. */
  minRev: number;
  /** Its channel was full; its pending batch waits in the victim list. */
  victim = false;
  /** Canceled by compaction; no longer in any group. */
  compacted = false;
  /** Moved from synced to unsynced by a restore; may legitimately have minRev > current revision. */
  restore = false;
  /** The key's bytes, and the range end's (undefined: no end, or a single key). */
  private readonly keyBytes: Uint8Array;
  private readonly endBytes: Uint8Array | undefined;

  constructor(
    readonly id: number,
    readonly key: KeyString,
    readonly end: RangeEnd,
    startRev: number,
    readonly noPut: boolean,
    readonly noDelete: boolean,
    readonly stream: WatchStream,
  ) {
    this.startRev = startRev;
    this.minRev = startRev;
    this.keyBytes = keyBytes(key);
    this.endBytes = end === undefined || end === '' ? undefined : keyBytes(end);
  }

  /**
   * Whether the key whose bytes are `key` falls in this watcher's range (a range watcher's test, without the
   * key's string: a commit tells each range watcher of every key it changes).
   */
  containsBytes(key: Uint8Array): boolean {
    return compare(key, this.keyBytes) >= 0 && (this.endBytes === undefined || compare(key, this.endBytes) < 0);
  }

  /**
   * watcher.send: applies filters, then offers the response to the stream's bounded channel. A response
   * whose events were all filtered out counts as sent (nothing is sent). False means the channel is full.
   */
  send(events: readonly Event[], revision: number): boolean {
    if ((this.noPut || this.noDelete) && events.length > 0) {
      const kept = events.filter((ev) => (ev.type === 'PUT' ? !this.noPut : !this.noDelete));
      if (kept.length === 0) return true;
      events = kept;
    }
    return this.stream.offer(this.id, events, revision, 0);
  }
}

/** bytes.Compare's sign, in a loop: a watched key and its range's ends are a few bytes (a native call costs more). */
function compare(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = a[i]! - b[i]!;
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

/**
 * eventBatch: events for one watcher, at most `maxRevs` distinct revisions; `moreRev` is the first
 * revision left out, where the next catch-up batch starts.
 */
export class EventBatch {
  readonly evs: Event[] = [];
  revs = 0;
  moreRev = 0;

  /** Adds an event of a revision at or after the last one's; a full batch (moreRev set) takes no more (the caller's rule). */
  add(ev: Event, maxRevs: number): void {
    const n = this.evs.length;
    if (n === 0) {
      this.revs = 1;
    } else if (ev.kv.modRevision > this.evs[n - 1]!.kv.modRevision) {
      if (this.revs === maxRevs) {
        this.moreRev = ev.kv.modRevision;
        return;
      }
      this.revs++;
    }
    this.evs.push(ev);
  }
}
