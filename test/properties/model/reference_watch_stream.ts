/**
 * Naive references of what a watch stream owes its client besides the events themselves, written from
 * etcd's v3rpc serverWatchStream and mvcc watchStream (issue #35: no property required any of these, so
 * src/watch/watch_stream.ts could drop them and pass):
 *  - watch IDs (mvcc watchStream.Watch): an empty range is refused first; a watch asking for ID 0 gets the
 *    stream's counter, moved past every ID in use, and the counter moves one past it; an ID of the client's
 *    choosing that is in use is refused. A client's cancel frees its ID; a compaction cancel does not (the
 *    server still knows the watch until its client cancels it);
 *  - cancel (recvLoop's CancelRequest): answered only for an ID the stream knows;
 *  - progress ticks (sendLoop's progressTicker): one ticker per stream, its interval the configured one plus
 *    a jitter in [0, interval/10), drawn once when the stream starts; at each tick every progress_notify
 *    watch that was sent no events since the last tick gets a notification under its own ID, if it is
 *    synced and the store has reached its start revision (watchableStore.progressIfSync, PR #20229);
 *  - a progress request (etcd >= 3.5): one notification with watch ID -1 at the current revision, only if
 *    every watch the stream knows is synced and has reached its start revision;
 *  - prev_kv (sendLoop): read when the response is sent, at the event's revision - 1, for every event but a
 *    create; it is left out only when that read fails (compacted) or finds no key.
 */
import type { WatchCreateRequest, WatchResponse } from '../../../src/watch/index.js';
import type { CommittedHistory } from '../../../src/watch/guarantees.js';
import { SimRandom } from '../../../src/sim/index.js';

/** etcd's refusal texts, written out here so that a text changed in src/mvcc shows. */
export const EMPTY_RANGE = 'mvcc: watcher range is empty';
export const DUPLICATE_ID = 'mvcc: duplicate watch ID provided on the WatchStream';
export const COMPACTED = 'etcdserver: mvcc: required revision has been compacted';

const latin1 = (u: Uint8Array): string => Buffer.from(u.buffer, u.byteOffset, u.byteLength).toString('latin1');

/** What a create request must get: a watch ID, or a refusal with its reason. */
export type CreateOutcome = { readonly id: number } | { readonly refused: string };

/** The IDs a stream hands out and knows, as mvcc's watchStream keeps them. */
export class WatchIdReference {
  private next = 0;
  private readonly known = new Set<number>();

  /** The outcome a create must have (a negative start revision is judged by the caller: releases differ). */
  create(req: WatchCreateRequest): CreateOutcome {
    const key = req.key.length === 0 ? '\0' : latin1(req.key);
    const end = req.rangeEnd;
    // No range end and "\0" (every key >= key) are never empty.
    if (end !== undefined && end.length > 0 && !(end.length === 1 && end[0] === 0) && key >= latin1(end)) return { refused: EMPTY_RANGE };
    const asked = req.watchId ?? 0;
    if (asked !== 0) {
      if (this.known.has(asked)) return { refused: DUPLICATE_ID };
      this.known.add(asked);
      return { id: asked };
    }
    while (this.known.has(this.next)) this.next++;
    const id = this.next++;
    this.known.add(id);
    return { id };
  }

  /** A client's cancel: whether the stream knows the ID (and answers); the ID is free again. */
  cancel(id: number): boolean {
    return this.known.delete(id);
  }

  knows(id: number): boolean {
    return this.known.has(id);
  }
}

/** The stream's progress interval: the configured one plus a jitter drawn once in [0, interval/10). */
export function progressIntervalOf(seed: number, seq: number, baseMs: number): number {
  const maxJitter = Math.floor(baseMs / 10) - 1;
  return baseMs + (maxJitter <= 0 ? 0 : new SimRandom(seed).fork(`watch.stream.${seq}`).nextInt(0, maxJitter));
}

/** Whether a key existed just before `rev`, by the committed history (complete from revision 2). */
export function keyTimeline(history: CommittedHistory): (key: string, rev: number) => boolean {
  const changes = new Map<string, { rev: number; live: boolean }[]>();
  for (const hr of history.revisions) {
    for (const ev of hr.events) {
      const k = latin1(ev.kv.key);
      let t = changes.get(k);
      if (t === undefined) changes.set(k, (t = []));
      t.push({ rev: hr.revision, live: ev.type === 'PUT' });
    }
  }
  return (key, rev) => {
    let live = false;
    for (const c of changes.get(key) ?? []) {
      if (c.rev >= rev) break;
      live = c.live;
    }
    return live;
  };
}

/**
 * The events of a prev_kv watch that came without prev_kv though it was readable: not a create, the key
 * live at the revision before, and that revision at or above the compaction revision when the client read
 * the response (the send came earlier, when the compaction revision was at most that).
 */
export function missingPrevKv(
  req: WatchCreateRequest,
  responses: readonly WatchResponse[],
  compactedAtRead: readonly number[],
  existedBefore: (key: string, rev: number) => boolean,
): string[] {
  if (req.prevKv !== true) return [];
  const out: string[] = [];
  responses.forEach((r, i) => {
    for (const ev of r.events) {
      if (ev.prevKv !== undefined || (ev.type === 'PUT' && ev.kv.createRevision === ev.kv.modRevision)) continue;
      const at = ev.kv.modRevision - 1;
      const key = latin1(ev.kv.key);
      if (at >= compactedAtRead[i]! && existedBefore(key, ev.kv.modRevision)) {
        out.push(`response ${i}: ${ev.type} ${JSON.stringify(key)}@${ev.kv.modRevision} has no prev_kv, though revision ${at} was readable (compacted at ${compactedAtRead[i]} when read)`);
      }
    }
  });
  return out;
}
