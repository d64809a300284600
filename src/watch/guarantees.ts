/**
 * A checker for etcd's watch guarantees, usable on any recorded watch: the simulator's own streams in the
 * property tests, or a stream a user recorded from a real etcd and wants to judge.
 *
 * The guarantees are those of etcd's API guarantees page (https://etcd.io/docs/v3.6/learning/api_guarantees/
 * #watch-apis), checked the way etcd's robustness tests check them (tests/robustness/validate/watch.go):
 * Filter, Ordered, Unique, Atomic, Bookmarkable, Reliable, Resumable, IsCreate and PrevKV. The checker
 * additionally honours what the robustness traffic never uses: NOPUT/NODELETE filters, fragmented
 * responses (reassembled first, as the Go client does), a watch's start revision for progress
 * notifications (etcd PR #20229), and compaction cancels.
 *
 * Inputs: the committed history (every revision with its events, in sub-revision order), the watch's
 * create request and the responses that watch received, in order. The responses of one watch are what
 * a client routes to it: its own responses plus any stream-wide progress notification (watch ID -1).
 * Stop recording a watch when its client asks to cancel it (keep only the final canceled response): a
 * cancel may overtake events already queued for the watch, while a stream-wide progress notification
 * queued after them still goes out — etcd behaves the same, and the Go client stops listening at cancel.
 * Any event or progress notification after a canceled response is reported (as Reliable).
 *
 * Only types are imported: the checker has no dependency on the engine it judges.
 */
import type { Event, KeyValue } from '../mvcc/index.js';
import type { WatchCreateRequest, WatchEvent, WatchResponse } from './types.js';

/** The guarantees, named as etcd's robustness validators name them. @public */
export type WatchGuarantee = 'Filter' | 'Ordered' | 'Unique' | 'Atomic' | 'Bookmarkable' | 'Reliable' | 'Resumable' | 'IsCreate' | 'PrevKV';

/** @public */
export interface WatchViolation {
  readonly guarantee: WatchGuarantee;
  readonly message: string;
  /** Index in the given responses where the violation shows; -1 when it concerns the watch as a whole. */
  readonly responseIndex: number;
}

/** One committed revision and its events, in the order the revision produced them. @public */
export interface HistoryRevision {
  readonly revision: number;
  readonly events: readonly Event[];
}

/**
 * The committed history the watch is judged against. It must list every revision that changed anything
 * from `completeFrom` on (a revision with no entry is taken to have changed nothing). Events below
 * `completeFrom` are not judged for Reliable/Resumable, and a key's state before `completeFrom` is known
 * only through `baseline`.
 * @public
 */
export interface CommittedHistory {
  readonly revisions: readonly HistoryRevision[];
  /** First revision the list is complete from. Default: 2, the first revision a fresh store commits. */
  readonly completeFrom?: number | undefined;
  /** Every live key at revision completeFrom - 1. Without it, keys untouched since then are unknown. */
  readonly baseline?: readonly KeyValue[] | undefined;
}

/** @public */
export interface CheckWatchOptions {
  /**
   * The watch was still open and its client had taken every response once the store reached this
   * revision (and every background sync step had run). Reliable then also demands every matching event
   * up to this revision, not only those before the last one received. Ignored for a canceled watch.
   */
  readonly drainedThrough?: number | undefined;
  /** Stop after this many violations (default 50). */
  readonly maxViolations?: number | undefined;
}

/** The store surface historyFromStore needs (MvccStore fits). @public */
export interface HistorySource {
  readonly currentRevision: number;
  readonly compactRevision: number;
  eventsAt(revision: number): readonly Event[];
  /** Before etcd 3.6 a compaction also dropped the deletes of the compaction revision itself. */
  readonly compat?: { readonly keepTombstoneAtCompactRev: boolean } | undefined;
}

/**
 * The history a store still holds: from its compaction revision (or 2) to its current revision. Watches
 * that reach below that are judged only from there on; record with {@link recordHistory} to keep all of it.
 * @public
 */
export function historyFromStore(store: HistorySource): CommittedHistory {
  const c = store.compactRevision;
  const from = Math.max(2, store.compat?.keepTombstoneAtCompactRev === false && c > 0 ? c + 1 : c);
  const revisions: HistoryRevision[] = [];
  for (let r = from; r <= store.currentRevision; r++) {
    const events = store.eventsAt(r);
    if (events.length > 0) revisions.push({ revision: r, events });
  }
  return { revisions, completeFrom: from };
}

