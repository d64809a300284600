/**
 * Compaction against watchers (seed exercise 003): a watcher still replaying history behind the compaction
 * point is canceled with compact_revision at the next sync step; a caught-up watcher is untouched; reopening
 * below the compaction point fails the same way; exactly the compaction revision still opens.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { MvccStore, prefixEnd } from '../../src/mvcc/index.js';
import { WatchableStore, type WatchStream } from '../../src/watch/index.js';
import { b, compactCanceled, created, del, delEv, put, putEv, range, resp, revsOf, setup, show, takeShown } from './helpers.js';

const P = b('/evict/');
const P_END = prefixEnd(P);

/** Seed 003's setup: an anchor at A, then 2000 puts of /evict/k; N is the current revision. */
function evictStore(): { kv: MvccStore; ws: WatchableStore; A: number; N: number } {
  const kv = new MvccStore();
  const ws = new WatchableStore(kv);
  const A = put(kv, '/evict/anchor', '0');
  for (let i = 1; i <= 2000; i++) put(kv, '/evict/k', `${i}`);
  return { kv, ws, A, N: kv.currentRevision };
}

function open(ws: WatchableStore, startRevision?: number): WatchStream {
  const st = ws.newWatchStream();
  st.watch({ key: P, rangeEnd: P_END, startRevision });
  return st;
}

test('seed 003: compacting past a replaying watcher cancels it with compact_revision; the current watcher is untouched', () => {
  const { kv, ws, A, N } = evictStore();
  assert.equal(A, 2);
  assert.equal(N, 2002);
  const behind = open(ws, A);
  const current = open(ws);
  assert.deepEqual(takeShown(behind), [created(N, 0)]);
  assert.deepEqual(takeShown(current), [created(N, 0)]);

  ws.syncWatchers(); // first batch: revisions 2..1001; still behind
  const firstBatch = behind.take();
  assert.deepEqual(revsOf(firstBatch), range(2, 1001));
  assert.equal(ws.unsynced.size, 1);

  kv.compact(N - 10);
  assert.deepEqual(behind.take(), [], 'compaction itself sends nothing');
  assert.deepEqual(current.take(), []);

  ws.syncWatchers();
  assert.deepEqual(takeShown(behind), [compactCanceled(0, N - 10)], 'canceled: header revision 0, no reason');
  assert.equal(ws.unsynced.size, 0);
  assert.equal(ws.synced.size, 1, 'only the current watcher remains');

  const r = put(kv, '/evict/k', 'after');
  assert.deepEqual(takeShown(current), [resp({ revision: r, events: [putEv('/evict/k', 'after', 3, r, 2001)] })]);
  ws.syncWatchers();
  assert.deepEqual(behind.take(), [], 'the canceled watcher receives nothing more');
});

test('seed 003: reopening at the compacted revision is created, then canceled at the next sync', () => {
  const { kv, ws, A, N } = evictStore();
  kv.compact(N - 10);
  const again = open(ws, A);
  assert.deepEqual(takeShown(again), [created(N, 0)]);
  ws.syncWatchers();
  assert.deepEqual(takeShown(again), [compactCanceled(0, N - 10)]);
  assert.equal(ws.unsynced.size + ws.synced.size, 0);
});

test('seed 003: the lowest revision that still opens is the compaction revision itself', () => {
  const { kv, ws, N } = evictStore();
  const C = N - 10;
  kv.compact(C);
  const streams = new Map<number, WatchStream>();
  for (const r of [N - 12, N - 11, N - 10, N - 9]) streams.set(r, open(ws, r));
  ws.syncWatchers();
  for (const r of [N - 12, N - 11]) assert.deepEqual(takeShown(streams.get(r)!), [created(N, 0), compactCanceled(0, C)], `start ${r}`);
  for (const r of [N - 10, N - 9]) {
    const got = takeShown(streams.get(r)!);
    assert.equal(got.length, 2, `start ${r}`);
    assert.deepEqual(got[0], created(N, 0));
    assert.equal(got[1]!.revision, N);
    assert.deepEqual(
      got[1]!.events.map((e) => e.kv.mod),
      range(r, N),
      `start ${r} replays from itself`,
    );
    assert.deepEqual(got[1]!.events[0], putEv('/evict/k', `${r - 2}`, 3, r, r - 2));
  }
});

