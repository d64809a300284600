/**
 * Restore (a follower applying the leader's snapshot): synced watchers move to unsynced and are caught up
 * from the restored history. A watcher on a future revision keeps its start revision (etcd PR #20281, issue
 * #20221) and gets no progress notification below it (PR #20229); the pre-fix options show both bugs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { MvccStore } from '../../src/mvcc/index.js';
import { WatchableStore, type WatchableStoreOptions } from '../../src/watch/index.js';
import { b, compactCanceled, created, put, putEv, range, resp, revsOf, show, takeShown } from './helpers.js';

/** The same first writes on leader and follower (revs 2..3), then the leader alone goes on to rev 10. */
function cluster(opts: WatchableStoreOptions = {}): { leader: MvccStore; follower: MvccStore; ws: WatchableStore } {
  const leader = new MvccStore();
  const follower = new MvccStore();
  for (const kv of [leader, follower]) {
    put(kv, 'k', 'a'); // 2
    put(kv, 'k', 'b'); // 3
  }
  for (let i = 4; i <= 10; i++) put(leader, 'k', `L${i}`);
  return { leader, follower, ws: new WatchableStore(follower, opts) };
}

test('restore: a synced watcher is caught up from the restored history, then gets live events', () => {
  const { leader, follower, ws } = cluster();
  const st = ws.newWatchStream();
  st.watch({ key: b('k') }); // minRev 4
  assert.deepEqual(takeShown(st), [created(3, 0)]);
  ws.restore(leader.snapshot());
  assert.equal(follower.currentRevision, 10);
  assert.equal(ws.synced.size, 0);
  assert.equal(ws.unsynced.size, 1);
  assert.deepEqual(st.take(), [], 'restore itself sends nothing');
  ws.syncWatchers();
  const got = st.take();
  assert.deepEqual(revsOf(got), range(4, 10));
  assert.equal(got.length, 1);
  assert.equal(got[0]!.revision, 10);
  assert.deepEqual(show(got)[0]!.events[0], putEv('k', 'L4', 2, 4, 3));
  assert.equal(ws.synced.size, 1);
  put(follower, 'k', 'F11');
  assert.deepEqual(takeShown(st), [resp({ revision: 11, events: [putEv('k', 'F11', 2, 11, 10)] })]);
});

test('restore: a future-revision watcher receives nothing below its start revision and no progress below it', () => {
  const { leader, follower, ws } = cluster();
  const st = ws.newWatchStream();
  st.watch({ key: b('k'), startRevision: 15, progressNotify: true });
  st.take();
  ws.restore(leader.snapshot()); // current revision 10, still below 15
  assert.equal(ws.unsynced.size, 1);
  ws.syncWatchers();
  assert.equal(ws.synced.size, 1, 'back to synced, still waiting for 15');
  assert.deepEqual(st.take(), []);
  for (let i = 11; i <= 14; i++) {
    put(follower, 'k', `F${i}`);
    st.requestProgress();
    st.progressTick();
  }
  assert.deepEqual(st.take(), [], 'no events and no progress below the start revision');
  put(follower, 'k', 'F15');
  put(follower, 'k', 'F16');
  st.requestProgress();
  assert.deepEqual(takeShown(st), [
    resp({ revision: 15, events: [putEv('k', 'F15', 2, 15, 14)] }),
    resp({ revision: 16, events: [putEv('k', 'F16', 2, 16, 15)] }),
    resp({ revision: 16, watchId: -1 }),
  ]);
});

test('restore, pre-fix rule (restoreKeepsFutureMinRev: false): events below the start revision are delivered (issue #20221)', () => {
  const { leader, follower, ws } = cluster({ restoreKeepsFutureMinRev: false });
  const st = ws.newWatchStream();
  st.watch({ key: b('k'), startRevision: 15 });
  st.take();
  ws.restore(leader.snapshot());
  ws.syncWatchers(); // minRev = current + 1 = 11: the start revision is forgotten
  for (let i = 11; i <= 15; i++) put(follower, 'k', `F${i}`);
  const got = st.take();
  assert.deepEqual(revsOf(got), [11, 12, 13, 14, 15], 'the bug: revisions 11..14 are below the start revision 15');
});

