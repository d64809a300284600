/**
 * `etcdsim diff`: runs generated KV / Watch / Lease workloads against a real etcd and against the
 * simulator (following that etcd's release, `--etcd-version`), and reports the first place they differ,
 * shrunk to a minimal op sequence.
 *
 *   etcdsim diff --start-etcd [--etcd-bin PATH]      a throwaway local etcd (fresh data dir, free loopback ports)
 *   etcdsim diff --endpoint HOST:PORT                an etcd you run; it must be empty and on loopback unless
 *                                                    --force / --allow-non-loopback say otherwise
 *   options: --seed N  --ops N (default 1000)  --etcd-version 3.4|3.5|3.6|3.7 (default 3.4)  --json
 *   etcdsim diff --cluster [--sim-only] [--processes] [--no-faults] [--duration MS] [--keep-faults I,J|none]
 *                  [--seed N | --seeds A..B [--workers N]] [--etcd-bin PATH]
 *                                                    the cluster differential (cluster_diff.ts): a simulated and
 *                                                    a throwaway real 3-member etcd per seed; a range runs on N
 *                                                    worker threads (cluster_seeds.ts), a failing seed is shrunk
 *   etcdsim diff --replay scenario.json (--start-etcd | --endpoint HOST:PORT) [--etcd-version V]
 *                                                    replays a shadow divergence's requests (src/shadow/replay.ts)
 *   many seeds: --seeds A..B [--workers N]           every seed from A to B, each a diff of --ops ops, on N
 *                                                    worker threads (seeds.ts); each worker needs an etcd of
 *                                                    its own: --start-etcd starts one per worker, --endpoint
 *                                                    then takes one HOST:PORT per worker, comma-separated
 *
 * A diff writes, deletes every key, revokes every lease and compacts — and compaction is cluster-wide — so
 * it refuses an endpoint whose keyspace is not empty, or that is not on this machine, unless told.
 *
 * Exit codes: 0 nothing diverged; 1 a divergence; 2 usage error or the etcd could not be used. The report
 * goes to stdout, errors to stderr. The options are declared in program.ts (commander).
 */
import { connectEtcd, isLoopback, type EtcdGrpcClient } from '../grpc/index.js';
import { ETCD_VERSIONS, isEtcdVersion, type EtcdVersion } from '../etcd/index.js';
import { freshSeed } from '../sim/index.js';
import {
  runDiffCheck,
  type DiffReport,
  DIFF_ELECTION_MS,
  DIFF_HEARTBEAT_MS,
  startEtcd,
  type EtcdProcess,
  keyspaceEmpty,
  parseSeedRange,
  runSeeds,
  seedsOf,
  type SeedRange,
  type SeedResult,
  type SeedTarget,
  type ClusterSeedOptions,
  type ClusterSeedResult,
} from '../diff/index.js';
import { runCli, type DiffOptions } from './program.js';
import { CliError, type CliIo } from './io.js';

/** An error's message on one line. */
function oneLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).replace(/\s*\n\s*/g, ' ');
}

export interface DiffFlags {
  startEtcd: boolean;
  etcdBin: string | undefined;
  endpoint: string | undefined;
  /** --endpoint split at commas (one etcd per worker with --seeds). */
  endpoints: string[];
  force: boolean;
  allowNonLoopback: boolean;
  seed: number | undefined;
  /** --seeds A..B: run every seed of the range. */
  seeds: SeedRange | undefined;
  /** --workers: worker threads for --seeds. */
  workers: number;
  ops: number;
  etcdVersion: EtcdVersion;
  json: boolean;
}

function int(name: string, v: string, min: number): number {
  const n = /^\s*$/.test(v) ? NaN : Number(v);
  if (!Number.isSafeInteger(n) || n < min) throw new CliError(`${name} must be an integer >= ${min}, got ${JSON.stringify(v)}`);
  return n;
}