test('a compaction between sync steps only cancels watchers still below it', () => {
  const { kv, ws, st } = setup({}, { watchBatchMaxRevs: 5 });
  for (let i = 0; i < 20; i++) put(kv, 'k', `${i}`); // 2..21
  st.watch({ key: b('k'), startRevision: 2 }); // 0: far behind
  st.watch({ key: b('k'), startRevision: 12 }); // 1: behind, but above the compaction after one step
  st.take();
  ws.syncWatchers(); // 0 gets 2..6 (minRev 7), 1 gets 12..16 (minRev 17)
  assert.deepEqual(
    st.take().map((r) => [r.watchId, ...revsOf([r])]),
    [
      [0, 2, 3, 4, 5, 6],
      [1, 12, 13, 14, 15, 16],
    ],
  );
  kv.compact(10);
  ws.syncWatchers();
  const got = st.take();
  assert.deepEqual(show(got.slice(0, 1)), [compactCanceled(0, 10)]);
  assert.deepEqual(
    got.slice(1).map((r) => [r.watchId, ...revsOf([r])]),
    [[1, 17, 18, 19, 20, 21]],
  );
  assert.equal(ws.unsynced.size, 0);
  assert.equal(ws.synced.size, 1);
  put(kv, 'k', 'live'); // 22
  assert.deepEqual(
    st.take().map((r) => [r.watchId, ...revsOf([r])]),
    [[1, 22]],
  );
});

test('a compaction cancel that finds the channel full is retried at the next sync step', () => {
  const { kv, ws, st } = setup({}, { sendWindowBytes: 0, chanBufLen: 1, watchBatchMaxRevs: 3 });
  for (let i = 0; i < 10; i++) put(kv, 'k', `${i}`); // 2..11
  st.watch({ key: b('k'), startRevision: 2 });
  ws.syncWatchers(); // 2..4 fills the one-slot channel
  kv.compact(8);
  ws.syncWatchers(); // the cancel cannot be queued
  assert.equal(ws.unsynced.size, 1, 'still unsynced, waiting to be told');
  const got = takeShown(st);
  assert.deepEqual(
    got.map((r) => r.events.map((e) => e.kv.mod)),
    [[], [2, 3, 4]],
  );
  ws.syncWatchers();
  assert.deepEqual(takeShown(st), [compactCanceled(0, 8)]);
  assert.equal(ws.unsynced.size, 0);
});

test('a DELETE at exactly the compaction revision is still replayed (etcd >= 3.6; PR #18474)', () => {
  const { kv, ws, st } = setup();
  put(kv, 'k', 'v'); // 2
  put(kv, 'x', 'v'); // 3
  del(kv, 'k'); // 4
  put(kv, 'y', 'v'); // 5
  kv.compact(4);
  st.watch({ key: b('k'), startRevision: 4 });
  ws.syncWatchers();
  assert.deepEqual(takeShown(st), [created(5, 0), resp({ revision: 5, events: [delEv('k', 4)] })]);
});

test('etcd 3.4: a DELETE at exactly the compaction revision is lost to a watch from that revision (observed 3.4.23)', () => {
  const { kv, ws, st } = setup({ etcdVersion: '3.4' });
  put(kv, 'k', 'v'); // 2
  put(kv, 'x', 'v'); // 3
  del(kv, 'k'); // 4
  put(kv, 'y', 'v'); // 5
  kv.compact(4);
  st.watch({ key: b('k'), startRevision: 4 });
  st.watch({ key: new Uint8Array([0]), rangeEnd: new Uint8Array([0]), startRevision: 4 });
  ws.syncWatchers();
  assert.deepEqual(takeShown(st), [created(5, 0), created(5, 1), resp({ revision: 5, watchId: 1, events: [putEv('y', 'v', 5, 5, 1)] })]);
});
