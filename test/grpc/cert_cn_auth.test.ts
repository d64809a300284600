import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { etcdService, servedServerOf } from '../../src/grpc/index.js';
import { ctl, withTlsPair, type CtlResult, type Target } from './etcdctl_helpers.js';
import { requireCommands } from '../support/prerequisites.js';
import { CLIENT_EXT, SERVER_EXT, TestPki } from './pki.js';

// etcd's "common name as user name" (--client-cert-auth): with auth enabled, a call without a token is made
// by the user the verified client certificate's CN names; a token wins over it; with --trusted-ca-file
// alone (certificates required, flag off) the CN is ignored. The same etcdctl sequences against etcdsim
// serve and a real etcd 3.4.23 given the same certificates, outputs compared.
const skip = requireCommands(['etcd', 'etcdctl', 'openssl']);

const pki = new TestPki('etcdsim-cn-');
const path = (n: string): string => pki.path(n);

before(() => {
  if (skip !== false) return;
  pki.ca('ca');
  pki.issue('server', '/CN=localhost', 'ca', SERVER_EXT);
  pki.issue('root', '/CN=root', 'ca', CLIENT_EXT);
  pki.issue('alice', '/CN=alice', 'ca', CLIENT_EXT);
  pki.issue('bob', '/CN=bob', 'ca', CLIENT_EXT); // no such user
  pki.issue('nocn', '/O=etcdsim', 'ca', CLIENT_EXT); // no CN at all
  pki.issue('multi', '/CN=alice/CN=root', 'ca', CLIENT_EXT); // Go keeps the last CN
});
after(() => pki.remove());

/** etcdctl flags presenting the client certificate `name`. */
const as = (name: string): string[] => [`--cacert=${path('ca.crt')}`, `--cert=${path(`${name}.crt`)}`, `--key=${path(`${name}.key`)}`];

function withBoth(clientCertAuth: boolean, body: (etcd: Target, sim: Target) => Promise<void>): Promise<void> {
  return withTlsPair({ certFile: path('server.crt'), keyFile: path('server.key'), trustedCaFile: path('ca.crt'), clientCertAuth }, as('root'), body);
}

/** etcdctl with the certificate `cert` (and `extra` flags) on both; the outputs must be equal. */
async function same(etcd: Target, sim: Target, cert: string, args: string[], extra: string[] = [], input?: string): Promise<CtlResult> {
  const flags = [...as(cert), ...extra];
  const a = await ctl({ ...etcd, flags }, args, input);
  const b = await ctl({ ...sim, flags }, args, input);
  const cmd = [`cert=${cert}`, ...extra, ...args].join(' ');
  assert.deepEqual({ cmd, ...b }, { cmd, ...a }, `etcdctl ${cmd}`);
  return a;
}

const ok = (r: CtlResult, out: string): void => assert.deepEqual({ code: r.code, out: r.out }, { code: 0, out });
const failed = (r: CtlResult, msg: RegExp): void => {
  assert.notEqual(r.code, 0, r.out);
  assert.match(r.out, msg);
};

/** Sets up root (role root) and alice (role reader: READ on k), puts k=v0, enables auth — as root's certificate. */
async function setUp(etcd: Target, sim: Target): Promise<void> {
  for (const args of [
    ['put', 'k', 'v0'],
    ['user', 'add', 'root:rootpw'],
    ['user', 'add', 'alice:alicepw'],
    ['role', 'add', 'reader'],
    ['role', 'grant-permission', 'reader', 'read', 'k'],
    ['user', 'grant-role', 'alice', 'reader'],
    ['user', 'grant-role', 'root', 'root'],
    ['auth', 'enable'],
  ]) {
    assert.equal((await same(etcd, sim, 'root', args)).code, 0, args.join(' '));
  }
}

/** A raw KV.Range of `key` over TLS with the certificate `cert` and the metadata `md`: the error details, or 'ok'. */
async function rawRange(t: Target, cert: string, md: Record<string, string>): Promise<string> {
  const KV = etcdService('KV');
  const creds = grpc.credentials.createSsl(readFileSync(path('ca.crt')), readFileSync(path(`${cert}.key`)), readFileSync(path(`${cert}.crt`)));
  const client = new KV(t.address, creds);
  const meta = new grpc.Metadata();
  for (const [k, v] of Object.entries(md)) meta.set(k, v);
  try {
    return await new Promise<string>((resolve) => {
      client['Range']?.({ key: Buffer.from('k') }, meta, (err: grpc.ServiceError | null) => resolve(err === null ? 'ok' : `${err.code} ${err.details}`));
    });
  } finally {
    client.close();
  }
}

