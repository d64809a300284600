/**
 * Property: a watch on a future revision survives a restore (etcd issue #20221; PRs #20281, #20229).
 *
 * A follower's client opens a watch at start revision S a few revisions ahead of the follower. While it
 * waits, the leader moves on and the follower is restored from the leader's snapshot (still short of S,
 * or already past it); then writes go on past S, with the sync, victim and progress steps running on the
 * virtual clock, and the client sometimes asking for progress. The watch must never receive an event
 * below S, never a progress notification below S, and must keep every guarantee of
 * src/watch/guarantees.ts.
 *
 * With the pre-fix rules — `restoreKeepsFutureMinRev: false` (a sync after the restore lowers the
 * watcher's minRev to current + 1) or `progressRespectsStartRev: false` (progress is reported while the
 * store is still below S) — the same property must find a counterexample.
 *
 * Runs: ETCDSIM_NUM_RUNS (default 300). Replay: ETCDSIM_SEED=<seed> ETCDSIM_PATH=<path> (see harness.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';

import { MvccStore } from '../../src/mvcc/index.js';
import { SimRandom, Ticker, VirtualClock } from '../../src/sim/index.js';
import { WatchableStore, type WatchableStoreOptions } from '../../src/watch/index.js';
import { checkWatch, formatViolations, isProgressNotify, recordHistory } from '../../src/watch/guarantees.js';
import { checkProperty, numRuns } from './harness.js';
import { apply, b, jsonBytes, KEYS, PREFIX, PREFIX_END, RecordedStream } from './watch_harness.js';

const FILE = 'test/properties/future_watch_restore.property.test.ts';

type Step = { readonly t: 'write'; readonly key: string } | { readonly t: 'tick'; readonly ms: number } | { readonly t: 'progress' };

interface Scenario {
  readonly seed: number;
  /** Writes both stores apply before the watch. */
  readonly pre: readonly string[];
  /** S = follower's current revision + ahead. */
  readonly ahead: number;
  readonly range: { readonly key: string; readonly end: string | undefined };
  readonly progressNotify: boolean;
  readonly prevKv: boolean;
  /** Writes only the leader applies before the restore. */
  readonly leaderOnly: readonly string[];
  /** What happens while the watch waits, before the restore. */
  readonly before: readonly Step[];
  /** What happens after the restore (writes go to the restored follower). */
  readonly after: readonly Step[];
}

const keyArb = fc.constantFrom(...KEYS);
const watchedKeyArb = fc.constantFrom('/p/0', '/p/1', '/p/2');
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.oneof(watchedKeyArb, keyArb).map((key) => ({ t: 'write' as const, key })) },
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 250 }).map((ms) => ({ t: 'tick' as const, ms })) },
  { weight: 1, arbitrary: fc.constant({ t: 'progress' as const }) },
);

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  seed: fc.integer(),
  pre: fc.array(keyArb, { maxLength: 4 }),
  ahead: fc.integer({ min: 1, max: 6 }),
  range: fc.constantFrom({ key: PREFIX, end: PREFIX_END }, { key: '', end: '\0' }, { key: '/p/0', end: undefined }),
  progressNotify: fc.boolean(),
  prevKv: fc.boolean(),
  leaderOnly: fc.array(fc.oneof(watchedKeyArb, keyArb), { maxLength: 8 }),
  before: fc.array(stepArb, { maxLength: 6 }),
  after: fc.array(stepArb, { minLength: 1, maxLength: 20 }),
});

