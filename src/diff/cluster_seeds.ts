/**
 * Many seeds of the cluster differential on all cores: `etcdsim diff --cluster --seeds A..B --workers N`.
 * Each seed is one runClusterDiff (cluster_diff.ts): the simulated cluster and, unless `simOnly`, a real
 * 3-member etcd that the seed starts and stops, so a worker has a real cluster of its own at any time and
 * no state crosses from one seed to the next. The simulated side is a pure function of the seed (virtual
 * time); the real side runs in real time, so only its verdicts, not its timings, can repeat.
 *
 * A seed whose simulated side failed a check is shrunk (shrinkClusterFaults: the fewest planned faults
 * that still fail it), and its report carries both replay commands. Seeds go to worker threads through
 * worker_pool.ts; beyond one machine they are split by index across CI jobs (seeds.ts `shardSeeds`).
 */
import { clusterReplayCommand, formatClusterDiff, runClusterDiff, shrinkClusterFaults, type ClusterDiffOptions, type ClusterDiffResult, type SimSideOptions } from './cluster_diff.js';
import type { ClusterSide } from './cluster_side.js';
import { oneLineMessage, runPool } from './worker_pool.js';

/** The cluster differential's options that cross to a worker thread (plain data: no test hooks). */
export interface ClusterSeedOptions {
  readonly durationMs?: number | undefined;
  readonly faults?: boolean | undefined;
  readonly simOnly?: boolean | undefined;
  /** The simulated side as etcdsim's own processes (ClusterDiffOptions.processes). */
  readonly processes?: boolean | undefined;
  readonly etcdBin?: string | undefined;
  readonly keepFaults?: readonly number[] | undefined;
  /** Shrink the fault schedule of a seed whose simulated side failed (default true). */
  readonly shrink?: boolean | undefined;
}

/** One side's outcome in plain data (what a worker posts back, and what --json prints). */
export interface ClusterSeedSide {
  readonly side: ClusterSide['name'];
  readonly operations: number;
  readonly unknownWrites: number;
  readonly finalRevision: number | null;
  readonly faultLog: readonly string[];
  readonly checks: ReadonlyArray<{ readonly name: string; readonly status: string; readonly detail: string }>;
  readonly keyspace: Readonly<Record<string, string>>;
}

/** What one seed of the cluster differential found. */
export interface ClusterSeedResult {
  readonly seed: number;
  readonly faultsPlanned: number;
  readonly sides: readonly ClusterSeedSide[];
  readonly divergences: readonly string[];
  /** The command that replays this seed as it ran. */
  readonly replay: string;
  /** The whole report of the run (formatClusterDiff). */
  readonly report: string;
  /** When the simulated side failed: the fewest faults that still fail it, its report and its replay. */
  readonly shrunk: { readonly keepFaults: readonly number[]; readonly planned: number; readonly runs: number; readonly report: string; readonly replay: string } | undefined;
  /** The run itself broke (the members never settled, an etcd that would not start). */
  readonly error: string | undefined;
}

function sidesOf(r: ClusterDiffResult): ClusterSeedSide[] {
  return r.sides.map((s) => ({
    side: s.side,
    operations: s.operations,
    unknownWrites: s.unknownWrites,
    finalRevision: s.finalRevision ?? null,
    faultLog: s.faultLog,
    checks: s.checks.map((c) => ({ name: c.name, status: c.status, detail: c.detail })),
    keyspace: Object.fromEntries(s.keyspace),
  }));
}

function diffOptions(o: ClusterSeedOptions, sim: SimSideOptions | undefined): ClusterDiffOptions {
  return { durationMs: o.durationMs, faults: o.faults, simOnly: o.simOnly, processes: o.processes, etcdBin: o.etcdBin, keepFaults: o.keepFaults, sim };
}

/**
 * Runs one seed of the cluster differential (and shrinks it if its simulated side failed). `sim` changes
 * the simulated side (a test plants a bug there); it never crosses to a worker thread.
 */
export async function runClusterSeed(seed: number, o: ClusterSeedOptions = {}, sim?: SimSideOptions): Promise<ClusterSeedResult> {
  const opts = diffOptions(o, sim);
  let r: ClusterDiffResult;
  try {
    r = await runClusterDiff(seed, opts);
  } catch (err) {
    return { seed, faultsPlanned: 0, sides: [], divergences: [], replay: clusterReplayCommand(seed, opts), report: '', shrunk: undefined, error: oneLineMessage(err) };
  }
  let shrunk: ClusterSeedResult['shrunk'];
  if (r.divergences.length > 0 && o.shrink !== false) {
    const s = await shrinkClusterFaults(r, opts).catch(() => undefined);
    if (s !== undefined) shrunk = { keepFaults: s.keepFaults, planned: s.planned, runs: s.runs, report: formatClusterDiff(s.result), replay: s.result.replay };
  }
  return { seed, faultsPlanned: r.plan.faults.length, sides: sidesOf(r), divergences: r.divergences, replay: r.replay, report: formatClusterDiff(r), shrunk, error: undefined };
}

/** What a cluster-seeds worker is sent at start. */
export interface ClusterSeedWorkerData {
  readonly options: ClusterSeedOptions;
}

export interface ClusterSeedRunOptions {
  readonly seeds: readonly number[];
  readonly workers: number;
  readonly options: ClusterSeedOptions;
  /** Called as each seed finishes (in finishing order). */
  readonly onResult?: ((r: ClusterSeedResult) => void) | undefined;
}

/** Runs every seed on `workers` worker threads; resolves to the results in seed order. */
export async function runClusterSeeds(o: ClusterSeedRunOptions): Promise<ClusterSeedResult[]> {
  if (!Number.isSafeInteger(o.workers) || o.workers < 1) throw new RangeError(`workers must be an integer >= 1, got ${o.workers}`);
  const data: ClusterSeedWorkerData = { options: o.options };
  const results = await runPool<number, null, ClusterSeedResult>({
    worker: 'cluster_seeds_worker',
    workerData: Array.from({ length: o.workers }, () => data),
    jobs: o.seeds,
    onResult: o.onResult,
  });
  return results.sort((a, b) => a.seed - b.seed);
}

/**
 * A failing seed for humans: its report (each side's faults and checks; a failed linearizability check
 * shows its minimal sub-history), then the shrunk run if there is one, then the replay commands.
 */
export function formatClusterSeedFailure(r: ClusterSeedResult): string {
  const lines = [`seed ${r.seed} FAILED${r.error === undefined ? '' : `: ${r.error}`}`];
  if (r.report !== '') lines.push(r.report);
  if (r.shrunk !== undefined) {
    const s = r.shrunk;
    const kept = s.keepFaults.length === 0 ? 'none' : s.keepFaults.map((i) => `#${i}`).join(', ');
    lines.push(`  shrunk: the simulated side still fails with ${s.keepFaults.length} of ${s.planned} planned faults (${kept}; ${s.runs} runs):`);
    lines.push(s.report.split('\n').map((l) => `  ${l}`).join('\n'));
    lines.push(`  replay (shrunk): ${s.replay}`);
  }
  lines.push(`  replay: ${r.replay}`);
  return lines.join('\n');
}