/** The options commander parsed, checked (a CliError, exit 2, names what is wrong). */
export function diffFlags(o: DiffOptions): DiffFlags {
  const v = o.etcdVersion;
  if (!isEtcdVersion(v)) throw new CliError(`--etcd-version must be ${ETCD_VERSIONS.slice(0, -1).join(', ')} or ${ETCD_VERSIONS.at(-1)}, got ${JSON.stringify(v)}`);
  let seeds: SeedRange | undefined;
  try {
    seeds = o.seeds === undefined ? undefined : parseSeedRange(o.seeds);
  } catch (err) {
    throw new CliError((err as Error).message);
  }
  const endpoints = o.endpoint === undefined ? [] : o.endpoint.split(',').map((e) => e.trim());
  const f: DiffFlags = {
    startEtcd: o.startEtcd === true,
    etcdBin: o.etcdBin,
    endpoint: o.endpoint,
    endpoints,
    force: o.force === true,
    allowNonLoopback: o.allowNonLoopback === true,
    seed: o.seed === undefined ? undefined : int('--seed', o.seed, -(2 ** 31)),
    seeds,
    // One worker per endpoint unless told otherwise.
    workers: o.workers === undefined ? Math.max(1, endpoints.length) : int('--workers', o.workers, 1),
    ops: int('--ops', o.ops, 1),
    etcdVersion: v,
    json: o.json === true,
  };
  if (f.startEtcd === (f.endpoint !== undefined)) throw new CliError('give exactly one of --start-etcd and --endpoint HOST:PORT');
  if (f.etcdBin !== undefined && !f.startEtcd) throw new CliError('--etcd-bin goes with --start-etcd');
  if (endpoints.some((e) => e === '')) throw new CliError(`--endpoint: an empty HOST:PORT in ${JSON.stringify(o.endpoint)}`);
  if (f.seeds === undefined) {
    if (o.workers !== undefined) throw new CliError('--workers goes with --seeds A..B');
    if (endpoints.length > 1) throw new CliError('--endpoint takes one HOST:PORT (several, one per worker, only with --seeds)');
  } else {
    if (f.seed !== undefined) throw new CliError('give either --seed N or --seeds A..B, not both');
    if (endpoints.length > 0 && f.workers > endpoints.length) {
      throw new CliError(
        `--workers ${f.workers} needs ${f.workers} endpoints, got ${endpoints.length}: each worker wipes its etcd between workloads, so give one HOST:PORT per worker (comma-separated) or use --start-etcd`,
      );
    }
  }
  return f;
}

