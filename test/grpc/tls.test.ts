import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Etcd3 } from 'etcd3';
import { parseServeFlags, SERVE_FLAG_DEFAULTS, type ServeFlags } from '../../src/cli/serve.js';
import { ctl, startEtcdTls, startSim, withTlsPair, type CtlResult, type Target } from './etcdctl_helpers.js';
import { requireCommand, requireCommands } from '../support/prerequisites.js';
import { CLIENT_EXT, SERVER_EXT, TestPki } from './pki.js';

// etcdsim serve over TLS (etcd's --cert-file / --key-file / --trusted-ca-file / --client-cert-auth), with a
// throwaway CA made by openssl for this file: etcdctl and the etcd3 client against it, compared with a real
// etcd 3.4.23 given the same certificates and flags.
/** The throwaway CA needs openssl; the comparisons need etcd and etcdctl too. */
const skipPki = requireCommand('openssl');
const skipCtl = requireCommands(['etcdctl', 'openssl']);
const skip = requireCommands(['etcd', 'etcdctl', 'openssl']);

const pki = new TestPki('etcdsim-tls-');
/** Paths of the PEM files made in `before`. */
const f = { ca: '', serverCert: '', serverKey: '', clientCert: '', clientKey: '', rogueCert: '', rogueKey: '' };

before(() => {
  if (skipPki !== false) return;
  pki.ca('ca');
  pki.ca('rogue-ca');
  pki.issue('server', '/CN=localhost', 'ca', SERVER_EXT);
  pki.issue('client', '/CN=app', 'ca', CLIENT_EXT);
  pki.issue('rogue', '/CN=app', 'rogue-ca', CLIENT_EXT);
  const p = (n: string): string => pki.path(n);
  Object.assign(f, {
    ca: p('ca.crt'),
    serverCert: p('server.crt'),
    serverKey: p('server.key'),
    clientCert: p('client.crt'),
    clientKey: p('client.key'),
    rogueCert: p('rogue.crt'),
    rogueKey: p('rogue.key'),
  });
});
after(() => pki.remove());

/** Starts both targets with these TLS settings, runs `body`, stops both. */
function withBoth(tls: { ca?: boolean; clientCertAuth?: boolean }, flags: string[], body: (etcd: Target, sim: Target) => Promise<void>): Promise<void> {
  const files = { certFile: f.serverCert, keyFile: f.serverKey, trustedCaFile: tls.ca === true ? f.ca : undefined, clientCertAuth: tls.clientCertAuth };
  return withTlsPair(files, flags, body);
}

/** Runs etcdctl on both (with `flags` instead of the targets' own when given); the outputs must be equal. */
async function same(etcd: Target, sim: Target, args: string[], flags?: string[]): Promise<CtlResult> {
  const a = await ctl(flags === undefined ? etcd : { ...etcd, flags }, args);
  const b = await ctl(flags === undefined ? sim : { ...sim, flags }, args);
  const cmd = [...(flags ?? []), ...args].join(' ');
  assert.deepEqual({ cmd, ...b }, { cmd, ...a }, `etcdctl ${cmd}`);
  return a;
}

/** A command that cannot connect: fail fast, with etcdctl's own message. */
const FAST_FAIL = ['--dial-timeout=1s', '--command-timeout=1s'];

test('server TLS: etcdctl --cacert puts and gets; https:// endpoints work; a plaintext client cannot talk to the port', { skip }, async () => {
  await withBoth({}, [`--cacert=${f.ca}`], async (etcd, sim) => {
    assert.equal((await same(etcd, sim, ['put', '/t/a', '1'])).out, 'OK\n');
    await same(etcd, sim, ['put', '/t/b', '2', '--prev-kv']);
    await same(etcd, sim, ['put', '/t/a', '3', '--prev-kv', '-w', 'json']);
    const got = await same(etcd, sim, ['get', '/t/', '--prefix']);
    assert.equal(got.out, '/t/a\n3\n/t/b\n2\n');
    await same(etcd, sim, ['get', '/t/', '--prefix', '-w', 'json']);
    // the member advertises an https:// client URL on both
    const members = await same(etcd, sim, ['member', 'list']);
    assert.match(members.out, /https:\/\/ADDRESS/);
    // the endpoint given with its scheme; a client that trusts any certificate
    for (const t of [etcd, sim]) {
      const https = await ctl({ ...t, address: `https://${t.address}` }, ['get', '/t/a']);
      assert.deepEqual(https, { code: 0, out: '/t/a\n3\n' }, `${t.name}: https:// endpoint`);
      const skip = await ctl({ ...t, flags: [] }, ['get', '/t/b', '--insecure-transport=false', '--insecure-skip-tls-verify']);
      assert.deepEqual(skip, { code: 0, out: '/t/b\n2\n' }, `${t.name}: --insecure-skip-tls-verify`);
    }
    // plaintext gRPC against the TLS port: no connection, the command times out on both
    const pa = await same(etcd, sim, [...FAST_FAIL, 'get', '/t/a'], []);
    assert.notEqual(pa.code, 0);
    assert.match(pa.out, /context deadline exceeded/);
  });
});

