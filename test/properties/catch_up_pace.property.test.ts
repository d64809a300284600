/**
 * Property: the catch-up pace. The other watch properties judge *what* a watcher receives (gap-free,
 * duplicate-free, in order); this one judges *when*, on the virtual clock, against a naive reference of
 * etcd's pace (watchable_store.go's syncWatchersLoop and syncVictimsLoop, as etcdsim models them on its
 * Ticker):
 *  - the sync step runs every 100 ms and serves at most maxWatchersPerSync unsynced watchers (the first in
 *    the order they became unsynced), each one batch of at most watchBatchMaxRevs revisions;
 *  - a sync step that finished some watchers but left others (etcd: "more work pending", it yields for as
 *    long as the step took, then syncs again) is retried soon instead of after a full period: the victim
 *    step after the one that follows it runs the sync again (10 ms after a 100 ms step, 20 ms after a
 *    retry); a step that finished none waits for the next 100 ms;
 *  - a watcher whose channel (chanBufLen responses) is full becomes a victim with its batch; every 10 ms
 *    the victim step retries each victim batch whole (header revision minRev - 1), over and over while
 *    some go through, and a delivered victim that is still behind rejoins the unsynced watchers last.
 * Each watcher has a stream of its own whose client reads every 10 ms, or stalls until a given instant
 * (a window of 0, so what it has not read stays in the channel). Every response (instant read, header
 * revision, event revisions) must be the reference's. This pins the open "pace only" survivors of
 * watchable_store.ts (docs/mutation.md): a retry armed too early, too late or never, a cap of one watcher
 * more, a catch-up batch sent through the victim path.
 *
 * Runs, seed and replay come from the environment via ./harness.ts (ETCDSIM_NUM_RUNS, default 150;
 * ETCDSIM_SEED / ETCDSIM_PATH); a failure prints the exact replay command.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';

import { checkProperty, recordFailure } from './harness.js';

import { MvccStore, utf8 } from '../../src/mvcc/index.js';
import { Ticker, VirtualClock } from '../../src/sim/index.js';
import { WatchableStore, type WatchStream } from '../../src/watch/index.js';

const FILE = 'test/properties/catch_up_pace.property.test.ts';
const SYNC_MS = 100;
const VICTIM_MS = 10;
/** Every client is reading again by STALL_MAX; the last write comes by LAST_WRITE. */
const STALL_MAX = 400;
const LAST_WRITE = 800;
/** After the reference has caught every watcher up, how long nothing more may arrive. */
const QUIET = 300;
/** A run that has not caught up by then has lost its pace for good (batches of one revision need ~5 s). */
const GIVE_UP = 60_000;

/** A write: one put, or a txn of two puts (one revision, two events); '/q' is outside every watch. */
type Write = { readonly keys: readonly ('/p/a' | '/p/b' | '/q')[] };
interface WatcherSpec {
  /** The 10 ms instant it is created at (0: before the clock starts). */
  readonly at: number;
  /** 0: from the next revision; k > 0: k revisions back from the current one (at least revision 1). */
  readonly back: number;
  /** The client reads from this instant on (0: always). */
  readonly stallUntil: number;
}
interface Scenario {
  readonly batchRevs: number;
  readonly perSync: number;
  readonly chanBufLen: number;
  readonly history: readonly Write[];
  readonly watchers: readonly WatcherSpec[];
  /** Writes during the run, at 10 ms instants. */
  readonly later: readonly { readonly at: number; readonly write: Write }[];
}

/**
 * A 10 ms instant up to `max`, often right at or just after a sync step (a watcher created at the instant
 * a sync step finished the others must wait for the next period, not for a retry that was not armed).
 */
const instant = (max: number): fc.Arbitrary<number> =>
  fc.oneof(
    fc.nat({ max: max / VICTIM_MS }).map((n) => n * VICTIM_MS),
    fc.tuple(fc.nat({ max: max / SYNC_MS }), fc.constantFrom(0, VICTIM_MS)).map(([n, d]) => Math.min(max, n * SYNC_MS + d)),
  );
