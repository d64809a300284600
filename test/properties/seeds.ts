/**
 * Property runs over many seeds on all cores: `npm run properties -- --seeds A..B --workers N [--only NAME]`.
 *
 * Each job is one property file run with one seed: a child process `node --test FILE` (through the test command's TypeScript loader) with
 * ETCDSIM_SEED (and ETCDSIM_NUM_RUNS with --runs) set, which the harness (harness.ts) hands to fast-check,
 * so a job's outcome is a pure function of its seed and file whichever child runs it. At most N children
 * run at once, taking the next job as one ends — no scheduler beyond that; beyond one machine, shard the
 * seed range by index across CI jobs (src/diff/seeds.ts `shardSeeds`, docs/differential.md).
 *
 * Each child reports through seeds_reporter.mjs (one JSON line per test); for a failed property the
 * harness's report is read back (parseFailure) and printed with the exact replay command: ETCDSIM_SEED,
 * ETCDSIM_PATH and, for a command sequence, ETCDSIM_REPLAY_PATH, plus --test-name-pattern so that only the
 * failing property replays (a seed and path belong to one property; another in the same file would fail
 * with "Unable to replay").
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { basename, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseFailure, type ParsedFailure } from './harness.js';

/** The repository root (where `npm run properties` runs). */
const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const REPORTER = fileURLToPath(new URL('./seeds_reporter.mjs', import.meta.url));
/** The test command's TypeScript loader (cheaper per process than tsx: test/support/ts_loader.mjs). */
const TS_LOADER = fileURLToPath(new URL('../support/ts_loader.mjs', import.meta.url));

/** The property files: test/properties/*.property.test.ts, repository-relative, sorted. */
export function propertyFiles(): string[] {
  const dir = fileURLToPath(new URL('.', import.meta.url));
  return readdirSync(dir)
    .filter((f) => f.endsWith('.property.test.ts'))
    .sort()
    .map((f) => relative(ROOT, resolve(dir, f)));
}

/** A property file's short name: its base name without `.property.test.ts` (what --only matches). */
export function propertyName(file: string): string {
  return basename(file).replace(/\.property\.(test|fixture)\.ts$/, '');
}

/** One failed test of one job. */
export interface PropertyFailure {
  readonly test: string;
  /** The harness's report, read back; undefined when the test failed outside fast-check. */
  readonly parsed: ParsedFailure | undefined;
  /** The test's whole error message. */
  readonly message: string;
  /** The shell command that replays exactly this failure. */
  readonly replay: string;
}

/** What one (seed, file) job found. */
export interface PropertyJobResult {
  readonly seed: number;
  readonly file: string;
  readonly passed: number;
  readonly failures: readonly PropertyFailure[];
  /** The child could not run the file (exit without a failed test, a crash): its exit and stderr's tail. */
  readonly error: string | undefined;
}

export interface PropertySeedsOptions {
  readonly seeds: readonly number[];
  /** Repository-relative files to run. */
  readonly files: readonly string[];
  /** Children at once (at least 1). */
  readonly workers: number;
  /** ETCDSIM_NUM_RUNS for every property (default: each property's own). */
  readonly runs?: number | undefined;
  /** Called as each job finishes (in finishing order). */
  readonly onResult?: ((r: PropertyJobResult) => void) | undefined;
}

function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** A regular expression that matches exactly `name` (for --test-name-pattern). */
function exactPattern(name: string): string {
  return `^${name.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&')}$`;
}

/** The command that replays one failed test: the harness's seed and path, that test alone. */
export function replayCommand(seed: number, file: string, test: string, parsed: ParsedFailure | undefined, runs: number | undefined): string {
  const vars = [`ETCDSIM_SEED=${parsed?.seed ?? seed}`];
  if (parsed !== undefined) {
    vars.push(`ETCDSIM_PATH=${shellQuote(parsed.path)}`);
    if (parsed.replayPath !== undefined) vars.push(`ETCDSIM_REPLAY_PATH=${shellQuote(parsed.replayPath)}`);
  } else if (runs !== undefined) {
    // Not a fast-check failure: rerun it as it ran.
    vars.push(`ETCDSIM_NUM_RUNS=${runs}`);
  }
  return `${vars.join(' ')} node --import tsx --test --test-name-pattern=${shellQuote(exactPattern(test))} ${shellQuote(file)}`;
}

