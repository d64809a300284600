/**
 * Event content: PUT/DELETE shapes, prev_kv (omitted for creates and when the previous revision is compacted
 * by the time the response is sent), NOPUT/NODELETE filters (a response filtered to nothing is not sent), key
 * ranges, prefixes and range_end "\0", and a multi-key delete arriving as one response.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { prefixEnd } from '../../src/mvcc/index.js';
import { b, created, del, delEv, flat, kvT, NUL, put, putEv, resp, setup, takeShown } from './helpers.js';

test('prev_kv: omitted for a create, set for an update and a delete, omitted again for a re-create', () => {
  const { kv, st } = setup();
  st.watch({ key: b('k'), prevKv: true });
  st.take();
  put(kv, 'k', 'v1'); // 2
  put(kv, 'k', 'v2'); // 3
  del(kv, 'k'); // 4
  put(kv, 'k', 'v3'); // 5
  assert.deepEqual(takeShown(st), [
    resp({ revision: 2, events: [putEv('k', 'v1', 2, 2, 1)] }),
    resp({ revision: 3, events: [putEv('k', 'v2', 2, 3, 2, kvT('k', 'v1', 2, 2, 1))] }),
    resp({ revision: 4, events: [delEv('k', 4, kvT('k', 'v2', 2, 3, 2))] }),
    resp({ revision: 5, events: [putEv('k', 'v3', 5, 5, 1)] }),
  ]);
});

test('without prev_kv no event carries a previous value', () => {
  const { kv, st } = setup();
  st.watch({ key: b('k') });
  st.take();
  put(kv, 'k', 'v1');
  put(kv, 'k', 'v2');
  del(kv, 'k');
  const got = st.take();
  assert.equal(got.length, 3);
  for (const r of got) for (const ev of r.events) assert.equal(ev.prevKv, undefined);
});

test('prev_kv in a replay, as observed in etcd 3.4.23 (watch "\\0".."\\0" from 5)', () => {
  const { kv, ws, st } = setup();
  for (let i = 1; i <= 5; i++) put(kv, 'k', `v${i}`); // 2..6
  st.watch({ key: NUL, rangeEnd: NUL, startRevision: 5, prevKv: true });
  ws.syncWatchers();
  assert.deepEqual(takeShown(st), [
    created(6, 0),
    resp({
      revision: 6,
      events: [putEv('k', 'v4', 2, 5, 4, kvT('k', 'v3', 2, 4, 3)), putEv('k', 'v5', 2, 6, 5, kvT('k', 'v4', 2, 5, 4))],
    }),
  ]);
});

test('prev_kv is read when the response is sent: omitted if the previous revision was compacted meanwhile', () => {
  const { kv, st } = setup({}, { sendWindowBytes: 0 }); // responses wait in the channel, not yet rendered
  st.watch({ key: b('k'), prevKv: true });
  st.take();
  put(kv, 'k', 'v1'); // 2
  put(kv, 'k', 'v2'); // 3, queued; its previous revision is 2
  put(kv, 'x', 'x'); // 4
  kv.compact(3); // revision 2 is no longer readable
  assert.deepEqual(takeShown(st), [
    resp({ revision: 2, events: [putEv('k', 'v1', 2, 2, 1)] }),
    resp({ revision: 3, events: [putEv('k', 'v2', 2, 3, 2)] }),
  ]);
});

test('prev_kv at exactly the compaction revision is still readable', () => {
  const { kv, st } = setup();
  st.watch({ key: b('k'), prevKv: true });
  st.take();
  put(kv, 'k', 'v1'); // 2
  put(kv, 'k', 'v2'); // 3
  kv.compact(2);
  assert.deepEqual(takeShown(st)[1], resp({ revision: 3, events: [putEv('k', 'v2', 2, 3, 2, kvT('k', 'v1', 2, 2, 1))] }));
});

test('NOPUT drops PUT events, NODELETE drops DELETE events; a response filtered to nothing is not sent', () => {
  const { kv, st } = setup();
  st.watch({ key: b('a'), rangeEnd: b('z'), filters: ['NOPUT'] }); // 0
  st.watch({ key: b('a'), rangeEnd: b('z'), filters: ['NODELETE'] }); // 1
  st.watch({ key: b('a'), rangeEnd: b('z'), filters: ['NOPUT', 'NODELETE'] }); // 2
  st.take();
  put(kv, 'a', '1'); // 2
  put(kv, 'b', '1'); // 3
  del(kv, 'a'); // 4
  const r5 = kv.txn({ success: [{ requestPut: { key: b('c'), value: b('1') } }, { requestDeleteRange: { key: b('b') } }] }).revision; // 5
  assert.deepEqual(takeShown(st), [
    resp({ revision: 2, watchId: 1, events: [putEv('a', '1', 2, 2, 1)] }),
    resp({ revision: 3, watchId: 1, events: [putEv('b', '1', 3, 3, 1)] }),
    resp({ revision: 4, watchId: 0, events: [delEv('a', 4)] }),
    resp({ revision: r5, watchId: 0, events: [delEv('b', 5)] }),
    resp({ revision: r5, watchId: 1, events: [putEv('c', '1', 5, 5, 1)] }),
  ]);
});

test('filters apply to a replay too: NOPUT over a history of puts sends only the created reply (observed 3.4.23)', () => {
  const { kv, ws, st } = setup();
  for (let i = 0; i < 5; i++) put(kv, 'k', `${i}`); // 2..6
  st.watch({ key: b('k'), startRevision: 1, filters: ['NOPUT'] });
  ws.syncWatchers();
  assert.deepEqual(takeShown(st), [created(6, 0)]);
  assert.equal(ws.synced.size, 1);
  del(kv, 'k');
  assert.deepEqual(takeShown(st), [resp({ revision: 7, events: [delEv('k', 7)] })]);
});

test('a range [key, range_end) sees keys inside it only; a single-key watch sees only that key', () => {
  const { kv, st } = setup();
  st.watch({ key: b('b'), rangeEnd: b('d') }); // 0
  st.watch({ key: b('b') }); // 1
  st.take();
  for (const k of ['a', 'b', 'b0', 'c', 'cz', 'd', 'e']) put(kv, k, 'v');
  const got = st.take();
  assert.deepEqual(
    flat(got.filter((r) => r.watchId === 0)),
    ['PUT b@3', 'PUT b0@4', 'PUT c@5', 'PUT cz@6'],
  );
  assert.deepEqual(
    flat(got.filter((r) => r.watchId === 1)),
    ['PUT b@3'],
  );
});

test('a prefix watch (range_end = prefix + 1) and a range_end "\\0" watch', () => {
  const { kv, st } = setup();
  st.watch({ key: b('/p/'), rangeEnd: prefixEnd(b('/p/')) }); // 0
  st.watch({ key: b('m'), rangeEnd: NUL }); // 1: every key >= "m"
  st.watch({ key: NUL, rangeEnd: NUL }); // 2: every key
  st.take();
  for (const k of ['/p', '/p/', '/p/a', '/p0', '/q', 'a', 'm', 'zzz', '\u00ff']) put(kv, k, 'v');
  const got = st.take();
  const of = (id: number): string[] => flat(got.filter((r) => r.watchId === id));
  assert.deepEqual(of(0), ['PUT /p/@3', 'PUT /p/a@4']);
  assert.deepEqual(of(1), ['PUT m@8', 'PUT zzz@9', 'PUT \u00ff@10']);
  assert.deepEqual(of(2).length, 9);
});

test('a delete of many keys arrives as one response, keys in order, all at one revision', () => {
  const { kv, st } = setup();
  st.watch({ key: b('/d/'), rangeEnd: prefixEnd(b('/d/')) }); // 0: all of them
  st.watch({ key: b('/d/10'), rangeEnd: b('/d/20') }); // 1: some of them
  st.take();
  const keys: string[] = [];
  for (let i = 0; i < 50; i++) keys.push(`/d/${String(i).padStart(2, '0')}`);
  for (const k of keys) put(kv, k, 'v');
  st.take();
  const r = del(kv, '/d/', '/d0');
  assert.equal(r, 52);
  const got = takeShown(st);
  assert.equal(got.length, 2);
  assert.deepEqual(got[0], resp({ revision: r, watchId: 0, events: keys.map((k) => delEv(k, r)) }));
  assert.deepEqual(got[1], resp({ revision: r, watchId: 1, events: keys.slice(10, 20).map((k) => delEv(k, r)) }));
});

test('a delete of a missing key makes no revision and no event', () => {
  const { kv, st } = setup();
  st.watch({ key: b('k') });
  st.take();
  assert.equal(del(kv, 'k'), 1);
  assert.deepEqual(st.take(), []);
});
