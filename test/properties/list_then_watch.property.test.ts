/**
 * Property: gap-free List-then-Watch, the informer pattern (Kubernetes reflector; seeds 000 and 002).
 *
 * A random history of puts, deletes, range deletes, multi-key txns and compactions runs interleaved with
 * one client's steps. The client lists the prefix "/p/" in pages (random limit, continuation at last key
 * + "\0", every later page pinned to the first page's revision R), then watches from R + 1 and applies
 * each complete revision before it advances its cursor; progress notifications move the cursor too. Its
 * stream breaks at random points, possibly between two events of one response (the client crashed, or
 * the connection dropped, while it was still working through them); it then resumes from its last complete
 * revision + 1 on a new stream. A compaction cancel makes it list again and watch again. Slow consumption
 * (tiny stream buffers) makes it a victim now and then; some runs fragment responses.
 *
 * The generators aim at the watch path's boundaries, where informers lose events:
 *  - catch-up batches: most runs use a test-sized watchBatchMaxRevs (1–3) and bursts of writes, so a
 *    reconnecting watcher is several batches behind; a tenth use etcd's real 1000 with bursts of about
 *    a thousand revisions, so a catch-up crosses a real batch boundary;
 *  - fragments: a small response limit splits a revision's events (a txn, a lease's keys) over responses,
 *    each split judged against etcd's sendFragments with naive sizes (model/reference_watch_size.ts), as
 *    are the bytes the transport window held (leased keys' sizes show only here);
 *  - slow and stalled consumers: tiny channels and transport windows, and long ticks while the client
 *    reads nothing, make its watcher a victim that catches up later;
 *  - compactions exactly at, and one below, the watcher's position (its minRev) and the client's
 *    (cursor + 1): the first is not a cancel, the second is;
 *  - lease expiry: keys put with short leases are deleted in one revision on the lessor's clock, also
 *    while a replay is under way;
 *  - restore while catching up: the watchable store restores a snapshot of its own state (what a
 *    follower does with the leader's), moving every watcher to unsynced mid catch-up.
 *
 * Each completed list equals a Range of the prefix at its revision R, read when the last page arrives.
 * Once the history stops and every background step has run: the client's cache equals a Range of the
 * prefix at the current revision, its cursor never went backwards and ends at the current revision, it
 * never got an event it had already applied, and every revision that touched the prefix was either
 * applied in full or lies at or below a list revision.
 *
 * The property has teeth: a client that advances its cursor after each event (so a break mid-revision
 * loses the rest of that revision), a client that answers a compaction cancel by watching from the
 * compaction revision + 1 instead of listing again, and a client that reads later pages at the current
 * revision instead of R, are all caught. So is a named regression of the store itself (issue #35): a
 * catch-up that sets the watcher's minRev one past the batch's moreRev, so the revision that starts the
 * next batch is never sent. Before the batch generators no property crossed a batch boundary and this
 * mutation passed all four watch property files; the skipped revision now shows as "skipped revision".
 *
 * Runs: ETCDSIM_NUM_RUNS (default 300). Replay: ETCDSIM_SEED=<seed> ETCDSIM_PATH=<path> (see harness.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';

import { createLeasedStore, type Lessor } from '../../src/lease/index.js';
import { ErrCompacted, type MvccStore, type KeyValue } from '../../src/mvcc/index.js';
import { isEtcdError } from '../../src/etcd/index.js';
import { Ticker, VirtualClock } from '../../src/sim/index.js';
import { WatchableStore, type WatchEvent, type WatchResponse, type WatchStream } from '../../src/watch/index.js';
import type { Watcher } from '../../src/watch/watcher.js';
import { isProgressNotify, recordHistory } from '../../src/watch/guarantees.js';
import { checkProperty, numRuns } from './harness.js';
import { fragmentingProblems } from './model/reference_watch_size.js';
import { apply, b, historyOpArb, latin1, PREFIX, PREFIX_END, rangeNow, readSized, resolve, showKv, type HistoryOp } from './watch_harness.js';

const FILE = 'test/properties/list_then_watch.property.test.ts';

/** correct, or one of the wrong strategies the property must catch. */
type Strategy = 'correct' | 'cursorPerEvent' | 'resumeAfterCompaction' | 'unpinnedPages';

interface Config {
  readonly limit: number;
  readonly chanBufLen: number;
  /** The transport window: 0 is an unbuffered transport, 200 B a few responses, 64 KiB etcd's. */
  readonly sendWindowBytes: number;
  readonly fragment: boolean;
  /** Revisions per catch-up batch: test-sized, or etcd's 1000. */
  readonly watchBatchMaxRevs: number;
  /** Revisions one burst writes: a watcher that misses one is about a batch behind. */
  readonly burst: number;
}

