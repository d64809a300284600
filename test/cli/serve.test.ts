import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { parseEtcdUrl, parseGoDuration, parseGoInt, parseGoUint } from '../../src/cli/go_flags.js';
import { parseServeFlags, SERVE_FLAG_DEFAULTS, type ServeFlags } from '../../src/cli/serve.js';
import * as grpc from '@grpc/grpc-js';
import { startEtcd } from '../../src/diff/etcd_process.js';
import { requireCommand } from '../support/prerequisites.js';
import { startServeProcess } from '../support/serve_process.js';
import { etcdService } from '../../src/grpc/index.js';

const run = promisify(execFile);

const flags = (over: Partial<ServeFlags> = {}): ServeFlags => ({ ...SERVE_FLAG_DEFAULTS, ...over });

test('serve flags map to serve() options as etcd names them', () => {
  const o = parseServeFlags(
    flags({ listenClientUrls: 'http://localhost:0', heartbeatInterval: '50', electionTimeout: '500', seed: '42', clockSpeed: '10', etcdVersion: '3.4', authTokenTtl: '60', bcryptCost: '4' }),
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
  assert.equal(o.maxTxnOps, 128);
  assert.equal(o.maxRequestBytes, 1572864);
  assert.equal(o.authHashCost, 4);
  const d = parseServeFlags(flags());
  assert.equal(d.authHashCost, undefined, 'fast hashing unless --bcrypt-cost is given');
  assert.equal(d.host, '127.0.0.1');
  assert.equal(d.port, 2379);
  const v6 = parseServeFlags(flags({ listenClientUrls: 'http://[::1]:0' }));
  assert.equal(v6.host, '::1');
  assert.throws(() => parseServeFlags(flags({ listenClientUrls: 'https://127.0.0.1:2379' })), /needs --cert-file/);
  assert.throws(() => parseServeFlags(flags({ listenClientUrls: 'unix://x:1' })), /http:\/\/ and https:\/\/ URLs only/);
  assert.throws(() => parseServeFlags(flags({ clockSpeed: '0' })), /clock-speed/);
  assert.throws(() => parseServeFlags(flags({ electionTimeout: '200' })), /election-timeout/);
});

test('what etcd accepts, serve accepts with etcd\'s substitute values and warnings', () => {
  const warnings: string[] = [];
  const parse = (over: Partial<ServeFlags>) => parseServeFlags(flags(over), (m) => warnings.push(m));
  assert.equal(parse({ maxTxnOps: '0' }).maxTxnOps, 0);
  assert.equal(parse({ maxTxnOps: '0x10' }).maxTxnOps, 16);
  assert.equal(parse({ maxTxnOps: '18446744073709551615' }).maxTxnOps, Number.MAX_SAFE_INTEGER, 'uint64 max: no limit');
  assert.equal(parse({ maxRequestBytes: '0' }).maxRequestBytes, 0);
  assert.equal(parse({ authTokenTtl: '0' }).authTokenTTL, 300, 'etcd: a TTL <= 0 is the default');
  assert.deepEqual(warnings, []);
  assert.equal(parse({ bcryptCost: '99' }).authHashCost, 10);
  assert.equal(parse({ bcryptCost: '3' }).authHashCost, 10);
  assert.equal(parse({ bcryptCost: '31' }).authHashCost, 31);
  assert.deepEqual(warnings.splice(0), ['Use default bcrypt-cost 10 instead of the invalid value 99', 'Use default bcrypt-cost 10 instead of the invalid value 3']);
  assert.equal(parse({ experimentalWatchProgressNotifyInterval: '10ms' }).watchProgressNotifyIntervalMs, 100);
  assert.deepEqual(warnings.splice(0), ['adjusting watch progress notify interval to minimum period 100ms']);
  assert.equal(parse({ experimentalWatchProgressNotifyInterval: '0' }).watchProgressNotifyIntervalMs, 600_000);
  assert.equal(parse({ experimentalWatchProgressNotifyInterval: '-5s' }).watchProgressNotifyIntervalMs, 600_000);
  assert.equal(parse({ experimentalWatchProgressNotifyInterval: '1h30m' }).watchProgressNotifyIntervalMs, 5_400_000);
  assert.equal(parse({ experimentalWatchProgressNotifyInterval: '1.5s' }).watchProgressNotifyIntervalMs, 1500);
  assert.equal(parse({}).grpcKeepAliveMinTimeMs, 5000, "etcd's default --grpc-keepalive-min-time");
  assert.equal(parse({ grpcKeepaliveMinTime: '500ms' }).grpcKeepAliveMinTimeMs, 500);
  assert.equal(parse({ grpcKeepaliveMinTime: '0' }).grpcKeepAliveMinTimeMs, 0, "0: grpc-go's own 5 minutes (the door's rule)");
  assert.throws(() => parse({ grpcKeepaliveMinTime: '5' }), /invalid value "5" for flag --grpc-keepalive-min-time: parse error/);
  assert.equal(parse({}).quotaBackendBytes, 0, "etcd's default --quota-backend-bytes (0: 2 GiB)");
  assert.equal(parse({ quotaBackendBytes: '16777216' }).quotaBackendBytes, 16 * 1024 * 1024);
  assert.equal(parse({ quotaBackendBytes: '-1' }).quotaBackendBytes, -1, 'below 0: no quota');
  assert.throws(() => parse({ quotaBackendBytes: '16MB' }), /invalid value "16MB" for flag --quota-backend-bytes: parse error/);
  assert.equal(parse({ quotaBackendBytes: '0x200000001' }).quotaBackendBytes, 8 * 1024 * 1024 * 1024 + 1);
  assert.deepEqual(warnings.splice(0), ['quota exceeds the maximum value: 8589934593 bytes (maximum 8589934592)']);
  assert.equal(parse({ maxRequestBytes: '20000000' }).maxRequestBytes, 20_000_000);
  assert.deepEqual(warnings.splice(0), ['MaxRequestBytes 20000000 exceeds maximum recommended size 10485760']);
  const ok = parse({ heartbeatInterval: '1', electionTimeout: '5' });
  assert.equal(ok.electionTicks, 5);
  assert.equal(parse({ electionTimeout: '50000' }).electionTicks, 500);
});

test("flag values are read as Go's flag package reads them", () => {
  assert.equal(parseGoUint('0'), 0n);
  assert.equal(parseGoUint('010'), 8n);
  assert.equal(parseGoUint('0x1F'), 31n);
  assert.equal(parseGoUint('0o17'), 15n);
  assert.equal(parseGoUint('0b101'), 5n);
  assert.equal(parseGoUint('1_000'), 1000n);
  assert.equal(parseGoUint('18446744073709551615'), 2n ** 64n - 1n);
  for (const bad of ['', '-1', '+1', '1.5', '1e3', '08', '0x', '_1', '1_', '1__0', ' 1']) assert.throws(() => parseGoUint(bad), { reason: 'parse error' } as object, bad);
  assert.equal(parseGoInt('-1'), -1n);
  assert.equal(parseGoInt('+0x10'), 16n);
  assert.equal(parseGoInt('-9223372036854775808'), -(2n ** 63n));
  assert.equal(parseGoInt('9223372036854775807'), 2n ** 63n - 1n);
  assert.throws(() => parseGoInt('9223372036854775808'), { reason: 'value out of range' } as object);
  assert.throws(() => parseGoInt('-9223372036854775809'), { reason: 'value out of range' } as object);
  for (const bad of ['', '-', '+-1', '--1', '1.5', ' -1']) assert.throws(() => parseGoInt(bad), { reason: 'parse error' } as object, bad);
  assert.throws(() => parseGoUint('18446744073709551616'), { reason: 'value out of range' } as object);
  assert.equal(parseGoDuration('0'), 0);
  assert.equal(parseGoDuration('500ms'), 500);
  assert.equal(parseGoDuration('1.5s'), 1500);
  assert.equal(parseGoDuration('1h30m'), 5_400_000);
  assert.equal(parseGoDuration('500us'), 0.5);
  assert.equal(parseGoDuration('-5s'), -5000);
  assert.equal(parseGoDuration('.5s'), 500);
  for (const bad of ['', '10', 'x', '1d', '.s', '1.5.s', '-', '1s ', '9999999999999h']) assert.throws(() => parseGoDuration(bad), { reason: 'parse error' } as object, bad);
  assert.deepEqual(parseEtcdUrl(' http://127.0.0.1:2379 '), { raw: 'http://127.0.0.1:2379', scheme: 'http', host: '127.0.0.1', port: '2379' });
  assert.deepEqual(parseEtcdUrl('HTTPS://[::1]:0?x=1#f'), { raw: 'HTTPS://[::1]:0?x=1#f', scheme: 'https', host: '::1', port: '0' });
  assert.equal(parseEtcdUrl('http://u:p@localhost:1').host, 'localhost');
  assert.equal(parseEtcdUrl('http://127.0.0.1:').port, '', 'etcd listens on a free port');
  const reason = (u: string): string => {
    try {
      parseEtcdUrl(u);
    } catch (err) {
      return (err as { reason: string }).reason;
    }
    return 'accepted';
  };
  assert.equal(reason('http://127.0.0.1:2379/'), 'URL must not contain a path: http://127.0.0.1:2379/');
  assert.equal(reason('http://::1:2379'), 'URL address does not have the form "host:port": http://::1:2379');
  assert.equal(reason('localhost:2379'), 'URL scheme must be http, https, unix, or unixs: localhost:2379');
  assert.equal(reason('http://127.0.0.1:x'), 'parse "http://127.0.0.1:x": invalid port ":x" after host');
  assert.equal(reason(':2379'), 'parse ":2379": missing protocol scheme');
  assert.equal(reason('unix://localhost:1'), 'accepted');
});

test('etcdsim serve prints its address when ready, serves etcdctl, and exits cleanly on SIGTERM', { skip: requireCommand('etcdctl') }, async () => {
  const { child, address, stdout } = await startServeProcess(['--etcd-version', '3.4'], 15_000);
  const env = { ...process.env, ETCDCTL_API: '3' };
  assert.equal((await run('etcdctl', [`--endpoints=${address}`, 'put', 'k', 'v'], { env })).stdout, 'OK\n');
  assert.equal((await run('etcdctl', [`--endpoints=${address}`, 'get', 'k', '--print-value-only'], { env })).stdout, 'v\n');
  assert.match((await run('etcdctl', [`--endpoints=${address}`, 'endpoint', 'status'], { env })).stdout, /, 3\.4\.23, /);
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  child.kill('SIGTERM');
  assert.equal(await exited, 0);
  assert.equal(stdout().split('\n').filter((l) => l !== '').length, 1, 'one line on stdout');
});

test('etcdsim serve refuses a non-loopback address without --allow-non-loopback', async () => {
  await assert.rejects(run(process.execPath, ['bin/etcdsim.js', 'serve', '--listen-client-urls', 'http://0.0.0.0:0']), (e: { code: number; stderr: string }) => {
    assert.equal(e.code, 1);
    assert.match(e.stderr, /not a loopback address/);
    return true;
  });
});

/** Opens a Watch and a LeaseKeepAlive stream at `address`; resolves to the status codes they end with. */
async function openStreams(address: string): Promise<{ ended: Promise<Array<{ code: number; details: string }>>; close(): void }> {
  const Watch = etcdService('Watch');
  const Lease = etcdService('Lease');
  const w = new Watch(address, grpc.credentials.createInsecure());
  const l = new Lease(address, grpc.credentials.createInsecure());
  const status = (call: grpc.ClientDuplexStream<unknown, unknown>): Promise<{ code: number; details: string }> =>
    new Promise((resolve) => {
      call.on('data', () => {});
      call.on('error', () => {});
      call.on('status', (s: grpc.StatusObject) => resolve({ code: s.code, details: s.details }));
    });
  const watch = (w as unknown as { Watch(): grpc.ClientDuplexStream<unknown, unknown> }).Watch();
  const created = new Promise<void>((resolve) => watch.once('data', () => resolve()));
  const ended = Promise.all([status(watch), status((l as unknown as { LeaseKeepAlive(): grpc.ClientDuplexStream<unknown, unknown> }).LeaseKeepAlive())]);
  watch.write({ create_request: { key: Buffer.from('/w') } });
  await created;
  return {
    ended,
    close: () => {
      w.close();
      l.close();
    },
  };
}

test('SIGTERM / SIGINT: open streams end with 14 UNAVAILABLE (the connection drops, as etcd stops) and serve exits 0', async () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    const child = spawn(process.execPath, ['bin/etcdsim.js', 'serve', '--listen-client-urls', 'http://127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    const address = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /on http:\/\/(127\.0\.0\.1:\d+)\n/.exec(out);
        if (m?.[1] !== undefined) resolve(m[1]);
      });
      void exited.then((code) => reject(new Error(`exited ${code}: ${err}`)));
    });
    const s = await openStreams(address);
    child.kill(signal);
    const statuses = await s.ended;
    s.close();
    assert.deepEqual(statuses.map((x) => x.code), [grpc.status.UNAVAILABLE, grpc.status.UNAVAILABLE], JSON.stringify(statuses));
    assert.equal(await exited, 0, `${signal}: exit 0`);
    assert.equal(err, '');
  }
});

test('etcd 3.4.23 on SIGTERM: the same 14 UNAVAILABLE on open streams (or, racing its shutdown, a bare RST_STREAM)', { skip: requireCommand('etcd') }, async () => {
  const proc = await startEtcd();
  try {
    const s = await openStreams(proc.address);
    process.kill(proc.pid, 'SIGTERM');
    const statuses = await s.ended;
    s.close();
    // Mostly the connection just drops (14). When grpc-go's writer gets to a stream before the socket closes it
    // sends RST_STREAM NO_ERROR instead, which grpc-js reports as 13 (seen under load in CI). The simulator
    // models the drop.
    const dropped = { code: grpc.status.UNAVAILABLE };
    const reset = { code: grpc.status.INTERNAL, details: 'Received RST_STREAM with code 0 (Call ended without gRPC status)' };
    for (const st of statuses) {
      assert.ok(st.code === dropped.code || (st.code === reset.code && st.details === reset.details), JSON.stringify(statuses));
    }
  } finally {
    await proc.stop();
  }
});
