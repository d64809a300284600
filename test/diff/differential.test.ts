/**
 * The differential suite: a few thousand generated KV / Watch / Lease operations per run against a real
 * etcd 3.4.23 and the simulator following 3.4, with zero divergences. A divergence fails with the minimal
 * transcript and the replay command line.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runDiffCheck } from '../../src/diff/check.js';
import { diffOps, replay, skipWithoutEtcd, useRealEtcd } from './helpers.js';

const etcd = useRealEtcd();
const FILE = 'test/diff/differential.test.ts';

test('generated workloads: the simulator (etcd 3.4 rules) answers exactly as etcd 3.4.23', { skip: skipWithoutEtcd, timeout: 3_600_000 }, async () => {
  const r = replay();
  const report = await runDiffCheck({ etcd: etcd.get().client, etcdVersion: '3.4', ops: diffOps(3000), ...r });
  if (report.failure !== undefined) {
    const f = report.failure;
    assert.fail(
      [
        `divergence after ${report.opsRun} ops (${report.responsesCompared} responses compared); shrunk ${f.shrinks} times to ${f.ops.length} ops:`,
        f.transcript,
        `ops: ${JSON.stringify(f.ops)}`,
        `Replay with: ETCDSIM_SEED=${f.seed} ETCDSIM_PATH='${f.path}' node --import tsx --test ${FILE}`,
      ].join('\n'),
    );
  }
  assert.ok(report.opsRun >= Math.min(diffOps(3000), 1000) * 0.5, `ran only ${report.opsRun} ops`);
  assert.ok(report.responsesCompared >= report.opsRun);
});
