/**
 * Watching from a past or future revision (seed exercise 002) and catch-up in batches: replay is inclusive of
 * the start revision, deletes are replayed as DELETE events shaped like live ones, resuming from the last seen
 * revision duplicates it, a future start waits; catch-up responses carry at most watchBatchMaxRevs revisions
 * with the current revision as header and never split a revision.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { prefixEnd } from '../../src/mvcc/index.js';
import {
  b,
  created,
  del,
  delEv,
  flat,
  put,
  putEv,
  range,
  resp,
  revsOf,
  setup,
  show,
  takeShown,
  txnPut,
} from './helpers.js';

const W = b('/w/');
const W_END = prefixEnd(W);

test('seed 002: a watch from R replays every event from R inclusive, deletes included, before anything live', () => {
  const { kv, ws, st } = setup();
  const live = ws.newWatchStream();
  live.watch({ key: W, rangeEnd: W_END }); // sees everything as it happens
  const R = put(kv, '/w/start', 'x'); // rev 2
  for (let i = 1; i <= 5; i++) put(kv, `/w/k${i}`, `${i}`); // revs 3..7
  const delRev = del(kv, '/w/k3'); // rev 8
  assert.equal(R, 2);
  assert.equal(delRev, 8);

  st.watch({ key: W, rangeEnd: W_END, startRevision: R });
  ws.syncWatchers();
  put(kv, '/w/k9', 'live'); // rev 9
  const got = takeShown(st);
  assert.deepEqual(got, [
    created(8, 0), // header: the current revision, not R
    resp({
      revision: 8,
      events: [
        putEv('/w/start', 'x', 2, 2, 1), // the write at R itself is included
        putEv('/w/k1', '1', 3, 3, 1), // values are in the events
        putEv('/w/k2', '2', 4, 4, 1),
        putEv('/w/k3', '3', 5, 5, 1),
        putEv('/w/k4', '4', 6, 6, 1),
        putEv('/w/k5', '5', 7, 7, 1),
        delEv('/w/k3', 8), // the delete is an event, with mod_revision = the delete's revision
      ],
    }),
    resp({ revision: 9, events: [putEv('/w/k9', 'live', 9, 9, 1)] }),
  ]);
  // Same shape as live events: the live watcher saw exactly the same events, one response per revision.
  const liveGot = live.take();
  assert.deepEqual(
    show(liveGot).flatMap((r) => r.events),
    got.flatMap((r) => r.events),
  );
  assert.deepEqual(
    liveGot.slice(1).map((r) => r.revision),
    range(2, 9),
  );
});

test('seed 002: resuming from the last seen revision delivers it again; from last seen + 1 loses nothing', () => {
  const { kv, ws, st } = setup();
  for (let i = 1; i <= 4; i++) put(kv, '/w/k', `${i}`); // revs 2..5
  st.watch({ key: W, rangeEnd: W_END, startRevision: 2 });
  ws.syncWatchers();
  const first = st.take();
  const lastSeen = revsOf(first).at(-1)!;
  assert.equal(lastSeen, 5);
  st.close();
  put(kv, '/w/k', '5'); // rev 6, written while disconnected

  const again = ws.newWatchStream();
  again.watch({ key: W, rangeEnd: W_END, startRevision: lastSeen });
  ws.syncWatchers();
  assert.deepEqual(revsOf(again.take()), [5, 6], 'the last seen event is a duplicate');

  const right = ws.newWatchStream();
  right.watch({ key: W, rangeEnd: W_END, startRevision: lastSeen + 1 });
  ws.syncWatchers();
  assert.deepEqual(revsOf(right.take()), [6], 'resume from last seen + 1: no duplicate, no loss');
});

test('seed 002: a future start revision is accepted and waits; events arrive from that revision on', () => {
  const { kv, ws, st } = setup();
  put(kv, '/w/a', '1'); // rev 2
  st.watch({ key: W, rangeEnd: W_END, startRevision: 999999999 });
  st.watch({ key: W, rangeEnd: W_END, startRevision: 5 });
  assert.equal(ws.synced.size, 2, 'future watchers are synced, waiting');
  assert.deepEqual(takeShown(st), [created(2, 0), created(2, 1)]);
  put(kv, '/w/b', '1'); // 3
  put(kv, '/w/c', '1'); // 4
  ws.syncWatchers();
  assert.deepEqual(takeShown(st), [], 'revisions below the start revision are not delivered');
  put(kv, '/w/d', '1'); // 5
  put(kv, '/w/e', '1'); // 6
  assert.deepEqual(takeShown(st), [
    resp({ revision: 5, watchId: 1, events: [putEv('/w/d', '1', 5, 5, 1)] }),
    resp({ revision: 6, watchId: 1, events: [putEv('/w/e', '1', 6, 6, 1)] }),
  ]);
});

test('a start revision equal to the current revision replays that revision', () => {
  const { kv, ws, st } = setup();
  put(kv, 'k', 'a'); // 2
  put(kv, 'k', 'b'); // 3
  st.watch({ key: b('k'), startRevision: 3 });
  assert.equal(ws.unsynced.size, 1);
  ws.syncWatchers();
  assert.deepEqual(takeShown(st), [created(3, 0), resp({ revision: 3, events: [putEv('k', 'b', 2, 3, 2)] })]);
  assert.equal(ws.synced.size, 1);
});

test('a behind watcher with nothing to replay in its range moves to synced without a response', () => {
  const { kv, ws, st } = setup();
  put(kv, 'x', '1'); // 2
  put(kv, 'x', '2'); // 3
  st.watch({ key: b('k'), startRevision: 2 });
  assert.equal(ws.syncWatchers(), 0);
  assert.equal(ws.synced.size, 1);
  assert.deepEqual(takeShown(st), [created(3, 0)]);
  put(kv, 'k', 'v'); // 4
  assert.deepEqual(takeShown(st), [resp({ revision: 4, events: [putEv('k', 'v', 4, 4, 1)] })]);
});

test('catch-up goes in batches of at most watchBatchMaxRevs revisions, each with the current revision as header', () => {
  const { kv, ws, st } = setup({}, { watchBatchMaxRevs: 3 });
  for (let i = 0; i < 10; i++) put(kv, 'k', `${i}`); // revs 2..11
  st.watch({ key: b('k'), startRevision: 2 });
  st.take();
  const batches: number[][] = [];
  let steps = 0;
  while (ws.unsynced.size > 0) {
    const left = ws.syncWatchers();
    steps++;
    const got = st.take();
    assert.equal(got.length, 1, 'one response per sync step');
    assert.equal(got[0]!.revision, 11, 'header = the current revision');
    assert.equal(got[0]!.watchId, 0);
    batches.push(revsOf(got));
    assert.equal(left, ws.unsynced.size);
  }
  assert.equal(steps, 4);
  assert.deepEqual(batches, [
    [2, 3, 4],
    [5, 6, 7],
    [8, 9, 10],
    [11],
  ]);
  assert.equal(ws.synced.size, 1);
  put(kv, 'k', 'live'); // 12
  assert.deepEqual(revsOf(st.take()), [12]);
});

test('the default batch is 1000 revisions; a catch-up header is the current revision, above the last event', () => {
  const { kv, ws, st } = setup();
  for (let i = 0; i < 2500; i++) put(kv, 'k', `${i}`); // revs 2..2501
  put(kv, 'other', 'x'); // 2502, outside the range
  st.watch({ key: b('k'), startRevision: 2 });
  st.take();
  ws.syncWatchers();
  let got = st.take();
  assert.equal(got.length, 1);
  assert.deepEqual(revsOf(got), range(2, 1001));
  assert.equal(got[0]!.revision, 2502);
  assert.equal(ws.unsynced.size, 1, 'still behind after one step');
  ws.syncWatchers();
  got = st.take();
  assert.deepEqual(revsOf(got), range(1002, 2001));
  ws.syncWatchers();
  got = st.take();
  assert.deepEqual(revsOf(got), range(2002, 2501));
  assert.equal(got[0]!.revision, 2502, 'header above the last event');
  assert.equal(ws.unsynced.size, 0);
  assert.equal(ws.synced.size, 1);
});

test('a multi-key txn revision is never split across catch-up responses', () => {
  const { kv, ws, st } = setup({}, { watchBatchMaxRevs: 2 });
  put(kv, 'a', '1'); // 2
  txnPut(kv, [
    ['a', '2'],
    ['b', '1'],
    ['c', '1'],
  ]); // 3
  put(kv, 'b', '2'); // 4
  txnPut(kv, [
    ['c', '2'],
    ['d', '1'],
  ]); // 5
  put(kv, 'd', '2'); // 6
  st.watch({ key: b('a'), rangeEnd: b('z'), startRevision: 2 });
  st.take();
  const responses: string[][] = [];
  while (ws.unsynced.size > 0) {
    ws.syncWatchers();
    for (const r of st.take()) responses.push(flat([r]));
  }
  assert.deepEqual(responses, [
    ['PUT a@2', 'PUT a@3', 'PUT b@3', 'PUT c@3'],
    ['PUT b@4', 'PUT c@5', 'PUT d@5'],
    ['PUT d@6'],
  ]);
});

test('synced watchers get one response per revision, with all of its events in order', () => {
  const { kv, st } = setup();
  st.watch({ key: b('a'), rangeEnd: b('z') });
  st.take();
  const r1 = txnPut(kv, [
    ['c', '1'],
    ['a', '1'],
    ['b', '1'],
  ]);
  const r2 = put(kv, 'a', '2');
  const r3 = del(kv, 'a', 'c'); // deletes a and b at one revision
  assert.deepEqual(takeShown(st), [
    resp({ revision: r1, events: [putEv('c', '1', r1, r1, 1), putEv('a', '1', r1, r1, 1), putEv('b', '1', r1, r1, 1)] }),
    resp({ revision: r2, events: [putEv('a', '2', r1, r2, 2)] }),
    resp({ revision: r3, events: [delEv('a', r3), delEv('b', r3)] }),
  ]);
});

test('a catch-up and the live writes after it join without gap or duplicate', () => {
  const { kv, ws, st } = setup({}, { watchBatchMaxRevs: 4 });
  for (let i = 0; i < 10; i++) put(kv, 'k', `${i}`); // 2..11
  st.watch({ key: b('k'), startRevision: 3 });
  ws.syncWatchers(); // 3..6
  put(kv, 'k', 'x'); // 12: not delivered live, the watcher is unsynced
  ws.syncWatchers(); // 7..10
  put(kv, 'k', 'y'); // 13
  ws.syncWatchers(); // 11..13, synced
  put(kv, 'k', 'z'); // 14, live
  const got = st.take();
  assert.deepEqual(revsOf(got), range(3, 14));
  assert.deepEqual(
    got.map((r) => r.revision),
    [11, 11, 12, 13, 14], // created, three catch-up batches (header = current revision at each step), live
  );
});
