// etcd's send path for watch responses: the channel (128), the send loop, the transport window.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WATCH_DEFAULTS } from '../../src/watch/index.js';
import { b, put, setup } from './helpers.js';

test('a reading client: every response goes straight through the send loop, the channel stays empty', () => {
  const { kv, ws, st } = setup();
  st.watch({ key: b('/p/'), rangeEnd: b('/p0') });
  st.take();
  for (let i = 0; i < 1000; i++) {
    put(kv, `/p/${i % 10}`, 'v');
    assert.equal(st.channelLength, 0);
    if (i % 100 === 99) assert.equal(st.take().length, 100);
  }
  assert.equal(ws.victims.length, 0);
});

test('a client that stops reading fills the transport window, then the channel of 128, then its watchers are victims', () => {
  const { kv, ws, st } = setup();
  st.watch({ key: b('/p/'), rangeEnd: b('/p0') });
  st.take();
  const value = 'x'.repeat(200);
  let rev = 1;
  for (let i = 0; i < 2000; i++) rev = put(kv, `/p/${i % 10}`, value);
  // Bounded: one window of rendered responses (a response goes out while any room is left) plus the channel.
  const { responses, bytes } = st.inTransport;
  assert.ok(bytes >= WATCH_DEFAULTS.sendWindowBytes && bytes < WATCH_DEFAULTS.sendWindowBytes + 300, `transport holds ${bytes} B`);
  assert.ok(responses > 200 && responses < 320, `${responses} responses in the transport`);
  assert.equal(st.channelLength, WATCH_DEFAULTS.chanBufLen);
  assert.equal(st.pending, responses + WATCH_DEFAULTS.chanBufLen);
  assert.equal(ws.victims.length, 1, 'the watcher became a victim with the revision it could not send');
  assert.equal(ws.synced.size, 0);
  // Reading everything there is now: in order, one revision per response, nothing after the victim's revision.
  const got = st.take().flatMap((r) => r.events.map((e) => e.kv.modRevision));
  const firstMissing = got.length + 2;
  assert.deepEqual(got, Array.from({ length: got.length }, (_, i) => i + 2));
  // Catch-up: the victim batch, then the unsynced path in batches of up to 1000 revisions.
  ws.moveVictims();
  const victim = st.take();
  assert.equal(victim.length, 1);
  assert.deepEqual(
    victim[0]!.events.map((e) => e.kv.modRevision),
    [firstMissing],
  );
  assert.equal(victim[0]!.revision, firstMissing, 'a victim batch carries minRev - 1 as its header revision');
  const batches = [];
  while (ws.unsynced.size > 0) {
    ws.syncWatchers();
    batches.push(...st.take());
  }
  const caughtUp = batches.flatMap((r) => r.events.map((e) => e.kv.modRevision));
  assert.deepEqual(caughtUp, Array.from({ length: rev - firstMissing }, (_, i) => firstMissing + 1 + i));
  assert.ok(batches.length <= Math.ceil((rev - firstMissing) / WATCH_DEFAULTS.watchBatchMaxRevs), `${batches.length} catch-up responses`);
  assert.ok(batches.every((r) => r.revision === rev), 'a catch-up batch carries the current revision');
  assert.equal(ws.synced.size, 1);
});

test('read(n): a slow reader opens the window response by response; a window of 0 is an unbuffered transport', () => {
  const { kv, ws, st } = setup({}, { sendWindowBytes: 0, chanBufLen: 4 });
  st.watch({ key: b('k') });
  assert.equal(st.inTransport.responses, 0, 'nothing is sent before the client reads');
  assert.deepEqual(
    st.read(1).map((r) => r.created),
    [true],
  );
  for (let i = 0; i < 6; i++) put(kv, 'k', String(i)); // revisions 2..7: 4 fit the channel, the 5th makes a victim
  assert.equal(st.channelLength, 4);
  assert.equal(ws.victims.length, 1);
  assert.deepEqual(
    st.read(2).map((r) => r.revision),
    [2, 3],
  );
  assert.equal(st.channelLength, 2);
  st.windowBytes = 1 << 20; // a bigger window lets the send loop move the rest at once
  assert.equal(st.channelLength, 0);
  assert.equal(st.inTransport.responses, 2);
  assert.deepEqual(
    st.take().map((r) => r.revision),
    [4, 5],
  );
  assert.throws(() => {
    st.windowBytes = -1;
  }, RangeError);
});

test('cancel: responses still in the channel are dropped, those already sent stay on the wire', () => {
  const { kv, st } = setup({}, { sendWindowBytes: 0 });
  const id = st.watch({ key: b('k') }).watchId;
  st.take();
  put(kv, 'k', '1');
  put(kv, 'k', '2');
  assert.equal(st.read(1)[0]!.revision, 2);
  st.cancel(id);
  const rest = st.take();
  assert.deepEqual(
    rest.map((r) => [r.revision, r.canceled, r.events.length]),
    [[3, true, 0]],
  );
});
