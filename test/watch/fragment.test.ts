/**
 * Fragmenting (v3rpc sendFragments): with `fragment`, a response of at least the size limit with two or more
 * events is split into responses of whole events, all but the last flagged `fragment`; without it, one
 * revision is one response however large.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { MvccStore, prefixEnd } from '../../src/mvcc/index.js';
import { fragmentResponse, watchResponseSize } from '../../src/watch/fragment.js';
import { WatchableStore, type WatchResponse } from '../../src/watch/index.js';
import { b, flat, put, resp, show } from './helpers.js';

const LIMIT = 1000;
const P = b('/f/');

/** 20 keys with 200-byte names (each put fits the 1000-byte request limit), then one delete of all of them. */
function bigDelete(fragment: boolean): { got: WatchResponse[]; keys: string[]; rev: number } {
  const kv = new MvccStore({ maxRequestBytes: LIMIT });
  const ws = new WatchableStore(kv, { maxResponseBytes: LIMIT });
  const st = ws.newWatchStream();
  st.watch({ key: P, rangeEnd: prefixEnd(P), fragment });
  st.take();
  const keys: string[] = [];
  for (let i = 0; i < 20; i++) keys.push(`/f/${String(i).padStart(2, '0')}${'x'.repeat(195)}`);
  for (const k of keys) put(kv, k, 'v');
  st.take();
  const rev = kv.deleteRange({ key: P, rangeEnd: prefixEnd(P) }).revision;
  return { got: st.take(), keys, rev };
}

test('with fragment, a big multi-key revision is split; all but the last are flagged fragment; events in order', () => {
  const { got, keys, rev } = bigDelete(true);
  assert.ok(got.length >= 4, `split into ${got.length} responses`);
  got.forEach((r, i) => {
    assert.equal(r.fragment, i < got.length - 1, `fragment flag of part ${i}`);
    assert.equal(r.revision, rev);
    assert.equal(r.watchId, 0);
    assert.equal(r.created, false);
    assert.equal(r.canceled, false);
    assert.ok(r.events.length >= 1);
    assert.ok(watchResponseSize(r) < LIMIT, `part ${i} is below the limit`);
  });
  // Each part is as full as it can be: one more event would reach the limit.
  for (let i = 0; i < got.length - 1; i++) {
    const next = got[i + 1]!.events[0]!;
    assert.ok(watchResponseSize(got[i]!, [...got[i]!.events, next]) >= LIMIT);
  }
  assert.deepEqual(
    flat(got),
    keys.map((k) => `DELETE ${k}@${rev}`),
  );
});

test('without fragment, the same revision is one response above the limit', () => {
  const { got, keys, rev } = bigDelete(false);
  assert.equal(got.length, 1);
  assert.equal(got[0]!.fragment, false);
  assert.equal(got[0]!.events.length, keys.length);
  assert.equal(got[0]!.revision, rev);
  assert.ok(watchResponseSize(got[0]!) >= LIMIT);
});

test('with fragment, a small response and a single big event are not split', () => {
  const kv = new MvccStore({ maxRequestBytes: LIMIT });
  const ws = new WatchableStore(kv, { maxResponseBytes: 300 });
  const st = ws.newWatchStream();
  st.watch({ key: b('k'), fragment: true });
  st.take();
  put(kv, 'k', 'small'); // 2
  put(kv, 'k', 'y'.repeat(600)); // 3: one event larger than the limit
  const got = st.take();
  assert.deepEqual(
    got.map((r) => [r.revision, r.fragment, r.events.length]),
    [
      [2, false, 1],
      [3, false, 1],
    ],
  );
  assert.ok(watchResponseSize(got[1]!) >= 300);
});

test('with fragment, a large catch-up batch of many revisions is split too, in revision order', () => {
  const kv = new MvccStore({ maxRequestBytes: LIMIT });
  const ws = new WatchableStore(kv, { maxResponseBytes: LIMIT });
  const st = ws.newWatchStream();
  for (let i = 0; i < 30; i++) put(kv, 'k', 'v'.repeat(100)); // 2..31
  st.watch({ key: b('k'), startRevision: 2, fragment: true });
  st.take();
  ws.syncWatchers();
  const got = st.take();
  assert.ok(got.length > 2);
  assert.ok(got.slice(0, -1).every((r) => r.fragment));
  assert.equal(got.at(-1)!.fragment, false);
  assert.ok(got.every((r) => r.revision === 31));
  assert.deepEqual(
    got.flatMap((r) => r.events.map((e) => e.kv.modRevision)),
    Array.from({ length: 30 }, (_, i) => i + 2),
  );
});

test('fragment is per watcher: another watcher on the same stream gets the revision whole', () => {
  const kv = new MvccStore({ maxRequestBytes: LIMIT });
  const ws = new WatchableStore(kv, { maxResponseBytes: LIMIT });
  const st = ws.newWatchStream();
  st.watch({ key: P, rangeEnd: prefixEnd(P), fragment: true }); // 0
  st.watch({ key: P, rangeEnd: prefixEnd(P) }); // 1
  st.take();
  for (let i = 0; i < 10; i++) put(kv, `/f/${i}${'z'.repeat(300)}`, 'v');
  st.take();
  kv.deleteRange({ key: P, rangeEnd: prefixEnd(P) });
  const got = st.take();
  const parts0 = got.filter((r) => r.watchId === 0);
  const parts1 = got.filter((r) => r.watchId === 1);
  assert.ok(parts0.length > 1);
  assert.equal(parts1.length, 1);
  assert.equal(parts1[0]!.events.length, 10);
  assert.deepEqual(flat(parts0), flat(parts1));
});

test('the default size limit is the store request limit + 512 KiB (etcd grpcOverheadBytes)', () => {
  const kv = new MvccStore({ maxRequestBytes: LIMIT });
  assert.equal(new WatchableStore(kv).maxResponseBytes, LIMIT + 512 * 1024);
  assert.equal(new WatchableStore(new MvccStore()).maxResponseBytes, 1572864 + 512 * 1024);
});

test('fragmentResponse keeps every other field of the response', () => {
  const kv = new MvccStore();
  const ws = new WatchableStore(kv);
  const st = ws.newWatchStream();
  st.watch({ key: b('a'), rangeEnd: b('z') });
  st.take();
  kv.txn({ success: ['a', 'b', 'c'].map((k) => ({ requestPut: { key: b(k), value: b('w'.repeat(50)) } })) });
  const [whole] = st.take();
  assert.ok(whole !== undefined);
  const parts = fragmentResponse(whole, 1);
  assert.equal(parts.length, 3, 'a limit below one event: one event per part');
  assert.deepEqual(
    show(parts).map((p) => ({ ...p, events: [] })),
    [resp({ revision: 2, fragment: true }), resp({ revision: 2, fragment: true }), resp({ revision: 2 })],
  );
  assert.deepEqual(fragmentResponse(whole, 1_000_000), [whole]);
});