function run(opts: Pick<WatchableStoreOptions, 'restoreKeepsFutureMinRev' | 'progressRespectsStartRev'>, sc: Scenario): void {
  const clock = new VirtualClock();
  const ticker = new Ticker(clock);
  const leader = new MvccStore();
  const { history } = recordHistory(leader);
  const follower = new MvccStore();
  const ws = new WatchableStore(follower, { ticker, clock, random: new SimRandom(sc.seed), progressNotifyIntervalMs: 100, ...opts });
  const put = (kv: MvccStore, key: string): void => apply(kv, { op: 'put', key, value: `v${kv.currentRevision}` });
  for (const k of sc.pre) {
    put(leader, k);
    put(follower, k);
  }
  const start = follower.currentRevision + sc.ahead;
  const client = new RecordedStream(ws.newWatchStream());
  const rec = client.open({
    key: b(sc.range.key),
    ...(sc.range.end === undefined ? {} : { rangeEnd: b(sc.range.end) }),
    startRevision: start,
    progressNotify: sc.progressNotify,
    prevKv: sc.prevKv,
  });
  let restored = false;
  const step = (s: Step): void => {
    switch (s.t) {
      case 'write':
        put(leader, s.key);
        if (restored) put(follower, s.key);
        break;
      case 'tick':
        clock.advance(s.ms);
        break;
      case 'progress':
        client.stream.requestProgress();
        break;
    }
    client.take();
    assert.equal(ws.checkValid(), undefined, 'WatchableStore.checkValid()');
  };
  for (const k of sc.leaderOnly) put(leader, k);
  for (const s of sc.before) {
    // Writes while the follower lags reach only the leader; the restore brings them over.
    if (s.t === 'write') put(leader, s.key);
    else step(s);
  }
  ws.restore(leader.snapshot());
  restored = true;
  for (const s of sc.after) step(s);
  // Writes past the start revision, to a key the watch covers.
  while (follower.currentRevision <= start) step({ t: 'write', key: '/p/0' });
  for (let i = 0; i < 30 && (ws.unsynced.size > 0 || ws.victims.length > 0 || client.stream.pending > 0); i++) step({ t: 'tick', ms: 100 });
  step({ t: 'progress' });

  const problems: string[] = [];
  rec.responses.forEach((r, i) => {
    for (const ev of r.events) if (ev.kv.modRevision < start) problems.push(`response ${i}: event ${ev.type}@${ev.kv.modRevision} below the start revision ${start}`);
    if (isProgressNotify(r) && r.revision < start) problems.push(`response ${i}: progress notification at ${r.revision} below the start revision ${start}`);
  });
  const v = checkWatch(history, rec.req, rec.responses, { drainedThrough: follower.currentRevision });
  if (v.length > 0) problems.push(formatViolations(v));
  if (problems.length > 0) {
    throw new Error(
      `watch from ${start} (snapshot at ${leader.currentRevision >= start ? 'or past' : 'below'} the start):\n  ${problems.join('\n  ')}\n` +
        `  responses: ${rec.responses.map((r) => JSON.stringify(r, jsonBytes)).join('\n             ')}`,
    );
  }
}

test('a watch on a future revision gets nothing below its start revision across a restore', () => {
  checkProperty(
    fc.property(scenarioArb, (sc) => run({}, sc)),
    { file: FILE, numRuns: 300 },
  );
});

/** The pre-fix rule must be caught; returns the failure message. */
function mustFail(opts: Pick<WatchableStoreOptions, 'restoreKeepsFutureMinRev' | 'progressRespectsStartRev'>): string {
  const details = fc.check(
    fc.property(scenarioArb, (sc) => run(opts, sc)),
    { numRuns: Math.max(numRuns(300), 300), endOnFailure: true },
  );
  assert.ok(details.failed, `no counterexample for ${JSON.stringify(opts)} in ${details.numRuns} runs (seed ${details.seed})`);
  const err = details.errorInstance;
  return err instanceof Error ? err.message : String(err);
}

test('pre-fix restore rule (minRev = current + 1, etcd #20221 before PR #20281) delivers events below the start revision', () => {
  assert.match(mustFail({ restoreKeepsFutureMinRev: false }), /event \w+@\d+ below the start revision/);
});

test('pre-fix progress rule (etcd #20221 before PR #20229) reports progress below the start revision', () => {
  assert.match(mustFail({ progressRespectsStartRev: false }), /progress notification at \d+ below the start revision/);
});
