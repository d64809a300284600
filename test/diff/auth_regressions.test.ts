/**
 * Fixed auth traces of every divergence the auth differential workload found, run against the real etcd
 * 3.4.23 and the simulator (etcdVersion 3.4). Each starts as the generated workloads do: root with role
 * root, users u1 and u2, roles r1 and r2.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runOnce } from '../../src/diff/check.js';
import type { Op } from '../../src/diff/ops.js';
import { formatTranscript } from '../../src/diff/transcript.js';
import { skipWithoutEtcd, useRealEtcd } from './helpers.js';

const etcd = useRealEtcd();

const SETUP: Op[] = [
  { op: 'userAdd', name: 'root' },
  { op: 'userGrantRole', user: 'root', role: 'root' },
  { op: 'userAdd', name: 'u1' },
  { op: 'userAdd', name: 'u2' },
  { op: 'roleAdd', name: 'r1' },
  { op: 'roleAdd', name: 'r2' },
];
const ENABLE: Op[] = [{ op: 'authEnable' }, { op: 'authenticate', user: 'root' }, { op: 'authenticate', user: 'u1' }, { op: 'authenticate', user: 'u2' }];

async function agree(ops: Op[]): Promise<string[]> {
  const r = await runOnce(ops, { etcd: etcd.get().client, etcdVersion: '3.4' });
  assert.equal(r.divergence, undefined, formatTranscript(r.transcript, r.divergence));
  return r.transcript.map((s) => s.etcd);
}

const DENIED = '{"error":{"code":7,"details":"etcdserver: permission denied"}}';
const INVALID_TOKEN = '{"error":{"code":16,"details":"etcdserver: invalid auth token"}}';

test('etcd 3.4 looks tokens up while auth is disabled: a stale token fails everywhere but TimeToLive', { skip: skipWithoutEtcd }, async () => {
  const out = await agree([
    ...SETUP,
    ...ENABLE,
    { op: 'as', user: 'root', req: { op: 'authDisable' } },
    { op: 'as', user: 'u1', req: { op: 'put', put: { key: 'a', value: 'v' } } },
    { op: 'as', user: 'u1', req: { op: 'range', range: { key: 'a', end: 'single' } } },
    { op: 'as', user: 'root', req: { op: 'userGrantRole', user: 'root', role: 'root' } },
    { op: 'as', user: 'u1', req: { op: 'grant', ttl: 60 } },
    { op: 'as', user: 'u1', req: { op: 'timeToLive', lease: { id: '5' }, keys: false } },
    { op: 'as', user: 'u1', req: { op: 'watch', watch: { stream: 0, key: 'a', end: 'single' } } },
    { op: 'as', user: 'u1', req: { op: 'txn', txn: { compare: [], success: [{ put: { key: 'a', value: 'v' } }, { del: { key: 'a', end: 'single' } }], failure: [] } } },
  ]);
  const n = SETUP.length + ENABLE.length + 1;
  assert.deepEqual(out.slice(n, n + 4), [INVALID_TOKEN, INVALID_TOKEN, INVALID_TOKEN, INVALID_TOKEN]);
  assert.match(out[n + 4]!, /"TTL":"-1"/);
  // gRPC-layer validation (put/delete overlap) comes before the token
  assert.equal(out[n + 6], '{"error":{"code":3,"details":"etcdserver: duplicate key given in txn request"}}');
});

test('etcd 3.4 does not check the ops of a nested txn, nor LeaseTimeToLive', { skip: skipWithoutEtcd }, async () => {
  const out = await agree([
    ...SETUP,
    ...ENABLE,
    // u1 has no permission at all: the outer txn is checked (its compare: denied) ...
    { op: 'as', user: 'u1', req: { op: 'txn', txn: { compare: [{ key: 'a', target: 'VERSION', result: 'EQUAL', operand: 0 }], success: [], failure: [] } } },
    // ... a nested txn is not: the put runs
    { op: 'as', user: 'u1', req: { op: 'txn', txn: { compare: [], success: [{ txn: { compare: [], success: [{ put: { key: 'a', value: 'v' } }], failure: [] } }], failure: [] } } },
    { op: 'as', user: 'u3', req: { op: 'txn', txn: { compare: [], success: [], failure: [{ txn: { compare: [], success: [], failure: [{ range: { key: 'a', end: 'single' } }] } }] } } },
    { op: 'as', user: 'root', req: { op: 'grant', ttl: 60 } },
    { op: 'as', user: 'root', req: { op: 'put', put: { key: 'b', value: 'v', lease: { granted: 0 } } } },
    { op: 'as', user: 'u3', req: { op: 'timeToLive', lease: { granted: 0 }, keys: true } },
  ]);
  const n = SETUP.length + ENABLE.length;
  assert.equal(out[n], DENIED);
  assert.match(out[n + 1]!, /"succeeded":true/);
  assert.match(out[n + 5]!, /"keys":\["b"\]/);
});

test('a write too large is refused before its permissions are checked (size at proposal, auth at apply)', { skip: skipWithoutEtcd }, async () => {
  const out = await agree([
    ...SETUP,
    ...ENABLE,
    { op: 'as', user: 'u1', req: { op: 'put', put: { key: 'a', value: { size: 1572865 } } } },
    { op: 'as', user: 'u3', req: { op: 'txn', txn: { compare: [], success: [{ put: { key: 'a', value: { size: 1572865 } } }], failure: [] } } },
    { op: 'as', user: 'u1', req: { op: 'put', put: { key: 'a', value: 'v' } } },
  ]);
  const n = SETUP.length + ENABLE.length;
  assert.equal(out[n], '{"error":{"code":3,"details":"etcdserver: request is too large"}}');
  assert.equal(out[n + 1], '{"error":{"code":3,"details":"etcdserver: request is too large"}}');
  assert.equal(out[n + 2], DENIED);
});

/**
 * For an empty or inverted query (range_end ≤ key) etcd's pkg/adt IntervalTree.Contains depends on the
 * tree's shape — its visit compares the query with each node asymmetrically and prunes subtrees with
 * `Interval{begin, max}.Compare(query)` — so READ from "a" permits a Range ["a", "a") while WRITE on
 * ["aa", ∞) and ["a", "a") does not permit a DeleteRange ["aa", "a"). Once a divergence (the simulator
 * filtered by a symmetric overlap: denied the first, permitted the second); src/auth/range_perm.ts now
 * builds etcd's tree, and the generated auth workloads send such queries too.
 */
