/**
 * `etcdsim diff`: runs generated KV / Watch / Lease workloads against a real etcd and against the
 * simulator (following that etcd's release, `--etcd-version`), and reports the first place they differ,
 * shrunk to a minimal op sequence.
 *
 *   etcdsim diff --start-etcd [--etcd-bin PATH]      a throwaway local etcd (fresh data dir, free loopback ports)
 *   etcdsim diff --endpoint HOST:PORT                an etcd you run; it must be empty and on loopback unless
 *                                                    --force / --allow-non-loopback say otherwise
 *   options: --seed N  --ops N (default 1000)  --etcd-version 3.4|3.5|3.6|3.7 (default 3.4)  --json
 *
 * A diff writes, deletes every key, revokes every lease and compacts — and compaction is cluster-wide — so
 * it refuses an endpoint whose keyspace is not empty, or that is not on this machine, unless told.
 *
 * Exit codes: 0 nothing diverged; 1 a divergence; 2 usage error or the etcd could not be used. The report
 * goes to stdout, errors to stderr. The options are declared in program.ts (commander).
 */
import { connectEtcd, type EtcdGrpcClient } from '../grpc/client.js';
import { isLoopback } from '../grpc/server.js';
import type { EtcdVersion } from '../mvcc/index.js';
import { freshSeed } from '../sim/random.js';
import { runDiffCheck, type DiffReport } from '../diff/check.js';
import { startEtcd, type EtcdProcess } from '../diff/etcd_process.js';
import { keyspaceEmpty } from '../diff/reset.js';
import { CliError, runCli, type CliIo, type DiffOptions } from './program.js';

/** An error's message on one line. */
function oneLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).replace(/\s*\n\s*/g, ' ');
}

export interface DiffFlags {
  startEtcd: boolean;
  etcdBin: string | undefined;
  endpoint: string | undefined;
  force: boolean;
  allowNonLoopback: boolean;
  seed: number | undefined;
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
  if (v !== '3.4' && v !== '3.5' && v !== '3.6' && v !== '3.7') throw new CliError(`--etcd-version must be 3.4, 3.5, 3.6 or 3.7, got ${JSON.stringify(v)}`);
  const f: DiffFlags = {
    startEtcd: o.startEtcd === true,
    etcdBin: o.etcdBin,
    endpoint: o.endpoint,
    force: o.force === true,
    allowNonLoopback: o.allowNonLoopback === true,
    seed: o.seed === undefined ? undefined : int('--seed', o.seed, -(2 ** 31)),
    ops: int('--ops', o.ops, 1),
    etcdVersion: v,
    json: o.json === true,
  };
  if (f.startEtcd === (f.endpoint !== undefined)) throw new CliError('give exactly one of --start-etcd and --endpoint HOST:PORT');
  if (f.etcdBin !== undefined && !f.startEtcd) throw new CliError('--etcd-bin goes with --start-etcd');
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

/** `etcdsim diff` after commander parsed it (see the file comment for the exit codes). */
export async function executeDiff(opts: DiffOptions, io: CliIo): Promise<number> {
  const flags = diffFlags(opts);
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
      address = flags.endpoint!.replace(/^https?:\/\//, '');
      const host = hostOf(address);
      if (!isLoopback(host) && !flags.allowNonLoopback) {
        return fail(
          `etcdsim diff: refusing ${address}: not a loopback address. A diff deletes every key, revokes every lease and ` +
            'compacts the history (cluster-wide); point it only at a throwaway etcd. Pass --allow-non-loopback if you mean it.',
        );
      }
      client = connectEtcd(address, { deadlineMs: 5000 });
      let state;
      try {
        state = await keyspaceEmpty(client);
      } catch (err) {
        return fail(`etcdsim diff: cannot reach etcd at ${address}: ${oneLine(err)}`);
      }
      if (!state.empty && !flags.force) {
        return fail(
          `etcdsim diff: refusing ${address}: its keyspace is not empty (${state.keys} keys, ${state.leases} leases). ` +
            'A diff deletes every key, revokes every lease and compacts the history. Use an empty etcd, or pass --force to wipe it.',
        );
      }
    }
    client ??= connectEtcd(address);
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

function replayCommand(r: DiffReport, f: DiffFlags): string {
  const target = f.startEtcd ? '--start-etcd' : `--endpoint ${f.endpoint}`;
  return `etcdsim diff ${target} --etcd-version ${f.etcdVersion} --ops ${f.ops} --seed ${r.seed}`;
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
      `replay: ${replayCommand(r, f)}   (fast-check path ${x.path})`,
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
        : { ops: r.failure.ops, divergence: r.failure.divergence, transcript: r.failure.transcript, path: r.failure.path, shrinks: r.failure.shrinks, replay: replayCommand(r, f) },
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

