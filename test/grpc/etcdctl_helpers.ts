/**
 * Runs etcdctl (ETCDCTL_API=3, Debian's etcd-client 3.4.23) against `serve()` and against a fresh real etcd
 * 3.4.23 on loopback, so tests can compare what etcdctl prints. Both binaries are required: a missing one
 * fails with a message (`.ci/run` installs them).
 */
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, before } from 'node:test';
import { freePort, startEtcd as startEtcdProcess, type EtcdTlsFiles } from '../../src/diff/etcd_process.js';
import { serve, type ServeHandle, type TlsOptions } from '../../src/grpc/server.js';
import type { VirtualClock } from '../../src/sim/index.js';
import { requireCommands } from '../support/prerequisites.js';

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
  /** etcdctl flags every command gets (TLS: --cacert, --cert, --key). */
  readonly flags?: readonly string[] | undefined;
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
    const child = spawn('etcdctl', [`--endpoints=${t.address}`, '--dial-timeout=3s', '--command-timeout=3s', ...(t.flags ?? []), ...args], {
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
    // etcdctl may exit before it reads its input (most commands never do): EPIPE is not a test failure.
    child.stdin.on('error', () => {});
    child.stdin.end(input ?? '');
  });
}

/**
 * Starts `etcdctl watch ...` in the background, runs `afterStart` once the watch is registered, and resolves
 * with everything the watch printed once its output ends with `until` (then stops it).
 */
export function watchUntil(t: Target, args: string[], until: string, afterStart: () => Promise<void>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('etcdctl', [`--endpoints=${t.address}`, ...(t.flags ?? []), 'watch', ...args], { env: { ...process.env, ETCDCTL_API: '3' } });
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

/**
 * Waits until the target has at least `n` watchers registered (sim: by state; etcd: by polling its
 * metrics over plain http, so not for a TLS etcd).
 */
async function waitForWatchers(t: Target, n = 1): Promise<void> {
  const deadline = performance.now() + 10_000; // failure guard only
  let seen = 0;
  while (performance.now() < deadline) {
    if (t.name === 'etcdsim') {
      const w = t.handle?.server.watchable;
      if (w === undefined) throw new Error('etcdsim target without a serve() handle');
      seen = w.synced.size + w.unsynced.size;
      if (seen >= n) return;
      await new Promise<void>((r) => setImmediate(r));
    } else {
      const res = await fetch(`http://${t.address}/metrics`);
      const text = await res.text();
      const m = /^etcd_debugging_mvcc_watcher_total (\d+)/m.exec(text);
      seen = Number(m?.[1] ?? 0);
      if (seen >= n) return;
    }
  }
  throw new Error(`${t.name}: ${seen} watchers registered, expected ${n}`);
}

/** What an interactive `etcdctl watch -i` printed, and how it ended. */
export interface InteractiveResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * `etcdctl watch -i` as a user runs it: stdin stays open, each `send` is one typed line, and the test waits
 * for what etcdctl prints (event-driven: every wait resolves on the child's output; a guard timer only
 * turns a hang into a failure that shows what was printed).
 */
export class InteractiveWatch {
  private readonly child: ChildProcessWithoutNullStreams;
  private out = '';
  private err = '';
  private readonly waiters = new Set<() => void>();
  private readonly exited: Promise<number | null>;

  constructor(
    private readonly t: Target,
    args: string[] = [],
    private readonly guardMs = 15_000,
  ) {
    this.child = spawn('etcdctl', [`--endpoints=${t.address}`, ...(t.flags ?? []), 'watch', '-i', ...args], {
      env: { ...process.env, ETCDCTL_API: '3' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const poke = (): void => {
      for (const w of [...this.waiters]) w();
    };
    this.child.stdout.on('data', (d: Buffer) => {
      this.out += d.toString();
      poke();
    });
    this.child.stderr.on('data', (d: Buffer) => {
      this.err += d.toString();
      poke();
    });
    this.exited = new Promise((resolve, reject) => {
      this.child.on('error', reject);
      this.child.on('close', (code) => {
        resolve(code);
        poke();
      });
    });
  }

  /** Types one line (a newline is added). */
  send(line: string): void {
    this.child.stdin.write(`${line}\n`);
  }

  /** Resolves once `text` occurs at least `times` times in what etcdctl printed on `stream` so far. */
  waitFor(stream: 'stdout' | 'stderr', text: string, times = 1): Promise<void> {
    const count = (): number => (stream === 'stdout' ? this.out : this.err).split(text).length - 1;
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (count() >= times) {
          this.waiters.delete(check);
          clearTimeout(guard);
          resolve();
        } else if (this.child.exitCode !== null || this.child.signalCode !== null) {
          this.waiters.delete(check);
          clearTimeout(guard);
          reject(new Error(`${this.t.name}: etcdctl exited; expected ${JSON.stringify(text)} x${times} on ${stream}; ${this.printed()}`));
        }
      };
      const guard = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`${this.t.name}: expected ${JSON.stringify(text)} x${times} on ${stream}; ${this.printed()}`));
      }, this.guardMs);
      this.waiters.add(check);
      check();
    });
  }

  /** Resolves once the server has at least `n` watchers (the typed `watch` lines reached it). */
  watchers(n: number): Promise<void> {
    return waitForWatchers(this.t, n);
  }

  /** Closes stdin (etcdctl then exits on EOF) and resolves with everything printed, normalised. */
  async end(): Promise<InteractiveResult> {
    this.child.stdin.end();
    const guard = setTimeout(() => this.child.kill('SIGKILL'), this.guardMs);
    const code = await this.exited;
    clearTimeout(guard);
    return { code, stdout: normalise(this.t, this.out), stderr: normalise(this.t, this.err) };
  }

  /** Stops etcdctl at once (cleanup after a failure). */
  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }

  private printed(): string {
    return `stdout ${JSON.stringify(this.out)}, stderr ${JSON.stringify(this.err)}`;
  }
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

