/**
 * Mutation testing in CI, incrementally (issue #35). The full StrykerJS run (`npm run mutate`, hours on
 * two cores) measured how many mutants of the engine the property suites kill; its results are the
 * committed baseline, docs/mutation/baseline.json, with each file's source as measured. This test diffs
 * every measured file against that source. Unchanged: nothing to run (the scores in docs/mutation.md
 * still hold). Changed: the mutants on unchanged lines keep their status where the lines moved to
 * (scripts/mutation-lib.mjs), so an edit that only moved lines costs nothing; Stryker re-measures the new or
 * changed mutants only (at most MAX_MUTANTS, so the run stays within CI's budget), with the property files
 * that reached the file before, and their score, counting out the survivors docs/mutation/why.json explains
 * as equivalent (as docs/mutation.md's table does), must meet the folder's goal (90% for src/mvcc and
 * src/watch, 80% for src/lease and the Raft model). A failure lists the open survivors: kill them with a
 * stronger property, or explain them in docs/mutation/why.json; then measure and fold (docs/mutation.md).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { carryOver, mergeRun, mutantsOf, PENDING, isEquivalent, scoreWithoutEquivalents, type MeasuredFile, type MeasuredMutant, type SourceMutant, type Why } from '../../scripts/mutation-lib.mjs';

const ROOT = join(import.meta.dirname, '..', '..');
const BASELINE = join(ROOT, 'docs/mutation/baseline.json');
const WHY = join(ROOT, 'docs/mutation/why.json');
/** Changed mutants re-measured per CI run (a few seconds each), so the run stays within CI's budget. */
const MAX_MUTANTS = 12;

/** The goal per folder (issue #35). */
function goalOf(file: string): number {
  return file.startsWith('src/mvcc/') || file.startsWith('src/watch/') ? 90 : 80;
}

/** Whether mutant `inner` lies wholly inside `outer` (how Stryker reads a `--mutate file:l:c-l:c` range). */
function inside(outer: SourceMutant, inner: SourceMutant): boolean {
  const startsIn = outer.line < inner.line || (outer.line === inner.line && outer.column <= inner.column);
  const endsIn = outer.endLine > inner.endLine || (outer.endLine === inner.endLine && outer.endColumn >= inner.endColumn);
  return startsIn && endsIn;
}

const m = (line: number, mutator: string, status: string, column = 1): MeasuredMutant => ({ line, column, endLine: line, mutator, replacement: 'x', status });

test('the score leaves out the survivors why.json explains as equivalent or dead code, and only those', () => {
  const why = {
    'x/a.ts:3:ConditionalExpression': 'equivalent: a shortcut.',
    'x/a.ts:StringLiteral': 'equivalent: messages.',
    'x/a.ts:5:EqualityOperator': 'dead code: never reached.',
    'x/a.ts:6:BlockStatement': 'not reached by a property: pinned by an example test.',
    'x/b.ts:7:ArithmeticOperator': 'equivalent: in another file.',
  };
  const mutants = [
    m(1, 'ArithmeticOperator', 'Killed'),
    m(2, 'ArithmeticOperator', 'Timeout'),
    m(3, 'ConditionalExpression', 'Survived'),
    m(4, 'StringLiteral', 'NoCoverage'),
    m(5, 'EqualityOperator', 'Survived'),
    m(6, 'BlockStatement', 'Survived'),
    m(7, 'ArithmeticOperator', 'Survived'),
    m(8, 'ConditionalExpression', 'Survived'),
    m(9, 'BlockStatement', 'CompileError'),
    m(10, 'BlockStatement', 'Ignored'),
    m(11, 'BlockStatement', PENDING),
  ];
  // Stryker's count: 2 detected of 8 valid; without the 3 equivalents: 2 of 5.
  assert.deepEqual(scoreWithoutEquivalents('x/a.ts', mutants, why), { detected: 2, valid: 8, equivalent: 3, pct: 25, pctWithoutEquivalents: 40 });
  assert.deepEqual(scoreWithoutEquivalents('x/a.ts', mutants.slice(0, 2), why), { detected: 2, valid: 2, equivalent: 0, pct: 100, pctWithoutEquivalents: 100 });
  assert.deepEqual(scoreWithoutEquivalents('x/a.ts', [m(3, 'ConditionalExpression', 'Survived')], why), { detected: 0, valid: 1, equivalent: 1, pct: 0, pctWithoutEquivalents: undefined });
});

