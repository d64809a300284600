/**
 * What the snapshot tests need from the real etcd 3.4.23 tools: etcdctl runs (one command, its output),
 * and a real etcd started from a data dir `etcdctl snapshot restore` built.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/diff/etcd_process.js';

export interface CtlOutput {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `etcdctl` (API 3) with `args`; never rejects on a non-zero exit (the test looks at `code`). */
export function etcdctl(args: readonly string[], endpoint?: string): Promise<CtlOutput> {
  const all = endpoint === undefined ? [...args] : [`--endpoints=${endpoint}`, '--dial-timeout=5s', '--command-timeout=20s', ...args];
  return new Promise((resolve, reject) => {
    execFile('etcdctl', all, { env: { ...process.env, ETCDCTL_API: '3' }, maxBuffer: 256 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err !== null && typeof err.code !== 'number') {
        reject(err);
        return;
      }
      resolve({ code: err === null ? 0 : Number(err.code), stdout, stderr });
    });
  });
}

/** etcdctl that must succeed: its stdout. */
export async function ctlOk(args: readonly string[], endpoint?: string): Promise<string> {
  const r = await etcdctl(args, endpoint);
  if (r.code !== 0) throw new Error(`etcdctl ${args.join(' ')} exited ${r.code}: ${r.stderr}${r.stdout}`);
  return r.stdout;
}

/** A scratch directory removed by `cleanup()`. */
export function scratchDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-snapshot-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A real etcd on loopback ports, from a data dir. */
export interface RestoredEtcd {
  readonly address: string;
  stop(): Promise<void>;
}

/**
 * `etcdctl snapshot restore file` into `dataDir`, then a real etcd started from it (single member named
 * default, peer and client URLs on free loopback ports); resolves once /health answers true.
 */
export async function restoreAndStart(file: string, dataDir: string): Promise<RestoredEtcd> {
  // A port found free can be taken by a parallel test file before etcd binds it; the ports are in the restored
  // membership, so a retry restores again into a fresh data dir with new ports.
  for (let attempt = 0; ; attempt++) {
    try {
      return await restoreAndStartOnce(file, attempt === 0 ? dataDir : `${dataDir}-retry${attempt}`);
    } catch (e) {
      if (attempt >= 2 || !(e instanceof Error) || !e.message.includes('address already in use')) throw e;
    }
  }
}

async function restoreAndStartOnce(file: string, dataDir: string): Promise<RestoredEtcd> {
  const [cp, pp] = [await freePort(), await freePort()];
  const peer = `http://127.0.0.1:${pp}`;
  const client = `http://127.0.0.1:${cp}`;
  await ctlOk(['snapshot', 'restore', file, '--data-dir', dataDir, '--name', 'default', '--initial-cluster', `default=${peer}`, '--initial-advertise-peer-urls', peer]);
  const child: ChildProcess = spawn(
    'etcd',
    ['--name', 'default', '--data-dir', dataDir, '--listen-client-urls', client, '--advertise-client-urls', client, '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer, '--initial-cluster', `default=${peer}`, '--log-level', 'warn'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  child.stdout?.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (log += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  };
  const address = `127.0.0.1:${cp}`;
  // Readiness: /health, polled; a guard turns a hang into a failure showing etcd's log.
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`etcd exited (${child.exitCode}) before it was ready:\n${log.slice(-3000)}`);
    try {
      const body = (await (await fetch(`http://${address}/health`)).json()) as { health?: unknown };
      if (body.health === 'true' || body.health === true) return { address, stop };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  await stop();
  throw new Error(`etcd from ${dataDir} did not become healthy:\n${log.slice(-3000)}`);
}

/** The kvs of `etcdctl get -w json` as comparable records (bytes base64, as etcdctl prints them). */
export interface JsonKv {
  readonly key: string;
  readonly create_revision?: number;
  readonly mod_revision?: number;
  readonly version?: number;
  readonly value?: string;
  readonly lease?: number;
}

/** `etcdctl get "" --from-key -w json [extra]`: every key's KeyValue (kvs only, headers differ by member). */
export async function getAll(endpoint: string, extra: readonly string[] = []): Promise<JsonKv[]> {
  const out = JSON.parse(await ctlOk(['get', '', '--from-key', '-w', 'json', ...extra], endpoint)) as { kvs?: JsonKv[] };
  return out.kvs ?? [];
}

/** `etcdctl endpoint hashkv -w json`: the hash (at the current revision, or `rev`). */
export async function hashKV(endpoint: string, rev?: number): Promise<number> {
  const out = JSON.parse(await ctlOk(['endpoint', 'hashkv', '-w', 'json', ...(rev === undefined ? [] : [`--rev=${rev}`])], endpoint)) as { HashKV: { hash: number } }[];
  return out[0]!.HashKV.hash;
}

/**
 * The same requests for the simulator and a real etcd: puts, deletes, multi-op txns (sub-revisions), a
 * compaction, a lease with a key, hundreds of keys (branch pages) and values larger than a page (overflow).
 */
export async function writeHistory(endpoint: string, opts: { withAuth: boolean }): Promise<void> {
  const ctl = (...args: string[]): Promise<string> => ctlOk(args, endpoint);
  await ctl('put', 'a', '1');
  await ctl('put', 'b', '2');
  await ctl('del', 'a');
  await ctl('put', 'c', '3');
  await ctl('put', 'a', 'again');
  await ctl('compact', '4');
  for (let t = 0; t < 4; t++) {
    const ops = Array.from({ length: 100 }, (_, i) => `put many/${String(t * 100 + i).padStart(4, '0')} value-${t}-${i}`).join('\n');
    await txn(endpoint, `\n${ops}\n\n\n`);
  }
  await txn(endpoint, '\nput x 1\ndel b\nput y 2\n\n\n');
  for (let i = 0; i < 3; i++) await ctl('put', `big${i}`, String.fromCharCode(65 + i).repeat(9000 + i * 3000));
  const lease = /lease ([0-9a-f]+) granted/.exec(await ctl('lease', 'grant', '600'))![1]!;
  await ctl('put', 'leased', 'v', `--lease=${lease}`);
  await ctl('del', 'many/0', '--prefix');
  await ctl('put', 'many/0050', 'changed');
  await ctl('role', 'add', 'reader');
  await ctl('role', 'grant-permission', 'reader', 'read', 'many/', '--prefix');
  await ctl('user', 'add', 'alice', '--new-user-password=alicepw');
  await ctl('user', 'grant-role', 'alice', 'reader');
  if (opts.withAuth) {
    await ctl('user', 'add', 'root', '--new-user-password=rootpw');
    await ctl('user', 'grant-role', 'root', 'root');
    await ctl('auth', 'enable');
  }
}

/** `etcdctl txn` with its interactive input (compares, blank line, success ops, blank line, failure ops). */
function txn(endpoint: string, input: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('etcdctl', [`--endpoints=${endpoint}`, 'txn'], { env: { ...process.env, ETCDCTL_API: '3' } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`etcdctl txn exited ${code}: ${out}`))));
    child.stdin.end(input);
  });
}