const writeArb: fc.Arbitrary<Write> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom<Write>({ keys: ['/p/a'] }, { keys: ['/p/b'] }) },
  { weight: 1, arbitrary: fc.constant<Write>({ keys: ['/q'] }) },
  { weight: 1, arbitrary: fc.constant<Write>({ keys: ['/p/a', '/p/b'] }) },
);
const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  batchRevs: fc.constantFrom(1, 2, 3, 5, 1000),
  perSync: fc.constantFrom(1, 2, 512),
  chanBufLen: fc.constantFrom(1, 2, 128),
  history: fc.array(writeArb, { minLength: 0, maxLength: 30 }),
  watchers: fc.array(
    fc.record({
      at: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 2, arbitrary: instant(600) }),
      back: fc.oneof({ weight: 1, arbitrary: fc.constant(0) }, { weight: 4, arbitrary: fc.integer({ min: 1, max: 40 }) }),
      stallUntil: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: instant(STALL_MAX) }),
    }),
    { minLength: 1, maxLength: 5 },
  ),
  later: fc.array(fc.record({ at: instant(LAST_WRITE), write: writeArb }), { maxLength: 25 }),
});

/** One response as a client saw it: when it read it, the header revision, the events' revisions. */
const shown = (t: number, header: number, revs: readonly number[]): string => `@${t} h${header} [${revs.join(',')}]`;

/** A revision's events as the watchers (all on the prefix /p/) see them: the revision once per event. */
interface RefEvents {
  readonly rev: number;
  readonly count: number;
}
interface RefBatch {
  readonly evs: readonly number[];
  readonly more: number;
}
interface RefWatcher {
  readonly n: number;
  minRev: number;
  stallUntil: number;
  /** Responses in its channel the client has not read yet. */
  readonly channel: { readonly header: number; readonly evs: readonly number[] }[];
  readonly seen: string[];
}

/** The naive reference: etcd's watchable store as lists, its two loops as plain rules on the instant. */
class PaceRef {
  rev = 1;
  /** Revisions with events under /p/, in order. */
  readonly log: RefEvents[] = [];
  readonly synced: RefWatcher[] = [];
  readonly unsynced: RefWatcher[] = [];
  victims: Map<RefWatcher, RefBatch>[] = [];
  syncAgain: 'no' | 'pending' | 'armed' = 'no';
  constructor(readonly sc: Scenario) {}

  offer(w: RefWatcher, header: number, evs: readonly number[]): boolean {
    if (w.channel.length >= this.sc.chanBufLen) return false;
    w.channel.push({ header, evs });
    return true;
  }

  read(w: RefWatcher, t: number): void {
    if (t < w.stallUntil) return;
    for (const r of w.channel) w.seen.push(shown(t, r.header, r.evs));
    w.channel.length = 0;
  }

  watch(w: RefWatcher, startRev: number): void {
    if (startRev === 0) {
      w.minRev = this.rev + 1;
      this.synced.push(w);
    } else {
      w.minRev = startRev;
      this.unsynced.push(w);
    }
  }

  write(keys: readonly string[]): void {
    this.rev++;
    const count = keys.filter((k) => k.startsWith('/p/')).length;
    if (count === 0) return;
    this.log.push({ rev: this.rev, count });
    const evs = Array<number>(count).fill(this.rev);
    const victims = new Map<RefWatcher, RefBatch>();
    for (const w of [...this.synced]) {
      if (!this.offer(w, this.rev, evs)) {
        victims.set(w, { evs, more: 0 });
        this.synced.splice(this.synced.indexOf(w), 1);
      }
      w.minRev = this.rev + 1;
    }
    if (victims.size > 0) this.victims.push(victims);
  }

  /** A watcher's catch-up batch from minRev: at most batchRevs revisions; more = the first left out. */
  batch(minRev: number): RefBatch | undefined {
    const revs = this.log.filter((e) => e.rev >= minRev);
    if (revs.length === 0) return undefined;
    const taken = revs.slice(0, this.sc.batchRevs);
    return { evs: taken.flatMap((e) => Array<number>(e.count).fill(e.rev)), more: revs[this.sc.batchRevs]?.rev ?? 0 };
  }

  sync(): void {
    this.syncAgain = 'no';
    const before = this.unsynced.length;
    if (before === 0) return;
    const victims = new Map<RefWatcher, RefBatch>();
    for (const w of this.unsynced.slice(0, this.sc.perSync)) {
      const eb = this.batch(w.minRev);
      w.minRev = this.rev + 1;
      const leave = (): void => void this.unsynced.splice(this.unsynced.indexOf(w), 1);
      if (eb === undefined) {
        this.synced.push(w);
        leave();
        continue;
      }
      if (eb.more !== 0) w.minRev = eb.more;
      if (!this.offer(w, this.rev, eb.evs)) {
        victims.set(w, eb);
        leave();
      } else if (eb.more === 0) {
        this.synced.push(w);
        leave();
      }
    }
    if (victims.size > 0) this.victims.push(victims);
    const after = this.unsynced.length;
    this.syncAgain = after > 0 && after < before ? 'pending' : 'no';
  }

