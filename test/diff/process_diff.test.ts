/**
 * The cluster differential with processes (issue 31): the simulated side is etcdsim as the etcd binary in
 * three processes (`processes: true`), put through the seed's faults by the same signals as the real
 * 3-member etcd 3.4.23 beside it — SIGKILL and a restart on the data dir, SIGSTOP / SIGCONT, MoveLeader —
 * and each side is judged by the differential's checks (linearizable KV history, the watch checker on one
 * watch per member, the kept-alive lease, one keyspace and one leader after settling).
 *
 * Short in CI: one seed whose 4 s workload kills the leader and restarts it. Longer by hand:
 * ETCDSIM_SEED=N and ETCDSIM_PROCESS_DIFF_MS=6000 here, or `etcdsim diff --cluster --processes --seeds 1..20`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatClusterDiff, runClusterDiff, type ClusterSideResult } from '../../src/diff/cluster_diff.js';
import { skipWithoutEtcd } from './helpers.js';

const SEED = Number(process.env['ETCDSIM_SEED'] ?? 7);
const DURATION_MS = Number(process.env['ETCDSIM_PROCESS_DIFF_MS'] ?? 4000);

function status(side: ClusterSideResult, name: string): string {
  return side.checks.find((c) => c.name === name)?.status ?? 'missing';
}

test(`etcdsim processes and a real 3-member etcd, seed ${SEED} (${DURATION_MS} ms): the same faults by signals, every check holds on both`, { skip: skipWithoutEtcd, timeout: 120_000 }, async (t) => {
  t.diagnostic(`replay: ETCDSIM_SEED=${SEED} ETCDSIM_PROCESS_DIFF_MS=${DURATION_MS} node --import tsx --test test/diff/process_diff.test.ts`);
  const r = await runClusterDiff(SEED, { processes: true, durationMs: DURATION_MS });
  const report = formatClusterDiff(r);
  for (const line of report.split('\n')) t.diagnostic(line);
  assert.deepEqual(r.sides.map((s) => s.side), ['processes', 'etcd']);
  assert.deepEqual(r.divergences, [], report);
  for (const s of r.sides) {
    for (const name of ['linearizable', 'watch', 'lease', 'keyspace', 'members']) assert.equal(status(s, name), 'ok', `${s.side} ${name}\n${report}`);
    assert.equal(s.members, 3);
    assert.equal(s.leaders, 1);
    // Processes have no in-process Raft to check after every tick (the Raft node's own tests do).
    assert.equal(status(s, 'raft'), 'missing');
  }
  assert.match(r.replay, new RegExp(`--seed ${SEED} --duration ${DURATION_MS} --processes$`));
  // Seed 7 kills the leader and restarts it: on both sides, by signals.
  if (SEED === 7) for (const s of r.sides) assert.match(s.faultLog.join('\n'), /kill member \d \(the leader\)[^]*restarted member/, report);
});
