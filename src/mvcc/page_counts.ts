/**
 * The `count` of a paged read (etcd's RangeResponse.count with a limit), remembered between pages. etcd
 * answers every page of a list with the count of every live key from the page's start to the range's end,
 * and finds it by walking all of them (treeIndex.Revisions); a list of n keys in pages of p walks about
 * n²/2p keys. The answer is the same without the walk: at a revision the store has committed, which keys
 * are live never changes again (later writes are later revisions; a compaction at or below it leaves what a
 * read at it sees, one above it refuses the read), so a page's walk already knows the count of every later
 * page that starts where it stopped. A page then costs its limit and one B-tree descent.
 *
 * What one walk leaves behind: the last two live keys it collected, a and b, and the count from b on.
 * No live key lies between them, so the count from any start in (a, b] — a + "\0" (how etcd3, kubernetes
 * and etcdctl ask for the next page) up to b itself — is that count. A restore, which can bring back a
 * revision number with other contents, forgets everything.
 */
import type { KeyString } from './bytes.js';
import type { RangeEnd } from './store.js';

/** For every start in [low, high]: the live keys in [start, end) at rev. */
interface PageCount {
  readonly rev: number;
  readonly end: RangeEnd;
  readonly low: KeyString;
  readonly high: KeyString;
  readonly count: number;
}

/** How many lists in progress are remembered at once (readers paging side by side); the oldest goes first. */
const KEPT = 8;

export class PageCounts {
  private kept: PageCount[] = [];

  /** The count of live keys in [start, end) at `rev`, when a page before this one learned it. */
  countFrom(rev: number, end: RangeEnd, start: KeyString): number | undefined {
    for (const p of this.kept) {
      if (p.rev === rev && p.end === end && start >= p.low && start <= p.high) return p.count;
    }
    return undefined;
  }

  /**
   * Notes what a limited walk at the committed revision `rev` learned: `before` and `last` are the last two
   * live keys it collected (`before` undefined when it collected one, starting at `start`), and `countFromLast`
   * the live keys from `last` to the end.
   */
  note(rev: number, end: RangeEnd, start: KeyString, before: KeyString | undefined, last: KeyString, countFromLast: number): void {
    // The page this walk continued from is done with: its successor replaces it.
    const kept = this.kept.filter((p) => !(p.rev === rev && p.end === end && start >= p.low && start <= p.high));
    if (kept.length >= KEPT) kept.shift();
    const low = before === undefined ? start : before + '\0';
    kept.push({ rev, end, low, high: last, count: countFromLast });
    this.kept = kept;
  }

  /** Forgets every count (the store's contents were replaced). */
  clear(): void {
    this.kept = [];
  }
}
