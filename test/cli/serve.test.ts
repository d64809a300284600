import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { parseDuration, parseServeFlags, SERVE_FLAG_DEFAULTS, type ServeFlags } from '../../src/cli/serve.js';
import { requireBinary } from '../grpc/etcdctl_helpers.js';

const run = promisify(execFile);

const flags = (over: Partial<ServeFlags> = {}): ServeFlags => ({ ...SERVE_FLAG_DEFAULTS, ...over });

test('serve flags map to serve() options as etcd names them', () => {
  const o = parseServeFlags(
    flags({ listenClientUrls: 'http://localhost:0', heartbeatInterval: 50, electionTimeout: 500, seed: '42', clockSpeed: '10', etcdVersion: '3.4', authTokenTtl: 60, bcryptCost: 4 }),
  );
  assert.equal(o.authTokenTTL, 60);
  assert.equal(o.authHashCost, 4);
  assert.equal(o.host, 'localhost');
  assert.equal(o.port, 0);
  assert.equal(o.electionTicks, 10);
  assert.equal(o.heartbeatIntervalMs, 50);
  assert.equal(o.seed, 42n);
  assert.equal(o.clockSpeed, 10);
  assert.equal(o.watchProgressNotifyIntervalMs, 600_000);
  assert.equal(parseDuration('500ms'), 500);
  assert.equal(parseDuration('1.5s'), 1500);
  assert.throws(() => parseDuration('10'), /invalid duration/);
  assert.throws(() => parseServeFlags(flags({ listenClientUrls: 'https://127.0.0.1:2379' })), /needs --cert-file/);
  assert.throws(() => parseServeFlags(flags({ listenClientUrls: 'unix:///x' })), /scheme/);
  assert.throws(() => parseServeFlags(flags({ clockSpeed: '0' })), /clock-speed/);
  assert.throws(() => parseServeFlags(flags({ electionTimeout: 200 })), /election-timeout/);
});

test('etcdsim serve prints its address when ready, serves etcdctl, and exits cleanly on SIGTERM', async () => {
  requireBinary('etcdctl');
  const child = spawn(process.execPath, ['bin/etcdsim.js', 'serve', '--listen-client-urls', 'http://127.0.0.1:0', '--etcd-version', '3.4'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const address = await new Promise<string>((resolve, reject) => {
    const guard = setTimeout(() => reject(new Error(`no ready line; stderr: ${err}`)), 15_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^etcdsim serving etcd v3 API on http:\/\/(127\.0\.0\.1:\d+)\n/.exec(out);
      if (m?.[1] !== undefined) {
        clearTimeout(guard);
        resolve(m[1]);
      }
    });
    child.on('exit', (code) => reject(new Error(`exited ${code}: ${err}`)));
  });
  child.removeAllListeners('exit');
  const env = { ...process.env, ETCDCTL_API: '3' };
  assert.equal((await run('etcdctl', [`--endpoints=${address}`, 'put', 'k', 'v'], { env })).stdout, 'OK\n');
  assert.equal((await run('etcdctl', [`--endpoints=${address}`, 'get', 'k', '--print-value-only'], { env })).stdout, 'v\n');
  assert.match((await run('etcdctl', [`--endpoints=${address}`, 'endpoint', 'status'], { env })).stdout, /, 3\.4\.23, /);
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  child.kill('SIGTERM');
  assert.equal(await exited, 0);
  assert.equal(out.split('\n').filter((l) => l !== '').length, 1, 'one line on stdout');
});

test('etcdsim serve refuses a non-loopback address without --allow-non-loopback', async () => {
  await assert.rejects(run(process.execPath, ['bin/etcdsim.js', 'serve', '--listen-client-urls', 'http://0.0.0.0:0']), (e: { code: number; stderr: string }) => {
    assert.equal(e.code, 1);
    assert.match(e.stderr, /not a loopback address/);
    return true;
  });
});