test('restore, pre-fix progress (progressRespectsStartRev: false): a progress below the start revision is sent', () => {
  const { leader, follower, ws } = cluster({ progressRespectsStartRev: false });
  const st = ws.newWatchStream();
  st.watch({ key: b('k'), startRevision: 15 });
  st.take();
  ws.restore(leader.snapshot());
  ws.syncWatchers();
  put(follower, 'x', '1'); // 11
  st.requestProgress();
  assert.deepEqual(takeShown(st), [resp({ revision: 11, watchId: -1 })], 'the bug: progress at 11 < start 15');
});

test('restore: a watcher behind the snapshot compaction point is canceled with compact_revision', () => {
  const { leader, ws } = cluster();
  leader.compact(8);
  const st = ws.newWatchStream();
  st.watch({ key: b('k') }); // minRev 4
  st.take();
  ws.restore(leader.snapshot());
  ws.syncWatchers();
  assert.deepEqual(takeShown(st), [compactCanceled(0, 8)]);
  assert.equal(ws.synced.size + ws.unsynced.size, 0);
});

test('restore: an unsynced watcher is replayed from the restored history', () => {
  const { leader, follower, ws } = cluster();
  const st = ws.newWatchStream();
  st.watch({ key: b('k'), startRevision: 2 });
  st.take();
  ws.restore(leader.snapshot());
  ws.syncWatchers();
  const got = st.take();
  assert.deepEqual(revsOf(got), range(2, 10));
  assert.equal(got[0]!.revision, 10);
  assert.equal(follower.range({ key: b('k') }).kvs[0]!.modRevision, 10);
});

test('restore to an earlier snapshot of the same store: a synced watcher keeps its minRev (max(current + 1, minRev))', () => {
  // Not something a raft follower does (snapshots only move forward), but it is what etcd's rule gives.
  const kv = new MvccStore();
  const ws = new WatchableStore(kv);
  const st = ws.newWatchStream();
  for (let i = 2; i <= 5; i++) put(kv, 'k', `a${i}`);
  const snap = kv.snapshot(); // at rev 5
  st.watch({ key: b('k') }); // minRev 6
  st.take();
  for (let i = 6; i <= 8; i++) put(kv, 'k', `b${i}`); // delivered live
  assert.deepEqual(revsOf(st.take()), [6, 7, 8]);
  ws.restore(snap);
  assert.equal(kv.currentRevision, 5);
  assert.equal(kv.range({ key: b('k') }).kvs[0]!.modRevision, 5);
  assert.equal(kv.eventsAt(6).length, 0, 'the later history is gone');
  ws.syncWatchers(); // minRev 9 > current 5: allowed for a watcher moved by a restore
  assert.equal(ws.synced.size, 1);
  for (let i = 6; i <= 9; i++) put(kv, 'k', `c${i}`);
  assert.deepEqual(revsOf(st.take()), [9], 'revisions it had already seen are not delivered again');
});

test('restore to an earlier snapshot, pre-fix rule: the rewritten revisions are delivered again', () => {
  const kv = new MvccStore();
  const ws = new WatchableStore(kv, { restoreKeepsFutureMinRev: false });
  const st = ws.newWatchStream();
  for (let i = 2; i <= 5; i++) put(kv, 'k', `a${i}`);
  const snap = kv.snapshot();
  st.watch({ key: b('k') });
  for (let i = 6; i <= 8; i++) put(kv, 'k', `b${i}`);
  st.take();
  ws.restore(snap);
  ws.syncWatchers();
  for (let i = 6; i <= 9; i++) put(kv, 'k', `c${i}`);
  assert.deepEqual(revsOf(st.take()), [6, 7, 8, 9]);
});

test('restoring an older snapshot while a watcher is mid catch-up does not break the sync step', () => {
  const kv = new MvccStore();
  const ws = new WatchableStore(kv, { watchBatchMaxRevs: 2 });
  for (let i = 2; i <= 5; i++) put(kv, 'k', `v${i}`);
  const older = kv.snapshot();
  for (let i = 6; i <= 9; i++) put(kv, 'k', `v${i}`);
  const st = ws.newWatchStream();
  st.watch({ key: b('k'), startRevision: 2 });
  ws.syncWatchers();
  ws.syncWatchers(); // the watcher has now read revisions 2..5: minRev 6
  st.take();
  ws.restore(older); // back to revision 5: the watcher's minRev lies in the future
  assert.doesNotThrow(() => ws.syncWatchers());
  assert.equal(ws.synced.size, 1);
  put(kv, 'k', 'after'); // revision 6 again, with new content
  assert.deepEqual(revsOf(st.take()), [6]);
});
