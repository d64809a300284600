/**
 * Shared plumbing for fast-check properties: run counts, seed/path replay from the environment, and a
 * failure report that prints the exact command line to reproduce a counterexample.
 *
 * Environment:
 *   ETCDSIM_NUM_RUNS     runs per property (npm run test:long sets 2000); default per property
 *   ETCDSIM_SEED         seed to run with (printed on failure)
 *   ETCDSIM_PATH         counterexample path to replay (with ETCDSIM_SEED); stops at the first failure
 *   ETCDSIM_REPLAY_PATH  fc.commands' replayPath from the report (needed to replay command sequences:
 *                        `{seed, path}` alone fails with "Unable to replay, got wrong path")
 *
 * Typical use with commands:
 *   checkProperty(fc.property(fc.commands(cmds, withReplayPath({ maxCommands: 40 })), (c) => runModel(setup, c)),
 *                 { file: 'test/properties/x.property.test.ts' });
 */
import fc from 'fast-check';

export interface CheckOptions {
  /** The test file, for the replay command line. */
  readonly file: string;
  /** Runs when ETCDSIM_NUM_RUNS is not set. */
  readonly numRuns?: number;
}

const DEFAULT_RUNS = 200;

function env(name: string): string | undefined {
  const v = process.env[name];
  return v === undefined || v === '' ? undefined : v;
}

/** Runs per property: ETCDSIM_NUM_RUNS, else the property's default. */
export function numRuns(defaultRuns = DEFAULT_RUNS): number {
  const v = env('ETCDSIM_NUM_RUNS');
  if (v === undefined) return defaultRuns;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n <= 0) throw new RangeError(`ETCDSIM_NUM_RUNS must be a positive integer, got ${v}`);
  return n;
}

/** The replayPath to hand to fc.commands (undefined unless replaying). */
export function replayPath(): string | undefined {
  return env('ETCDSIM_REPLAY_PATH');
}

/** fc.commands constraints plus the environment's replayPath, if any. */
export function withReplayPath(constraints: fc.CommandsContraints = {}): fc.CommandsContraints {
  const rp = replayPath();
  return rp === undefined ? constraints : { ...constraints, replayPath: rp };
}

/** fast-check parameters from the environment (seed, path and endOnFailure when replaying). */
export function parameters<Ts>(defaultRuns = DEFAULT_RUNS): fc.Parameters<Ts> {
  const seedText = env('ETCDSIM_SEED');
  const path = env('ETCDSIM_PATH');
  const params: { numRuns: number; seed?: number; path?: string; endOnFailure?: boolean } = { numRuns: numRuns(defaultRuns) };
  if (seedText !== undefined) {
    const seed = Number(seedText);
    if (!Number.isInteger(seed)) throw new RangeError(`ETCDSIM_SEED must be an integer, got ${seedText}`);
    params.seed = seed;
  }
  if (path !== undefined) {
    if (seedText === undefined) throw new RangeError('ETCDSIM_PATH needs ETCDSIM_SEED');
    params.path = path;
    params.endOnFailure = true;
  }
  // Under Stryker, with a mutant active (its id in the environment), a failure kills the mutant as it is:
  // shrinking it would run the property again dozens of times for a counterexample no one reads.
  if (/^\d+$/.test(env('__STRYKER_ACTIVE_MUTANT__') ?? '')) params.endOnFailure = true;
  return params;
}

/**
 * The textual form of the last failing input, taken when it failed. A command sequence prints its
 * replayPath lazily from shared arbitrary state, so it must be read at failure time: after shrinking
 * the arbitrary holds the path of the last (passing) attempt, not of the counterexample.
 */
let lastFailure: string | undefined;

/** Remember `input` as the current failing input (call from a property just before it rethrows). */
export function recordFailure(input: unknown): void {
  lastFailure = String(input);
}

/**
 * fc.modelRun, then `finally` (e.g. an exhaustive comparison of model and real) on the final state;
 * records the command sequence (with its replayPath) when either fails.
 */
export function runModel<M extends object, R>(
  setup: () => { model: M; real: R },
  cmds: Iterable<fc.Command<M, R>>,
  finalCheck?: (model: M, real: R) => void,
): void {
  try {
    let state: { model: M; real: R } | undefined;
    fc.modelRun(() => (state = setup()), cmds);
    if (finalCheck !== undefined && state !== undefined) finalCheck(state.model, state.real);
  } catch (e) {
    recordFailure(cmds);
    throw e;
  }
}

