/**
 * A throwaway real etcd for differential runs: a fresh data dir (in /dev/shm when it exists, so fsyncs are
 * cheap), free loopback ports, ready once etcd logs "ready to serve client requests", stopped by PID
 * (SIGTERM, then SIGKILL) and its data dir removed — also when the Node process exits.
 *
 * Timing flags: heartbeat 100 ms and election timeout 10 s give a minimum lease TTL of 15 s
 * (etcd: ceil(3/2 × election timeout)), so no lease granted by a workload can expire during a run on the
 * real etcd while the simulator's virtual clock stands still. They also make the start slow: etcd 3.4's
 * initial election tick advance moves a fresh single member's election clock only electionTicks − 1 ticks
 * ahead, while its randomized timeout is 1 to 2 election timeouts, so it campaigns a random 0.1 to 10 s
 * after it starts (measured on 3.4.23 under a loaded machine, 2026-12-07: 0.7 to 8.9 s, ready to serve
 * 0.1 to 1 s later), and later still when load makes its process miss ticks (Go's ticker drops them). The
 * wait for readiness is sized from the election timeout for that (readyTimeoutMs), and a start that still
 * fails names the step it reached (elected, published, serving, /health answered).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RealClock } from '../sim/index.js';

export const DIFF_HEARTBEAT_MS = 100;
export const DIFF_ELECTION_MS = 10_000;
/** The minimum lease TTL those flags give, in seconds. */
export const DIFF_MIN_LEASE_TTL = Math.ceil((3 * DIFF_ELECTION_MS) / 2 / 1000);

export interface EtcdProcess {
  /** host:port of the client URL. */
  readonly address: string;
  /** The member's peer URL. */
  readonly peerUrl: string;
  readonly pid: number;
  /** The last lines etcd logged (for failure messages). */
  log(): string;
  /** Stops etcd by PID and removes its data dir. Idempotent. */
  stop(): Promise<void>;
}

/** The etcd binary to use: `bin`, else `etcd` on PATH; throws a message saying how to install it. */
export function findEtcdBinary(bin?: string): string {
  if (bin !== undefined) {
    if (!existsSync(bin)) throw new Error(`etcd binary not found at ${bin}`);
    return bin;
  }
  try {
    const p = execFileSync('sh', ['-c', 'command -v etcd'], { encoding: 'utf8' }).trim();
    if (p !== '') return p;
  } catch {
    // fall through
  }
  throw new Error("etcd is not on PATH: install etcd 3.4 (Debian: apt-get install -y etcd-server) or pass --etcd-bin PATH");
}

/** Whether an etcd binary is available (for tests that skip outside CI). */
export function hasEtcdBinary(): boolean {
  try {
    findEtcdBinary();
    return true;
  } catch {
    return false;
  }
}

import { freePort } from './free_port.js';

export { freePort };

export interface StartEtcdOptions {
  readonly bin?: string | undefined;
  /** --heartbeat-interval and --election-timeout in ms (default: the differential runs' 100 / 10000). */
  readonly heartbeatMs?: number | undefined;
  readonly electionMs?: number | undefined;
  /** Give up after this long (default 30 s plus two election timeouts: the first election's random wait, see above). */
  readonly readyTimeoutMs?: number | undefined;
  /** Serve clients over TLS (an https:// client URL; the peer URL stays plain). */
  readonly tls?: EtcdTlsFiles | undefined;
  /** More of etcd's flags, as etcd takes them (`--quota-backend-bytes=1048576`). */
  readonly flags?: readonly string[] | undefined;
}

/** etcd's TLS flags for the client port, as files. */
export interface EtcdTlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  /** --trusted-ca-file: as in etcd, giving it already requires client certificates signed by it. */
  readonly trustedCaFile?: string | undefined;
  readonly clientCertAuth?: boolean | undefined;
}

function tlsFlags(tls: EtcdTlsFiles | undefined): string[] {
  if (tls === undefined) return [];
  return [
    '--cert-file', tls.certFile, '--key-file', tls.keyFile,
    ...(tls.trustedCaFile === undefined ? [] : ['--trusted-ca-file', tls.trustedCaFile]),
    ...(tls.clientCertAuth === true ? ['--client-cert-auth'] : []),
  ];
}

/** Starts a fresh single-member etcd on free loopback ports, resolving once it serves clients. */
export async function startEtcd(opts: StartEtcdOptions = {}): Promise<EtcdProcess> {
  // The free ports are found before etcd binds them: another process may take one meanwhile (tests and
  // other etcds start side by side). etcd then exits at once; new ports settle it.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startEtcdOnce(opts);
    } catch (err) {
      if (attempt >= PORT_RACE_ATTEMPTS || !(err instanceof Error) || !err.message.includes('address already in use')) throw err;
    }
  }
}

/** How often startEtcd tries new ports when one was taken before etcd could bind it. */
const PORT_RACE_ATTEMPTS = 3;

