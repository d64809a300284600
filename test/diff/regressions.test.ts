/**
 * Fixed traces of every divergence found so far, run against the real etcd 3.4.23 and the simulator.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runOnce } from '../../src/diff/check.js';
import type { Op } from '../../src/diff/ops.js';
import { formatTranscript } from '../../src/diff/transcript.js';
import { skipWithoutEtcd, useRealEtcd } from './helpers.js';

const etcd = useRealEtcd();

async function agree(ops: Op[]): Promise<void> {
  const r = await runOnce(ops, { etcd: etcd.get().client, etcdVersion: '3.4' });
  assert.equal(r.divergence, undefined, formatTranscript(r.transcript, r.divergence));
}

test('single-key requests leave range_end out (etcd 3.4.23 reads a present empty range_end as from-key)', { skip: skipWithoutEtcd }, async () => {
  // Found by the first run: with range_end sent as an empty Buffer, etcd answered the range of "a" with "ÿ".
  await agree([
    { op: 'put', put: { key: '\u00ff', value: '' } },
    { op: 'range', range: { key: 'a', end: 'single' } },
    { op: 'delete', del: { key: 'a', end: 'single', prevKv: true } },
    { op: 'range', range: { key: '\u0000', end: 'fromKey' } },
  ]);
});

test('compaction, watches from the compaction revision and before it, negative start revisions', { skip: skipWithoutEtcd }, async () => {
  await agree([
    { op: 'put', put: { key: 'a', value: 'v' } },
    { op: 'delete', del: { key: 'a', end: 'single' } },
    { op: 'compact', rev: { from: 'cur', delta: 0 }, physical: true },
    { op: 'watch', watch: { stream: 0, key: 'a', end: 'prefix', start: { from: 'compact', delta: 0 }, prevKv: true } },
    { op: 'watch', watch: { stream: 0, key: 'a', end: 'prefix', start: { from: 'compact', delta: -1 } } },
    { op: 'watch', watch: { stream: 1, key: 'b', end: 'single', start: { from: 'abs', rev: -1 } } },
    { op: 'put', put: { key: 'ab', value: 'w' } },
    { op: 'watchProgress', stream: 0 },
  ]);
});

test('leases: generated IDs by order, min TTL, keep-alive and time-to-live with keys, revoke deletes', { skip: skipWithoutEtcd }, async () => {
  await agree([
    { op: 'grant', ttl: 1 },
    { op: 'grant', ttl: 60, id: '7' },
    { op: 'grant', ttl: 60, id: '7' },
    { op: 'put', put: { key: 'a', value: 'v', lease: { granted: 0 } } },
    { op: 'put', put: { key: 'b', value: 'v', lease: { granted: 0 } } },
    { op: 'watch', watch: { stream: 0, key: '\u0000', end: 'fromKey', prevKv: true } },
    { op: 'timeToLive', lease: { granted: 0 }, keys: true },
    { op: 'keepAlive', lease: { granted: 1 } },
    { op: 'keepAlive', lease: { id: '424242' } },
    { op: 'leases' },
    { op: 'revoke', lease: { granted: 0 } },
    { op: 'timeToLive', lease: { granted: 0 }, keys: false },
    { op: 'put', put: { key: 'a', value: 'x', lease: { id: '424242' } } },
  ]);
});

test('etcd 3.4 checks a write txn\'s puts before its ranges (the simulator follows with etcdVersion 3.4)', { skip: skipWithoutEtcd }, async () => {
  // Shrunk trace: etcd 3.4 checks every put on the chosen path (ignore_lease needs the key) before any
  // range's revision, so it answers "key not found"; etcd 3.6+ checks in op order and would say "compacted".
  const ops: Op[] = [
    {
      op: 'txn',
      txn: {
        compare: [{ key: 'a', target: 'VERSION', result: 'EQUAL', operand: 1 }],
        success: [],
        failure: [{ range: { key: 'a', end: 'prefix', revision: { from: 'compact', delta: -1 } } }, { put: { key: 'a', value: '', ignoreLease: true } }],
      },
    },
  ];
  const r = await runOnce(ops, { etcd: etcd.get().client, etcdVersion: '3.4' });
  assert.equal(r.transcript[0]?.etcd, '{"error":{"code":3,"details":"etcdserver: key not found"}}');
  assert.equal(r.divergence, undefined, formatTranscript(r.transcript, r.divergence));
});
