/**
 * `etcdsim diff --seeds A..B --workers N` (src/diff/seeds.ts): the seed range and its shards, the flags'
 * checks, and real runs on worker threads with no etcd needed — each worker diffs against a simulator
 * served over gRPC, as test/diff/sim_vs_sim.test.ts does. Two served simulators that follow the workload's
 * rules agree on every seed; two that take up to 1000 ops per txn (etcd's --max-txn-ops; the
 * simulator under test keeps etcd's default, 128) diverge on every seed whose workloads send a txn of 129
 * ops, and each such seed is printed with its shrunk trace and its replay command.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { runDiff } from '../../src/cli/diff_command.js';
import { DIFF_ELECTION_MS, DIFF_HEARTBEAT_MS } from '../../src/diff/etcd_process.js';
import { parseSeedRange, seedsOf, shardSeeds } from '../../src/diff/seeds.js';
import { serve, type ServeHandle } from '../../src/grpc/server.js';

const served: ServeHandle[] = [];
after(async () => {
  await Promise.all(served.map((s) => s.close()));
});

/** Two simulators served on free ports, with the timing flags the differential gives a real etcd. */
async function twoServed(maxTxnOps?: number): Promise<string> {
  const pair = await Promise.all(
    [0, 1].map(() =>
      serve({ port: 0, etcdVersion: '3.4', heartbeatIntervalMs: DIFF_HEARTBEAT_MS, electionTicks: DIFF_ELECTION_MS / DIFF_HEARTBEAT_MS, ...(maxTxnOps === undefined ? {} : { maxTxnOps }) }),
    ),
  );
  served.push(...pair);
  return pair.map((s) => s.address).join(',');
}

async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runDiff(args, (l) => out.push(l), (l) => err.push(l));
  return { code, out: out.join('\n'), err: err.join('\n') };
}

test('seed ranges parse as A..B and shard by job index without gaps or overlaps', () => {
  assert.deepEqual(parseSeedRange('1..4'), { first: 1, last: 4 });
  assert.deepEqual(parseSeedRange('-3..-3'), { first: -3, last: -3 });
  assert.deepEqual(seedsOf({ first: 7, last: 9 }), [7, 8, 9]);
  assert.throws(() => parseSeedRange('4..1'), /is empty/);
  assert.throws(() => parseSeedRange('1-4'), /must be A..B/);
  assert.throws(() => parseSeedRange('0..4294967296'), /not a 32-bit seed/);
  for (const total of [1, 3, 4, 7, 12]) {
    const r = { first: 100, last: 109 };
    const covered: number[] = [];
    for (let i = 0; i < total; i++) {
      const s = shardSeeds(r, i, total);
      if (s !== undefined) covered.push(...seedsOf(s));
    }
    assert.deepEqual(covered, seedsOf(r), `${total} jobs`);
  }
  assert.deepEqual(shardSeeds({ first: 1, last: 10 }, 0, 3), { first: 1, last: 4 });
  assert.deepEqual(shardSeeds({ first: 1, last: 10 }, 2, 3), { first: 8, last: 10 });
  assert.throws(() => shardSeeds({ first: 1, last: 2 }, 3, 3), /need 0 <= index < total/);
});

test('--seeds and --workers are checked like the other flags (exit 2, one line saying what is wrong)', async () => {
  const cases: Array<[string[], RegExp]> = [
    [['--start-etcd', '--seeds', '5..1'], /--seeds: 5\.\.1 is empty/],
    [['--start-etcd', '--seeds', 'many'], /--seeds must be A\.\.B/],
    [['--start-etcd', '--seeds', '1..2', '--seed', '3'], /either --seed N or --seeds A\.\.B/],
    [['--start-etcd', '--seeds', '1..2', '--workers', '0'], /--workers must be an integer >= 1, got "0"/],
    [['--start-etcd', '--workers', '2'], /--workers goes with --seeds/],
    [['--endpoint', '127.0.0.1:1', '--seeds', '1..4', '--workers', '2'], /--workers 2 needs 2 endpoints, got 1: each worker wipes its etcd/],
    [['--endpoint', '127.0.0.1:1,127.0.0.1:2'], /several, one per worker, only with --seeds/],
    [['--seeds', '1..2'], /exactly one of --start-etcd and --endpoint/],
  ];
  for (const [args, message] of cases) {
    const r = await run(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.out}${r.err}`);
    assert.match(r.err, message);
    assert.match(r.err, /^etcdsim diff: /);
  }
});

test('--seeds 1..4 --workers 2 against served simulators: every seed runs on one of the two workers, none diverges', { timeout: 120_000 }, async () => {
  const endpoints = await twoServed();
  const r = await run(['--endpoint', endpoints, '--seeds', '1..4', '--workers', '2', '--ops', '20', '--json']);
  assert.equal(r.code, 0, r.out + r.err);
  const report = JSON.parse(r.out) as { failed: number[]; workers: number; results: Array<{ seed: number; runs: number; responsesCompared: number; failure: unknown; error: unknown; replay: string }> };
  assert.deepEqual(report.failed, []);
  assert.equal(report.workers, 2);
  assert.deepEqual(report.results.map((x) => [x.seed, x.failure, x.error]), [[1, null, null], [2, null, null], [3, null, null], [4, null, null]]);
  for (const x of report.results) assert.ok(x.runs >= 1 && x.responsesCompared >= 1, JSON.stringify(x));
  assert.match(report.results[2]!.replay, /^etcdsim diff --endpoint 127\.0\.0\.1:\d+ --etcd-version 3\.4 --ops 20 --seed 3$/);
});

test('a planted divergence: each failing seed is printed with its shrunk trace and replay command, exit 1', { timeout: 120_000 }, async () => {
  // The "etcd" side takes txns of up to 1000 ops; the simulator rejects 129 ("too many operations").
  const endpoints = await twoServed(1000);
  const first = endpoints.split(',')[0]!.replace(/\./g, '\\.');
  const r = await run(['--endpoint', endpoints, '--seeds', '1..2', '--workers', '2', '--ops', '100']);
  assert.equal(r.code, 1, r.out + r.err);
  const failed = [...r.out.matchAll(/^seed (\d+) FAILED: divergence at op #(\d+) \(response\); minimal workload \((\d+) ops, shrunk \d+ times\):$/gm)];
  assert.ok(failed.length > 0, `the planted divergence was not found on any seed:\n${r.out}`);
  for (const m of failed) {
    const seed = m[1]!;
    assert.match(r.out, new RegExp(`^seed ${seed}: \\d+ workloads, \\d+ ops run, \\d+ responses compared, DIVERGED at op #${m[2]} \\(response\\)$`, 'm'));
    // Shrunk to the txn of 129 ops that shows it (and at most one op that fast-check left beside it).
    assert.ok(Number(m[3]) <= 2, `seed ${seed} not shrunk: ${m[0]}`);
    assert.match(r.out, new RegExp(`^replay: etcdsim diff --endpoint ${first} --etcd-version 3\\.4 --ops 100 --seed ${seed} `, 'm'));
  }
  assert.match(r.out, /^!! #\d+ \{"op":"bigTxn","count":129\}$/m);
  assert.match(r.out, /too many operations in txn request/);
  assert.match(r.out, new RegExp(`2 seeds, \\d+ ops run, \\d+ responses compared: ${failed.length} failed \\(seeds ${failed.map((m) => m[1]).join(', ')}\\)`));
});