/** fc.asyncModelRun, then `finalCheck`; records the command sequence when either fails. */
export async function runModelAsync<M extends object, R>(
  setup: () => Promise<{ model: M; real: R }> | { model: M; real: R },
  cmds: Iterable<fc.AsyncCommand<M, R>>,
  finalCheck?: (model: M, real: R) => Promise<void> | void,
): Promise<void> {
  try {
    let state: { model: M; real: R } | undefined;
    await fc.asyncModelRun(async () => (state = await setup()), cmds);
    if (finalCheck !== undefined && state !== undefined) await finalCheck(state.model, state.real);
  } catch (e) {
    recordFailure(cmds);
    throw e;
  }
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The failure report: seed, path, replayPath, the counterexample, the error, and how to replay it. */
export function formatFailure<Ts>(details: fc.RunDetails<Ts>, file: string): string {
  const values = details.counterexample as readonly unknown[] | null | undefined;
  const isCommands = (v: unknown): boolean => {
    if (typeof v !== 'object' || v === null) return false;
    try {
      return String(v).includes('/*replayPath=');
    } catch {
      return false; // a record without a prototype (fc.record's), or an array of them, has no text: String() throws
    }
  };
  // A command sequence prints as recorded at failure time (see lastFailure), next to the other inputs;
  // without one, a recorded text stands for the whole input.
  let shown: string;
  if (values === null || values === undefined) shown = lastFailure ?? '(none)';
  else if (lastFailure !== undefined && values.some(isCommands)) shown = values.map((v) => (isCommands(v) ? lastFailure : fc.stringify(v))).join(',\n  ');
  else shown = lastFailure ?? values.map((v) => fc.stringify(v)).join(',\n  ');
  const m = /\/\*replayPath=("(?:[^"\\]|\\.)*")\*\//.exec(shown);
  const rp = m === null ? undefined : (JSON.parse(m[1]!) as string);
  const cause = details.errorInstance instanceof Error ? (details.errorInstance.stack ?? details.errorInstance.message) : String(details.errorInstance);
  const vars = [`ETCDSIM_SEED=${details.seed}`, `ETCDSIM_PATH=${shellQuote(details.counterexamplePath ?? '')}`];
  if (rp !== undefined) vars.push(`ETCDSIM_REPLAY_PATH=${shellQuote(rp)}`);
  return [
    `Property failed after ${details.numRuns} run(s), shrunk ${details.numShrinks} time(s)`,
    `  seed: ${details.seed}`,
    `  path: ${JSON.stringify(details.counterexamplePath)}`,
    `  replayPath: ${rp === undefined ? '(not a command sequence)' : JSON.stringify(rp)}`,
    `Counterexample:`,
    `  ${shown}`,
    `Error:`,
    `  ${cause.split('\n').join('\n  ')}`,
    `Replay with:`,
    `  ${vars.join(' ')} node --import tsx --test ${file}`,
  ].join('\n');
}

/** The parts of a failure report (formatFailure's text) that a many-seeds run prints for a failure. */
export interface ParsedFailure {
  readonly seed: number;
  /** The counterexample's path (ETCDSIM_PATH). */
  readonly path: string;
  /** fc.commands' replayPath (ETCDSIM_REPLAY_PATH), when the counterexample is a command sequence. */
  readonly replayPath: string | undefined;
  readonly shrinks: number;
  /** The shrunk counterexample, as formatFailure printed it. */
  readonly counterexample: string;
  /** The error the counterexample raised (its first line). */
  readonly error: string;
}

/**
 * Reads back a report formatFailure wrote (from a failed test's error message, possibly with lines added
 * after it); undefined when `text` is not one. Kept next to formatFailure so the two change together.
 */
export function parseFailure(text: string): ParsedFailure | undefined {
  const head = /^Property failed after \d+ run\(s\), shrunk (\d+) time\(s\)\n {2}seed: (-?\d+)\n {2}path: (.*)\n {2}replayPath: (.*)\nCounterexample:\n([^]*?)\nError:\n([^]*?)\nReplay with:\n/m.exec(text);
  if (head === null) return undefined;
  // An interrupted run has no path: formatFailure then printed `undefined`, which is not JSON.
  const path = head[3]!.startsWith('"') ? (JSON.parse(head[3]!) as string) : undefined;
  const rp = head[4]!;
  const dedent = (block: string): string => block.split('\n').map((l) => l.replace(/^ {2}/, '')).join('\n');
  return {
    seed: Number(head[2]),
    path: path ?? '',
    replayPath: rp.startsWith('"') ? (JSON.parse(rp) as string) : undefined,
    shrinks: Number(head[1]),
    counterexample: dedent(head[5]!),
    error: dedent(head[6]!).split('\n')[0] ?? '',
  };
}

/** Checks a synchronous property with the environment's parameters; throws the report on failure. */
export function checkProperty<Ts>(property: fc.IRawProperty<Ts, false>, opts: CheckOptions): fc.RunDetails<Ts> {
  lastFailure = undefined;
  const details = fc.check(property, parameters<Ts>(opts.numRuns));
  if (details.failed || details.interrupted) throw new Error(formatFailure(details, opts.file));
  return details;
}

/** Checks an asynchronous property with the environment's parameters; throws the report on failure. */
export async function checkAsyncProperty<Ts>(property: fc.IRawProperty<Ts, true>, opts: CheckOptions): Promise<fc.RunDetails<Ts>> {
  lastFailure = undefined;
  const details = await fc.check(property, parameters<Ts>(opts.numRuns));
  if (details.failed || details.interrupted) throw new Error(formatFailure(details, opts.file));
  return details;
}