test('--client-cert-auth with auth enabled: the certificate CN is the user; a token wins; disabling auth ignores it', { skip }, async () => {
  await withBoth(true, async (etcd, sim) => {
    assert.equal(sim.handle === undefined ? undefined : servedServerOf(sim.handle).clientCertAuth, true);
    await setUp(etcd, sim);
    // CN=root: root may do anything, admin requests included
    ok(await same(etcd, sim, 'root', ['get', 'k']), 'k\nv0\n');
    ok(await same(etcd, sim, 'root', ['put', 'k', 'v1']), 'OK\n');
    ok(await same(etcd, sim, 'root', ['user', 'list']), 'alice\nroot\n');
    await same(etcd, sim, 'root', ['defrag']);
    // CN=alice: READ on k only
    ok(await same(etcd, sim, 'alice', ['get', 'k']), 'k\nv1\n');
    failed(await same(etcd, sim, 'alice', ['put', 'k', 'v2']), /Error: etcdserver: permission denied/);
    failed(await same(etcd, sim, 'alice', ['user', 'list']), /Error: etcdserver: permission denied/);
    failed(await same(etcd, sim, 'alice', ['defrag']), /Failed to defragment/);
    failed(await same(etcd, sim, 'alice', ['txn'], [], '\nput k v\n\n\n'), /permission denied/);
    // CN=bob names no user: not checked on the way in, refused by the checks
    failed(await same(etcd, sim, 'bob', ['get', 'k']), /Error: etcdserver: permission denied/);
    failed(await same(etcd, sim, 'bob', ['user', 'list']), /Error: etcdserver: user name not found/);
    failed(await same(etcd, sim, 'bob', ['watch', 'k']), /watch was canceled .*permission denied/);
    // no CN: the empty user name
    failed(await same(etcd, sim, 'nocn', ['get', 'k']), /Error: etcdserver: permission denied/);
    failed(await same(etcd, sim, 'nocn', ['user', 'list']), /Error: etcdserver: user name is empty/);
    // two CN attributes (alice, then root): the last one counts
    ok(await same(etcd, sim, 'multi', ['put', 'k', 'm']), 'OK\n');
    // a token wins over the certificate, either way
    ok(await same(etcd, sim, 'alice', ['put', 'k', 'v3'], ['--user=root:rootpw']), 'OK\n');
    failed(await same(etcd, sim, 'root', ['put', 'k', 'v4'], ['--user=alice:alicepw']), /Error: etcdserver: permission denied/);
    ok(await same(etcd, sim, 'root', ['get', 'k'], ['--user=alice:alicepw']), 'k\nv3\n');
    // a request marked as coming through the gRPC gateway: etcd ignores the CN
    for (const t of [etcd, sim]) {
      assert.equal(await rawRange(t, 'root', {}), 'ok', `${t.name}: raw Range as CN=root`);
      assert.equal(await rawRange(t, 'root', { 'grpcgateway-accept': 'application/json' }), `${grpc.status.INVALID_ARGUMENT} etcdserver: user name is empty`, `${t.name}: gateway`);
    }
    // auth disabled (by CN=root): the CN no longer matters
    ok(await same(etcd, sim, 'root', ['auth', 'disable']), 'Authentication Disabled\n');
    ok(await same(etcd, sim, 'bob', ['put', 'k', 'v5']), 'OK\n');
    ok(await same(etcd, sim, 'nocn', ['get', 'k']), 'k\nv5\n');
    ok(await same(etcd, sim, 'alice', ['put', 'k', 'v6']), 'OK\n');
  });
});

test('--trusted-ca-file without --client-cert-auth: a client certificate is required but its CN is no user', { skip }, async () => {
  await withBoth(false, async (etcd, sim) => {
    assert.equal(sim.handle === undefined ? undefined : servedServerOf(sim.handle).clientCertAuth, false);
    await setUp(etcd, sim);
    failed(await same(etcd, sim, 'root', ['get', 'k']), /Error: etcdserver: user name is empty/);
    failed(await same(etcd, sim, 'root', ['put', 'k', 'v1']), /Error: etcdserver: user name is empty/);
    failed(await same(etcd, sim, 'root', ['user', 'list']), /Error: etcdserver: user name is empty/);
    ok(await same(etcd, sim, 'alice', ['put', 'k', 'v1'], ['--user=root:rootpw']), 'OK\n');
    ok(await same(etcd, sim, 'root', ['get', 'k'], ['--user=alice:alicepw']), 'k\nv1\n');
    failed(await same(etcd, sim, 'root', ['put', 'k', 'v2'], ['--user=alice:alicepw']), /Error: etcdserver: permission denied/);
  });
});