/** The host of HOST:PORT ([v6]:port too). */
function hostOf(endpoint: string): string {
  const e = endpoint.replace(/^https?:\/\//, '');
  if (e.startsWith('[')) return e.slice(1, e.indexOf(']'));
  const i = e.lastIndexOf(':');
  return i < 0 ? e : e.slice(0, i);
}

/**
 * Runs `etcdsim diff ...` in-process; `args` are the words after `diff`. The report goes to `out`, errors
 * to `err` (default: `out`). Resolves to the exit code.
 */
export async function runDiff(args: string[], out: (line: string) => void, err: (line: string) => void = out): Promise<number> {
  return runCli(['diff', ...(args[0] === 'diff' ? args.slice(1) : args)], { out, err });
}

function endpointAddress(endpoint: string): string {
  return endpoint.replace(/^https?:\/\//, '');
}

/**
 * Why a diff must not use the etcd at `address` (not on loopback, unreachable, not empty), as the error
 * line; undefined when it may.
 */
async function vetEndpoint(address: string, flags: DiffFlags): Promise<string | undefined> {
  const host = hostOf(address);
  if (!isLoopback(host) && !flags.allowNonLoopback) {
    return (
      `etcdsim diff: refusing ${address}: not a loopback address. A diff deletes every key, revokes every lease and ` +
      'compacts the history (cluster-wide); point it only at a throwaway etcd. Pass --allow-non-loopback if you mean it.'
    );
  }
  const client = connectEtcd(address, { deadlineMs: 5000 });
  try {
    let state;
    try {
      state = await keyspaceEmpty(client);
    } catch (err) {
      return `etcdsim diff: cannot reach etcd at ${address}: ${oneLine(err)}`;
    }
    if (!state.empty && !flags.force) {
      return (
        `etcdsim diff: refusing ${address}: its keyspace is not empty (${state.keys} keys, ${state.leases} leases). ` +
        'A diff deletes every key, revokes every lease and compacts the history. Use an empty etcd, or pass --force to wipe it.'
      );
    }
    return undefined;
  } finally {
    client.close();
  }
}

/** `etcdsim diff` after commander parsed it (see the file comment for the exit codes). */
export async function executeDiff(opts: DiffOptions, io: CliIo): Promise<number> {
  if (opts.cluster === true) return executeClusterDiff(opts, io);
  const flags = diffFlags(opts);
  if (flags.seeds !== undefined) return executeSeeds(flags, flags.seeds, io);
  const out = io.out;
  const fail = (line: string): number => {
    io.err(line);
    return 2;
  };
  let proc: EtcdProcess | undefined;
  let client: EtcdGrpcClient | undefined;
  try {
    let address: string;
    if (flags.startEtcd) {
      try {
        proc = await startEtcd({ bin: flags.etcdBin });
      } catch (err) {
        return fail(`etcdsim diff: could not start etcd: ${oneLine(err)}`);
      }
      address = proc.address;
      if (!flags.json) out(`started etcd (pid ${proc.pid}) on ${address}`);
    } else {
      address = endpointAddress(flags.endpoint!);
      const refused = await vetEndpoint(address, flags);
      if (refused !== undefined) return fail(refused);
    }
    if (opts.replay !== undefined) {
      // A shadow divergence's scenario.json, replayed through a fresh shadow (src/shadow/replay.ts).
      const { replayFile } = await import('./shadow_command.js');
      return await replayFile(opts.replay, address, flags.etcdVersion, proc === undefined ? {} : { heartbeatMs: DIFF_HEARTBEAT_MS, electionMs: DIFF_ELECTION_MS }, io);
    }
    client = connectEtcd(address);
    const progress = progressBar(flags.json);
    const report = await runDiffCheck({ etcd: client, etcdVersion: flags.etcdVersion, ops: flags.ops, seed: flags.seed ?? freshSeed(), onProgress: progress.update });
    progress.done();
    if (flags.json) out(JSON.stringify(jsonReport(report, flags, address), null, 2));
    else for (const line of textReport(report, flags)) out(line);
    return report.failure === undefined ? 0 : 1;
  } finally {
    client?.close();
    await proc?.stop();
  }
}

/** The command that replays one seed (with --endpoint: against the first endpoint). */
function replayCommand(seed: number, f: DiffFlags): string {
  const target = f.startEtcd ? '--start-etcd' : `--endpoint ${f.endpoints[0] ?? ''}`;
  return `etcdsim diff ${target} --etcd-version ${f.etcdVersion} --ops ${f.ops} --seed ${seed}`;
}

/**
 * `etcdsim diff --seeds A..B [--workers N]`: every seed of the range on N worker threads, one line per seed
 * as it finishes, then each failing seed — its shrunk trace and the command that replays it — in seed order.
 */
async function executeSeeds(flags: DiffFlags, range: SeedRange, io: CliIo): Promise<number> {
  const out = io.out;
  const seeds = seedsOf(range);
  const workers = Math.min(flags.workers, seeds.length);
  let targets: SeedTarget[];
  if (flags.startEtcd) {
    targets = Array.from({ length: workers }, () => ({ kind: 'start-etcd' as const, bin: flags.etcdBin }));
  } else {
    const addresses = flags.endpoints.slice(0, workers).map(endpointAddress);
    for (const a of addresses) {
      const refused = await vetEndpoint(a, flags);
      if (refused !== undefined) {
        io.err(refused);
        return 2;
      }
    }
    targets = addresses.map((address) => ({ kind: 'endpoint' as const, address }));
  }
  if (!flags.json) out(`etcdsim diff: seeds ${range.first}..${range.last} (${seeds.length}), ${workers} worker${workers === 1 ? '' : 's'}, ${flags.ops} ops per seed, simulator following etcd ${flags.etcdVersion}`);
  let results: SeedResult[];
  try {
    results = await runSeeds({
      seeds,
      targets,
      etcdVersion: flags.etcdVersion,
      ops: flags.ops,
      onWorkerReady: ({ worker, address, pid }) => {
        if (!flags.json && pid !== undefined) out(`worker ${worker}: started etcd (pid ${pid}) on ${address}`);
      },
      onResult: (r) => {
        if (!flags.json) out(seedLine(r));
      },
    });
  } catch (err) {
    io.err(`etcdsim diff: ${oneLine(err)}`);
    return 2;
  }
  const failed = results.filter((r) => r.failure !== undefined || r.error !== undefined);
  if (flags.json) {
    out(
      JSON.stringify(
        {
          etcdVersion: flags.etcdVersion,
          seeds: { first: range.first, last: range.last },
          workers,
          opsPerSeed: flags.ops,
          failed: failed.map((r) => r.seed),
          results: results.map((r) => ({
            seed: r.seed,
            runs: r.runs,
            opsRun: r.opsRun,
            responsesCompared: r.responsesCompared,
            error: r.error ?? null,
            failure:
              r.failure === undefined
                ? null
                : { ops: r.failure.ops, divergence: r.failure.divergence, transcript: r.failure.transcript, path: r.failure.path, shrinks: r.failure.shrinks },
            replay: replayCommand(r.seed, flags),
          })),
        },
        null,
        2,
      ),
    );
  } else {
    for (const r of failed) {
      out('');
      if (r.failure !== undefined) {
        const x = r.failure;
        out(`seed ${r.seed} FAILED: divergence at op #${x.divergence.step + 1} (${x.divergence.where}); minimal workload (${x.ops.length} ops, shrunk ${x.shrinks} times):`);
        out(x.transcript);
        out(`ops: ${JSON.stringify(x.ops)}`);
        out(`replay: ${replayCommand(r.seed, flags)}   (fast-check path ${x.path})`);
      } else {
        out(`seed ${r.seed} FAILED: ${r.error ?? ''}`);
        out(`replay: ${replayCommand(r.seed, flags)}`);
      }
    }
    const totalOps = results.reduce((n, r) => n + r.opsRun, 0);
    const compared = results.reduce((n, r) => n + r.responsesCompared, 0);
    out('');
    out(
      `${seeds.length} seed${seeds.length === 1 ? '' : 's'}, ${totalOps} ops run, ${compared} responses compared: ` +
        (failed.length === 0 ? 'no divergence' : `${failed.length} failed (seeds ${failed.map((r) => r.seed).join(', ')})`),
    );
  }
  return failed.length === 0 ? 0 : 1;
}

/** One seed's outcome in one line. */
function seedLine(r: SeedResult): string {
  if (r.error !== undefined) return `seed ${r.seed}: error: ${r.error}`;
  const head = `seed ${r.seed}: ${r.runs} workloads, ${r.opsRun} ops run, ${r.responsesCompared} responses compared`;
  return r.failure === undefined ? `${head}, no divergence` : `${head}, DIVERGED at op #${r.failure.divergence.step + 1} (${r.failure.divergence.where})`;
}

function textReport(r: DiffReport, f: DiffFlags): string[] {
  const lines = [
    `etcdsim diff (simulator following etcd ${f.etcdVersion}): ${r.runs} workloads, ${r.opsRun} ops run, ${r.responsesCompared} responses compared, ${r.divergences} divergences`,
    `seed ${r.seed}`,
  ];
  if (r.failure !== undefined) {
    const x = r.failure;
    lines.push(
      '',
      `Minimal divergent workload (${x.ops.length} ops, shrunk ${x.shrinks} times):`,
      x.transcript,
      '',
      `ops: ${JSON.stringify(x.ops)}`,
      `replay: ${replayCommand(r.seed, f)}   (fast-check path ${x.path})`,
    );
  }
  return lines;
}

function jsonReport(r: DiffReport, f: DiffFlags, endpoint: string): unknown {
  return {
    etcdVersion: f.etcdVersion,
    endpoint,
    seed: r.seed,
    runs: r.runs,
    opsRun: r.opsRun,
    responsesCompared: r.responsesCompared,
    divergences: r.divergences,
    failure:
      r.failure === undefined
        ? null
        : { ops: r.failure.ops, divergence: r.failure.divergence, transcript: r.failure.transcript, path: r.failure.path, shrinks: r.failure.shrinks, replay: replayCommand(r.seed, f) },
  };
}

/** A one-line progress bar on stderr when it is a terminal (nothing otherwise, or with --json). */
function progressBar(json: boolean): { update: (p: { ops: number; target: number }) => void; done: () => void } {
  const tty = process.stderr.isTTY === true && !json;
  let shown = false;
  return {
    update: ({ ops, target }) => {
      if (!tty) return;
      const width = 30;
      const fill = Math.min(width, Math.round((ops / target) * width));
      process.stderr.write(`\r[${'#'.repeat(fill)}${'-'.repeat(width - fill)}] ${ops}/${target} ops`);
      shown = true;
    },
    done: () => {
      if (tty && shown) process.stderr.write('\r\x1b[2K');
    },
  };
}


/** --keep-faults i,j,... (or none): indices of the seed's planned faults. */
function keepFaultsFlag(v: string | undefined): number[] | undefined {
  if (v === undefined) return undefined;
  if (v.trim() === 'none') return [];
  return v.split(',').map((x) => int('--keep-faults', x.trim(), 0));
}

/**
 * `etcdsim diff --cluster`: the cluster differential (src/diff/cluster_diff.ts) on one seed, in this
 * process, or on a range (--seeds A..B) on --workers worker threads (cluster_seeds.ts); each seed starts
 * its own real 3-member etcd unless --sim-only. A seed whose simulated side failed is shrunk to the fewest
 * planned faults that still fail it; each failing seed is printed, in seed order, with its report, the
 * shrunk run and both replay commands.
 */
async function executeClusterDiff(opts: DiffOptions, io: CliIo): Promise<number> {
  if (opts.startEtcd === true || opts.endpoint !== undefined) {
    throw new CliError('--cluster starts its own 3-member etcd: no --start-etcd or --endpoint');
  }
  if (opts.seed !== undefined && opts.seeds !== undefined) throw new CliError('give either --seed N or --seeds A..B, not both');
  if (opts.workers !== undefined && opts.seeds === undefined) throw new CliError('--workers goes with --seeds A..B');
  let seeds: number[];
  try {
    seeds = opts.seeds !== undefined ? seedsOf(parseSeedRange(opts.seeds)) : [opts.seed === undefined ? freshSeed() : int('--seed', opts.seed, -(2 ** 31))];
  } catch (err) {
    throw err instanceof CliError ? err : new CliError((err as Error).message);
  }
  const workers = opts.workers === undefined ? 1 : int('--workers', opts.workers, 1);
  const options: ClusterSeedOptions = {
    durationMs: opts.duration === undefined ? undefined : int('--duration', opts.duration, 1000),
    simOnly: opts.simOnly === true,
    processes: opts.processes === true,
    faults: opts.faults !== false,
    etcdBin: opts.etcdBin,
    keepFaults: keepFaultsFlag(opts.keepFaults),
  };
  const json = opts.json === true;
  const { formatClusterSeedFailure, runClusterSeed, runClusterSeeds } = await import('../diff/cluster_seeds.js');
  let results: ClusterSeedResult[];
  if (opts.seeds === undefined) {
    const r = await runClusterSeed(seeds[0]!, options);
    if (!json && r.divergences.length === 0 && r.error === undefined) io.out(r.report);
    results = [r];
  } else {
    const w = Math.min(workers, seeds.length);
    const simulated = options.processes === true ? '3 etcdsim processes' : 'a simulated cluster';
    if (!json) io.out(`etcdsim diff --cluster: seeds ${seeds[0]}..${seeds.at(-1)} (${seeds.length}), ${w} worker${w === 1 ? '' : 's'}, ${simulated}${options.simOnly === true ? ' only' : ' and a real 3-member etcd per seed'}`);
    try {
      results = await runClusterSeeds({ seeds, workers: w, options, onResult: (r) => json || io.out(clusterSeedLine(r)) });
    } catch (err) {
      io.err(`etcdsim diff: ${oneLine(err)}`);
      return 2;
    }
  }
  const failed = results.filter((r) => r.divergences.length > 0 || r.error !== undefined);
  if (json) {
    io.out(JSON.stringify({ failed: failed.map((r) => r.seed), results: results.map(({ report: _report, ...rest }) => ({ ...rest, shrunk: rest.shrunk ?? null, error: rest.error ?? null })) }, null, 2));
  } else {
    // A passing single seed printed its report above; each failing seed comes here, with its shrunk run
    // and replay lines (for a range: after the progress lines, in seed order).
    for (const r of failed) {
      io.out('');
      io.out(formatClusterSeedFailure(r));
    }
    io.out(`${seeds.length} seed${seeds.length === 1 ? '' : 's'}: ${failed.length === 0 ? 'no divergence' : `${failed.length} diverged (seeds ${failed.map((r) => r.seed).join(', ')})`}`);
  }
  return failed.length === 0 ? 0 : 1;
}

/** One cluster seed's outcome in one line. */
function clusterSeedLine(r: ClusterSeedResult): string {
  if (r.error !== undefined) return `seed ${r.seed}: error: ${r.error}`;
  const sides = r.sides.map((s) => `${s.side} ${s.operations} ops`).join(', ');
  return `seed ${r.seed}: ${r.faultsPlanned} faults, ${sides}, ${r.divergences.length === 0 ? 'no divergence' : `${r.divergences.length} DIVERGENCES`}`;
}
