/**
 * The differential suite with auth on: generated users, roles and permissions (READ / WRITE / READWRITE on
 * keys, ranges, prefixes), auth enable / disable, Authenticate, and KV / txn / watch / lease requests issued
 * as root, as ordinary users, with a bogus token or none — each side with its own tokens — against a real
 * etcd 3.4.23 and the simulator following 3.4. Every permission decision (which op of which txn branch is
 * denied, which watch is canceled) must be etcd's.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runDiffCheck } from '../../src/diff/check.js';
import { diffOps, replay, skipWithoutEtcd, useRealEtcd } from './helpers.js';

const etcd = useRealEtcd();
const FILE = 'test/diff/auth_differential.test.ts';
const OPS = 600;

test('generated auth workloads: permission decisions of the simulator (etcd 3.4 rules) are etcd 3.4.23\'s', { skip: skipWithoutEtcd, timeout: 3_600_000 }, async () => {
  const r = replay();
  const report = await runDiffCheck({ etcd: etcd.get().client, etcdVersion: '3.4', workload: 'auth', ops: diffOps(OPS), maxOpsPerRun: 40, ...r });
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
  if (r.path === undefined) assert.ok(report.opsRun >= Math.min(diffOps(OPS), 600) * 0.5, `ran only ${report.opsRun} ops`);
  assert.ok(report.responsesCompared >= report.opsRun);
});
