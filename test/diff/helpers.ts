/**
 * One real etcd 3.4.23 per test file (src/diff/etcd_process.ts: fresh data dir, free loopback ports,
 * stopped by PID afterwards, also on failure). Without an etcd binary these tests skip with a message —
 * except in CI (CI=true), where a missing etcd is a failure.
 */
import { after, before } from 'node:test';
import { etcdsimCommand, type StartClusterOptions } from '../../src/diff/etcd_cluster.js';
import { startEtcd, type EtcdProcess } from '../../src/diff/etcd_process.js';
import type { KvOperation } from '../../src/diff/linearizability.js';
import { connectEtcd, type EtcdGrpcClient } from '../../src/grpc/client.js';
import { afterHostTime, hostNow } from '../../src/sim/index.js';
import { inCI, requireCommand } from '../support/prerequisites.js';

export { inCI };

/** `skip` option for node:test: a reason outside CI when etcd is missing; in CI a missing etcd fails the file. */
export const skipWithoutEtcd: string | false = requireCommand('etcd');

export interface RealEtcd {
  client: EtcdGrpcClient;
  proc: EtcdProcess;
}

/** Starts the file's etcd before its tests and stops it after them. */
export function useRealEtcd(): { get(): RealEtcd } {
  let real: RealEtcd | undefined;
  before(async () => {
    if (skipWithoutEtcd !== false) return;
    const proc = await startEtcd(); // in CI without etcd this throws: a failure, not a skip
    real = { proc, client: connectEtcd(proc.address) };
  });
  after(async () => {
    real?.client.close();
    await real?.proc.stop();
  });
  return {
    get() {
      if (real === undefined) throw new Error('etcd did not start');
      return real;
    },
  };
}

/** Ops budget from the environment (npm run test:diff:long sets ETCDSIM_DIFF_OPS=100000). */
export function diffOps(defaultOps: number): number {
  const v = process.env['ETCDSIM_DIFF_OPS'];
  if (v === undefined || v === '') return defaultOps;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n <= 0) throw new RangeError(`ETCDSIM_DIFF_OPS must be a positive integer, got ${v}`);
  return n;
}

/** The seed (ETCDSIM_SEED) and path (ETCDSIM_PATH) to replay, if any. */
/**
 * The seed (and fast-check path) of a differential run: ETCDSIM_SEED / ETCDSIM_PATH replay a failure;
 * otherwise CI runs a fixed seed, so main stays reproducible — `npm run test:diff:long` (or
 * `etcdsim diff`) explores new seeds.
 */
export function replay(): { seed: number; path?: string } {
  const s = process.env['ETCDSIM_SEED'];
  const p = process.env['ETCDSIM_PATH'];
  return { seed: s ? Number(s) : DEFAULT_DIFF_SEED, ...(p ? { path: p } : {}) };
}

/** The seed CI's differential run uses (ETCDSIM_SEED overrides it). */
export const DEFAULT_DIFF_SEED = 20261130;

/**
 * The binaries a cluster of separate processes is started with (src/diff/etcd_cluster.ts): the real etcd
 * 3.4.23 — the specification — and etcdsim as the etcd binary, hurt by the same signals in the same tests.
 */
export const PROCESS_BINARIES: ReadonlyArray<{ readonly name: string; readonly bin: StartClusterOptions['bin']; readonly skip: string | false }> = [
  { name: 'etcd 3.4.23', bin: undefined, skip: skipWithoutEtcd },
  { name: 'etcdsim etcd', bin: etcdsimCommand('3.4'), skip: false },
];

/**
 * Asks `probe` again after every `everyMs` until it gives a value (not undefined), and fails after
 * `timeoutMs`: a condition of processes on real time, waited for without a fixed delay. A probe that
 * throws counts as not yet (a member that does not answer).
 */
export async function until<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 20_000, everyMs = 50): Promise<T> {
  const deadline = hostNow() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (hostNow() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}${last === undefined ? '' : ` (last error: ${String(last)})`}`);
    await new Promise((r) => afterHostTime(everyMs, () => r(undefined)));
  }
}

/**
 * Faults driven by a workload's progress rather than by time: `onOperation` counts the answered requests
 * (runKvClients' hook), `answers(n)` resolves once `n` more were answered, from any member.
 */
export function answerProgress(): { onOperation(op: KvOperation): void; answers(n: number): Promise<void> } {
  let answered = 0;
  const waiters: Array<{ at: number; resolve: () => void }> = [];
  return {
    onOperation(op) {
      if (op.ret === 'unknown') return;
      answered++;
      for (const w of waiters.splice(0)) if (answered >= w.at) w.resolve();
      else waiters.push(w);
    },
    answers: (n) => new Promise((resolve) => waiters.push({ at: answered + n, resolve })),
  };
}
