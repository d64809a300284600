/**
 * Slow consumers: a stream whose channel is full makes its watchers victims; moveVictims retries the blocked
 * batch (header minRev - 1) and puts the watcher back in synced, or in unsynced when it fell behind, where the
 * sync step catches it up, or cancels it when a compaction took the history it still needs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { b, compactCanceled, created, put, putEv, range, resp, revsOf, setup, show, takeShown, txnPut } from './helpers.js';

test('a full channel makes the watcher a victim; after the client takes, nothing is lost or reordered', () => {
  const { kv, ws, st } = setup({}, { sendWindowBytes: 0, chanBufLen: 2 });
  st.watch({ key: b('k') });
  st.take();
  put(kv, 'k', '1'); // 2
  put(kv, 'k', '2'); // 3: channel full
  assert.equal(ws.victims.length, 0);
  put(kv, 'k', '3'); // 4: cannot be queued -> victim
  assert.equal(ws.synced.size, 0);
  assert.equal(ws.victims.length, 1);
  put(kv, 'k', '4'); // 5: not delivered to a victim
  put(kv, 'k', '5'); // 6
  assert.equal(st.pending, 2);
  assert.equal(ws.moveVictims(), 0, 'still blocked: the client has not taken anything');
  assert.equal(ws.victims.length, 1);

  const first = st.take();
  assert.deepEqual(revsOf(first), [2, 3]);
  assert.equal(ws.moveVictims(), 1);
  assert.equal(ws.victims.length, 0);
  assert.deepEqual(takeShown(st), [resp({ revision: 4, events: [putEv('k', '3', 2, 4, 3)] })], 'header = minRev - 1');
  assert.equal(ws.unsynced.size, 1, 'it fell behind while it was a victim');

  ws.syncWatchers();
  assert.deepEqual(takeShown(st), [resp({ revision: 6, events: [putEv('k', '4', 2, 5, 4), putEv('k', '5', 2, 6, 5)] })]);
  assert.equal(ws.synced.size, 1);
  put(kv, 'k', '6'); // 7
  assert.deepEqual(takeShown(st), [resp({ revision: 7, events: [putEv('k', '6', 2, 7, 6)] })]);
});

test('a victim that did not fall behind goes straight back to synced', () => {
  const { kv, ws, st } = setup({}, { sendWindowBytes: 0, chanBufLen: 1 });
  st.watch({ key: b('k') });
  put(kv, 'k', '1'); // 2
  put(kv, 'k', '2'); // 3: victim
  put(kv, 'x', '1'); // 4: outside the watch, but moves the current revision
  st.take();
  // minRev is 4 and the current revision is 4: etcd sends it to unsynced, where a sync finds nothing for it.
  assert.equal(ws.moveVictims(), 1);
  assert.deepEqual(takeShown(st), [resp({ revision: 3, events: [putEv('k', '2', 2, 3, 2)] })]);
  assert.equal(ws.unsynced.size, 1);
  assert.equal(ws.syncWatchers(), 0);
  assert.deepEqual(st.take(), []);
  assert.equal(ws.synced.size, 1);

  // Now with no write in between: back to synced directly.
  put(kv, 'k', '3'); // 5: queued
  put(kv, 'k', '4'); // 6: victim
  st.take();
  ws.moveVictims();
  assert.equal(ws.unsynced.size, 0);
  assert.equal(ws.synced.size, 1);
  assert.deepEqual(revsOf(st.take()), [6]);
});

test('a victim multi-key revision is retried as one response', () => {
  const { kv, ws, st } = setup({}, { sendWindowBytes: 0, chanBufLen: 1 });
  st.watch({ key: b('a'), rangeEnd: b('z') });
  put(kv, 'a', '1'); // 2 fills the channel
  const r = txnPut(kv, [
    ['b', '1'],
    ['c', '1'],
    ['d', '1'],
  ]); // 3: victim
  st.take();
  ws.moveVictims();
  assert.deepEqual(takeShown(st), [resp({ revision: r, events: [putEv('b', '1', r, r, 1), putEv('c', '1', r, r, 1), putEv('d', '1', r, r, 1)] })]);
});

test('watchers sharing a full stream: the ones that could not be queued retry, in order', () => {
  const { kv, ws, st } = setup({}, { sendWindowBytes: 0, chanBufLen: 1 });
  st.watch({ key: b('k') }); // 0
  st.watch({ key: b('k') }); // 1
  st.take();
  put(kv, 'k', '1'); // 2: queued for 0, 1 becomes a victim
  assert.equal(ws.synced.size, 1);
  put(kv, 'k', '2'); // 3: 0 becomes a victim too
  assert.equal(ws.synced.size, 0);
  assert.equal(ws.victims.length, 2);
  const all = [...st.take()];
  while (ws.victims.length > 0 || ws.unsynced.size > 0) {
    ws.moveVictims();
    all.push(...st.take());
    ws.syncWatchers();
    all.push(...st.take());
  }
  const perWatcher = (id: number): number[] => revsOf(all.filter((r) => r.watchId === id));
  assert.deepEqual(perWatcher(0), [2, 3]);
  assert.deepEqual(perWatcher(1), [2, 3]);
  assert.equal(ws.synced.size, 2);
});

test('a catch-up batch that finds the channel full is retried with header moreRev - 1', () => {
  const { kv, ws, st } = setup({}, { sendWindowBytes: 0, chanBufLen: 1, watchBatchMaxRevs: 3 });
  for (let i = 0; i < 10; i++) put(kv, 'k', `${i}`); // 2..11
  st.watch({ key: b('k'), startRevision: 2 });
  st.take();
  ws.syncWatchers(); // 2..4 queued
  ws.syncWatchers(); // 5..7 cannot be queued: victim
  assert.equal(ws.unsynced.size, 0);
  assert.equal(ws.victims.length, 1);
  const got = st.take();
  assert.deepEqual(
    got.map((r) => [r.revision, ...revsOf([r])]),
    [[11, 2, 3, 4]],
  );
  ws.moveVictims();
  const victimResp = st.take();
  assert.deepEqual(
    victimResp.map((r) => [r.revision, ...revsOf([r])]),
    [[7, 5, 6, 7]],
    'header = minRev - 1 = 7',
  );
  assert.equal(ws.unsynced.size, 1);
  ws.syncWatchers();
  assert.deepEqual(revsOf(st.take()), [8, 9, 10]);
  ws.syncWatchers();
  assert.deepEqual(revsOf(st.take()), [11]);
  assert.equal(ws.synced.size, 1);
});

test('a victim that falls behind a compaction is canceled with compact_revision after its batch is delivered', () => {
  const { kv, ws, st } = setup({}, { sendWindowBytes: 0, chanBufLen: 1 });
  st.watch({ key: b('k') });
  st.take();
  put(kv, 'k', '1'); // 2 queued
  put(kv, 'k', '2'); // 3 victim, minRev 4
  for (let i = 0; i < 5; i++) put(kv, 'k', `x${i}`); // 4..8
  kv.compact(6);
  st.take();
  ws.moveVictims();
  assert.deepEqual(takeShown(st), [resp({ revision: 3, events: [putEv('k', '2', 2, 3, 2)] })]);
  assert.equal(ws.unsynced.size, 1);
  ws.syncWatchers();
  assert.deepEqual(takeShown(st), [compactCanceled(0, 6)]);
  assert.equal(ws.unsynced.size + ws.synced.size, 0);
  put(kv, 'k', 'late');
  assert.deepEqual(st.take(), []);
});

test('a long run of a slow consumer: every revision exactly once, in order', () => {
  const { kv, ws, st } = setup({}, { sendWindowBytes: 0, chanBufLen: 3, watchBatchMaxRevs: 4 });
  st.watch({ key: b('k'), rangeEnd: b('l') });
  const all = [...st.take()];
  let n = 0;
  let sawVictim = false;
  let sawUnsynced = false;
  for (let round = 0; round < 40; round++) {
    const writes = (round * 7) % 5; // 0..4 writes per round
    for (let i = 0; i < writes; i++) put(kv, `k${n % 3}`, `${n++}`);
    if (round % 3 === 0) all.push(...st.take());
    if (round % 2 === 0) ws.moveVictims();
    if (round % 4 === 1) ws.syncWatchers();
    if (ws.victims.length > 0) sawVictim = true;
    if (ws.unsynced.size > 0) sawUnsynced = true;
  }
  assert.ok(sawVictim && sawUnsynced, 'the schedule exercises victims and catch-up');
  for (let i = 0; i < 50 && (ws.victims.length > 0 || ws.unsynced.size > 0 || st.pending > 0); i++) {
    all.push(...st.take());
    ws.moveVictims();
    ws.syncWatchers();
  }
  all.push(...st.take());
  assert.equal(ws.synced.size, 1);
  assert.deepEqual(revsOf(all), range(2, kv.currentRevision));
  // A header never precedes the events it carries. (Headers of event responses may go backwards, as in etcd:
  // a catch-up batch says the current revision, a victim retry after it says minRev - 1.)
  for (const r of all.slice(1)) for (const ev of r.events) assert.ok(ev.kv.modRevision <= r.revision);
  assert.ok(n > 50);
  assert.deepEqual(show(all.slice(0, 1)), [created(1, 0)]);
});
