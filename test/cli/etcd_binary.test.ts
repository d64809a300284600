/**
 * `etcdsim etcd` is started as the etcd binary is, and fails as it fails: each row below runs the same
 * arguments through etcd 3.4.23 and through `node bin/etcdsim.js etcd` (ETCDSIM_ETCD_VERSION=3.4), in an
 * empty folder and without `ETCD_*` variables but the row's, and compares the exit code and the lines that
 * say what is wrong (log lines without their time stamp; of Go's usage text, the first line). Then both are
 * started with the same flags and print the same log lines a harness waits for, and stop the same way on
 * SIGTERM. Outside CI the comparisons skip without `etcd` on PATH.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '../../src/diff/etcd_process.js';
import { requireCommand } from '../support/prerequisites.js';

const skip = requireCommand('etcd');
const ETCDSIM = resolve('bin/etcdsim.js');

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment without etcd's variables (a developer's shell may set some), plus `extra`. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('ETCD_') && !k.startsWith('ETCDSIM_')) env[k] = v;
  return { ...env, ETCDSIM_ETCD_VERSION: '3.4', ...extra };
}

function run(which: 'etcd' | 'etcdsim', args: readonly string[], env: Record<string, string>, cwd: string): Promise<Outcome> {
  const [cmd, argv] = which === 'etcd' ? ['etcd', [...args]] : [process.execPath, [ETCDSIM, 'etcd', ...args]];
  return new Promise((res, rej) => {
    const child = spawn(cmd, argv, { cwd, env: cleanEnv(env) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', rej);
    // A row that unexpectedly starts a server must not hang the test.
    const guard = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('close', (code) => {
      clearTimeout(guard);
      res({ code, stdout, stderr });
    });
  });
}

/** The lines that carry the failure: capnslog's W/E/C lines without their time stamp, and Go's usage errors. */
function failureLines(o: Outcome): string[] {
  return o.stderr
    .split('\n')
    .map((l) => l.replace(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} /, ''))
    .filter((l) => /^[EC] \| /.test(l) || /^(invalid|flag |bad flag)/.test(l) || /^panic: /.test(l));
}

/**
 * `ports`: etcd gets as far as binding its listeners before it fails, so the row gets free ports of its own
 * (the defaults, 2379 and 2380, may be taken by any other etcd on the machine).
 */
