// The client differential's own pieces, without any etcd: what normalisation leaves free, and that a
// divergence is reported at its first place, readably.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compareRuns, firstDivergence, normalise, prefixEnd, Prng } from './harness.js';

const run = (steps: [string, unknown][], error?: Error) => ({ steps, error, notes: [] });

test('normalise names server-chosen lease IDs by first appearance and masks cluster identity, nothing else', () => {
  const a = normalise([
    ['grant', { lease: '7587883111111111111' }],
    ['put', { kv: { lease: '7587883111111111111', mod: '5' }, header: { cluster_id: '1', member_id: '2', raft_term: '3', revision: '5' } }],
    ['grant', { ID: '42' }],
    ['none', { lease: '0' }],
  ]);
  const b = normalise([
    ['grant', { lease: '123' }],
    ['put', { kv: { lease: '123', mod: '5' }, header: { cluster_id: '9', member_id: '8', raft_term: '2', revision: '5' } }],
    ['grant', { ID: '77' }],
    ['none', { lease: '0' }],
  ]);
  assert.deepEqual(a, b);
  assert.deepEqual(a[1], ['put', { kv: { lease: 'L1', mod: '5' }, header: { cluster_id: '*', member_id: '*', raft_term: '*', revision: '5' } }]);
  assert.deepEqual(a[3], ['none', { lease: '0' }]);
  // revisions are never normalised
  assert.notDeepEqual(normalise([['put', { rev: '5' }]]), normalise([['put', { rev: '6' }]]));
});

test('firstDivergence names the path and both values, with the element before', () => {
  const d = firstDivergence({ events: [{ m: 1 }, { m: 2 }, { m: 3 }] }, { events: [{ m: 1 }, { m: 2 }, { m: 4 }] });
  assert.equal(d?.path, '.events[2].m');
  assert.equal(d?.a, 3);
  assert.equal(d?.b, 4);
  assert.match(d?.context ?? '', /element before.*"m":2/);
  const short = firstDivergence([1, 2, 3], [1, 2]);
  assert.equal(short?.path, '.length');
  assert.match(short?.context ?? '', /first extra element: 3 \(on the etcd side\)/);
  assert.equal(firstDivergence({ a: [1, { b: 'x' }] }, { a: [1, { b: 'x' }] }), undefined);
});

test('compareRuns: equal runs pass; a divergence, a different step, and a failed simulator side are reported', () => {
  compareRuns('p', run([['s', { x: 1 }]]), run([['s', { x: 1 }]]), 'sim', 'replay-cmd');
  assert.throws(
    () => compareRuns('p', run([['a', 1], ['b', { e: [1, 2] }]]), run([['a', 1], ['b', { e: [1, 3] }]]), 'sim', 'replay-cmd'),
    (err: Error) => /first divergence at step 1 "b", at \.e\[1\]/.test(err.message) && /etcd: {6}2/.test(err.message) && /replay: replay-cmd/.test(err.message),
  );
  assert.throws(
    () => compareRuns('p', run([['a', 1], ['b', 2]]), run([['a', 1]], new Error('timed out after 5 ms waiting for x')), 'sim', 'r'),
    (err: Error) => /failed after 1 equal steps \(etcd recorded 2\): timed out after 5 ms waiting for x/.test(err.message) && /next step on etcd: "b" 2/.test(err.message),
  );
  assert.throws(
    () => compareRuns('p', run([['a', 1]], new Error('boom')), run([['a', 1]]), 'sim', 'r'),
    (err: Error) => /failed against the real etcd/.test(err.message),
  );
});

test('Prng is a pure function of its seed; prefixEnd is etcd\'s prefix rule', () => {
  const draw = (seed: number): number[] => {
    const r = new Prng(seed);
    return [r.next(), r.int(0, 9), r.int(0, 9)];
  };
  assert.deepEqual(draw(7), draw(7));
  assert.notDeepEqual(draw(7), draw(8));
  assert.equal(prefixEnd('ab').toString('latin1'), 'ac');
  assert.deepEqual([...prefixEnd('a\xff')], [0x62]);
  assert.deepEqual([...prefixEnd('\xff')], [0]);
});