type Action =
  | { readonly t: 'op'; readonly op: HistoryOp }
  | { readonly t: 'tick'; readonly ms: number }
  | { readonly t: 'client'; readonly budget: number }
  | { readonly t: 'break' }
  | { readonly t: 'progress' }
  | { readonly t: 'burst' }
  /** Compacts at the watcher's minRev or the client's cursor + 1, plus delta (0: at, -1: one below). */
  | { readonly t: 'compactAt'; readonly of: 'watcher' | 'client'; readonly delta: 0 | -1 }
  | { readonly t: 'lease'; readonly ttl: number; readonly keys: readonly string[] }
  | { readonly t: 'restore' };

const batchArb = fc.oneof(
  { weight: 9, arbitrary: fc.record({ watchBatchMaxRevs: fc.integer({ min: 1, max: 3 }), burst: fc.integer({ min: 2, max: 8 }) }) },
  // etcd's real batch: a burst of about one batch, so two bursts missed put a watcher past a boundary.
  { weight: 1, arbitrary: fc.record({ watchBatchMaxRevs: fc.constant(1000), burst: fc.integer({ min: 995, max: 1005 }) }) },
);

const configArb: fc.Arbitrary<Config> = fc
  .tuple(
    fc.record({
      limit: fc.integer({ min: 1, max: 4 }),
      chanBufLen: fc.constantFrom(1, 2, 4, 128),
      sendWindowBytes: fc.constantFrom(0, 200, 64 * 1024),
      fragment: fc.boolean(),
    }),
    batchArb,
  )
  .map(([io, batch]) => ({ ...io, ...batch }));

/** Keys a burst cycles over: mostly the prefix, and one outside it (revisions the watcher skips). */
const BURST_KEYS = ['/p/0', '/p/1', '/p/2', '/q/1'];

