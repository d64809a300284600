/**
 * The differential property: fast-check generates workloads (arbitraries.ts), each runs from an empty
 * keyspace (reset.ts) against a fresh simulator and the one etcd (engine.ts); a divergence fails the
 * property, fast-check shrinks the workload to a minimal op sequence, and the report carries that
 * sequence's transcript (re-run once more after shrinking), the seed and the replay path.
 */
import fc from 'fast-check';
import type { EtcdGrpcClient } from '../grpc/index.js';
import type { EtcdVersion } from '../etcd/index.js';
import { authWorkloadArb, workloadArb } from './arbitraries.js';
import { runWorkload, type Divergence, type RunResult } from './engine.js';
import type { Op } from './ops.js';
import { resetEtcd, simAt } from './reset.js';
import { etcdTarget, simTarget, type DiffTarget } from './target.js';
import { formatTranscript } from './transcript.js';

export interface DiffCheckOptions {
  readonly etcd: EtcdGrpcClient;
  readonly etcdVersion?: EtcdVersion | undefined;
  /** Total ops to generate, roughly (runs × ops per run); default 1000. */
  readonly ops?: number | undefined;
  /** Which workloads: KV / Watch / Lease (default) or auth setup and requests as random users (authWorkloadArb). */
  readonly workload?: 'kv' | 'auth' | undefined;
  /** Most ops per run (default 40). */
  readonly maxOpsPerRun?: number | undefined;
  /** The workload's seed: a run is a pure function of it (the caller picks one; src/diff reads no clock). */
  readonly seed: number;
  /** fast-check counterexample path, to replay a failure (with its seed). */
  readonly path?: string | undefined;
  /** Wraps the simulator's side (tests plant divergences this way). */
  readonly wrapSim?: ((t: DiffTarget) => DiffTarget) | undefined;
  /** Called after each run with the totals so far. */
  readonly onProgress?: ((p: { runs: number; ops: number; target: number }) => void) | undefined;
  /** How long to wait for stream responses etcd owes (ms). */
  readonly streamTimeoutMs?: number | undefined;
}

export interface DiffFailure {
  readonly ops: readonly Op[];
  readonly divergence: Divergence;
  readonly transcript: string;
  readonly seed: number;
  readonly path: string;
  readonly shrinks: number;
}

export interface DiffReport {
  readonly runs: number;
  /** Ops run, shrinking included. */
  readonly opsRun: number;
  readonly responsesCompared: number;
  readonly divergences: number;
  readonly seed: number;
  readonly failure: DiffFailure | undefined;
}

/** Runs one workload from an empty keyspace on both sides. */
export async function runOnce(ops: readonly Op[], o: Pick<DiffCheckOptions, 'etcd' | 'etcdVersion' | 'wrapSim' | 'streamTimeoutMs'>): Promise<RunResult> {
  const rev = await resetEtcd(o.etcd);
  const sim = simAt(rev, { etcdVersion: o.etcdVersion ?? '3.4' });
  try {
    const s = simTarget(sim);
    return await runWorkload(ops, o.wrapSim === undefined ? s : o.wrapSim(s), etcdTarget(o.etcd, { streamTimeoutMs: o.streamTimeoutMs }), {
      current: () => sim.mvcc.currentRevision,
      compacted: () => sim.mvcc.compactRevision,
    });
  } finally {
    sim.server.close();
  }
}

export async function runDiffCheck(o: DiffCheckOptions): Promise<DiffReport> {
  const maxOps = o.maxOpsPerRun ?? 40;
  const target = o.ops ?? 1000;
  // Runs average about maxOps/2 ops each.
  const numRuns = Math.max(1, Math.round(target / Math.max(1, maxOps / 2)));
  const seed = o.seed;
  let runs = 0;
  let opsRun = 0;
  let compared = 0;
  let divergences = 0;
  const arb = o.workload === 'auth' ? authWorkloadArb({ maxOps }) : workloadArb({ maxOps });
  const property = fc.asyncProperty(arb, async (ops) => {
    const r = await runOnce(ops, o);
    runs++;
    opsRun += r.ops;
    compared += r.compared;
    o.onProgress?.({ runs, ops: opsRun, target });
    if (r.divergence !== undefined) {
      divergences++;
      throw new Error(`divergence at op #${r.divergence.step + 1} (${r.divergence.where})`);
    }
  });
  const params: fc.Parameters<[Op[]]> = o.path === undefined ? { seed, numRuns } : { seed, numRuns, path: o.path, endOnFailure: true };
  const details = await fc.check(property, params);
  let failure: DiffFailure | undefined;
  if (details.failed && details.counterexample !== null) {
    const [ops] = details.counterexample;
    const r = await runOnce(ops, o);
    if (r.divergence === undefined) {
      throw new Error(`diff: the shrunk workload did not diverge again (flaky?):\n${JSON.stringify(ops)}\n${String(details.errorInstance)}`);
    }
    failure = {
      ops,
      divergence: r.divergence,
      transcript: formatTranscript(r.transcript, r.divergence),
      seed: details.seed,
      path: details.counterexamplePath ?? '',
      shrinks: details.numShrinks,
    };
  } else if (details.failed) {
    throw new Error(`diff: the property failed without a counterexample: ${String(details.errorInstance)}`);
  }
  return { runs, opsRun, responsesCompared: compared, divergences: failure === undefined ? 0 : 1, seed: details.seed, failure };
}
