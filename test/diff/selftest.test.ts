/**
 * The comparator catches a planted divergence and shrinks it: the simulator's side is wrapped (here, not in
 * src) so that a Range with a limit that cuts the result reports `count` as the number of kvs returned
 * instead of the number of keys in the range. fast-check must find it and shrink it to a few ops.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runDiffCheck } from '../../src/diff/check.js';
import type { DiffTarget } from '../../src/diff/target.js';
import { skipWithoutEtcd, useRealEtcd } from './helpers.js';

const etcd = useRealEtcd();

function plantWrongCountUnderLimit(t: DiffTarget): DiffTarget {
  return {
    ...t,
    kv: {
      ...t.kv,
      range: async (req) => {
        const r = await t.kv.range(req);
        return r.more ? { ...r, count: String(r.kvs.length) } : r;
      },
    },
  };
}

test('a planted wrong count under a limit is caught and shrunk to a few ops', { skip: skipWithoutEtcd, timeout: 120_000 }, async () => {
  const report = await runDiffCheck({ etcd: etcd.get().client, etcdVersion: '3.4', ops: 2000, seed: 42, wrapSim: plantWrongCountUnderLimit });
  assert.ok(report.failure !== undefined, 'the planted divergence was not found');
  const f = report.failure;
  // Minimal: two puts under one prefix (or range) and the limited range.
  assert.ok(f.ops.length <= 4, `not shrunk enough (${f.ops.length} ops):\n${f.transcript}`);
  const last = f.ops[f.divergence.step];
  assert.equal(last?.op, 'range');
  assert.equal(f.divergence.where, 'response');
  assert.match(f.divergence.sim, /"more":true/);
  assert.notEqual(f.divergence.sim, f.divergence.etcd);
  assert.match(f.transcript, /!! #\d+ \{"op":"range"/);
  assert.match(f.transcript, /etcdsim: .*"count":"1"/);
  assert.match(f.transcript, /etcd: {4}.*"count":"[2-9]"/);
  assert.equal(report.divergences, 1);
});

test('without the plant the same seed shows no divergence', { skip: skipWithoutEtcd, timeout: 120_000 }, async () => {
  const report = await runDiffCheck({ etcd: etcd.get().client, etcdVersion: '3.4', ops: 300, seed: 42 });
  assert.equal(report.failure, undefined, report.failure?.transcript);
});