  moveVictims(): number {
    const batches = this.victims;
    this.victims = [];
    let moved = 0;
    const still = new Map<RefWatcher, RefBatch>();
    for (const batch of batches) {
      for (const [w, eb] of batch) {
        if (!this.offer(w, w.minRev - 1, eb.evs)) {
          still.set(w, eb);
          continue;
        }
        moved++;
        if (eb.more !== 0) w.minRev = eb.more;
        (w.minRev <= this.rev ? this.unsynced : this.synced).push(w);
      }
    }
    if (still.size > 0) this.victims.push(still);
    return moved;
  }

  /** The instant t: the 100 ms sync step, then the 10 ms victim step (registered in that order). */
  tick(t: number): void {
    if (t % SYNC_MS === 0 && this.unsynced.length > 0) this.sync();
    while (this.moveVictims() !== 0) {
      // as long as victims go through
    }
    if (this.syncAgain === 'armed') this.sync();
    else if (this.syncAgain === 'pending') this.syncAgain = 'armed';
  }
}

function startRevOf(spec: WatcherSpec, current: number): number {
  return spec.back === 0 ? 0 : Math.max(1, current - spec.back + 1);
}

function runScenario(sc: Scenario): void {
  const clock = new VirtualClock();
  const ticker = new Ticker(clock);
  const kv = new MvccStore();
  const ws = new WatchableStore(kv, { ticker, clock, watchBatchMaxRevs: sc.batchRevs, maxWatchersPerSync: sc.perSync, chanBufLen: sc.chanBufLen, sendWindowBytes: 0 });
  const ref = new PaceRef(sc);
  const streams: { st: WatchStream; spec: WatcherSpec; seen: string[] }[] = [];
  const refs: RefWatcher[] = [];
  let written = 0;
  const write = (w: Write): void => {
    const value = utf8(String(written++));
    if (w.keys.length === 1) kv.put({ key: utf8(w.keys[0]!), value });
    else kv.txn({ success: w.keys.map((k) => ({ requestPut: { key: utf8(k), value } })) });
    ref.write(w.keys);
  };
  const create = (t: number): void => {
    sc.watchers.forEach((spec, n) => {
      if (spec.at !== t) return;
      const startRevision = startRevOf(spec, kv.currentRevision);
      const st = ws.newWatchStream();
      st.watch({ key: utf8('/p/'), rangeEnd: utf8('/p0'), startRevision });
      st.take(); // the created reply
      streams.push({ st, spec, seen: [] });
      const r: RefWatcher = { n, minRev: 0, stallUntil: spec.stallUntil, channel: [], seen: [] };
      refs.push(r);
      ref.watch(r, startRevision);
    });
  };
  const read = (t: number): void => {
    for (const s of streams) {
      if (t < s.spec.stallUntil) continue;
      for (const r of s.st.take()) s.seen.push(shown(t, r.revision, r.events.map((e) => e.kv.modRevision)));
    }
    for (const r of refs) ref.read(r, t);
  };
  for (const w of sc.history) write(w);
  create(0);
  read(0);
  let quietSince = Infinity;
  for (let t = VICTIM_MS; t < quietSince + QUIET; t += VICTIM_MS) {
    assert.ok(t <= GIVE_UP, `the reference has not caught every watcher up after ${GIVE_UP} ms`);
    clock.advance(VICTIM_MS);
    ref.tick(t);
    for (const l of sc.later) if (l.at === t) write(l.write);
    create(t);
    read(t);
    streams.forEach((s, i) => assert.deepEqual(s.seen, refs[i]!.seen, `watcher ${refs[i]!.n} (${JSON.stringify(s.spec)}) by ${t} ms`));
    const done = t >= LAST_WRITE && ref.unsynced.length + ref.victims.length === 0 && refs.every((r) => r.channel.length === 0);
    if (!done) quietSince = Infinity;
    else if (quietSince === Infinity) quietSince = t;
  }
  assert.equal(ws.unsynced.size + ws.victims.length, 0, 'every watcher caught up');
}

test('catch-up pace: every response reaches its watcher at the instant etcd would send it', () => {
  checkProperty(
    fc.property(scenarioArb, (sc) => {
      try {
        runScenario(sc);
      } catch (e) {
        recordFailure(fc.stringify(sc));
        throw e;
      }
    }),
    { file: FILE, numRuns: 150 },
  );
});