const SOURCE = ['// a', "import { a } from './a.js';", "import { b } from './b.js';", 'export function f(x: number): number {', '  if (x > a) {', '    return x + b;', '  }', '  return 0;', '}', ''].join('\n');

test('carryOver moves measured mutants with their lines, and finds the ones an edit changed', async () => {
  const file = 'x/example.ts';
  const before = await mutantsOf(file, SOURCE);
  assert.ok(before.length >= 6, `the instrumenter finds the example's mutants (${before.length})`);
  const measured = { source: SOURCE, mutants: before.map((x, i) => ({ ...x, status: i % 2 === 0 ? 'Killed' : 'Survived' })) };
  // The imports folded into one line: every mutant moves up a line, none changes.
  const moved = SOURCE.replace("import { a } from './a.js';\nimport { b } from './b.js';", "import { a, b } from './ab.js';");
  const carried = carryOver(measured, moved, await mutantsOf(file, moved));
  assert.deepEqual(carried.changed, []);
  assert.deepEqual(carried.lost, []);
  assert.deepEqual(
    carried.mutants.map((x) => [x.line, x.mutator, x.replacement, x.status]),
    measured.mutants.map((x) => [x.line - 1, x.mutator, x.replacement, x.status]),
  );
  assert.deepEqual(carried.map.slice(0, 5), [1, undefined, undefined, 3, 4]);
  // An edited operator: its line's mutants are new (pending) and the old ones gone; so is the block that
  // holds the line, which starts on an unchanged line; the rest carry over.
  const edited = SOURCE.replace('return x + b;', 'return x - b;');
  const after = carryOver(measured, edited, await mutantsOf(file, edited));
  assert.ok(after.changed.some((x) => x.line === 6 && x.mutator === 'ArithmeticOperator' && x.replacement === 'x + b'), 'the edited operator is pending');
  assert.ok(after.changed.some((x) => x.line === 5 && x.endLine === 7 && x.mutator === 'BlockStatement'), 'the block around it is pending');
  assert.ok(after.lost.some((x) => x.line === 6 && x.replacement === 'x - b'));
  assert.ok(after.changed.every((x) => x.line <= 6 && x.endLine >= 6), 'only what spans the edited line');
  for (const x of after.mutants) assert.equal(x.status === PENDING, after.changed.some((c) => c.line === x.line && c.column === x.column && c.mutator === x.mutator && c.replacement === x.replacement));
  // A mutant still pending in the baseline is measured however the file changed.
  const again = carryOver({ source: edited, mutants: after.mutants }, moved.replace('return x + b;', 'return x - b;'), await mutantsOf(file, moved.replace('return x + b;', 'return x - b;')));
  assert.equal(again.changed.length, after.changed.length);
});

test('mergeRun replaces what a partial run measured and keeps a block that starts on its lines but ends past them', () => {
  const block: MeasuredMutant = { line: 5, column: 14, endLine: 7, endColumn: 4, mutator: 'BlockStatement', replacement: '{}', status: 'Killed' };
  const before = [m(5, 'ConditionalExpression', 'Survived', 7), block, m(6, 'ArithmeticOperator', 'Survived', 12)];
  const merged = mergeRun(before, [m(5, 'ConditionalExpression', 'Killed', 7)]);
  assert.deepEqual(merged.map((x) => [x.line, x.mutator, x.status]), [[5, 'ConditionalExpression', 'Killed'], [5, 'BlockStatement', 'Killed'], [6, 'ArithmeticOperator', 'Survived']]);
});