/** The store surface recordHistory needs (MvccStore fits). @public */
export interface CommitSource {
  readonly currentRevision: number;
  subscribe(listener: (revision: number, events: readonly Event[]) => void): () => void;
}

/**
 * Records every revision a store commits from now on. Attach it to a fresh store (revision 1) to get a
 * history complete from revision 2 with an empty baseline.
 * @public
 */
export function recordHistory(store: CommitSource): { readonly history: CommittedHistory; stop(): void } {
  const revisions: HistoryRevision[] = [];
  const fresh = store.currentRevision <= 1;
  const history: CommittedHistory = fresh
    ? { revisions, completeFrom: 2, baseline: [] }
    : { revisions, completeFrom: store.currentRevision + 1 };
  const stop = store.subscribe((revision, events) => {
    revisions.push({ revision, events });
  });
  return { history, stop };
}

/**
 * clientv3's IsProgressNotify: a response with no events that is neither a create, a cancel nor a
 * compaction notice, and carries a revision. Fragments are never progress notifications.
 * @public
 */
export function isProgressNotify(r: WatchResponse): boolean {
  return r.events.length === 0 && !r.created && !r.canceled && r.compactRevision === 0 && r.revision !== 0 && !r.fragment;
}

/** clientv3's Event.IsCreate: a PUT whose key was created at this very revision. @public */
export function isCreateEvent(ev: WatchEvent | Event): boolean {
  return ev.type === 'PUT' && ev.kv.createRevision === ev.kv.modRevision;
}

/**
 * Checks one watch. Returns every violation found (up to maxViolations), in the order of the guarantees:
 *
 * - **Filter**: a watch only ever reports changes to keys in its key or range, and never an event type
 *   its filters drop.
 * - **Ordered**: events arrive in revision order; once an event of some revision was posted, no event of
 *   an earlier revision follows it.
 * - **Unique**: the same change (revision and key) is never reported twice on one watch.
 * - **Atomic**: one list of events always holds whole revisions; the changes one revision made to several
 *   keys are never spread over several lists. Fragmented responses (only for watches that asked for
 *   them) are joined back into one list first, as clients do; a fragment on a watch that did not ask
 *   for fragmenting is itself a violation.
 * - **Bookmarkable**: a progress notification at revision P promises that every event up to P was already
 *   delivered, so no event at or below P may follow it, P never goes backwards, P is never below an event
 *   already delivered, and (etcd >= 3.6.2, PR #20229) P is never below the watch's start revision (or
 *   below the created response's revision for a watch "from now"): a client resuming from P + 1 would
 *   otherwise ask for history it had excluded.
 * - **Reliable**: no subsequence of events is ever dropped: if a watch reports changes a and c, it reports
 *   every change b between them. Checked as: the events received are exactly the history's matching
 *   events from the first expected revision (the start revision, or the created response's revision + 1)
 *   to the last revision the watch vouched for (its last event or progress notification, or
 *   `drainedThrough`), with the same content.
 * - **Resumable**: a broken watch can be resumed by opening a new one just after the last revision it
 *   received, as long as that revision is still in the history window: a watch with a start revision gets
 *   as its first event the first matching change at or after that revision; and it is canceled for
 *   compaction only if the compaction passed the revision it still needed (its start revision, or the
 *   one after the last event it delivered: a compaction revision itself stays readable).
 * - **IsCreate**: a PUT is flagged as a create (create revision == mod revision) exactly when the key did
 *   not exist just before; a DELETE only ever removes a key that existed.
 * - **PrevKV**: with prev_kv, an event's previous key-value, when present, is exactly the key as it was at
 *   the revision before the event; it may be missing (compaction removes it) but is never attached to a
 *   create, nor sent to a watch that did not ask for it.
 * @public
 */
export function checkWatch(
  history: CommittedHistory | readonly HistoryRevision[],
  request: WatchCreateRequest,
  responses: readonly WatchResponse[],
  options: CheckWatchOptions = {},
): WatchViolation[] {
  return new WatchCheck(toHistory(history), request, responses, options).run();
}

