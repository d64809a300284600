/**
 * The shadow over TLS on both sides: etcd 3.4.23 serving https with client certificates required
 * (--trusted-ca-file), the shadow in front of it with a certificate of its own that also requires client
 * certificates, and etcdctl (--cacert, --cert, --key) talking to the shadow as it would to etcd. The answers
 * are etcd's, compared as over plain gRPC — run through `etcdsim shadow` with its TLS flags as a user runs it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import tls from 'node:tls';
import { startEtcd, type EtcdProcess } from '../../src/diff/etcd_process.js';
import { requireCommands } from '../support/prerequisites.js';
import { CLIENT_EXT, SERVER_EXT, TestPki } from '../grpc/pki.js';
import { ctl, ELECTION_MS, HEARTBEAT_MS, spawnShadow } from './helpers.js';

const skip = requireCommands(['etcd', 'etcdctl', 'openssl']);
const pki = new TestPki('etcdsim-shadow-tls-');
let etcd: EtcdProcess;
before(async () => {
  if (skip !== false) return;
  pki.ca('ca');
  pki.issue('server', '/CN=server', 'ca', SERVER_EXT);
  pki.issue('client', '/CN=client', 'ca', CLIENT_EXT);
  etcd = await startEtcd({ heartbeatMs: HEARTBEAT_MS, electionMs: ELECTION_MS, tls: { certFile: pki.path('server.crt'), keyFile: pki.path('server.key'), trustedCaFile: pki.path('ca.crt') } });
});
after(async () => {
  await etcd?.stop();
  pki.remove();
});

test('etcdsim shadow over TLS: https to the application with client certificates, https to etcd with its own', { skip }, async () => {
  const shadow = await spawnShadow([
    '--etcd', etcd.address, '--listen-client-urls', 'https://127.0.0.1:0',
    '--cert-file', pki.path('server.crt'), '--key-file', pki.path('server.key'), '--trusted-ca-file', pki.path('ca.crt'),
    '--etcd-cacert', pki.path('ca.crt'), '--etcd-cert', pki.path('client.crt'), '--etcd-key', pki.path('client.key'), '--fail-on-divergence',
  ]);
  const endpoint = shadow.endpoint;
  const certs = ['--cacert', pki.path('ca.crt'), '--cert', pki.path('client.crt'), '--key', pki.path('client.key')];
  const run = async (args: string[]): Promise<string> => {
    const r = await ctl(endpoint, [...certs, ...args]);
    assert.equal(r.code, 0, `etcdctl ${args.join(' ')}: ${r.out}\n${shadow.err()}`);
    return r.out;
  };
  assert.equal(await run(['put', '/tls/a', '1']), 'OK\n');
  await run(['put', '/tls/a', '2']);
  assert.equal(await run(['get', '/tls/a', '--rev=2', '--print-value-only']), '1\n');
  await run(['del', '/tls/a']);
  await run(['endpoint', 'status']);
  // Without a client certificate the shadow refuses the connection, as etcd does.
  const [host, port] = endpoint.split(':') as [string, string];
  const refused = await new Promise<string>((resolve) => {
    const socket = tls.connect({ host, port: Number(port), ca: readFileSync(pki.path('ca.crt')), ALPNProtocols: ['h2'] }, () => socket.write('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'));
    socket.on('error', (e) => resolve(`refused: ${e.message}`));
    socket.on('close', () => resolve('refused: closed'));
    socket.on('data', () => resolve('answered'));
  });
  assert.match(refused, /^refused/);
  const code = await shadow.stop();
  const out = shadow.out();
  assert.equal(code, 0, `stdout:\n${out}\nstderr:\n${shadow.err()}`);
  assert.match(out, /^KV\.Put +2 +2 +0 /m);
  assert.match(out, /^KV\.Range +1 +1 +0 /m);
  assert.match(out, /^Maintenance\.Status +1 +1 +0 /m);
});
