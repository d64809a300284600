/**
 * A real etcd 3.4.23 on loopback with the shadow in front of it (both in this process but etcd), and
 * etcdctl aimed at the shadow. etcd runs with --election-timeout 1000, so its minimum lease TTL is 2 s
 * and a lease can expire on the real etcd within a test: the shadow must follow that expiry.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { startEtcd, type EtcdProcess } from '../../src/diff/etcd_process.js';
import { startShadow, type ShadowHandle, type ShadowOptions } from '../../src/shadow/index.js';

export const HEARTBEAT_MS = 100;
export const ELECTION_MS = 1000;

export interface ShadowRig {
  readonly etcd: EtcdProcess;
  readonly shadow: ShadowHandle;
  /** Every divergence seen, as "where". */
  readonly divergences: string[];
  close(): Promise<void>;
}

/**
 * etcd and the shadow; `electionMs` 10000 gives a 15 s minimum lease TTL (no expiry within a test).
 * `before` runs against the etcd alone, before the shadow starts (an etcd that already holds data);
 * `etcdFlags`: more of etcd's flags (`--auth-token-ttl=1`).
 */
export async function startRig(opts: Partial<ShadowOptions> = {}, before?: (etcd: EtcdProcess) => Promise<void>, etcdFlags: readonly string[] = []): Promise<ShadowRig> {
  const electionMs = opts.electionMs ?? ELECTION_MS;
  const etcd = await startEtcd({ heartbeatMs: HEARTBEAT_MS, electionMs, flags: etcdFlags });
  const divergences: string[] = [];
  try {
    await before?.(etcd);
    const shadow = await startShadow({
      etcd: etcd.address,
      host: '127.0.0.1',
      port: 0,
      heartbeatMs: HEARTBEAT_MS,
      ...opts,
      electionMs,
      onDivergence: (where, dir) => divergences.push(dir === undefined ? where : `${where} (${dir})`),
    });
    return {
      etcd,
      shadow,
      divergences,
      async close() {
        await shadow.close();
        await etcd.stop();
      },
    };
  } catch (err) {
    await etcd.stop();
    throw err;
  }
}

export interface CtlResult {
  readonly code: number;
  readonly out: string;
}

/** etcdctl (API 3) against `endpoint`, asynchronously: the shadow runs in this process. */
export function ctl(endpoint: string, args: readonly string[], input = ''): Promise<CtlResult> {
  return new Promise((resolve, reject) => {
    const child = execFile('etcdctl', [`--endpoints=${endpoint}`, '--dial-timeout=3s', '--command-timeout=5s', ...args], { env: { ...process.env, ETCDCTL_API: '3' } }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1;
      resolve({ code, out: stdout + stderr });
    });
    child.on('error', reject);
    child.stdin?.on('error', () => {});
    child.stdin?.end(input);
  });
}

/** etcdctl against `endpoint` (after `first`: flags every call takes), each call required to succeed: its output. */
export function ctlOk(endpoint: string, first: readonly string[] = [], context: () => string = () => ''): (args: string[], input?: string) => Promise<string> {
  return async (args, input) => {
    const r = await ctl(endpoint, [...first, ...args], input);
    assert.equal(r.code, 0, `etcdctl ${args.join(' ')}: ${r.out}${context()}`);
    return r.out;
  };
}

/** The per-RPC summary, for assertion messages. */
export function summary(rig: ShadowRig): string {
  return [...rig.shadow.report.summary(), ...rig.divergences].join('\n');
}

/** `etcdctl watch ARGS` in the background until its output contains `until` (or 10 s pass); its output. */
export function watchUntil(endpoint: string, args: readonly string[], until: string): Promise<string> {
  return new Promise((resolve) => {
    let out = '';
    const child = execFile('etcdctl', [`--endpoints=${endpoint}`, 'watch', ...args], { env: { ...process.env, ETCDCTL_API: '3' } }, () => resolve(out));
    const timer = setTimeout(() => child.kill(), 10_000);
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes(until)) {
        clearTimeout(timer);
        child.kill();
      }
    });
  });
}

export interface ShadowChild {
  /** host:port the shadow listens on. */
  readonly endpoint: string;
  readonly pid: number;
  /** Its stdout and stderr so far. */
  out(): string;
  err(): string;
  /** SIGTERM, then its exit code. */
  stop(): Promise<number | null>;
}

/** `etcdsim shadow ARGS` as a child process (`env`: variables added to this one's), once it names its endpoint on stdout. */
export async function spawnShadow(args: readonly string[], env: Record<string, string> = {}): Promise<ShadowChild> {
  const child = spawn(process.execPath, ['bin/etcdsim.js', 'shadow', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const endpoint = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /on (127\.0\.0\.1:\d+)\n/.exec(out);
      if (m?.[1] !== undefined) resolve(m[1]);
    });
    void exited.then((code) => reject(new Error(`exited ${code}: ${err}`)));
  });
  return {
    endpoint,
    pid: child.pid!,
    out: () => out,
    err: () => err,
    stop: () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}
