import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MvccStore, text, type KeyValue } from '../../src/index.js';
import { b, generations, get, kv } from './helpers.js';

/** Builds a history for key "k" interleaved with another key, and returns the expected view per revision. */
function history(): { s: MvccStore; expected: Map<number, KeyValue | undefined> } {
  const s = new MvccStore();
  const expected = new Map<number, KeyValue | undefined>();
  expected.set(1, undefined);
  s.put({ key: b('k'), value: b('v1') }); // 2: create, version 1
  expected.set(2, kv('k', 'v1', 2, 2, 1));
  s.put({ key: b('other') }); // 3
  expected.set(3, kv('k', 'v1', 2, 2, 1));
  s.put({ key: b('k'), value: b('v2') }); // 4: version 2
  expected.set(4, kv('k', 'v2', 2, 4, 2));
  s.deleteRange({ key: b('k') }); // 5: tombstone
  expected.set(5, undefined);
  s.put({ key: b('other') }); // 6
  expected.set(6, undefined);
  s.put({ key: b('k'), value: b('v3') }); // 7: new generation
  expected.set(7, kv('k', 'v3', 7, 7, 1));
  s.put({ key: b('k'), value: b('v4') }); // 8
  expected.set(8, kv('k', 'v4', 7, 8, 2));
  s.put({ key: b('k'), value: b('v5') }); // 9
  expected.set(9, kv('k', 'v5', 7, 9, 3));
  s.deleteRange({ key: b('k') }); // 10
  expected.set(10, undefined);
  s.put({ key: b('k'), value: b('v6') }); // 11
  expected.set(11, kv('k', 'v6', 11, 11, 1));
  return { s, expected };
}

test('version counts from 1 in a generation and resets after a delete; create_revision is the generation start', () => {
  const { s } = history();
  assert.deepStrictEqual(get(s, 'k'), kv('k', 'v6', 11, 11, 1));
  assert.deepStrictEqual(get(s, 'k', 9), kv('k', 'v5', 7, 9, 3));
  assert.deepStrictEqual(get(s, 'k', 4), kv('k', 'v2', 2, 4, 2));
  assert.equal(s.checkValid(), undefined);
});

test('historical reads at every revision see the key as it was', () => {
  const { s, expected } = history();
  for (const [rev, want] of expected) {
    assert.deepStrictEqual(get(s, 'k', rev), want, `range at ${rev}`);
    assert.deepStrictEqual(s.kvAt(b('k'), rev), want, `kvAt ${rev}`);
    const r = s.range({ key: b('k'), revision: rev });
    assert.equal(r.count, want === undefined ? 0 : 1);
    assert.equal(r.revision, 11, 'header revision is the current one');
  }
  assert.equal(s.kvAt(b('never'), 5), undefined);
});

test('the index keeps one generation per life, each ended by its tombstone', () => {
  const { s } = history();
  assert.deepStrictEqual(generations(s, 'k'), [['2', '4', '5t'], ['7', '8', '9', '10t'], ['11']]);
  assert.deepStrictEqual(generations(s, 'other'), [['3', '6']]);
  s.deleteRange({ key: b('k') });
  assert.deepStrictEqual(generations(s, 'k'), [['2', '4', '5t'], ['7', '8', '9', '10t'], ['11', '12t'], []]);
  assert.equal(s.checkValid(), undefined);
});

test('a delete writes a tombstone: no value, create revision 0, version 0, no lease; its event is DELETE', () => {
  const { s } = history();
  const ki = s.storage.index.get('k');
  assert.ok(ki !== undefined);
  const tomb = ki.generations[0]![2]!;
  assert.deepStrictEqual(tomb, { key: b('k'), value: new Uint8Array(0), createRevision: 0, modRevision: 5, version: 0, lease: 0n });
  const evs = s.eventsAt(5);
  assert.equal(evs.length, 1);
  assert.equal(evs[0]!.type, 'DELETE');
  assert.equal(text(evs[0]!.kv.key), 'k');
  assert.equal(evs[0]!.kv.modRevision, 5);
  const put = s.eventsAt(7);
  assert.deepStrictEqual(put, [{ type: 'PUT', kv: kv('k', 'v3', 7, 7, 1) }]);
});

test('a deleted key is absent from reads but stays in the index until compaction', () => {
  const s = new MvccStore();
  s.put({ key: b('gone'), value: b('x') });
  s.deleteRange({ key: b('gone') });
  assert.equal(get(s, 'gone'), undefined);
  assert.deepStrictEqual(generations(s, 'gone'), [['2', '3t'], []]);
  assert.deepStrictEqual(get(s, 'gone', 2), kv('gone', 'x', 2, 2, 1));
});

test('every key of a txn shares the main revision and has its own version count', () => {
  const s = new MvccStore();
  s.put({ key: b('a') });
  s.txn({ success: [{ requestPut: { key: b('a'), value: b('2') } }, { requestPut: { key: b('b'), value: b('1') } }] });
  assert.deepStrictEqual(get(s, 'a'), kv('a', '2', 2, 3, 2));
  assert.deepStrictEqual(get(s, 'b'), kv('b', '1', 3, 3, 1));
});
