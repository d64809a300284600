/**
 * Mutation testing in CI, incrementally (issue #35). The full StrykerJS run (`npm run mutate`, hours on
 * two cores) measured how many mutants of the engine the property suites kill; its results are the
 * committed baseline, docs/mutation/baseline.json, with each file's source as measured. This test diffs
 * every measured file against that source. Unchanged: nothing to run (the scores in docs/mutation.md
 * still hold). Changed: Stryker re-measures the changed lines only (at most MAX_LINES of them, the first
 * of each changed region, so the run stays within CI's budget), with the property files that reached the
 * file before, and the score of those mutants must meet the folder's goal (90% for src/mvcc and src/watch,
 * 80% for src/lease and the Raft model). A failure lists the survivors: kill them with a stronger property,
 * or explain them in docs/mutation/why.json; then refresh the baseline (`npm run mutate -- --mutate <file>`,
 * `node scripts/mutation-baseline.mjs`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');
const BASELINE = join(ROOT, 'docs/mutation/baseline.json');
/** Changed lines re-measured per CI run: about two mutants a line, a few seconds each. */
const MAX_LINES = 6;

interface BaselineMutant {
  readonly line: number;
  readonly mutator: string;
  readonly replacement: string;
  readonly status: string;
}
interface BaselineFile {
  readonly source: string;
  readonly coveredBy: readonly string[];
  readonly mutants: readonly BaselineMutant[];
}
interface Baseline {
  readonly files: Record<string, BaselineFile>;
}

/** The goal per folder (issue #35). */
function goalOf(file: string): number {
  return file.startsWith('src/mvcc/') || file.startsWith('src/watch/') ? 90 : 80;
}

/** The lines (1-based, inclusive) between the common head and the common tail of two texts. */
export function changedRegion(before: string, after: string): { from: number; to: number } | undefined {
  if (before === after) return undefined;
  const a = before.split('\n');
  const b = after.split('\n');
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  // Only deletions: re-measure the line that now stands where they were.
  return { from: head + 1, to: Math.max(head + 1, b.length - tail) };
}

/** Stryker's mutation score: detected (killed or timed out) over valid mutants. */
function score(statuses: readonly string[]): { detected: number; valid: number } {
  const detected = statuses.filter((s) => s === 'Killed' || s === 'Timeout').length;
  const valid = statuses.filter((s) => s === 'Killed' || s === 'Timeout' || s === 'Survived' || s === 'NoCoverage').length;
  return { detected, valid };
}

test('changedRegion finds the lines between the common head and tail', () => {
  assert.equal(changedRegion('a\nb\nc', 'a\nb\nc'), undefined);
  assert.deepEqual(changedRegion('a\nb\nc', 'a\nX\nc'), { from: 2, to: 2 });
  assert.deepEqual(changedRegion('a\nb\nc', 'a\nb\nX\nY\nc'), { from: 3, to: 4 });
  assert.deepEqual(changedRegion('a\nb\nc', 'a\nc'), { from: 2, to: 2 });
});

test('mutation score of the engine: the baseline still holds, or the changed lines are re-measured', (t) => {
  const baseline = JSON.parse(readFileSync(BASELINE, 'utf8')) as Baseline;
  const regions: string[] = [];
  const testFiles = new Set<string>();
  const goals = new Set<number>();
  let budget = MAX_LINES;
  for (const [file, measured] of Object.entries(baseline.files)) {
    const path = join(ROOT, file);
    if (!existsSync(path)) {
      t.diagnostic(`${file} is in the baseline but no longer exists: re-measure it where it moved`);
      continue;
    }
    const region = changedRegion(measured.source, readFileSync(path, 'utf8'));
    if (region === undefined) continue;
    const to = Math.min(region.to, region.from + budget - 1);
    if (budget <= 0) {
      t.diagnostic(`${file}:${region.from}-${region.to} changed but is past this run's budget of ${MAX_LINES} lines`);
      continue;
    }
    budget -= to - region.from + 1;
    regions.push(`${file}:${region.from}-${to}`);
    for (const tf of measured.coveredBy) testFiles.add(tf);
    goals.add(goalOf(file));
  }
  if (regions.length === 0) {
    t.diagnostic(`every measured file is as in the baseline (${Object.keys(baseline.files).length} files)`);
    return;
  }
  t.diagnostic(`re-measuring ${regions.join(', ')}`);
  const require = createRequire(import.meta.url);
  const bin = join(require.resolve('@stryker-mutator/core/package.json'), '..', 'bin', 'stryker.js');
  const out = mkdtempSync(join(tmpdir(), 'etcdsim-mutation-'));
  // Stryker's sandbox lives inside the project (it resolves node_modules from there); it removes it itself.
  const sandbox = `.stryker-tmp-ci-${process.pid}`;
  try {
    const report = join(out, 'report.json');
    const run = spawnSync(process.execPath, [bin, 'run', '--mutate', regions.join(','), '--reporters', 'json', '--logLevel', 'warn'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 240_000,
      env: {
        ...process.env,
        ETCDSIM_NUM_RUNS: '100',
        STRYKER_REPORT: report,
        STRYKER_TMP: sandbox,
        STRYKER_INCREMENTAL: 'off',
        STRYKER_CHECKERS: 'none',
        STRYKER_CONCURRENCY: '1',
        ...(testFiles.size > 0 ? { STRYKER_TEST_FILES: [...testFiles].join(',') } : {}),
      },
    });
    assert.equal(run.status, 0, `stryker failed (${run.signal ?? run.status}):\n${run.stdout}\n${run.stderr}`);
    const r = JSON.parse(readFileSync(report, 'utf8')) as {
      files: Record<string, { source: string; mutants: { mutatorName: string; replacement?: string; status: string; location: { start: { line: number } } }[] }>;
    };
    const all = Object.entries(r.files).flatMap(([file, f]) => f.mutants.map((m) => ({ file, ...m })));
    const { detected, valid } = score(all.map((m) => m.status));
    const goal = Math.max(...goals);
    const survivors = all
      .filter((m) => m.status === 'Survived' || m.status === 'NoCoverage')
      .map((m) => `  ${m.file}:${m.location.start.line} ${m.mutatorName} → ${JSON.stringify(m.replacement ?? '')} (${m.status})`);
    t.diagnostic(`${detected} of ${valid} mutants of the changed lines killed`);
    assert.ok(valid === 0 || (100 * detected) / valid >= goal, `the property suites kill ${detected} of ${valid} mutants of the changed lines, below the goal of ${goal}%:\n${survivors.join('\n')}\nKill them with a stronger property or explain them in docs/mutation/why.json, then refresh the baseline (docs/mutation.md).`);
  } finally {
    rmSync(out, { recursive: true, force: true });
    rmSync(join(ROOT, sandbox), { recursive: true, force: true });
  }
});