interface Reported {
  readonly type: 'pass' | 'fail';
  readonly name: string;
  readonly nesting: number;
  readonly message?: string | undefined;
}

/** Runs one file with one seed in a child process. */
export function runPropertyJob(seed: number, file: string, runs: number | undefined): Promise<PropertyJobResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, ETCDSIM_SEED: String(seed) };
  // Run under node --test itself (a test of this runner), the child would otherwise report to that
  // parent's protocol instead of through the reporter.
  delete env['NODE_TEST_CONTEXT'];
  delete env['ETCDSIM_PATH'];
  delete env['ETCDSIM_REPLAY_PATH'];
  if (runs !== undefined) env['ETCDSIM_NUM_RUNS'] = String(runs);
  else delete env['ETCDSIM_NUM_RUNS'];
  const child = spawn(process.execPath, ['--import', TS_LOADER, '--test', `--test-reporter=${REPORTER}`, file], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err = (err + d).slice(-4000)));
  return new Promise((done) => {
    child.once('close', (code, signal) => {
      const tests: Reported[] = out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Reported);
      // A failing subtest fails its parent too: report the innermost failures only.
      const failed = tests.filter((t) => t.type === 'fail');
      const innermost = failed.filter((t, i) => !failed.slice(0, i).some((x) => x.nesting > t.nesting));
      const failures = innermost.map((t): PropertyFailure => {
        const message = t.message ?? '';
        const parsed = parseFailure(message);
        return { test: t.name, parsed, message, replay: replayCommand(seed, file, t.name, parsed, runs) };
      });
      const broken = failures.length === 0 && code !== 0;
      done({
        seed,
        file,
        passed: tests.filter((t) => t.type === 'pass').length,
        failures,
        error: broken ? `exit ${code ?? signal}: ${err.trim().split('\n').slice(-5).join(' | ')}` : undefined,
      });
    });
  });
}

/**
 * Runs every file with every seed, at most `workers` children at once; resolves to the results ordered
 * by seed, then file.
 */
export async function runPropertySeeds(o: PropertySeedsOptions): Promise<PropertyJobResult[]> {
  if (!Number.isSafeInteger(o.workers) || o.workers < 1) throw new RangeError(`--workers must be an integer >= 1, got ${o.workers}`);
  const jobs = o.seeds.flatMap((seed) => o.files.map((file) => ({ seed, file })));
  const results: PropertyJobResult[] = [];
  const lane = async (): Promise<void> => {
    for (let job = jobs.shift(); job !== undefined; job = jobs.shift()) {
      const r = await runPropertyJob(job.seed, job.file, o.runs);
      results.push(r);
      o.onResult?.(r);
    }
  };
  await Promise.all(Array.from({ length: Math.min(o.workers, Math.max(1, jobs.length)) }, lane));
  const order = new Map(o.files.map((f, i) => [f, i]));
  return results.sort((a, b) => a.seed - b.seed || order.get(a.file)! - order.get(b.file)!);
}

/** One job's outcome in one line. */
export function jobLine(r: PropertyJobResult): string {
  const head = `seed ${r.seed} ${propertyName(r.file)}:`;
  if (r.error !== undefined) return `${head} ERROR ${r.error}`;
  if (r.failures.length > 0) return `${head} FAILED ${r.failures.map((f) => JSON.stringify(f.test)).join(', ')} (${r.passed} passed)`;
  return `${head} ok (${r.passed} tests)`;
}

/** A failed job for humans: per failed test its seed, shrunk counterexample, error and replay command. */
export function formatJobFailure(r: PropertyJobResult): string {
  const lines: string[] = [];
  if (r.error !== undefined) lines.push(`seed ${r.seed} ${r.file}: could not run: ${r.error}`);
  for (const f of r.failures) {
    lines.push(`seed ${r.seed} FAILED: ${r.file} › ${JSON.stringify(f.test)}`);
    if (f.parsed !== undefined) {
      lines.push(`  shrunk ${f.parsed.shrinks} time(s) to:`);
      lines.push(...f.parsed.counterexample.split('\n').map((l) => `    ${l}`));
      lines.push(`  error: ${f.parsed.error}`);
    } else {
      lines.push(...f.message.split('\n').slice(0, 20).map((l) => `  ${l}`));
    }
    lines.push(`  replay: ${f.replay}`);
  }
  return lines.join('\n');
}
