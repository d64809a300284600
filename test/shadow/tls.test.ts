/**
 * The shadow over TLS, each side on its own: etcd 3.4.23 serving https with client certificates required
 * (--trusted-ca-file) or plain http, and the shadow in front of it serving https (its own certificate, client
 * certificates required) or plain http — all four pairings, since the client side (listenClientPort) and the
 * etcd side (the proxy's and the gateway's upstream connections, the shadow's own watch and snapshot) choose
 * TLS apart. etcdctl (--cacert, --cert, --key) and the JSON gateway talk to the shadow as they would to etcd;
 * the answers are etcd's, compared as over plain gRPC — run through `etcdsim shadow` with its TLS flags as a
 * user runs it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import { startEtcd, type EtcdProcess } from '../../src/diff/etcd_process.js';
import { requireCommands } from '../support/prerequisites.js';
import { CLIENT_EXT, SERVER_EXT, TestPki } from '../grpc/pki.js';
import { ctlOk, ELECTION_MS, HEARTBEAT_MS, spawnShadow } from './helpers.js';

const skip = requireCommands(['etcd', 'etcdctl', 'openssl']);
const pki = new TestPki('etcdsim-shadow-tls-');
let tlsEtcd: EtcdProcess;
let plainEtcd: EtcdProcess;
before(async () => {
  if (skip !== false) return;
  pki.ca('ca');
  pki.issue('server', '/CN=server', 'ca', SERVER_EXT);
  pki.issue('client', '/CN=client', 'ca', CLIENT_EXT);
  [tlsEtcd, plainEtcd] = await Promise.all([
    startEtcd({ heartbeatMs: HEARTBEAT_MS, electionMs: ELECTION_MS, tls: { certFile: pki.path('server.crt'), keyFile: pki.path('server.key'), trustedCaFile: pki.path('ca.crt') } }),
    startEtcd({ heartbeatMs: HEARTBEAT_MS, electionMs: ELECTION_MS }),
  ]);
});
after(async () => {
  await Promise.all([tlsEtcd?.stop(), plainEtcd?.stop()]);
  pki.remove();
});

/** The shadow's flags for each side: https to the application (client certificates required), https to etcd. */
const clientTlsFlags = (): string[] => ['--cert-file', pki.path('server.crt'), '--key-file', pki.path('server.key'), '--trusted-ca-file', pki.path('ca.crt')];
const etcdTlsFlags = (): string[] => ['--etcd-cacert', pki.path('ca.crt'), '--etcd-cert', pki.path('client.crt'), '--etcd-key', pki.path('client.key')];

/** A JSON gateway POST to the shadow, over https with the client certificate when `secure`; status and body. */
function gatewayPost(endpoint: string, secure: boolean, path: string, body: unknown): Promise<{ status: number; body: string }> {
  const [host, port] = endpoint.split(':') as [string, string];
  const options = { host, port: Number(port), path, method: 'POST', headers: { 'content-type': 'application/json' } };
  return new Promise((resolve, reject) => {
    const onResponse = (res: http.IncomingMessage): void => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    };
    const req = secure
      ? https.request({ ...options, ca: readFileSync(pki.path('ca.crt')), cert: readFileSync(pki.path('client.crt')), key: readFileSync(pki.path('client.key')), agent: false }, onResponse)
      : http.request({ ...options, agent: false }, onResponse);
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const b64 = (s: string): string => Buffer.from(s).toString('base64');

/**
 * One pairing: `etcdsim shadow` in front of `etcd`, etcdctl's writes, reads at a past revision, a delete and a
 * status over gRPC, a put and a range through the JSON gateway — every call answered by etcd and compared,
 * none divergent — and the shadow's summary at exit saying so.
 */
async function shadowed(etcd: EtcdProcess, clientTls: boolean, etcdTls: boolean): Promise<void> {
  const prefix = `/tls-${clientTls ? 's' : 'p'}${etcdTls ? 's' : 'p'}`;
  const shadow = await spawnShadow([
    '--etcd', etcd.address, '--listen-client-urls', `${clientTls ? 'https' : 'http'}://127.0.0.1:0`,
    ...(clientTls ? clientTlsFlags() : []), ...(etcdTls ? etcdTlsFlags() : []), '--fail-on-divergence',
  ]);
  const endpoint = shadow.endpoint;
  const certs = clientTls ? ['--cacert', pki.path('ca.crt'), '--cert', pki.path('client.crt'), '--key', pki.path('client.key')] : [];
  const run = ctlOk(endpoint, certs, () => `\n${shadow.err()}`);
  assert.equal(await run(['put', `${prefix}/a`, '1']), 'OK\n');
  const rev = Number(/"revision":(\d+)/.exec(await run(['get', `${prefix}/a`, '-w', 'json']))?.[1]);
  await run(['put', `${prefix}/a`, '2']);
  assert.equal(await run(['get', `${prefix}/a`, `--rev=${rev}`, '--print-value-only']), '1\n');
  await run(['del', `${prefix}/a`]);
  await run(['endpoint', 'status']);
  const put = await gatewayPost(endpoint, clientTls, '/v3/kv/put', { key: b64(`${prefix}/g`), value: b64('gw') });
  assert.equal(put.status, 200, put.body);
  const range = await gatewayPost(endpoint, clientTls, '/v3/kv/range', { key: b64(`${prefix}/g`) });
  assert.equal(range.status, 200, range.body);
  assert.equal(JSON.parse(range.body).kvs[0].value, b64('gw'));
  const code = await shadow.stop();
  const out = shadow.out();
  assert.equal(code, 0, `stdout:\n${out}\nstderr:\n${shadow.err()}`);
  assert.match(out, /^KV\.Put +3 +3 +0 /m);
  assert.match(out, /^KV\.Range +3 +3 +0 /m);
  assert.match(out, /^KV\.DeleteRange +1 +1 +0 /m);
  assert.match(out, /^Maintenance\.Status +1 +1 +0 /m);
}

test('etcdsim shadow over TLS: https to the application with client certificates, https to etcd with its own', { skip }, async () => {
  await shadowed(tlsEtcd, true, true);
  // Without a client certificate the shadow refuses the connection, as etcd does.
  const shadow = await spawnShadow(['--etcd', tlsEtcd.address, '--listen-client-urls', 'https://127.0.0.1:0', ...clientTlsFlags(), ...etcdTlsFlags()]);
  const [host, port] = shadow.endpoint.split(':') as [string, string];
  const refused = await new Promise<string>((resolve) => {
    const socket = tls.connect({ host, port: Number(port), ca: readFileSync(pki.path('ca.crt')), ALPNProtocols: ['h2'] }, () => socket.write('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'));
    socket.on('error', (e) => resolve(`refused: ${e.message}`));
    socket.on('close', () => resolve('refused: closed'));
    socket.on('data', () => resolve('answered'));
  });
  assert.match(refused, /^refused/);
  assert.equal(await shadow.stop(), 0, shadow.err());
});

test('etcdsim shadow with https to the application and plain http to etcd', { skip }, async () => {
  await shadowed(plainEtcd, true, false);
});

test('etcdsim shadow with plain http to the application and https (client certificate) to etcd', { skip }, async () => {
  await shadowed(tlsEtcd, false, true);
});