test('mutation score of the engine: the baseline still holds, or the changed mutants are re-measured', async (t) => {
  const baseline = JSON.parse(readFileSync(BASELINE, 'utf8')) as { files: Record<string, MeasuredFile> };
  const why = JSON.parse(readFileSync(WHY, 'utf8')) as Why;
  const ranges: string[] = [];
  const testFiles = new Set<string>();
  let budget = MAX_MUTANTS;
  for (const [file, measured] of Object.entries(baseline.files)) {
    const path = join(ROOT, file);
    if (!existsSync(path)) {
      t.diagnostic(`${file} is in the baseline but no longer exists: measure it where it moved`);
      continue;
    }
    const source = readFileSync(path, 'utf8');
    if (source === measured.source && !measured.mutants.some((x) => x.status === PENDING)) continue;
    const current = await mutantsOf(file, source);
    const { changed } = carryOver(measured, source, current);
    if (changed.length === 0) {
      t.diagnostic(`${file} changed since it was measured, but none of its mutants did: nothing to measure (node scripts/mutation-baseline.mjs --refresh carries the baseline over)`);
      continue;
    }
    for (const c of changed) {
      // A range measures every mutant inside it: a block's holds all of the block's.
      const cost = current.filter((x) => !x.ignored && inside(c, x)).length;
      if (cost > budget) {
        t.diagnostic(`${file}:${c.line} ${c.mutator} changed (${cost} mutants with those inside it) but is past this run's budget of ${MAX_MUTANTS} mutants`);
        continue;
      }
      budget -= cost;
      ranges.push(`${file}:${c.line}:${c.column - 1}-${c.endLine}:${c.endColumn - 1}`);
      for (const tf of measured.coveredBy) testFiles.add(tf);
    }
  }
  if (ranges.length === 0) {
    t.diagnostic(`no measured mutant changed (${Object.keys(baseline.files).length} files)`);
    return;
  }
  t.diagnostic(`re-measuring ${ranges.join(', ')}`);
  const require = createRequire(import.meta.url);
  const bin = join(require.resolve('@stryker-mutator/core/package.json'), '..', 'bin', 'stryker.js');
  const out = mkdtempSync(join(tmpdir(), 'etcdsim-mutation-'));
  // Stryker's sandbox lives inside the project (it resolves node_modules from there); it removes it itself.
  const sandbox = `.stryker-tmp-ci-${process.pid}`;
  try {
    const report = join(out, 'report.json');
    const run = spawnSync(process.execPath, [bin, 'run', '--mutate', ranges.join(','), '--reporters', 'json', '--logLevel', 'warn'], {
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
      files: Record<string, { mutants: { mutatorName: string; replacement?: string; status: string; location: { start: { line: number } } }[] }>;
    };
    for (const [file, f] of Object.entries(r.files)) {
      const mutants = f.mutants.map((x) => ({ line: x.location.start.line, mutator: x.mutatorName, replacement: x.replacement ?? '', status: x.status }));
      const s = scoreWithoutEquivalents(file, mutants, why);
      const open = mutants.filter((x) => (x.status === 'Survived' || x.status === 'NoCoverage') && !isEquivalent(why, file, x));
      t.diagnostic(`${file}: ${s.detected} of ${s.valid} re-measured mutants killed, ${s.equivalent} survivors explained as equivalent`);
      const goal = goalOf(file);
      assert.ok(
        s.pctWithoutEquivalents === undefined || s.pctWithoutEquivalents >= goal,
        `the property suites kill ${s.detected} of the ${s.valid - s.equivalent} changed mutants of ${file} not explained as equivalent, below the goal of ${goal}%:\n` +
          open.map((x) => `  ${file}:${x.line} ${x.mutator} → ${JSON.stringify(x.replacement)} (${x.status})`).join('\n') +
          '\nKill them with a stronger property or explain them in docs/mutation/why.json, then refresh the baseline (docs/mutation.md).',
      );
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
    rmSync(join(ROOT, sandbox), { recursive: true, force: true });
  }
});