const ROWS: ReadonlyArray<{ args: string[]; env?: Record<string, string>; code: number; ports?: true }> = [
  { args: ['--frobnicate'], code: 2 },
  { args: ['-max-txn-ops=x'], code: 2 },
  { args: ['--max-txn-ops'], code: 2 },
  { args: ['--initial-cluster-state', 'foo'], code: 2 },
  { args: ['--max-concurrent-streams', 'x'], code: 2 },
  { args: ['--auto-tls=maybe'], code: 2 },
  { args: ['--heartbeat-interval', '0'], code: 1 },
  { args: ['--election-timeout', '400'], code: 1 },
  { args: ['extra'], code: 1 },
  { args: ['--name', 'y'], env: { ETCD_NAME: 'x' }, code: 1 },
  { args: [], env: { ETCD_MAX_TXN_OPS: 'x' }, code: 1 },
  { args: ['--logger', 'foo'], code: 1 },
  { args: ['--experimental-enable-lease-checkpoint-persist'], code: 1 },
  { args: ['--experimental-enable-lease-checkpoint-persist=true', '--experimental-enable-lease-checkpoint=false'], code: 1 },
  { args: ['--listen-client-urls', 'http://127.0.0.1:41999'], code: 1 },
  { args: ['--data-dir', '/proc/nope/x'], code: 1 },
  { args: ['--cipher-suites', 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_BOGUS'], code: 1 },
  { args: ['--initial-cluster-state', 'existing'], code: 1, ports: true },
  { args: ['--listen-peer-urls', 'https://127.0.0.1:41998', '--initial-advertise-peer-urls', 'https://127.0.0.1:41998', '--initial-cluster', 'default=https://127.0.0.1:41998'], code: 1 },
  { args: ['--peer-cert-file', '/nope/peer.crt', '--peer-key-file', '/etc/hostname'], code: 1 },
  { args: ['--auth-token', 'foo'], code: 1, ports: true },
  { args: ['--auth-token', 'jwt,sign-method=RS256'], code: 1, ports: true },
  { args: ['--auth-token', 'jwt,sign-method=XX,priv-key=/etc/hostname'], code: 1, ports: true },
  { args: ['--auth-token', 'jwt,sign-method=RS256,priv-key=/nope'], code: 1, ports: true },
];

/** Client and peer URLs on free loopback ports. */
async function listenerFlags(): Promise<string[]> {
  const client = `http://127.0.0.1:${await freePort()}`;
  const peer = `http://127.0.0.1:${await freePort()}`;
  return ['--listen-client-urls', client, '--advertise-client-urls', client, '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer, '--initial-cluster', `default=${peer}`];
}

test('etcdsim etcd refuses what etcd 3.4.23 refuses, with the same exit code and lines', { skip }, async () => {
  // Four rows at a time: each is two short-lived processes.
  const queue = [...ROWS];
  const worker = async (): Promise<void> => {
    for (let row = queue.shift(); row !== undefined; row = queue.shift()) {
      const dir = mkdtempSync(join(tmpdir(), 'etcdsim-etcd-flags-'));
      try {
        const args = row.ports === true ? [...(await listenerFlags()), ...row.args] : row.args;
        const [e, s] = await Promise.all([run('etcd', args, row.env ?? {}, dir), run('etcdsim', args, row.env ?? {}, dir)]);
        const what = `etcd ${row.args.join(' ')} ${JSON.stringify(row.env ?? {})}`;
        assert.equal(e.code, row.code, `${what}: etcd's exit code (${e.stderr})`);
        assert.equal(s.code, row.code, `${what}: etcdsim's exit code (${s.stderr})`);
        assert.deepStrictEqual(failureLines(s), failureLines(e), what);
        assert.ok(failureLines(e).length > 0, `${what}: etcd said why`);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
});

test('etcdsim etcd --version prints what etcd 3.4.23 prints, bar the build', { skip }, async () => {
  const [e, s] = await Promise.all([run('etcd', ['--version'], {}, tmpdir()), run('etcdsim', ['--version'], {}, tmpdir())]);
  assert.equal(s.code, 0);
  assert.equal(s.stdout.split('\n')[0], e.stdout.split('\n')[0]);
});

test('etcdsim install-bin DIR writes DIR/etcd, which starts etcdsim etcd wherever it is run from', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-install-bin-'));
  try {
    const installed = await new Promise<Outcome>((res) => {
      const c = spawn(process.execPath, [ETCDSIM, 'install-bin', join(dir, 'bin')], { env: cleanEnv() });
      let stdout = '';
      c.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      c.on('close', (code) => res({ code, stdout, stderr: '' }));
    });
    assert.deepStrictEqual(installed, { code: 0, stdout: `${join(dir, 'bin', 'etcd')}\n`, stderr: '' });
    const version = await new Promise<string>((res) => {
      const c = spawn(join(dir, 'bin', 'etcd'), ['--version'], { cwd: dir, env: cleanEnv({ ETCDSIM_ETCD_VERSION: '3.5' }) });
      let out = '';
      c.stdout.on('data', (d: Buffer) => (out += d.toString()));
      c.on('close', () => res(out));
    });
    assert.equal(version.split('\n')[0], 'etcd Version: 3.5.31');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Starts `which`, waits for the capabilities line, runs `during`, stops it with SIGTERM; its log lines. */
/**
 * The line etcd logs once a client listener serves (3.4's text log and zap, plaintext and TLS). etcd 3.4.23
 * installs its SIGTERM handler only after its server is ready, beside the goroutines that log this line:
 * a SIGTERM sent at "enabled capabilities" alone can kill it before it logs this line or "received signal;
 * shutting down" (seen under load), so a process is stopped only once it serves and has answered.
 */
const SERVING = /serving (insecure )?client (requests|traffic)/;

async function startStop(which: 'etcd' | 'etcdsim', args: readonly string[], during: () => Promise<void>): Promise<{ lines: string[]; code: number | null; signal: string | null }> {
  const [cmd, argv] = which === 'etcd' ? ['etcd', [...args]] : [process.execPath, [ETCDSIM, 'etcd', ...args]];
  const child = spawn(cmd, argv, { env: cleanEnv() });
  let out = '';
  const ready = new Promise<void>((res, rej) => {
    const guard = setTimeout(() => rej(new Error(`${which} not ready:\n${out}`)), 30_000);
    const check = (d: Buffer): void => {
      out += d.toString();
      if (out.includes('enabled capabilities for version') && SERVING.test(out)) {
        clearTimeout(guard);
        res();
      }
    };
    child.stderr.on('data', check);
    child.stdout.on('data', check);
    child.on('exit', () => rej(new Error(`${which} exited:\n${out}`)));
  });
  const exited = new Promise<{ code: number | null; signal: string | null }>((res) => child.on('exit', (code, signal) => res({ code, signal })));
  try {
    await ready;
    await during();
  } finally {
    child.kill('SIGTERM');
  }
  const how = await exited;
  return { lines: out.split('\n').map((l) => l.replace(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} /, '').replace(/^raft\d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d /, 'raft ')), ...how };
}

test('etcdsim etcd logs the lines etcd 3.4.23 logs when it starts, is ready and stops; it serves what it was told', { skip }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-etcd-start-'));
  try {
    const [cp, pp] = [await freePort(), await freePort()];
    const client = `http://127.0.0.1:${cp}`;
    const peer = `http://127.0.0.1:${pp}`;
    const args = (d: string): string[] => ['--name', 'n1', '--data-dir', join(dir, d), '--listen-client-urls', client, '--advertise-client-urls', client, '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer, '--initial-cluster', `n1=${peer}`, '--initial-cluster-token', 'tok'];
    const health = async (): Promise<void> => {
      const r = await fetch(`${client}/health`);
      assert.equal(r.status, 200);
    };
    const e = await startStop('etcd', args('e'), health);
    const s = await startStop('etcdsim', args('s'), health);
    const WANTED = [
      /^I \| etcdserver: starting member /,
      /^I \| etcdserver\/membership: added member /,
      /^raft INFO: \w+ became leader at term 2$/,
      /^I \| etcdserver: published /,
      /^I \| embed: ready to serve client requests$/,
      /^N \| embed: serving insecure client requests on /,
      /^I \| etcdserver\/api: enabled capabilities for version 3.4$/,
      /^N \| pkg\/osutil: received terminated signal, shutting down...$/,
      /^I \| etcdserver: skipped leadership transfer for single voting member cluster$/,
      /^W \| auth: simple token is not cryptographically signed$/,
    ];
    const pick = (lines: string[]): string[] => WANTED.map((re) => lines.find((l) => re.test(l)) ?? `(no line like ${re})`);
    assert.deepStrictEqual(pick(s.lines), pick(e.lines));
    assert.equal(s.lines[0], e.lines[0], 'the deprecated-logger banner');
    // etcd re-raises the signal (killed by SIGTERM); etcdsim exits 0 (docs/etcd-binary.md).
    assert.equal(e.signal, 'SIGTERM');
    assert.equal(s.code, 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('etcdsim etcd --logger zap: the same messages as etcd 3.4.23, as JSON lines', { skip }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-etcd-zap-'));
  try {
    const [cp, pp] = [await freePort(), await freePort()];
    const client = `http://127.0.0.1:${cp}`;
    const peer = `http://127.0.0.1:${pp}`;
    const args = (d: string): string[] => ['--logger', 'zap', '--data-dir', join(dir, d), '--listen-client-urls', client, '--advertise-client-urls', client, '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer, '--initial-cluster', `default=${peer}`];
    const health = async (): Promise<void> => {
      assert.equal((await fetch(`${client}/health`)).status, 200);
    };
    const e = await startStop('etcd', args('e'), health);
    const s = await startStop('etcdsim', args('s'), health);
    const msgs = (lines: string[]): Array<Record<string, unknown>> =>
      lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    const WANTED = ['published local member to cluster through raft', 'serving client traffic insecurely; this is strongly discouraged!', 'enabled capabilities for version', 'received signal; shutting down'];
    const pick = (lines: string[]) =>
      WANTED.map((m) => {
        const { ts: _ts, caller: _c, ...rest } = msgs(lines).find((o) => o['msg'] === m) ?? { msg: `(none: ${m})` };
        return rest;
      });
    assert.deepStrictEqual(pick(s.lines), pick(e.lines));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