const actionArb: fc.Arbitrary<Action> = fc.oneof(
  { weight: 6, arbitrary: historyOpArb.map((op) => ({ t: 'op' as const, op })) },
  { weight: 2, arbitrary: fc.integer({ min: 1, max: 250 }).map((ms) => ({ t: 'tick' as const, ms })) },
  // A stall: many sync, victim and lease steps while the client reads nothing.
  { weight: 1, arbitrary: fc.integer({ min: 500, max: 2500 }).map((ms) => ({ t: 'tick' as const, ms })) },
  { weight: 1, arbitrary: fc.constant({ t: 'burst' as const }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('compactAt' as const), of: fc.constantFrom('watcher' as const, 'client' as const), delta: fc.constantFrom(0 as const, -1 as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({ t: fc.constant('lease' as const), ttl: fc.integer({ min: 1, max: 3 }), keys: fc.uniqueArray(fc.constantFrom('/p/0', '/p/1', '/p/1\0', '/p/3', '/q/1'), { minLength: 1, maxLength: 3 }) }),
  },
  { weight: 1, arbitrary: fc.constant({ t: 'restore' as const }) },
  { weight: 5, arbitrary: fc.integer({ min: 1, max: 6 }).map((budget) => ({ t: 'client' as const, budget })) },
  { weight: 2, arbitrary: fc.constant({ t: 'break' as const }) },
  { weight: 1, arbitrary: fc.constant({ t: 'progress' as const }) },
);

/** Response-size limit when fragmenting: a few small events per fragment. */
const FRAGMENT_LIMIT = 160;

class InformerClient {
  phase: 'list' | 'watch' | 'down' = 'list';
  readonly cache = new Map<string, KeyValue>();
  cursor = 0;
  /** Revisions of every completed list. */
  readonly listRevs: number[] = [];
  /** Every event applied from the watch, as "rev|key". */
  readonly applied = new Set<string>();
  readonly problems: string[] = [];

  private listing = false;
  private listR = 0;
  private listNext = '';
  private listKvs: KeyValue[] = [];

  private stream: WatchStream | undefined;
  private watchId = -1;
  private inbox: WatchResponse[] = [];
  private ri = 0;
  private ei = 0;
  /** Events of the revision being received, not applied yet (correct client). */
  private pending: WatchEvent[] = [];

  constructor(
    private readonly kv: MvccStore,
    private readonly ws: WatchableStore,
    private readonly cfg: Config,
    private readonly strategy: Strategy,
  ) {}

  /** One client step: a list page, a reconnect, or taking responses and working through `budget` events. */
  step(budget: number): void {
    if (this.phase === 'list') this.listPage();
    else if (this.phase === 'down') this.connect();
    else this.process(budget);
  }

  listPage(): void {
    const rangeEnd = b(PREFIX_END);
    let resp;
    try {
      resp = this.listing
        ? // Wrong (unpinnedPages): later pages read the current revision, so the list mixes two states.
          this.kv.range({ key: b(this.listNext), rangeEnd, limit: this.cfg.limit, revision: this.strategy === 'unpinnedPages' ? 0 : this.listR })
        : this.kv.range({ key: b(PREFIX), rangeEnd, limit: this.cfg.limit });
    } catch (e) {
      if (!isEtcdError(e, ErrCompacted)) throw e;
      // The pinned revision was compacted mid-list: throw the pages away and start over.
      this.listing = false;
      this.listKvs = [];
      return;
    }
    if (!this.listing) {
      this.listing = true;
      this.listR = resp.revision;
      this.listKvs = [];
    }
    this.listKvs.push(...resp.kvs);
    if (resp.more) {
      this.listNext = latin1(resp.kvs[resp.kvs.length - 1]!.key) + '\0';
      return;
    }
    this.listing = false;
    this.cache.clear();
    for (const kv of this.listKvs) this.cache.set(latin1(kv.key), kv);
    this.checkListed();
    this.listRevs.push(this.listR);
    this.setCursor(this.listR, 'list');
    this.connect();
  }

  /**
   * The list is one state: the cache equals a Range of the prefix at R, read now (the watch's replay from
   * R + 1 would otherwise repair a list that mixed two states, and the end state alone would not show it).
   */
  private checkListed(): void {
    let want: string;
    try {
      want = this.kv.range({ key: b(PREFIX), rangeEnd: b(PREFIX_END), revision: this.listR }).kvs.map(showKv).join(' ');
    } catch (e) {
      if (!isEtcdError(e, ErrCompacted)) throw e;
      // A list whose every page read R would have been refused and restarted; this one read later pages at
      // later revisions, so nothing can vouch for it being the state at R.
      this.problems.push(`the list at revision ${this.listR} finished after ${this.listR} was compacted: it is not the prefix's state at any one revision`);
      return;
    }
    const got = [...this.cache.values()].map(showKv).join(' ');
    if (want !== got) this.problems.push(`the list at revision ${this.listR} is not the prefix's state at ${this.listR}:\n    list:  ${got}\n    range: ${want}`);
  }

  connect(): void {
    this.stream = this.ws.newWatchStream();
    const created = this.stream.watch({
      key: b(PREFIX),
      rangeEnd: b(PREFIX_END),
      startRevision: this.cursor + 1,
      fragment: this.cfg.fragment,
    });
    this.watchId = created.watchId;
    this.phase = 'watch';
    this.resetInbox();
  }

  /** The stream breaks: whatever was received and not yet applied is lost. */
  breakStream(): void {
    if (this.phase !== 'watch') return;
    this.stream!.close();
    this.phase = 'down';
    this.resetInbox();
  }

  requestProgress(): void {
    if (this.phase === 'watch') this.stream!.requestProgress();
  }

  /** The next revision the store still owes this client's watcher (its minRev), if it has one open. */
  watcherMinRev(): number | undefined {
    if (this.phase !== 'watch') return undefined;
    const mine = (w: Watcher): boolean => w.stream === this.stream;
    const ws = this.ws;
    const w =
      [...ws.synced.watchers].find(mine) ??
      [...ws.unsynced.watchers].find(mine) ??
      ws.victims.flatMap((batch) => [...batch.keys()]).find(mine);
    return w?.minRev;
  }

  /** Nothing left to take or work through, and the watch is open. */
  idle(): boolean {
    return this.phase === 'watch' && this.stream!.pending === 0 && this.ri >= this.inbox.length && this.pending.length === 0;
  }

  private resetInbox(): void {
    this.inbox = [];
    this.ri = 0;
    this.ei = 0;
    this.pending = [];
  }

  process(budget: number): void {
    if (this.phase !== 'watch') return;
    const got = readSized(this.stream!, () => this.stream!.take());
    // take() reads the whole transport, and a response's fragments enter it together: each sequence is whole.
    if (this.cfg.fragment) {
      const mine = got.filter((r) => r.watchId === this.watchId);
      const problems = fragmentingProblems(mine, FRAGMENT_LIMIT, false);
      if (problems.length > 0) throw new Error(problems.join('\n'));
    }
    this.inbox.push(...got);
    while (this.ri < this.inbox.length) {
      const r = this.inbox[this.ri]!;
      if (r.watchId !== this.watchId && r.watchId !== -1) throw new Error(`response for watch ${r.watchId} on a stream with only ${this.watchId}`);
      if (r.canceled) {
        this.onCanceled(r);
        return;
      }
      if (r.created) {
        this.ri++;
        continue;
      }
      if (isProgressNotify(r)) {
        // Every event up to r.revision was delivered (and, with nothing pending, applied).
        if (this.pending.length === 0 && r.revision > this.cursor) this.setCursor(r.revision, 'progress');
        this.ri++;
        continue;
      }
      if (this.ei < r.events.length) {
        if (budget <= 0) return;
        budget--;
        this.onEvent(r.events[this.ei++]!);
      }
      if (this.ei >= r.events.length) {
        // The end of a list of events: complete revisions, unless more fragments follow.
        if (!r.fragment && this.strategy !== 'cursorPerEvent') this.commit();
        this.ri++;
        this.ei = 0;
      }
    }
  }

  private onEvent(ev: WatchEvent): void {
    if (ev.kv.modRevision < this.cursor || (ev.kv.modRevision === this.cursor && this.strategy !== 'cursorPerEvent')) {
      this.problems.push(`got an event of revision ${ev.kv.modRevision} with the cursor already at ${this.cursor}`);
    }
    if (this.strategy === 'cursorPerEvent') {
      // Wrong: the cursor moves as soon as one event of the revision is applied.
      this.applyEvent(ev);
      this.setCursor(ev.kv.modRevision, 'event');
      return;
    }
    const last = this.pending[this.pending.length - 1];
    if (last !== undefined && ev.kv.modRevision > last.kv.modRevision) this.commit();
    this.pending.push(ev);
  }

  /** Applies the pending revision as a whole, then moves the cursor to it. */
  private commit(): void {
    const evs = this.pending;
    if (evs.length === 0) return;
    this.pending = [];
    for (const ev of evs) this.applyEvent(ev);
    this.setCursor(evs[0]!.kv.modRevision, 'revision');
  }

  private applyEvent(ev: WatchEvent): void {
    const key = latin1(ev.kv.key);
    const id = `${ev.kv.modRevision}|${key}`;
    if (this.applied.has(id)) this.problems.push(`applied ${ev.type} ${JSON.stringify(key)}@${ev.kv.modRevision} twice`);
    this.applied.add(id);
    if (ev.type === 'PUT') this.cache.set(key, ev.kv);
    else this.cache.delete(key);
  }

  private onCanceled(r: WatchResponse): void {
    this.stream!.close();
    this.resetInbox();
    if (r.compactRevision === 0) {
      this.phase = 'down';
      return;
    }
    if (this.strategy === 'resumeAfterCompaction') {
      // Wrong: jump over the compacted history instead of listing again.
      this.setCursor(r.compactRevision, 'compaction');
      this.connect();
      return;
    }
    this.phase = 'list';
    this.listing = false;
  }

  private setCursor(rev: number, why: string): void {
    if (rev < this.cursor) this.problems.push(`cursor went backwards from ${this.cursor} to ${rev} (${why})`);
    this.cursor = rev;
  }
}

function run(strategy: Strategy, cfg: Config, actions: readonly Action[]): void {
  const clock = new VirtualClock();
  const ticker = new Ticker(clock);
  const { store: kv, lessor } = createLeasedStore({ clock, ticker });
  const { history } = recordHistory(kv);
  const ws = new WatchableStore(kv, {
    ticker,
    clock,
    chanBufLen: cfg.chanBufLen,
    sendWindowBytes: cfg.sendWindowBytes,
    maxResponseBytes: FRAGMENT_LIMIT,
    watchBatchMaxRevs: cfg.watchBatchMaxRevs,
  });
  const client = new InformerClient(kv, ws, cfg, strategy);

  for (const a of actions) {
    switch (a.t) {
      case 'op': {
        const op = resolve(kv, a.op);
        if (op !== undefined) apply(kv, op);
        break;
      }
      case 'tick':
        clock.advance(a.ms);
        break;
      case 'client':
        client.step(a.budget);
        break;
      case 'break':
        client.breakStream();
        break;
      case 'progress':
        client.requestProgress();
        break;
      case 'burst':
        for (let i = 0; i < cfg.burst; i++) kv.put({ key: b(BURST_KEYS[i % BURST_KEYS.length]!), value: b(`b${i}`) });
        break;
      case 'compactAt': {
        const pos = a.of === 'watcher' ? client.watcherMinRev() : client.cursor + 1;
        if (pos === undefined) break;
        const rev = pos + a.delta;
        if (rev > kv.compactRevision && rev >= 1 && rev <= kv.currentRevision) kv.compact(rev);
        break;
      }
      case 'lease':
        putWithLease(kv, lessor, a.ttl, a.keys);
        break;
      case 'restore':
        ws.restore(kv.snapshot());
        break;
    }
    checkInvariants(kv, ws, lessor);
  }

  // Quiesce: no more writes; let the client finish and every sync/victim step run.
  let rounds = 0;
  for (; rounds < 500; rounds++) {
    if (client.phase === 'watch' && client.idle() && ws.unsynced.size === 0 && ws.victims.length === 0) break;
    if (client.phase === 'list') client.listPage();
    else if (client.phase === 'down') client.connect();
    clock.advance(100);
    client.process(Infinity);
    checkInvariants(kv, ws, lessor);
  }
  assert.ok(rounds < 500, 'the client never settled');
  client.requestProgress();
  client.process(Infinity);

  const problems = [...client.problems];
  const want = rangeNow(kv, PREFIX, PREFIX_END);
  const got = client.cache;
  const wantText = [...want.values()].map(showKv).join(' ');
  const gotText = [...[...got.entries()].sort(([a], [c]) => (a < c ? -1 : a > c ? 1 : 0)).map(([, v]) => v)].map(showKv).join(' ');
  if (wantText !== gotText) problems.push(`cache differs from Range at revision ${kv.currentRevision}:\n    cache: ${gotText}\n    range: ${wantText}`);
  if (client.cursor !== kv.currentRevision) problems.push(`cursor ends at ${client.cursor}, the store is at ${kv.currentRevision}`);
  const maxList = Math.max(...client.listRevs);
  for (const hr of history.revisions) {
    if (hr.revision <= maxList) continue;
    const missing = hr.events.filter((ev) => {
      const key = latin1(ev.kv.key);
      return key >= PREFIX && key < PREFIX_END && !client.applied.has(`${hr.revision}|${key}`);
    });
    if (missing.length > 0) {
      problems.push(`skipped revision ${hr.revision}: never applied ${missing.map((ev) => `${ev.type} ${JSON.stringify(latin1(ev.kv.key))}`).join(', ')} (last list at ${maxList})`);
    }
  }
  if (problems.length > 0) throw new Error(`${strategy} client:\n  ${problems.join('\n  ')}`);
}

/** The engine's own invariants, after every step: the store's index, the watchers' places, the leases' keys. */
function checkInvariants(kv: MvccStore, ws: WatchableStore, lessor: Lessor): void {
  assert.equal(kv.checkValid(), undefined, 'MvccStore.checkValid()');
  assert.equal(ws.checkValid(), undefined, 'WatchableStore.checkValid()');
  assert.equal(lessor.checkValid(), undefined, 'Lessor.checkValid()');
}

/** Grants a short lease and puts `keys` with it: the lessor deletes them all in one revision when it expires. */
function putWithLease(kv: MvccStore, lessor: Lessor, ttl: number, keys: readonly string[]): void {
  const { id } = lessor.grant(0n, ttl);
  for (const key of keys) kv.put({ key: b(key), value: b(`l${ttl}`), lease: id });
}

const property = (strategy: Strategy): fc.IPropertyWithHooks<[Config, Action[]]> =>
  fc.property(configArb, fc.array(actionArb, { minLength: 10, maxLength: 120, size: 'max' }), (cfg, actions) => run(strategy, cfg, actions));

test('List-then-Watch: a correct informer ends with a gap-free, duplicate-free cache', () => {
  checkProperty(property('correct'), { file: FILE, numRuns: 300 });
});

/** The property must find a counterexample for a wrong client; returns the failure message. */
function mustFail(strategy: Strategy): string {
  const details = fc.check(property(strategy), { numRuns: Math.max(numRuns(400), 400), endOnFailure: true });
  assert.ok(details.failed, `the property found no counterexample for the ${strategy} client in ${details.numRuns} runs (seed ${details.seed})`);
  const err = details.errorInstance;
  return err instanceof Error ? err.message : String(err);
}

test('List-then-Watch has teeth: advancing the cursor after the first event of a revision loses the rest of it', () => {
  const msg = mustFail('cursorPerEvent');
  assert.match(msg, /skipped revision|cache differs/);
});

test('List-then-Watch has teeth: resuming from the compaction revision + 1 without listing again loses history', () => {
  const msg = mustFail('resumeAfterCompaction');
  assert.match(msg, /skipped revision|cache differs/);
});

test('List-then-Watch has teeth: pages not pinned to the first page\'s revision make a list of two states', () => {
  const msg = mustFail('unpinnedPages');
  assert.match(msg, /is not the prefix's state/);
});
