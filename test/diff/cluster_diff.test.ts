/**
 * The cluster differential (src/diff/cluster_diff.ts): the simulated side alone on fixed seeds (virtual
 * time, no etcd), its determinism, a planted bug its checks must catch, and both sides against a real
 * 3-member etcd 3.4.23 on fixed seeds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clusterPlan, formatClusterDiff, runClusterDiff, runClusterSide, simSide, type ClusterDiffResult, type ClusterSideResult } from '../../src/diff/cluster_diff.js';
import type { HistoryKv } from '../../src/diff/kv_history.js';
import { runDiff } from '../../src/cli/diff_command.js';
import { skipWithoutEtcd } from './helpers.js';

function status(side: ClusterSideResult, name: string): string {
  return side.checks.find((c) => c.name === name)?.status ?? 'missing';
}

function assertClean(r: ClusterDiffResult): void {
  assert.deepEqual(r.divergences, [], formatClusterDiff(r));
  for (const s of r.sides) {
    for (const name of ['linearizable', 'watch', 'lease', 'keyspace', 'members']) assert.equal(status(s, name), 'ok', `${s.side} ${name}\n${formatClusterDiff(r)}`);
    // The revision count is promised only when every write's outcome is known.
    assert.equal(status(s, 'revision'), s.unknownWrites === 0 ? 'ok' : 'skipped', formatClusterDiff(r));
    assert.equal(s.members, 3);
    assert.equal(s.leaders, 1);
    // Raft's invariants, checked after every tick where the side can (the simulator; etcd's Raft is its own).
    assert.equal(status(s, 'raft'), s.side === 'simulator' ? 'ok' : 'missing', formatClusterDiff(r));
  }
}

/** A test-only bug: linearizable reads served from the member's own state, without ReadIndex. */
const localReads = (_member: number, kv: HistoryKv): HistoryKv => ({ ...kv, range: (req) => kv.range({ ...req, serializable: true }) });

for (const seed of [1, 2, 3, 4]) {
  test(`simulated cluster, seed ${seed}: faults fire and every promise holds`, async () => {
    const r = await runClusterDiff(seed, { simOnly: true });
    assertClean(r);
    const sim = r.sides[0]!;
    assert.ok(sim.faultLog.length >= 2, `faults fired:\n${sim.faultLog.join('\n')}`);
    assert.ok(sim.operations > 500, `${sim.operations} operations`);
    assert.match(r.replay, new RegExp(`^etcdsim diff --cluster --seed ${seed} --sim-only$`));
  });
}

test('simulated cluster without faults: the revision count is exact', async () => {
  const r = await runClusterDiff(6, { simOnly: true, faults: false });
  assertClean(r);
  const sim = r.sides[0]!;
  assert.equal(sim.unknownWrites, 0);
  assert.equal(status(sim, 'revision'), 'ok');
  assert.equal(sim.faultLog.length, 0);
});

test('simulated cluster: the same seed gives the same run', async () => {
  const once = async (): Promise<ClusterSideResult> => {
    const plan = clusterPlan(3);
    return runClusterSide(simSide(plan), plan);
  };
  const [a, b] = [await once(), await once()];
  assert.deepEqual(b.faultLog, a.faultLog);
  assert.equal(b.operations, a.operations);
  assert.equal(b.finalRevision, a.finalRevision);
  assert.deepEqual([...b.keyspace], [...a.keyspace]);
  assert.deepEqual(b.checks, a.checks);
});

test('a planted bug (linearizable reads served locally, a follower 50 ms behind) is caught, with the seed and its replay', async () => {
  for (const seed of [1, 2]) {
    // The lag alone breaks no promise: linearizable reads wait for ReadIndex on the slow follower.
    const control = await runClusterDiff(seed, { simOnly: true, sim: { applyLagMs: [0, 0, 50] } });
    assertClean(control);
    const r = await runClusterDiff(seed, { simOnly: true, sim: { applyLagMs: [0, 0, 50], wrapKv: localReads } });
    assert.equal(status(r.sides[0]!, 'linearizable'), 'failed', formatClusterDiff(r));
    assert.ok(r.divergences.some((d) => d.startsWith('simulator: linearizable: not linearizable')), r.divergences.join('\n'));
    const report = formatClusterDiff(r);
    assert.match(report, new RegExp(`^seed ${seed}:`));
    assert.match(report, new RegExp(`replay: etcdsim diff --cluster --seed ${seed} --sim-only`));
  }
});

test('etcdsim diff --cluster --sim-only: the report, its replay line and the exit code', async () => {
  const lines: string[] = [];
  const code = await runDiff(['--cluster', '--sim-only', '--seed', '2', '--duration', '3000'], (l) => lines.push(l));
  const out = lines.join('\n');
  assert.equal(code, 0, out);
  assert.match(out, /^seed 2: /);
  assert.match(out, /ok +linearizable: \d+ operations on 3 keys/);
  assert.match(out, /replay: etcdsim diff --cluster --seed 2 --duration 3000 --sim-only/);
  assert.match(out, /1 seed: no divergence$/);
  const errors: string[] = [];
  assert.equal(await runDiff(['--cluster', '--start-etcd'], (l) => errors.push(l)), 2);
  assert.match(errors.join('\n'), /--cluster starts its own 3-member etcd/);
});

// Against a real 3-member etcd 3.4.23: each test starts its own cluster (about 12 s of real time for the
// etcd side with a 6 s workload: start, workload, the lease's expiry, settling), plus a second or two for
// the simulated side.
// Seed 1: a leader transfer, a follower and then the leader paused; seed 5: a leader transfer, a follower
// killed and restarted (a new watch resumes on it), another leader transfer.
for (const [seed, faults] of [[1, /moveLeader[^]*pause[^]*resume[^]*pause[^]*resume/], [5, /moveLeader[^]*kill[^]*restarted[^]*moveLeader/]] as const) {
  test(`simulated and real 3-member etcd, seed ${seed} with faults: no divergence`, { skip: skipWithoutEtcd, timeout: 60_000 }, async () => {
    const r = await runClusterDiff(seed);
    assert.equal(r.sides.length, 2);
    assertClean(r);
    for (const s of r.sides) assert.match(s.faultLog.join('\n'), faults, formatClusterDiff(r));
  });
}

test('simulated and real 3-member etcd, seed 6 without faults: no divergence, exact revision counts', { skip: skipWithoutEtcd, timeout: 60_000 }, async () => {
  const r = await runClusterDiff(6, { faults: false, durationMs: 3000 });
  assertClean(r);
  for (const s of r.sides) assert.equal(status(s, 'revision'), 'ok', formatClusterDiff(r));
});
