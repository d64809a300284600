/**
 * Progress: a stream-wide progress request answers watch ID -1 with the current revision only when every
 * watcher is synced and the current revision reached each start revision (PR #20229; etcd 3.4 always
 * answered); periodic progress_notify on the virtual clock goes to watchers with no events since the last
 * tick, never to unsynced ones; progress revisions never go backwards.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { MvccStore } from '../../src/mvcc/index.js';
import { VirtualClock } from '../../src/sim/index.js';
import { WatchableStore, type WatchResponse } from '../../src/watch/index.js';
import { b, created, put, putEv, resp, setup, takeShown } from './helpers.js';

test('requestProgress with every watcher synced: watch ID -1 and the current revision', () => {
  const { kv, st } = setup();
  st.watch({ key: b('k') });
  st.watch({ key: b('a'), rangeEnd: b('c') });
  put(kv, 'other', 'x'); // 2, matches no watcher
  put(kv, 'other', 'y'); // 3
  st.requestProgress();
  assert.deepEqual(takeShown(st), [created(1, 0), created(1, 1), resp({ revision: 3, watchId: -1 })]);
});

test('requestProgress is not answered while a watcher of the stream is unsynced', () => {
  const { kv, ws, st } = setup();
  for (let i = 0; i < 3; i++) put(kv, 'k', `${i}`); // 2..4
  st.watch({ key: b('x') });
  st.watch({ key: b('k'), startRevision: 2 });
  st.take();
  st.requestProgress();
  assert.deepEqual(st.take(), []);
  ws.syncWatchers();
  st.requestProgress();
  const got = takeShown(st);
  assert.equal(got.length, 2);
  assert.deepEqual(got[1], resp({ revision: 4, watchId: -1 }), 'after the catch-up, in order behind it');
});

test('requestProgress waits for the current revision to reach a future start revision (PR #20229)', () => {
  const { kv, st } = setup();
  st.watch({ key: b('k'), startRevision: 4 });
  st.take();
  put(kv, 'x', '1'); // 2
  st.requestProgress();
  put(kv, 'x', '2'); // 3
  st.requestProgress();
  assert.deepEqual(st.take(), []);
  put(kv, 'x', '3'); // 4
  st.requestProgress();
  assert.deepEqual(takeShown(st), [resp({ revision: 4, watchId: -1 })]);
});

test('requestProgress on a stream with no watchers answers nothing (etcd >= 3.5: nothing to be synced on)', () => {
  const { kv, st } = setup();
  put(kv, 'x', '1');
  st.requestProgress();
  assert.deepEqual(st.take(), []);
});

test('etcd 3.4: requestProgress is always answered, even unsynced or with no watchers (observed 3.4.23)', () => {
  const { kv, st } = setup({ etcdVersion: '3.4' });
  put(kv, 'x', '1');
  put(kv, 'x', '2'); // 3
  st.requestProgress();
  st.watch({ key: b('x'), startRevision: 2 }); // unsynced
  st.watch({ key: b('x'), startRevision: 100 }); // future
  st.requestProgress();
  assert.deepEqual(takeShown(st), [resp({ revision: 3, watchId: -1 }), created(3, 0), created(3, 1), resp({ revision: 3, watchId: -1 })]);
});

test('a progress response follows the events already queued and carries a revision >= theirs', () => {
  const { kv, st } = setup();
  st.watch({ key: b('k') });
  st.take();
  put(kv, 'k', '1'); // 2
  put(kv, 'k', '2'); // 3
  st.requestProgress();
  assert.deepEqual(takeShown(st), [
    resp({ revision: 2, events: [putEv('k', '1', 2, 2, 1)] }),
    resp({ revision: 3, events: [putEv('k', '2', 2, 3, 2)] }),
    resp({ revision: 3, watchId: -1 }),
  ]);
});

function clockStore(interval = 1000): { clock: VirtualClock; kv: MvccStore; ws: WatchableStore } {
  const clock = new VirtualClock();
  const kv = new MvccStore();
  const ws = new WatchableStore(kv, { clock, progressNotifyIntervalMs: interval });
  return { clock, kv, ws };
}

test('progress_notify: a quiet synced watcher gets an empty response with its own ID every interval', () => {
  const { clock, kv, ws } = clockStore();
  const st = ws.newWatchStream();
  st.watch({ key: b('k'), progressNotify: true });
  st.watch({ key: b('k') }); // no progress_notify: never notified
  st.take();
  clock.advance(999);
  assert.deepEqual(st.take(), []);
  clock.advance(1); // t = 1000
  assert.deepEqual(takeShown(st), [resp({ revision: 1, watchId: 0 })]);
  put(kv, 'other', 'x'); // 2: not in the watch, but the header reflects it
  clock.advance(1000);
  assert.deepEqual(takeShown(st), [resp({ revision: 2, watchId: 0 })]);
  clock.advance(3000);
  assert.deepEqual(takeShown(st), [resp({ revision: 2 }), resp({ revision: 2 }), resp({ revision: 2 })]);
});

test('progress_notify is skipped for a tick after the watcher received events', () => {
  const { clock, kv, ws } = clockStore();
  const st = ws.newWatchStream();
  st.watch({ key: b('k'), progressNotify: true });
  st.take();
  clock.advance(500);
  put(kv, 'k', 'v'); // 2
  assert.deepEqual(takeShown(st), [resp({ revision: 2, events: [putEv('k', 'v', 2, 2, 1)] })]);
  clock.advance(500); // t = 1000: events were sent since the last tick
  assert.deepEqual(st.take(), []);
  clock.advance(1000); // t = 2000: quiet since the last tick
  assert.deepEqual(takeShown(st), [resp({ revision: 2 })]);
});

test('progress_notify never goes to an unsynced watcher', () => {
  const { clock, kv, ws } = clockStore();
  for (let i = 0; i < 3; i++) put(kv, 'k', `${i}`); // 2..4
  const st = ws.newWatchStream();
  st.watch({ key: b('k'), startRevision: 2, progressNotify: true });
  st.take();
  clock.advance(5000); // no ticker: nobody syncs it
  assert.deepEqual(st.take(), []);
  ws.syncWatchers();
  st.take(); // the catch-up counts as events for this tick
  clock.advance(1000);
  assert.deepEqual(st.take(), []);
  clock.advance(1000);
  assert.deepEqual(takeShown(st), [resp({ revision: 4 })]);
});

test('progress_notify for a future-start watcher waits for its start revision', () => {
  const { clock, kv, ws } = clockStore();
  const st = ws.newWatchStream();
  st.watch({ key: b('k'), startRevision: 3, progressNotify: true });
  st.take();
  clock.advance(1000);
  put(kv, 'x', '1'); // 2
  clock.advance(1000);
  assert.deepEqual(st.take(), []);
  put(kv, 'x', '2'); // 3
  clock.advance(1000);
  assert.deepEqual(takeShown(st), [resp({ revision: 3 })]);
});

test('a closed stream sends no more progress', () => {
  const { clock, ws } = clockStore();
  const st = ws.newWatchStream();
  st.watch({ key: b('k'), progressNotify: true });
  st.close();
  clock.advance(5000);
  assert.deepEqual(st.take(), []);
  assert.equal(clock.pending(), 0, 'its progress timer is canceled');
});

test('progress revisions never go backwards and never precede delivered events', () => {
  const { clock, kv, ws } = clockStore(100);
  const st = ws.newWatchStream();
  st.watch({ key: b('a'), rangeEnd: b('m'), progressNotify: true });
  st.watch({ key: b('k'), progressNotify: true });
  const all: WatchResponse[] = [...st.take()];
  const keys = ['a', 'k', 'q', 'z'];
  for (let i = 0; i < 200; i++) {
    if (i % 3 !== 0) put(kv, keys[i % keys.length]!, `${i}`);
    if (i % 7 === 0) st.requestProgress();
    clock.advance(37);
    if (i % 2 === 0) all.push(...st.take());
  }
  all.push(...st.take());
  let maxSeen = 0;
  let progressCount = 0;
  for (const r of all) {
    if (r.created) continue;
    if (r.events.length === 0) {
      progressCount++;
      assert.ok(r.revision >= maxSeen, `progress ${r.revision} below an earlier revision ${maxSeen}`);
    }
    for (const ev of r.events) assert.ok(ev.kv.modRevision <= r.revision);
    maxSeen = Math.max(maxSeen, r.revision);
  }
  assert.ok(progressCount > 20, `saw ${progressCount} progress responses`);
});
