/**
 * `npm run properties -- --seeds A..B [--workers N] [--only NAME[,NAME]] [--file PATH] [--runs N] [--json]`:
 * the fast-check properties of test/properties, each file with each seed of A..B, on N child processes at
 * once (default: every core). --only picks property files by short name (`mvcc` for
 * mvcc.property.test.ts); --file runs a file outside that list (e.g. a fixture). For each failure it prints
 * the seed, the shrunk counterexample and the exact replay command. Exit 0 all passed, 1 a failure, 2 a
 * usage error. See seeds.ts, and docs/differential.md for sharding seeds across CI jobs.
 */
import { availableParallelism } from 'node:os';
import { parseSeedRange, seedsOf, type SeedRange } from '../../src/diff/seeds.js';
import { formatJobFailure, jobLine, propertyFiles, propertyName, runPropertySeeds } from './seeds.js';

const USAGE = 'usage: npm run properties -- --seeds A..B [--workers N] [--only NAME[,NAME]] [--file PATH]... [--runs N] [--json]';

class UsageError extends Error {}

interface Args {
  readonly seeds: SeedRange;
  readonly workers: number;
  readonly files: readonly string[];
  readonly runs: number | undefined;
  readonly json: boolean;
}

function positive(name: string, v: string | undefined): number {
  const n = v === undefined || v.trim() === '' ? NaN : Number(v);
  if (!Number.isSafeInteger(n) || n < 1) throw new UsageError(`${name} must be an integer >= 1, got ${JSON.stringify(v ?? '')}`);
  return n;
}

function parseArgs(argv: readonly string[]): Args {
  let seeds: SeedRange | undefined;
  let workers = availableParallelism();
  let runs: number | undefined;
  let json = false;
  const only: string[] = [];
  const explicit: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.startsWith('--') && argv[i]!.includes('=') ? (argv[i]!.split(/=(.*)/s, 2) as [string, string]) : [argv[i]!, undefined];
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new UsageError(`${flag} needs a value`);
      return v;
    };
    if (flag === '--seeds') {
      try {
        seeds = parseSeedRange(value());
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
    } else if (flag === '--workers') workers = positive('--workers', value());
    else if (flag === '--runs') runs = positive('--runs', value());
    else if (flag === '--only') only.push(...value().split(',').filter((x) => x !== ''));
    else if (flag === '--file') explicit.push(value());
    else if (flag === '--json') json = true;
    else if (flag === '--help' || flag === '-h') throw new UsageError('');
    else throw new UsageError(`unknown argument ${JSON.stringify(argv[i])}`);
  }
  if (seeds === undefined) throw new UsageError('--seeds A..B is required');
  const all = propertyFiles();
  const unknown = only.filter((n) => !all.some((f) => propertyName(f) === n));
  if (unknown.length > 0) throw new UsageError(`unknown property file(s): ${unknown.join(', ')} (known: ${all.map(propertyName).join(', ')})`);
  const chosen = only.length > 0 ? all.filter((f) => only.includes(propertyName(f))) : explicit.length > 0 ? [] : all;
  return { seeds, workers, files: [...chosen, ...explicit], runs, json };
}

async function main(): Promise<void> {
  let args: Args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    if (err.message !== '') process.stderr.write(`properties: ${err.message}\n`);
    process.stderr.write(`${USAGE}\n`);
    process.exitCode = err.message === '' ? 0 : 2;
    return;
  }
  const seeds = seedsOf(args.seeds);
  const jobs = seeds.length * args.files.length;
  const workers = Math.min(args.workers, jobs);
  const log = (line: string): void => void process.stdout.write(`${line}\n`);
  if (!args.json) {
    log(`properties: seeds ${args.seeds.first}..${args.seeds.last} × ${args.files.length} file(s) (${args.files.map(propertyName).join(', ')}) = ${jobs} runs, ${workers} at once${args.runs === undefined ? '' : `, ${args.runs} runs per property`}`);
  }
  const results = await runPropertySeeds({ seeds, files: args.files, workers, runs: args.runs, onResult: (r) => args.json || log(jobLine(r)) });
  const failed = results.filter((r) => r.failures.length > 0 || r.error !== undefined);
  if (args.json) {
    log(JSON.stringify({ seeds: { first: args.seeds.first, last: args.seeds.last }, files: args.files, workers, failed: [...new Set(failed.map((r) => r.seed))], results }, null, 2));
  } else {
    for (const r of failed) {
      log('');
      log(formatJobFailure(r));
    }
    log('');
    log(`${jobs} runs: ${failed.length === 0 ? 'all passed' : `${failed.length} failed (seeds ${[...new Set(failed.map((r) => r.seed))].join(', ')})`}`);
  }
  process.exitCode = failed.length === 0 ? 0 : 1;
}

await main();
