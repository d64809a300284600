/**
 * The many-seeds property runner (test/properties/seeds.ts, run_seeds.ts) on a planted failing property
 * (fixtures/planted.property.fixture.ts, selected explicitly with --file): the failing seeds come out,
 * each with its shrunk counterexample and a replay command that reproduces exactly that failure, and the
 * results do not depend on the number of workers.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { runPropertySeeds } from './seeds.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PLANTED = 'test/properties/fixtures/planted.property.fixture.ts';
const FAILING = 'planted: no number is within 500..520';

/** Runs a command line, resolving to its exit code and output (a non-zero exit is not an error here). */
async function sh(cmd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  // Not as a subtest of this file's runner: the command runs as a user would run it.
  const env = { ...process.env };
  delete env['NODE_TEST_CONTEXT'];
  try {
    const r = await run(cmd, args, { cwd: ROOT, env, maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

test('a planted failing property: each failing seed is printed with its shrunk counterexample and a replay command that reproduces it', { timeout: 300_000 }, async () => {
  const r = await sh(process.execPath, ['--import', 'tsx', 'test/properties/run_seeds.ts', '--seeds', '1..5', '--workers', '2', '--file', PLANTED]);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  // Seeds 1, 2 and 3 draw a number in 500..520 within 50 runs; 4 and 5 do not.
  assert.match(r.stdout, /^5 runs: 3 failed \(seeds 1, 2, 3\)$/m);
  for (const seed of [4, 5]) assert.match(r.stdout, new RegExp(`^seed ${seed} planted: ok \\(2 tests\\)$`, 'm'));
  const replays = new Map<number, string>();
  for (const m of r.stdout.matchAll(/^seed (\d+) FAILED: (\S+) › "([^"]+)"\n {2}shrunk \d+ time\(s\) to:\n {4}(.+)\n {2}error: (.+)\n {2}replay: (.+)$/gm)) {
    assert.equal(m[2], PLANTED);
    assert.equal(m[3], FAILING);
    assert.equal(m[4], '500', 'shrunk to the smallest failing number');
    assert.match(m[5]!, /Property failed by returning false/);
    assert.match(m[6]!, new RegExp(`^ETCDSIM_SEED=${m[1]} ETCDSIM_PATH=[\\d:]+ node --import tsx --test --test-name-pattern='\\^planted: no number is within 500\\\\\\.\\\\\\.520\\$' ${PLANTED.replace(/\./g, '\\.')}$`));
    replays.set(Number(m[1]), m[6]!);
  }
  assert.deepEqual([...replays.keys()].sort(), [1, 2, 3], r.stdout);
  // The replay line, run as printed, fails that property alone, on the same counterexample.
  const again = await sh('sh', ['-c', replays.get(2)!]);
  assert.notEqual(again.code, 0, again.stdout);
  assert.match(again.stdout, /Counterexample:\n\s+500\n/);
  assert.match(again.stdout, /^# fail 1$/m);
  assert.match(again.stdout, /^# pass 0$/m, 'the property that holds is left out');
});

test('two workers give the same results as one, seed by seed', { timeout: 300_000 }, async () => {
  const opts = { seeds: [1, 2, 3, 4], files: [PLANTED], runs: undefined };
  const one = await runPropertySeeds({ ...opts, workers: 1 });
  const two = await runPropertySeeds({ ...opts, workers: 2 });
  assert.deepEqual(two, one);
  assert.deepEqual(one.map((r) => [r.seed, r.passed, r.failures.map((f) => f.parsed?.counterexample), r.error]), [
    [1, 1, ['500'], undefined],
    [2, 1, ['500'], undefined],
    [3, 1, ['500'], undefined],
    [4, 2, [], undefined],
  ]);
});

test('usage errors exit 2 with one line saying what is wrong', { timeout: 120_000 }, async () => {
  const cases: Array<[string[], RegExp]> = [
    [[], /--seeds A\.\.B is required/],
    [['--seeds', '3..1'], /--seeds: 3\.\.1 is empty/],
    [['--seeds', '1..2', '--workers', '0'], /--workers must be an integer >= 1, got "0"/],
    [['--seeds', '1..2', '--only', 'nosuch'], /unknown property file\(s\): nosuch \(known: .*mvcc/],
  ];
  for (const [args, message] of cases) {
    const r = await sh(process.execPath, ['--import', 'tsx', 'test/properties/run_seeds.ts', ...args]);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, message);
  }
});
