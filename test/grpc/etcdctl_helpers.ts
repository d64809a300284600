/**
 * Runs etcdctl (ETCDCTL_API=3, Debian's etcd-client 3.4.23) against `serve()` and against a fresh real etcd
 * 3.4.23 on loopback, so tests can compare what etcdctl prints. Both binaries are required: a missing one
 * fails with a message (`.ci/run` installs them).
 */
import { execFileSync, spawn } from 'node:child_process';
import { freePort, startEtcd as startEtcdProcess } from '../../src/diff/etcd_process.js';
import { serve, type ServeHandle } from '../../src/grpc/server.js';
import type { VirtualClock } from '../../src/sim/index.js';

export function requireBinary(name: string): string {
  try {
    return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error(`${name} is not on PATH: install Debian's etcd-server and etcd-client (apt-get install -y etcd-server etcd-client), as .ci/run does`);
  }
}

export { freePort };

/** One etcd (real or simulated) as etcdctl sees it, with what must be normalised in its outputs. */
export interface Target {
  readonly name: 'etcd' | 'etcdsim';
  /** host:port (etcdctl without a scheme: see the report on :authority). */
  readonly address: string;
  readonly peerUrl: string;
  /** Replacements applied to every output: IDs, addresses, lease IDs. */
  readonly subst: Array<[string, string]>;
  leases: number;
  /** The simulated member (etcdsim only). */
  readonly handle?: ServeHandle | undefined;
  close(): Promise<void>;
}

export interface CtlResult {
  code: number;
  out: string;
}

/** Runs etcdctl with `args` against `t`; resolves with exit code and stdout+stderr, normalised. */
export function ctl(t: Target, args: string[], input?: string): Promise<CtlResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('etcdctl', [`--endpoints=${t.address}`, '--dial-timeout=3s', '--command-timeout=3s', ...args], {
      env: { ...process.env, ETCDCTL_API: '3' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    // stdout, then stderr: their interleaving is the OS's, not etcd's
    child.on('close', (code) => resolve({ code: code ?? -1, out: normalise(t, out + err) }));
    child.stdin.end(input ?? '');
  });
}

/**
 * Starts `etcdctl watch ...` in the background, runs `afterStart` once the watch is registered, and resolves
 * with everything the watch printed once its output ends with `until` (then stops it).
 */
export function watchUntil(t: Target, args: string[], until: string, afterStart: () => Promise<void>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('etcdctl', [`--endpoints=${t.address}`, 'watch', ...args], { env: { ...process.env, ETCDCTL_API: '3' } });
    let out = '';
    let started = false;
    const guard = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${t.name}: watch printed ${JSON.stringify(out)}, expected it to end with ${JSON.stringify(until)}`));
    }, 10_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.endsWith(until)) {
        clearTimeout(guard);
        child.kill('SIGTERM');
        resolve(normalise(t, out));
      }
    });
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    // etcdctl prints nothing when a watch is created: give it a moment via a read-only probe round-trip.
    child.on('spawn', () => {
      if (started) return;
      started = true;
      void waitForWatchers(t).then(afterStart, reject);
    });
  });
}

let simHandle: ServeHandle | undefined;

/** Waits until the target has a watch registered (sim: by state; etcd: by polling its metrics). */
async function waitForWatchers(t: Target): Promise<void> {
  const deadline = performance.now() + 10_000; // failure guard only
  while (performance.now() < deadline) {
    if (t.name === 'etcdsim') {
      const w = simHandle?.server.watchable;
      if (w !== undefined && w.synced.size + w.unsynced.size > 0) return;
      await new Promise<void>((r) => setImmediate(r));
    } else {
      const res = await fetch(`http://${t.address}/metrics`);
      const text = await res.text();
      const m = /^etcd_debugging_mvcc_watcher_total (\d+)/m.exec(text);
      if (m !== null && Number(m[1]) > 0) return;
    }
  }
  throw new Error(`${t.name}: no watcher registered`);
}

function normalise(t: Target, s: string): string {
  let out = s;
  for (const [from, to] of t.subst) out = out.split(from).join(to);
  return out
    .replace(/"raft_term":\d+/g, '"raft_term":TERM')
    .replace(/"ts":"[^"]*"/g, '"ts":"TS"')
    .replace(/client-[0-9a-f-]{36}/g, 'client-UUID');
}

/** Records a granted lease's ID (hex as printed) so outputs name it L1, L2, ... on both sides. */
export function noteLease(t: Target, grantOutput: string): string {
  const m = /lease ([0-9a-f]+) granted/.exec(grantOutput);
  if (m === null || m[1] === undefined) throw new Error(`${t.name}: no lease in ${JSON.stringify(grantOutput)}`);
  const hex = m[1];
  const name = `L${++t.leases}`;
  t.subst.push([hex, name], [BigInt(`0x${hex}`).toString(10), name]);
  return hex;
}

const HEARTBEAT_MS = 100;
const ELECTION_MS = 1000;

/** `etcdsim serve` in this process, as etcd 3.4; on the wall clock unless a (virtual) `clock` is given. */
export async function startSim(opts: { clock?: VirtualClock } = {}): Promise<Target> {
  const peerPort = await freePort();
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const h = await serve({
    port: 0,
    etcdVersion: '3.4',
    peerUrls: [peerUrl],
    heartbeatIntervalMs: HEARTBEAT_MS,
    electionTicks: ELECTION_MS / HEARTBEAT_MS,
    clock: opts.clock,
  });
  simHandle = h;
  const t: Target = {
    name: 'etcdsim',
    address: h.address,
    peerUrl,
    subst: [],
    leases: 0,
    handle: h,
    close: () => h.close(),
  };
  await learnIds(t);
  return t;
}

/** A fresh real etcd 3.4.23 on loopback (src/diff's launcher), with the same timing flags as startSim. */
export async function startEtcd(): Promise<Target> {
  requireBinary('etcd');
  const proc = await startEtcdProcess({ heartbeatMs: HEARTBEAT_MS, electionMs: ELECTION_MS });
  const t: Target = {
    name: 'etcd',
    address: proc.address,
    peerUrl: proc.peerUrl,
    subst: [],
    leases: 0,
    close: () => proc.stop(),
  };
  await learnIds(t);
  return t;
}

/** Reads the member's IDs (MemberList: no Raft entry, no revision) and sets up their normalisation. */
async function learnIds(t: Target): Promise<void> {
  const r = await ctl(t, ['member', 'list', '-w', 'json']);
  // etcdctl prints uint64 as JSON numbers that do not fit a double: take the digits from the text.
  const cluster = /"cluster_id":(\d+)/.exec(r.out)?.[1] ?? '';
  const member = /"member_id":(\d+)/.exec(r.out)?.[1] ?? '';
  if (cluster === '' || member === '') throw new Error(`${t.name}: member list printed ${JSON.stringify(r.out)}`);
  t.subst.push(
    [BigInt(member).toString(16), 'MEMBERHEX'],
    [cluster, 'CLUSTER'],
    [member, 'MEMBER'],
    [BigInt(cluster).toString(16), 'CLUSTERHEX'],
    [t.address, 'ADDRESS'],
    [t.peerUrl, 'PEERURL'],
  );
}
