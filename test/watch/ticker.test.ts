/**
 * The sync and victim steps on the simulator's Ticker (virtual time): etcd's periods (100 ms sync, 10 ms
 * victim retry) by default; advancing the clock does what syncWatchers()/moveVictims() do by hand.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { MvccStore, prefixEnd } from '../../src/mvcc/index.js';
import { Ticker, VirtualClock } from '../../src/sim/index.js';
import { WatchableStore, type WatchableStoreOptions } from '../../src/watch/index.js';
import { b, compactCanceled, created, put, putEv, range, resp, revsOf, takeShown } from './helpers.js';

function ticked(opts: WatchableStoreOptions = {}): { clock: VirtualClock; ticker: Ticker; kv: MvccStore; ws: WatchableStore } {
  const clock = new VirtualClock();
  const ticker = new Ticker(clock);
  const kv = new MvccStore();
  const ws = new WatchableStore(kv, { ticker, clock, ...opts });
  return { clock, ticker, kv, ws };
}

test('the store registers a 100 ms sync step and a 10 ms victim step (etcd defaults)', () => {
  const { ticker } = ticked();
  assert.deepEqual(
    ticker.steps().map((s) => [s.name, s.periodMs]),
    [
      ['watch.sync', 100],
      ['watch.victims', 10],
    ],
  );
  const other = ticked({ stepPrefix: 'w2', syncIntervalMs: 50, victimIntervalMs: 5 });
  assert.deepEqual(
    other.ticker.steps().map((s) => [s.name, s.periodMs]),
    [
      ['w2.sync', 50],
      ['w2.victims', 5],
    ],
  );
});

test('an unsynced watcher is caught up by the sync step at the next 100 ms instant, not before', () => {
  const { clock, kv, ws } = ticked();
  for (let i = 0; i < 3; i++) put(kv, 'k', `${i}`); // 2..4
  const st = ws.newWatchStream();
  st.watch({ key: b('k'), startRevision: 2 });
  clock.advance(99);
  assert.deepEqual(takeShown(st), [created(4, 0)]);
  assert.equal(ws.unsynced.size, 1);
  clock.advance(1);
  assert.deepEqual(revsOf(st.take()), [2, 3, 4]);
  assert.equal(ws.synced.size, 1);
});

test('a long catch-up takes one batch per sync step', () => {
  const { clock, kv, ws } = ticked({ watchBatchMaxRevs: 10 });
  for (let i = 0; i < 25; i++) put(kv, 'k', `${i}`); // 2..26
  const st = ws.newWatchStream();
  st.watch({ key: b('k'), startRevision: 2 });
  st.take();
  const seen: [number, number[]][] = [];
  for (let t = 0; t < 400; t += 10) {
    clock.advance(10);
    for (const r of st.take()) seen.push([clock.now(), revsOf([r])]);
  }
  assert.deepEqual(seen, [
    [100, range(2, 11)],
    [200, range(12, 21)],
    [300, range(22, 26)],
  ]);
});

test('when a sync step finishes some watchers but not all, the rest is synced again at the next victim step', () => {
  const { clock, kv, ws } = ticked({ watchBatchMaxRevs: 10 });
  for (let i = 0; i < 25; i++) put(kv, 'k', `${i}`); // 2..26
  const st = ws.newWatchStream();
  st.watch({ key: b('k'), startRevision: 2 }); // 0: three batches
  st.watch({ key: b('k'), startRevision: 20 }); // 1: done in one
  st.take();
  const seen: [number, number, number[]][] = [];
  for (let t = 0; t < 300; t += 10) {
    clock.advance(10);
    for (const r of st.take()) seen.push([clock.now(), r.watchId, revsOf([r])]);
  }
  assert.deepEqual(
    seen.map(([, id, revs]) => [id, revs]),
    [
      [0, range(2, 11)],
      [1, range(20, 26)],
      [0, range(12, 21)],
      [0, range(22, 26)],
    ],
  );
  assert.deepEqual(
    seen.map(([t]) => t).filter((_, i) => i !== 2),
    [100, 100, 200],
  );
  // Progress was made at t = 100 (2 unsynced -> 1): etcd's loop yields and resyncs soon instead of waiting a
  // full period. The model resyncs one victim step (10 ms) later, never at the same instant; with no further
  // progress, the regular 100 ms period resumes.
  assert.equal(seen[2]![0], 110);
});

test('victims are retried every 10 ms once the client takes; a victim behind is caught up by the sync step', () => {
  const { clock, kv, ws } = ticked({ sendWindowBytes: 0, chanBufLen: 2 });
  const st = ws.newWatchStream();
  st.watch({ key: b('k') });
  st.take();
  put(kv, 'k', '1'); // 2
  put(kv, 'k', '2'); // 3
  put(kv, 'k', '3'); // 4: victim
  put(kv, 'k', '4'); // 5
  clock.advance(50);
  assert.equal(ws.victims.length, 1, 'still blocked');
  assert.deepEqual(revsOf(st.take()), [2, 3]);
  clock.advance(10); // t = 60: victim step
  assert.deepEqual(takeShown(st), [resp({ revision: 4, events: [putEv('k', '3', 2, 4, 3)] })]);
  assert.equal(ws.unsynced.size, 1);
  clock.advance(30); // t = 90
  assert.deepEqual(st.take(), []);
  clock.advance(10); // t = 100: sync step
  assert.deepEqual(takeShown(st), [resp({ revision: 5, events: [putEv('k', '4', 2, 5, 4)] })]);
  assert.equal(ws.synced.size, 1);
});

test('seed 003 on the ticker: compaction during the replay cancels the behind watcher; the current one goes on', () => {
  const { clock, kv, ws } = ticked();
  const P = b('/evict/');
  const A = put(kv, '/evict/anchor', '0');
  for (let i = 1; i <= 2000; i++) put(kv, '/evict/k', `${i}`);
  const N = kv.currentRevision;
  const behind = ws.newWatchStream();
  behind.watch({ key: P, rangeEnd: prefixEnd(P), startRevision: A });
  const current = ws.newWatchStream();
  current.watch({ key: P, rangeEnd: prefixEnd(P) });
  behind.take();
  current.take();
  clock.advance(100); // first batch of 1000 revisions
  assert.deepEqual(revsOf(behind.take()), range(A, A + 999));
  kv.compact(N - 10);
  clock.advance(100);
  assert.deepEqual(takeShown(behind), [compactCanceled(0, N - 10)]);
  const r = put(kv, '/evict/k', 'after');
  clock.advance(100);
  assert.deepEqual(revsOf(current.take()), [r]);
  assert.deepEqual(behind.take(), []);
});

test('the ticker and the progress clock together: a quiet watcher gets progress only once synced', () => {
  const { clock, kv, ws } = ticked({ progressNotifyIntervalMs: 1000, watchBatchMaxRevs: 5 });
  for (let i = 0; i < 12; i++) put(kv, 'k', `${i}`); // 2..13
  const st = ws.newWatchStream();
  st.watch({ key: b('k'), startRevision: 2, progressNotify: true });
  st.take();
  clock.advance(300); // batches at 100, 200, 300
  assert.deepEqual(revsOf(st.take()), range(2, 13));
  clock.advance(700); // t = 1000: events were taken since the stream opened
  assert.deepEqual(st.take(), []);
  clock.advance(1000); // t = 2000
  assert.deepEqual(takeShown(st), [resp({ revision: 13 })]);
});
