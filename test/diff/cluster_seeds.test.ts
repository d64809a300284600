/**
 * `etcdsim diff --cluster --seeds A..B --workers N` (src/diff/cluster_seeds.ts on worker_pool.ts) and the
 * fault shrinker (cluster_diff.ts shrinkClusterFaults), on the simulated side alone (no etcd needed): the
 * result of a seed does not depend on the number of workers, a planted bug is shrunk to the fewest planned
 * faults that still show it, and the shrunk replay line (`--keep-faults`) reruns exactly that schedule.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runDiff } from '../../src/cli/diff_command.js';
import { clusterPlan, formatClusterDiff, runClusterDiff, shrinkClusterFaults } from '../../src/diff/cluster_diff.js';
import { formatClusterSeedFailure, runClusterSeed } from '../../src/diff/cluster_seeds.js';
import type { HistoryKv } from '../../src/diff/kv_history.js';

async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runDiff(args, (l) => out.push(l), (l) => err.push(l));
  return { code, out: out.join('\n'), err: err.join('\n') };
}

interface JsonReport {
  failed: number[];
  results: Array<{ seed: number; faultsPlanned: number; divergences: string[]; replay: string; sides: Array<{ side: string; operations: number; finalRevision: number; faultLog: string[]; checks: unknown[]; keyspace: Record<string, string> }> }>;
}

test('--cluster --sim-only --seeds 1..3: two workers give the same results as one, seed by seed', { timeout: 300_000 }, async () => {
  const args = ['--cluster', '--sim-only', '--seeds', '1..3', '--duration', '2000', '--json'];
  const one = await run([...args, '--workers', '1']);
  const two = await run([...args, '--workers', '2']);
  assert.equal(one.code, 0, one.out + one.err);
  assert.equal(two.code, 0, two.out + two.err);
  const a = JSON.parse(one.out) as JsonReport;
  const b = JSON.parse(two.out) as JsonReport;
  assert.deepEqual(a.results.map((r) => r.seed), [1, 2, 3]);
  assert.deepEqual(b, a);
  for (const r of a.results) {
    assert.deepEqual(r.divergences, []);
    assert.equal(r.replay, `etcdsim diff --cluster --seed ${r.seed} --duration 2000 --sim-only`);
    assert.ok(r.sides[0]!.operations > 100, JSON.stringify(r.sides[0]));
  }
});

test('--cluster: --workers and --keep-faults are checked (exit 2, one line saying what is wrong)', async () => {
  const cases: Array<[string[], RegExp]> = [
    [['--cluster', '--sim-only', '--seed', '1', '--workers', '2'], /--workers goes with --seeds/],
    [['--cluster', '--sim-only', '--seeds', '1..2', '--workers', '0'], /--workers must be an integer >= 1, got "0"/],
    [['--cluster', '--sim-only', '--seed', '1', '--keep-faults', '1,x'], /--keep-faults must be an integer >= 0, got "x"/],
    [['--cluster', '--endpoint', '127.0.0.1:1'], /--cluster starts its own 3-member etcd/],
  ];
  for (const [args, message] of cases) {
    const r = await run(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.out}${r.err}`);
    assert.match(r.err, message);
  }
});

/** A test-only bug: linearizable reads served from the member's own state, without ReadIndex. */
const localReads = (_member: number, kv: HistoryKv): HistoryKv => ({ ...kv, range: (req) => kv.range({ ...req, serializable: true }) });

test('a planted bug is shrunk to the fewest planned faults that still show it; --keep-faults replays that schedule', { timeout: 300_000 }, async () => {
  const sim = { applyLagMs: [0, 0, 50], wrapKv: localReads };
  const seed = 1;
  const failed = await runClusterDiff(seed, { simOnly: true, sim });
  assert.ok(failed.divergences.some((d) => d.startsWith('simulator: linearizable:')), formatClusterDiff(failed));
  const shrunk = await shrinkClusterFaults(failed, { simOnly: true, sim });
  assert.ok(shrunk !== undefined);
  assert.equal(shrunk.planned, clusterPlan(seed).faults.length);
  assert.ok(shrunk.planned >= 2, `seed ${seed} plans ${shrunk.planned} faults`);
  // Stale local reads need no fault at all: the follower's lag is enough.
  assert.deepEqual(shrunk.keepFaults, []);
  assert.equal(shrunk.runs, 1);
  assert.equal(shrunk.result.plan.faults.length, 0);
  assert.ok(shrunk.result.divergences.some((d) => d.startsWith('simulator: linearizable:')), formatClusterDiff(shrunk.result));
  assert.equal(shrunk.result.replay, `etcdsim diff --cluster --seed ${seed} --keep-faults none --sim-only`);
  // Without the bug nothing fails, so there is nothing to shrink.
  const clean = await runClusterDiff(seed, { simOnly: true, durationMs: 2000 });
  assert.deepEqual(clean.divergences, []);
  assert.equal(await shrinkClusterFaults(clean, { simOnly: true, durationMs: 2000 }), undefined);
});

test('--keep-faults keeps exactly those planned faults, and the same seed and schedule give the same run', { timeout: 300_000 }, async () => {
  const seed = 3;
  const planned = clusterPlan(seed).faults;
  assert.ok(planned.length >= 2);
  const keep = [planned.length - 1];
  const r = await runClusterDiff(seed, { simOnly: true, keepFaults: keep });
  assert.deepEqual(r.plan.faults, [planned.at(-1)]);
  assert.equal(r.replay, `etcdsim diff --cluster --seed ${seed} --keep-faults ${keep[0]} --sim-only`);
  const cli = await run(['--cluster', '--sim-only', '--seed', String(seed), '--keep-faults', String(keep[0]), '--json']);
  assert.equal(cli.code, 0, cli.out + cli.err);
  const report = JSON.parse(cli.out) as JsonReport;
  assert.equal(report.results[0]!.faultsPlanned, 1);
  assert.deepEqual(report.results[0]!.sides[0]!.faultLog, r.sides[0]!.faultLog);
  assert.equal(report.results[0]!.sides[0]!.finalRevision, r.sides[0]!.finalRevision);
});

test('a failing seed is printed with its report, its shrunk run and both replay commands', { timeout: 300_000 }, async () => {
  const r = await runClusterSeed(2, { simOnly: true, durationMs: 3000 }, { applyLagMs: [0, 0, 50], wrapKv: localReads });
  assert.ok(r.divergences.length > 0 && r.shrunk !== undefined, r.report);
  const text = formatClusterSeedFailure(r);
  assert.match(text, /^seed 2 FAILED\nseed 2: \d+ faults planned/);
  assert.match(text, /failed  linearizable: not linearizable/);
  assert.match(text, /^ {2}shrunk: the simulated side still fails with 0 of \d+ planned faults \(none; 1 runs\):$/m);
  assert.match(text, /^ {2}replay \(shrunk\): etcdsim diff --cluster --seed 2 --duration 3000 --keep-faults none --sim-only$/m);
  assert.match(text, /^ {2}replay: etcdsim diff --cluster --seed 2 --duration 3000 --sim-only$/m);
});
