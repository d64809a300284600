/**
 * WatchableStore.checkValid(), the invariant checker the property tests run after every step: it must
 * pass on every state the store reaches by itself and name each kind of broken bookkeeping.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { put, setup, b } from './helpers.js';

test('checkValid passes through catch-up, victims and restore', () => {
  const { kv, ws, st } = setup({}, { chanBufLen: 1, sendWindowBytes: 0, watchBatchMaxRevs: 2 });
  for (let i = 0; i < 6; i++) put(kv, 'a', `${i}`);
  st.watch({ key: b('a'), startRevision: 2 });
  st.watch({ key: b('a'), rangeEnd: b('b') });
  assert.equal(ws.checkValid(), undefined);
  ws.syncWatchers();
  put(kv, 'a', 'x');
  assert.equal(ws.checkValid(), undefined);
  ws.restore(kv.snapshot());
  assert.equal(ws.checkValid(), undefined);
  for (let i = 0; i < 10; i++) {
    st.take();
    ws.moveVictims();
    ws.syncWatchers();
    assert.equal(ws.checkValid(), undefined);
  }
});

test('checkValid names a watcher in two places, a stale victim flag and a synced watcher left behind', () => {
  const { kv, ws, st } = setup();
  st.watch({ key: b('a') });
  const w = [...ws.synced.watchers][0]!;
  ws.unsynced.add(w);
  assert.match(ws.checkValid() ?? '', /watcher 0 is both synced and unsynced/);
  ws.unsynced.delete(w);
  w.victim = true;
  assert.match(ws.checkValid() ?? '', /synced but flagged a victim/);
  w.victim = false;
  put(kv, 'a', '1');
  put(kv, 'z', '1');
  assert.equal(w.minRev, 3, 'the write path moved minRev past revision 2');
  assert.equal(ws.checkValid(), undefined, 'revision 3 is not the watcher\'s key');
  w.minRev = 2;
  assert.match(ws.checkValid() ?? '', /synced watcher 0 \(minRev 2\) was never sent revision 2/);
});

test('checkValid: an unsynced watcher ahead of the store only after a restore', () => {
  const { kv, ws, st } = setup();
  put(kv, 'a', '1');
  st.watch({ key: b('a'), startRevision: 1 });
  const w = [...ws.unsynced.watchers][0]!;
  w.minRev = 10;
  assert.match(ws.checkValid() ?? '', /waits for 10, past the current revision 2, without a restore/);
  w.restore = true;
  assert.equal(ws.checkValid(), undefined);
});