/** Throws an Error listing the violations, if any (for tests). @public */
export function assertWatchGuarantees(
  history: CommittedHistory | readonly HistoryRevision[],
  request: WatchCreateRequest,
  responses: readonly WatchResponse[],
  options: CheckWatchOptions = {},
): void {
  const v = checkWatch(history, request, responses, options);
  if (v.length > 0) throw new Error(formatViolations(v));
}

/** One line per violation. @public */
export function formatViolations(violations: readonly WatchViolation[]): string {
  return violations.map((v) => `${v.guarantee} @response ${v.responseIndex}: ${v.message}`).join('\n');
}

function toHistory(h: CommittedHistory | readonly HistoryRevision[]): CommittedHistory {
  return isRevisionList(h) ? { revisions: h } : h;
}

function isRevisionList(h: CommittedHistory | readonly HistoryRevision[]): h is readonly HistoryRevision[] {
  return Array.isArray(h);
}

// ---------------------------------------------------------------------------------------------------------

/** Bytes → latin1 string: one char per byte, so JS string order is byte order. */
function latin1(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < b.length; i += 4096) s += String.fromCharCode(...b.subarray(i, i + 4096));
  return s;
}

function bytesEq(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function show(key: Uint8Array): string {
  return JSON.stringify(latin1(key));
}

function kvEqual(a: KeyValue, b: KeyValue): boolean {
  return (
    bytesEq(a.key, b.key) &&
    a.createRevision === b.createRevision &&
    a.modRevision === b.modRevision &&
    a.version === b.version &&
    bytesEq(a.value, b.value) &&
    a.lease === b.lease
  );
}

function kvShow(kv: KeyValue): string {
  return `{key ${show(kv.key)} create ${kv.createRevision} mod ${kv.modRevision} ver ${kv.version} value ${show(kv.value)} lease ${kv.lease}}`;
}

function evShow(ev: WatchEvent | Event): string {
  return `${ev.type} ${show(ev.kv.key)}@${ev.kv.modRevision}`;
}

/** Same change: type, key and revision; for a PUT also the value, create revision, version and lease. */
function sameChange(got: WatchEvent, want: Event): boolean {
  if (got.type !== want.type || got.kv.modRevision !== want.kv.modRevision || !bytesEq(got.kv.key, want.kv.key)) return false;
  if (want.type === 'DELETE') return true;
  return (
    got.kv.createRevision === want.kv.createRevision &&
    got.kv.version === want.kv.version &&
    got.kv.lease === want.kv.lease &&
    bytesEq(got.kv.value, want.kv.value)
  );
}

/** The watch's key set, as etcd's gRPC layer reads a create request. */
class KeyRange {
  readonly key: string;
  /** undefined: the single key; '': no upper bound; else exclusive end. */
  readonly end: string | undefined;

  constructor(req: WatchCreateRequest) {
    this.key = req.key.length === 0 ? '\0' : latin1(req.key);
    const re = req.rangeEnd;
    if (re === undefined || re.length === 0) this.end = undefined;
    else if (re.length === 1 && re[0] === 0) this.end = '';
    else this.end = latin1(re);
  }

  contains(k: string): boolean {
    if (this.end === undefined) return k === this.key;
    return k >= this.key && (this.end === '' || k < this.end);
  }
}

interface EventAt {
  readonly ev: WatchEvent;
  readonly index: number;
}

/** A list of events as the client sees it: one response, or a fragment sequence joined back together. */
interface Group {
  readonly first: number;
  readonly last: number;
  readonly events: EventAt[];
  readonly complete: boolean;
}

/** The state of one key just before a revision: undefined = unknown, null = absent. */
type KeyState = KeyValue | null | undefined;

class WatchCheck {
  private readonly out: WatchViolation[] = [];
  private readonly max: number;
  private readonly range: KeyRange;
  private readonly noPut: boolean;
  private readonly noDelete: boolean;
  private readonly startRev: number;
  /** The first revision whose events are all known (1 for a history from a fresh store). */
  private readonly knownFrom: number;
  /** Per key: the history's changes in revision order (null value = tombstone). */
  private readonly timeline = new Map<string, { rev: number; kv: KeyValue | null }[]>();
  private readonly baseline: Map<string, KeyValue> | undefined;

  constructor(
    private readonly history: CommittedHistory,
    private readonly req: WatchCreateRequest,
    private readonly responses: readonly WatchResponse[],
    private readonly opts: CheckWatchOptions,
  ) {
    this.max = opts.maxViolations ?? 50;
    this.range = new KeyRange(req);
    const filters = req.filters ?? [];
    this.noPut = filters.includes('NOPUT');
    this.noDelete = filters.includes('NODELETE');
    this.startRev = req.startRevision ?? 0;
    // A fresh store's revision 1 has no events, so a history complete from 2 is complete from 1.
    const completeFrom = history.completeFrom ?? 2;
    this.knownFrom = completeFrom <= 2 ? 1 : completeFrom;
    if (history.baseline !== undefined) {
      this.baseline = new Map();
      for (const kv of history.baseline) this.baseline.set(latin1(kv.key), kv);
    }
    for (const hr of history.revisions) {
      for (const ev of hr.events) {
        const k = latin1(ev.kv.key);
        let t = this.timeline.get(k);
        if (t === undefined) this.timeline.set(k, (t = []));
        t.push({ rev: hr.revision, kv: ev.type === 'DELETE' ? null : ev.kv });
      }
    }
  }

  private report(guarantee: WatchGuarantee, responseIndex: number, message: string): void {
    if (this.out.length < this.max) this.out.push({ guarantee, message, responseIndex });
  }

  /** Whether the watch wants this event at all (range and filters). */
  private wants(ev: WatchEvent | Event): boolean {
    if (ev.type === 'PUT' ? this.noPut : this.noDelete) return false;
    return this.range.contains(latin1(ev.kv.key));
  }

  /** The key's KeyValue just before `rev` per the history: null when absent, undefined when unknown. */
  private stateBefore(key: string, rev: number): KeyState {
    if (rev < this.knownFrom) return undefined;
    let found: KeyValue | null | undefined;
    for (const c of this.timeline.get(key) ?? []) {
      if (c.rev < this.knownFrom) continue;
      if (c.rev >= rev) break;
      found = c.kv;
    }
    if (found !== undefined) return found;
    // Untouched since the history became complete: as it was then.
    if (this.knownFrom <= 1) return null;
    if (this.baseline !== undefined) return this.baseline.get(key) ?? null;
    return undefined;
  }

  run(): WatchViolation[] {
    const groups = this.groups();
    this.perEvent(groups);
    this.atomic(groups);
    this.bookmarkable(groups);
    this.reliable(groups);
    this.resumable(groups);
    return this.out;
  }

  /** Joins fragment sequences; flags fragments the watch did not ask for and interrupted sequences. */
  private groups(): Group[] {
    const groups: Group[] = [];
    let open: { first: number; events: EventAt[] } | undefined;
    let canceledAt = -1;
    this.responses.forEach((r, i) => {
      if (canceledAt >= 0 && (r.events.length > 0 || isProgressNotify(r))) {
        this.report('Reliable', i, `response after the watch was canceled at response ${canceledAt}`);
      }
      if (r.canceled && canceledAt < 0) canceledAt = i;
      if (r.fragment && this.req.fragment !== true) {
        this.report('Atomic', i, 'a fragmented response on a watch that did not ask for fragment');
      }
      if (r.events.length === 0 && !r.fragment) {
        if (open !== undefined) {
          this.report('Atomic', i, `a fragment sequence started at response ${open.first} was interrupted by a response without events`);
          groups.push({ first: open.first, last: i - 1, events: open.events, complete: false });
          open = undefined;
        }
        return;
      }
      open ??= { first: i, events: [] };
      for (const ev of r.events) open.events.push({ ev, index: i });
      if (!r.fragment) {
        groups.push({ first: open.first, last: i, events: open.events, complete: true });
        open = undefined;
      }
    });
    // A sequence the stream never finished: the client never surfaces it; its events are still judged
    // one by one, but not as a list.
    if (open !== undefined) groups.push({ first: open.first, last: this.responses.length - 1, events: open.events, complete: false });
    return groups;
  }

  /** Filter, Ordered, Unique, IsCreate, PrevKV: event by event. */
  private perEvent(groups: readonly Group[]): void {
    let lastRev = 0;
    const seen = new Set<string>();
    for (const g of groups) {
      for (const { ev, index } of g.events) {
        const key = latin1(ev.kv.key);
        const rev = ev.kv.modRevision;
        if (!this.range.contains(key)) {
          this.report('Filter', index, `event ${evShow(ev)} is outside the watched range`);
        } else if (ev.type === 'PUT' ? this.noPut : this.noDelete) {
          this.report('Filter', index, `event ${evShow(ev)} should have been dropped by the ${ev.type === 'PUT' ? 'NOPUT' : 'NODELETE'} filter`);
        }
        if (rev < lastRev) this.report('Ordered', index, `event ${evShow(ev)} comes after an event of revision ${lastRev}`);
        lastRev = Math.max(lastRev, rev);
        const id = `${rev}\u0001${key}`;
        if (seen.has(id)) this.report('Unique', index, `event ${evShow(ev)} delivered twice`);
        seen.add(id);
        const before = this.stateBefore(key, rev);
        if (before !== undefined) {
          const existed = before !== null;
          if (ev.type === 'PUT' && isCreateEvent(ev) === existed) {
            this.report('IsCreate', index, `event ${evShow(ev)} has IsCreate=${isCreateEvent(ev)} but the key ${existed ? 'existed' : 'did not exist'} at revision ${rev - 1}`);
          }
          if (ev.type === 'DELETE' && !existed) this.report('IsCreate', index, `event ${evShow(ev)} deletes a key that did not exist at revision ${rev - 1}`);
        }
        this.prevKv(ev, index, before);
      }
    }
  }

  private prevKv(ev: WatchEvent, index: number, before: KeyState): void {
    const prev = ev.prevKv;
    if (prev === undefined) return;
    if (this.req.prevKv !== true) {
      this.report('PrevKV', index, `event ${evShow(ev)} carries prev_kv but the watch did not ask for it`);
      return;
    }
    if (isCreateEvent(ev)) {
      this.report('PrevKV', index, `create event ${evShow(ev)} carries prev_kv ${kvShow(prev)}`);
      return;
    }
    if (before === undefined) return;
    if (before === null) {
      this.report('PrevKV', index, `event ${evShow(ev)} carries prev_kv ${kvShow(prev)} but the key did not exist at revision ${ev.kv.modRevision - 1}`);
    } else if (!kvEqual(prev, before)) {
      this.report('PrevKV', index, `event ${evShow(ev)} carries prev_kv ${kvShow(prev)}, the key at revision ${ev.kv.modRevision - 1} was ${kvShow(before)}`);
    }
  }

  /** Consecutive lists never share a revision. */
  private atomic(groups: readonly Group[]): void {
    let lastRev = 0;
    for (const g of groups) {
      if (!g.complete) continue;
      const first = g.events[0]!.ev.kv.modRevision;
      if (first === lastRev) {
        this.report('Atomic', g.first, `revision ${first} is split over several lists of events (it continues at response ${g.first})`);
      }
      lastRev = g.events[g.events.length - 1]!.ev.kv.modRevision;
    }
  }

  /** The revision a watch "from now" starts after: its created response's revision. */
  private createdRevision(): number | undefined {
    const c = this.responses.find((r) => r.created && !r.canceled);
    return c?.revision;
  }

  private bookmarkable(groups: readonly Group[]): void {
    let lastProgress = 0;
    let lastEvent = 0;
    let gi = 0;
    const floor = this.startRev > 0 ? this.startRev : this.createdRevision();
    this.responses.forEach((r, i) => {
      for (; gi < groups.length && groups[gi]!.first <= i; gi++) {
        for (const { ev, index } of groups[gi]!.events) {
          const rev = ev.kv.modRevision;
          if (rev <= lastProgress) {
            this.report('Bookmarkable', index, `event ${evShow(ev)} arrives after a progress notification at revision ${lastProgress}`);
          }
          lastEvent = Math.max(lastEvent, rev);
        }
      }
      if (!isProgressNotify(r)) return;
      if (r.revision < lastProgress) {
        this.report('Bookmarkable', i, `progress notification at revision ${r.revision} after one at ${lastProgress}`);
      }
      if (r.revision < lastEvent) {
        this.report('Bookmarkable', i, `progress notification at revision ${r.revision} after an event of revision ${lastEvent}`);
      }
      if (floor !== undefined && r.revision < floor) {
        this.report(
          'Bookmarkable',
          i,
          this.startRev > 0
            ? `progress notification at revision ${r.revision} is below the watch's start revision ${this.startRev}`
            : `progress notification at revision ${r.revision} is below the revision ${floor} the watch was created at`,
        );
      }
      lastProgress = Math.max(lastProgress, r.revision);
    });
  }

  private reliable(groups: readonly Group[]): void {
    const got: EventAt[] = [];
    for (const g of groups) if (g.complete) got.push(...g.events);
    const firstResp = this.responses.find((r) => !r.created || r.events.length > 0);
    let first: number;
    if (this.startRev > 0) first = this.startRev;
    else if (this.createdRevision() !== undefined) first = this.createdRevision()! + 1;
    else if (firstResp !== undefined && isProgressNotify(firstResp)) first = firstResp.revision + 1;
    else if (got.length > 0) first = got[0]!.ev.kv.modRevision;
    else return;
    let last = 0;
    let canceled = false;
    this.responses.forEach((r, i) => {
      if (r.canceled) canceled = true;
      if (isProgressNotify(r)) last = Math.max(last, r.revision);
      for (const g of groups) if (g.complete && g.last === i) last = Math.max(last, g.events[g.events.length - 1]!.ev.kv.modRevision);
    });
    if (!canceled && this.opts.drainedThrough !== undefined) last = Math.max(last, this.opts.drainedThrough);
    const from = Math.max(first, this.knownFrom);
    const want: Event[] = [];
    for (const hr of this.history.revisions) {
      if (hr.revision < from || hr.revision > last) continue;
      for (const ev of hr.events) if (this.wants(ev)) want.push(ev);
    }
    want.sort((a, b) => a.kv.modRevision - b.kv.modRevision);
    const judged = got.filter((e) => e.ev.kv.modRevision >= this.knownFrom || e.ev.kv.modRevision < first);
    let i = 0;
    for (; i < judged.length && i < want.length; i++) {
      const g = judged[i]!;
      const w = want[i]!;
      if (!sameChange(g.ev, w)) {
        const missing = g.ev.kv.modRevision > w.kv.modRevision || (g.ev.kv.modRevision === w.kv.modRevision && !bytesEq(g.ev.kv.key, w.kv.key));
        this.report(
          'Reliable',
          g.index,
          missing
            ? `event ${evShow(w)} was never delivered (got ${evShow(g.ev)} in its place)`
            : `event ${evShow(g.ev)} does not match the history, which has ${evShow(w)} there${g.ev.kv.modRevision < first ? ` (below the first expected revision ${first})` : ''}`,
        );
        return;
      }
    }
    if (i < want.length) {
      this.report('Reliable', -1, `event ${evShow(want[i]!)} was never delivered, though the watch vouched for revisions up to ${last} (${want.length - i} missing)`);
    } else if (i < judged.length) {
      this.report('Reliable', judged[i]!.index, `event ${evShow(judged[i]!.ev)} is not in the history between revisions ${first} and ${last}`);
    }
  }

  private resumable(groups: readonly Group[]): void {
    const firstEv: EventAt | undefined = groups.find((g) => g.events.length > 0)?.events[0];
    if (this.startRev > 0 && firstEv !== undefined && this.startRev >= this.knownFrom) {
      let want: Event | undefined;
      for (const hr of this.history.revisions) {
        if (hr.revision < this.startRev) continue;
        want = hr.events.find((ev) => this.wants(ev));
        if (want !== undefined) break;
      }
      if (want === undefined || !sameChange(firstEv.ev, want)) {
        this.report(
          'Resumable',
          firstEv.index,
          `the first event of a watch from revision ${this.startRev} is ${evShow(firstEv.ev)}, the history's first matching change from there is ${want === undefined ? 'none' : evShow(want)}`,
        );
      }
    }
    // A compaction cancel must concern a revision the watch still needed.
    let next = this.startRev > 0 ? this.startRev : (this.createdRevision() ?? 0) + 1;
    let gi = 0;
    this.responses.forEach((r, i) => {
      for (; gi < groups.length && groups[gi]!.first <= i; gi++) {
        const g = groups[gi]!;
        if (g.complete) next = Math.max(next, g.events[g.events.length - 1]!.ev.kv.modRevision + 1);
      }
      // Progress notifications do not count: etcd does not move a watcher's position on them, so a
      // watcher whose last matching change is old can be canceled by a compaction that only removed
      // revisions it had been told about (e.g. after a restore made it unsynced).
      if (r.canceled && r.compactRevision !== 0 && r.compactRevision <= next) {
        this.report(
          'Resumable',
          i,
          `canceled for compaction at revision ${r.compactRevision}, but the next revision the watch needed, ${next}, was never compacted`,
        );
      }
    });
  }
}