async function startEtcdOnce(opts: StartEtcdOptions): Promise<EtcdProcess> {
  const bin = findEtcdBinary(opts.bin);
  const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
  const dir = mkdtempSync(join(base, 'etcdsim-diff-'));
  const [cp, pp] = [await freePort(), await freePort()];
  const client = `${opts.tls === undefined ? 'http' : 'https'}://127.0.0.1:${cp}`;
  const peer = `http://127.0.0.1:${pp}`;
  const child: ChildProcess = spawn(
    bin,
    [
      '--name', 'default', '--data-dir', dir,
      '--listen-client-urls', client, '--advertise-client-urls', client,
      '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
      '--initial-cluster', `default=${peer}`,
      '--heartbeat-interval', String(opts.heartbeatMs ?? DIFF_HEARTBEAT_MS), '--election-timeout', String(opts.electionMs ?? DIFF_ELECTION_MS),
      // Info lines always: over TLS readiness is its log line (the /health probe would need the CA), and an
      // etcd that never turns healthy shows in them how far it got (publish, ready to serve) — one elected
      // leader and then answered no health probe for 27 s in a CI run, at warn with nothing to say why.
      '--log-level', 'info',
      ...tlsFlags(opts.tls),
      ...(opts.flags ?? []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  const onData = (d: Buffer): void => {
    log = (log + d.toString()).slice(-20_000);
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const cleanupDir = (): void => rmSync(dir, { recursive: true, force: true });
  const killOnExit = (): void => {
    child.kill('SIGKILL');
    cleanupDir();
  };
  process.once('exit', killOnExit);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      process.off('exit', killOnExit);
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const guard = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(guard);
      }
      cleanupDir();
    })();
    return stopping;
  };
  const address = `127.0.0.1:${cp}`;
  try {
    const timeoutMs = opts.readyTimeoutMs ?? 30_000 + 2 * (opts.electionMs ?? DIFF_ELECTION_MS);
    if (opts.tls === undefined) await waitReady(address, child, exited, timeoutMs, () => log);
    else await waitLogged(/ready to serve client requests/, child, exited, timeoutMs, () => log);
  } catch (err) {
    await stop();
    throw err;
  }
  return { address, peerUrl: peer, pid: child.pid ?? -1, log: () => log, stop };
}

/** Waits until etcd's log matches `ready` (its output is collected into `log()` as it arrives). */
async function waitLogged(ready: RegExp, child: ChildProcess, exited: Promise<void>, timeoutMs: number, log: () => string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const guard = setTimeout(() => reject(new Error(`etcd not ready within ${timeoutMs} ms (${startStage(log())}):\n${log().slice(-2000)}`)), timeoutMs);
    const check = (): void => {
      if (!ready.test(log())) return;
      clearTimeout(guard);
      child.stdout?.off('data', check);
      child.stderr?.off('data', check);
      resolve();
    };
    child.stdout?.on('data', check);
    child.stderr?.on('data', check);
    void exited.then(() => {
      clearTimeout(guard);
      reject(new Error(`etcd exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${log().slice(-2000)}`));
    });
    check();
  });
}

/** Polls /health until etcd answers healthy. */
async function waitReady(address: string, child: ChildProcess, exited: Promise<void>, timeoutMs: number, log: () => string): Promise<void> {
  let gone = false;
  void exited.then(() => (gone = true));
  // A real process on real time: the wall clock comes from src/sim, the one owner of time.
  const clock = new RealClock({ unref: true });
  const deadline = clock.now() + timeoutMs;
  let unhealthy = 0;
  let lastAnswer = 'none';
  while (clock.now() < deadline) {
    if (gone) throw new Error(`etcd exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${log().slice(-2000)}`);
    try {
      const res = await fetch(`http://${address}/health`);
      const text = await res.text();
      const body = JSON.parse(text) as { health?: unknown };
      if (body.health === 'true' || body.health === true) return;
      unhealthy++;
      lastAnswer = `${res.status} ${text.trim()}`;
    } catch {
      // not listening yet, or not serving yet (etcd serves its client port once it published itself)
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const answered = unhealthy === 0 ? 'no /health answer' : `/health answered unhealthy ${unhealthy} times, last ${lastAnswer}`;
  throw new Error(`etcd did not become healthy within ${timeoutMs} ms (${startStage(log())}; ${answered}):\n${log().slice(-2000)}`);
}

/** How far a starting etcd got, from its log: the steps before it serves. */
function startStage(log: string): string {
  const steps: Array<[string, RegExp]> = [
    ['elected leader', /elected leader|became leader/],
    ['published', /published .* to cluster|published local member/],
    ['ready to serve', /ready to serve client requests/],
  ];
  const reached = steps.filter(([, re]) => re.test(log)).map(([name]) => name);
  return reached.length === 0 ? 'not elected' : `reached: ${reached.join(', ')}`;
}