test('empty / inverted ranges are checked against an interval tree shaped as etcd\'s', { skip: skipWithoutEtcd }, async () => {
  const a = await agree([
    ...SETUP,
    { op: 'roleGrantPermission', role: 'r2', perm: { type: 'READ', key: 'a', end: 'fromKey' } },
    { op: 'userGrantRole', user: 'u2', role: 'r2' },
    ...ENABLE,
    { op: 'as', user: 'u2', req: { op: 'range', range: { key: 'a', end: { end: 'a' } } } },
  ]);
  assert.match(a[SETUP.length + 2 + ENABLE.length]!, /"count":"0"/); // permitted, and an empty range is empty
  const b = await agree([
    ...SETUP,
    { op: 'roleGrantPermission', role: 'r1', perm: { type: 'WRITE', key: 'aa', end: 'fromKey' } },
    { op: 'roleGrantPermission', role: 'r1', perm: { type: 'READWRITE', key: 'a', end: { end: 'a' } } },
    { op: 'userGrantRole', user: 'u1', role: 'r1' },
    ...ENABLE,
    { op: 'as', user: 'u1', req: { op: 'delete', del: { key: 'aa', end: { end: 'a' } } } },
  ]);
  assert.equal(b[SETUP.length + 3 + ENABLE.length], DENIED);
});

test('etcd 3.4 checks a from-key watch (range_end "\\0") as its key alone, an empty key as "\\0"', { skip: skipWithoutEtcd }, async () => {
  await agree([
    ...SETUP,
    { op: 'userGrantRole', user: 'u1', role: 'r2' },
    { op: 'roleGrantPermission', role: 'r2', perm: { type: 'READ', key: '\u0000', end: 'prefix' } },
    ...ENABLE,
    { op: 'as', user: 'u1', req: { op: 'watch', watch: { stream: 0, key: '', end: 'prefix' } } },
    { op: 'as', user: 'u1', req: { op: 'watch', watch: { stream: 0, key: '\u0000', end: 'fromKey' } } },
    { op: 'as', user: 'u1', req: { op: 'watch', watch: { stream: 0, key: 'a', end: 'fromKey' } } },
    { op: 'as', user: 'u1', req: { op: 'watch', watch: { stream: 0, key: '\u0000', end: { end: 'b' } } } },
    { op: 'as', user: 'root', req: { op: 'put', put: { key: 'b', value: 'v' } } },
  ]);
});