test('--trusted-ca-file alone (as etcd): a client without a certificate is refused, one signed by the CA works, another CA is refused', { skip }, async () => {
  const withCert = [`--cacert=${f.ca}`, `--cert=${f.clientCert}`, `--key=${f.clientKey}`];
  await withBoth({ ca: true }, withCert, async (etcd, sim) => {
    assert.equal((await same(etcd, sim, ['put', '/c/a', 'yes'])).out, 'OK\n');
    assert.equal((await same(etcd, sim, ['get', '/c/a'])).out, '/c/a\nyes\n');
    // without a client certificate: refused in the handshake, so the command times out
    const noCert = await same(etcd, sim, [...FAST_FAIL, 'get', '/c/a'], [`--cacert=${f.ca}`]);
    assert.notEqual(noCert.code, 0);
    assert.match(noCert.out, /context deadline exceeded/);
    // a certificate from a CA the server does not trust: refused too
    const rogue = await same(etcd, sim, [...FAST_FAIL, 'get', '/c/a'], [`--cacert=${f.ca}`, `--cert=${f.rogueCert}`, `--key=${f.rogueKey}`]);
    assert.notEqual(rogue.code, 0);
    assert.match(rogue.out, /context deadline exceeded/);
  });
});

test('--client-cert-auth without --trusted-ca-file: client certificates are required and checked against the system roots', { skip }, async () => {
  // etcd verifies them with Go's system pool, etcdsim with Node's default roots: our CA is in neither
  const withCert = [`--cacert=${f.ca}`, `--cert=${f.clientCert}`, `--key=${f.clientKey}`];
  const read = (p: string): Buffer => readFileSync(p);
  const started = await Promise.allSettled([
    startEtcdTls({ certFile: f.serverCert, keyFile: f.serverKey, clientCertAuth: true }, withCert),
    startSim({ tls: { cert: read(f.serverCert), key: read(f.serverKey), clientCertAuth: true }, flags: withCert }),
  ]);
  for (const [i, r] of started.entries()) {
    const name = i === 0 ? 'etcd' : 'etcdsim';
    if (r.status === 'fulfilled') {
      await r.value.close();
      assert.fail(`${name} answered etcdctl with a client certificate its system roots do not trust`);
    }
    // (starting runs `member list`: refused in the handshake, it times out)
    assert.match(String(r.reason), /member list printed .*context deadline exceeded/s, name);
  }
});

test('--client-cert-auth with --trusted-ca-file: the same as --trusted-ca-file alone', { skip }, async () => {
  const withCert = [`--cacert=${f.ca}`, `--cert=${f.clientCert}`, `--key=${f.clientKey}`];
  await withBoth({ ca: true, clientCertAuth: true }, withCert, async (etcd, sim) => {
    await same(etcd, sim, ['put', '/cc/a', '1']);
    await same(etcd, sim, ['get', '/cc/a', '-w', 'json']);
    const noCert = await same(etcd, sim, [...FAST_FAIL, 'get', '/cc/a'], [`--cacert=${f.ca}`]);
    assert.notEqual(noCert.code, 0);
    assert.match(noCert.out, /context deadline exceeded/);
  });
});

/** An etcd3 client over TLS to `t`; closed by the caller. */
function etcd3(t: Target, credentials: { rootCertificate: Buffer; privateKey?: Buffer; certChain?: Buffer }): Etcd3 {
  return new Etcd3({ hosts: `https://${t.address}`, credentials });
}

