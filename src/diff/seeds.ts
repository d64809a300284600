/**
 * Many seeds of the differential, on all cores: `etcdsim diff --seeds A..B --workers N`. Each seed is one
 * differential check (check.ts: generated workloads from that seed, shrunk on a divergence), so its result
 * is a pure function of the seed whichever worker runs it. Seeds go to N worker threads (node:worker_threads),
 * each with an etcd of its own — a diff wipes its etcd between workloads, so two workers cannot share one:
 * either one it starts (a throwaway etcd per worker) or one endpoint per worker.
 *
 * Beyond one machine the seed range is split by index across CI jobs (docs/differential.md): no scheduler
 * here, just `shardSeeds`.
 */
import type { EtcdVersion } from '../etcd/index.js';
import type { DiffFailure } from './check.js';
import { runPool } from './worker_pool.js';

/** Seeds A..B, both included. */
export interface SeedRange {
  readonly first: number;
  readonly last: number;
}

/** The smallest and largest seed fast-check takes (a 32-bit signed integer). */
const SEED_MIN = -(2 ** 31);
const SEED_MAX = 2 ** 31 - 1;

/** Parses "A..B" (integers, A <= B); throws a RangeError that says what is wrong. */
export function parseSeedRange(text: string): SeedRange {
  const m = /^\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*$/.exec(text);
  if (m === null) throw new RangeError(`--seeds must be A..B (two integers), got ${JSON.stringify(text)}`);
  const first = Number(m[1]);
  const last = Number(m[2]);
  for (const n of [first, last]) {
    if (!Number.isSafeInteger(n) || n < SEED_MIN || n > SEED_MAX) throw new RangeError(`--seeds: ${n} is not a 32-bit seed (${SEED_MIN}..${SEED_MAX})`);
  }
  if (first > last) throw new RangeError(`--seeds: ${first}..${last} is empty (A must be <= B)`);
  return { first, last };
}

/** The seeds of a range, in order. */
export function seedsOf(r: SeedRange): number[] {
  return Array.from({ length: r.last - r.first + 1 }, (_, i) => r.first + i);
}

/**
 * Job `index` (0-based) of `total` jobs takes the contiguous part of `r` that is its share (the first jobs
 * take one seed more when the range does not divide evenly); undefined when there is none left for it.
 */
export function shardSeeds(r: SeedRange, index: number, total: number): SeedRange | undefined {
  if (!Number.isSafeInteger(total) || total < 1 || !Number.isSafeInteger(index) || index < 0 || index >= total) {
    throw new RangeError(`shard ${index} of ${total}: need 0 <= index < total`);
  }
  const n = r.last - r.first + 1;
  const base = Math.floor(n / total);
  const extra = n % total;
  const start = r.first + index * base + Math.min(index, extra);
  const size = base + (index < extra ? 1 : 0);
  return size === 0 ? undefined : { first: start, last: start + size - 1 };
}

/** Where a worker's etcd comes from. */
export type SeedTarget = { readonly kind: 'start-etcd'; readonly bin?: string | undefined } | { readonly kind: 'endpoint'; readonly address: string };

/** What one seed's differential check found. */
export interface SeedResult {
  readonly seed: number;
  readonly runs: number;
  readonly opsRun: number;
  readonly responsesCompared: number;
  /** The shrunk divergence, if the seed found one. */
  readonly failure: DiffFailure | undefined;
  /** The check itself failed (a flaky divergence that did not come back, a lost etcd). */
  readonly error: string | undefined;
}

export interface SeedRunOptions {
  readonly seeds: readonly number[];
  /** One per worker: the number of workers is its length (capped at the number of seeds). */
  readonly targets: readonly SeedTarget[];
  readonly etcdVersion: EtcdVersion;
  /** Ops per seed (check.ts's `ops`). */
  readonly ops: number;
  /** Called as each seed finishes (in finishing order). */
  readonly onResult?: ((r: SeedResult) => void) | undefined;
  /** Called once per worker whose etcd is up: the address it diffs against, and the etcd's PID if it started one. */
  readonly onWorkerReady?: ((w: { worker: number; address: string; pid: number | undefined }) => void) | undefined;
}

/** What a worker is sent at start (workerData). */
export interface SeedWorkerData {
  readonly target: SeedTarget;
  readonly etcdVersion: EtcdVersion;
  readonly ops: number;
}

/** What a worker says once its etcd is up: the address it diffs against, and the etcd's PID if it started one. */
export interface SeedWorkerReady {
  readonly address: string;
  readonly pid: number | undefined;
}

/**
 * Runs every seed on a pool of worker threads (worker_pool.ts) and resolves to the results in seed order.
 * Rejects (once every worker stopped) when a worker cannot get its etcd or dies.
 */
export async function runSeeds(o: SeedRunOptions): Promise<SeedResult[]> {
  if (o.targets.length < 1) throw new RangeError('runSeeds needs at least one target');
  const results = await runPool<number, SeedWorkerReady, SeedResult>({
    worker: 'seeds_worker',
    workerData: o.targets.map((target): SeedWorkerData => ({ target, etcdVersion: o.etcdVersion, ops: o.ops })),
    jobs: o.seeds,
    onReady: (worker, r) => o.onWorkerReady?.({ worker, address: r.address, pid: r.pid }),
    onResult: o.onResult,
  });
  return results.sort((a, b) => a.seed - b.seed);
}