/**
 * Registers before/after hooks that start a fresh etcdsim serve and a fresh real etcd 3.4.23 for the test
 * file (fresh both, so their revisions match), hand them to `use`, and close both afterwards. Fails at once
 * without etcdctl.
 */
export function beforeFreshSimAndEtcd(use: (sim: Target, etcd: Target) => void, simOpts?: Parameters<typeof startSim>[0]): void {
  if (requireCommands(['etcd', 'etcdctl']) !== false) return; // the file's tests skip with the reason (outside CI)
  let started: Target[] = [];
  before(async () => {
    const [a, b] = await Promise.allSettled([startSim(simOpts), startEtcd()]);
    started = [a, b].flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    if (a.status === 'rejected') throw a.reason;
    if (b.status === 'rejected') throw b.reason;
    use(a.value, b.value);
  });
  after(async () => {
    await Promise.all(started.map((t) => t.close()));
  });
}

/**
 * `etcdsim serve` in this process, as etcd 3.4; on the wall clock unless a (virtual) `clock` is given;
 * over TLS when `tls` is given, etcdctl then getting `flags` (--cacert, ...) on every command.
 */
export async function startSim(opts: { clock?: VirtualClock; tls?: TlsOptions; flags?: readonly string[] } = {}): Promise<Target> {
  const peerPort = await freePort();
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const h = await serve({
    port: 0,
    etcdVersion: '3.4',
    peerUrls: [peerUrl],
    heartbeatIntervalMs: HEARTBEAT_MS,
    electionTicks: ELECTION_MS / HEARTBEAT_MS,
    clock: opts.clock,
    tls: opts.tls,
  });
  const t: Target = {
    name: 'etcdsim',
    address: h.address,
    flags: opts.flags,
    peerUrl,
    subst: [],
    leases: 0,
    handle: h,
    close: () => h.close(),
  };
  await learnIdsOrClose(t);
  return t;
}

/** A fresh real etcd 3.4.23 on loopback (src/diff's launcher), with the same timing flags as startSim. */
export type { EtcdTlsFiles };

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
  await learnIdsOrClose(t);
  return t;
}

/**
 * Starts a real etcd 3.4.23 and etcdsim serve with the same TLS files and flags (etcdctl gets `flags` on
 * every command), runs `body`, and stops both.
 */
export async function withTlsPair(tls: EtcdTlsFiles, flags: readonly string[], body: (etcd: Target, sim: Target) => Promise<void>): Promise<void> {
  const read = (p: string): Buffer => readFileSync(p);
  const [a, b] = await Promise.allSettled([
    startEtcdTls(tls, flags),
    startSim({
      tls: {
        cert: read(tls.certFile),
        key: read(tls.keyFile),
        ca: tls.trustedCaFile === undefined ? undefined : read(tls.trustedCaFile),
        clientCertAuth: tls.clientCertAuth,
      },
      flags,
    }),
  ]);
  try {
    if (a.status === 'rejected') throw a.reason;
    if (b.status === 'rejected') throw b.reason;
    await body(a.value, b.value);
  } finally {
    await Promise.all([a.status === 'fulfilled' ? a.value.close() : undefined, b.status === 'fulfilled' ? b.value.close() : undefined]);
  }
}

/**
 * A fresh real etcd 3.4.23 serving clients over TLS (https:// client URL, plain peer URL), the same timing
 * flags as startSim. etcdctl gets `flags` on every command.
 */
export async function startEtcdTls(tls: EtcdTlsFiles, flags: readonly string[]): Promise<Target> {
  requireBinary('etcd');
  const proc = await startEtcdProcess({ heartbeatMs: HEARTBEAT_MS, electionMs: ELECTION_MS, tls });
  const t: Target = { name: 'etcd', address: proc.address, flags, peerUrl: proc.peerUrl, subst: [], leases: 0, close: () => proc.stop() };
  await learnIdsOrClose(t);
  return t;
}

/** learnIds, stopping the target when it fails (a target left running would keep the test process alive). */
async function learnIdsOrClose(t: Target): Promise<void> {
  try {
    await learnIds(t);
  } catch (err) {
    await t.close();
    throw err;
  }
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