test('the etcd3 client over TLS: a root certificate for server TLS, plus a key and chain for client certificates', { skip: skipPki }, async () => {
  const root = readFileSync(f.ca);
  const server = await startSim({ tls: { cert: readFileSync(f.serverCert), key: readFileSync(f.serverKey) }, flags: [`--cacert=${f.ca}`] });
  try {
    const c = etcd3(server, { rootCertificate: root });
    try {
      await c.put('/e/a').value('tls');
      assert.equal(await c.get('/e/a').string(), 'tls');
      // a watch stream over the same TLS connection
      const w = await c.watch().key('/e/w').create();
      const seen = new Promise<string>((resolve) => w.on('put', (kv) => resolve(kv.value.toString())));
      await c.put('/e/w').value('event');
      assert.equal(await seen, 'event');
      await w.cancel();
    } finally {
      c.close();
    }
    // a client that does not trust the server's CA fails the handshake
    const stranger = etcd3(server, { rootCertificate: readFileSync(pki.path('rogue-ca.crt')) });
    try {
      await assert.rejects(stranger.get('/e/a').string(), /UNAVAILABLE|certificate|self.signed|unable to verify/i);
    } finally {
      stranger.close();
    }
  } finally {
    await server.close();
  }

  const mutual = await startSim({ tls: { cert: readFileSync(f.serverCert), key: readFileSync(f.serverKey), ca: root }, flags: [`--cacert=${f.ca}`, `--cert=${f.clientCert}`, `--key=${f.clientKey}`] });
  try {
    const c = etcd3(mutual, { rootCertificate: root, privateKey: readFileSync(f.clientKey), certChain: readFileSync(f.clientCert) });
    try {
      await c.put('/e/m').value('mutual');
      assert.equal(await c.get('/e/m').string(), 'mutual');
    } finally {
      c.close();
    }
    const noCert = etcd3(mutual, { rootCertificate: root });
    try {
      await assert.rejects(noCert.get('/e/m').string(), /UNAVAILABLE|certificate|handshake|alert/i);
    } finally {
      noCert.close();
    }
  } finally {
    await mutual.close();
  }
});

test('etcdsim serve over https: the ready line names an https:// endpoint, etcdctl with client certificates works, SIGTERM stops it', { skip: skipCtl }, async () => {
  const child = spawn(
    process.execPath,
    [
      'bin/etcdsim.js', 'serve', '--listen-client-urls', 'https://127.0.0.1:0', '--etcd-version', '3.4',
      '--cert-file', f.serverCert, '--key-file', f.serverKey, '--trusted-ca-file', f.ca, '--client-cert-auth',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    const address = await new Promise<string>((resolve, reject) => {
      const guard = setTimeout(() => reject(new Error(`no ready line; stdout ${out}; stderr ${err}`)), 20_000);
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /^etcdsim serving etcd v3 API on https:\/\/(127\.0\.0\.1:\d+)\n/.exec(out);
        if (m?.[1] !== undefined) {
          clearTimeout(guard);
          resolve(m[1]);
        }
      });
      void exited.then((code) => {
        clearTimeout(guard);
        reject(new Error(`exited ${code}: ${err}`));
      });
    });
    const t: Target = { name: 'etcdsim', address, flags: [`--cacert=${f.ca}`, `--cert=${f.clientCert}`, `--key=${f.clientKey}`], peerUrl: '', subst: [], leases: 0, close: async () => {} };
    assert.deepEqual(await ctl(t, ['put', 'k', 'v']), { code: 0, out: 'OK\n' });
    assert.deepEqual(await ctl(t, ['get', 'k', '--print-value-only']), { code: 0, out: 'v\n' });
    const noCert = await ctl({ ...t, flags: [`--cacert=${f.ca}`] }, [...FAST_FAIL, 'get', 'k']);
    assert.notEqual(noCert.code, 0);
  } finally {
    child.kill('SIGTERM');
  }
  assert.equal(await exited, 0, err);
  assert.equal(err, '');
});

test('serve flags: TLS as etcd reads it (cert files ignored on an http:// URL with a warning)', { skip: skipPki }, () => {
  const base: ServeFlags = { ...SERVE_FLAG_DEFAULTS, listenClientUrls: 'https://127.0.0.1:0', etcdVersion: '3.4' };
  const warnings: string[] = [];
  const warn = (m: string): void => {
    warnings.push(m);
  };
  const full = parseServeFlags({ ...base, certFile: f.serverCert, keyFile: f.serverKey, trustedCaFile: f.ca, clientCertAuth: true }, warn);
  assert.equal(full.tls?.cert.toString(), readFileSync(f.serverCert, 'utf8'));
  assert.equal(full.tls?.key.toString(), readFileSync(f.serverKey, 'utf8'));
  assert.equal(full.tls?.ca?.toString(), readFileSync(f.ca, 'utf8'));
  assert.equal(full.tls?.clientCertAuth, true);
  assert.equal(parseServeFlags({ ...base, certFile: f.serverCert, keyFile: f.serverKey }, warn).tls?.ca, undefined);
  assert.deepEqual(warnings, []);
  // etcd: "The scheme of client url http://... is HTTP while peer key/cert files are presented. Ignored key/cert files."
  const plain = parseServeFlags({ ...base, listenClientUrls: 'http://127.0.0.1:0', certFile: f.serverCert, keyFile: f.serverKey }, warn);
  assert.equal(plain.tls, undefined);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0] ?? '', /http:\/\/127\.0\.0\.1:0 is HTTP .*ignoring/);
  // etcd: "TLS key/cert (--cert-file, --key-file) must be provided for client url https://... with HTTPS scheme"
  assert.throws(() => parseServeFlags(base, warn), /needs --cert-file and --key-file/);
  assert.throws(() => parseServeFlags({ ...base, certFile: f.serverCert }, warn), /go together/);
});
