/**
 * etcd's TLS flags of the client port, with etcd's own test certificates (Debian's etcd sources,
 * integration/fixtures; outside CI the test skips without them): `--client-crl-file` drops a client whose
 * certificate the CRL revokes (its next update long past, as etcd ignores), and every client when the file
 * cannot be read; `--cipher-suites` (Go's names) is the only TLS 1.2 suite list the port accepts, TLS 1.3
 * staying on as in Go. The refusal of an unknown suite is compared with etcd's in etcd_binary.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { GO_ETCD_SOURCE_ROOT } from '../../src/diff/go_build.js';
import { freePort } from '../../src/diff/etcd_process.js';
import { requireGoEtcdSources } from '../support/prerequisites.js';

const FIXTURES = join(GO_ETCD_SOURCE_ROOT, 'src', 'go.etcd.io', 'etcd', 'integration', 'fixtures');
const skip = requireGoEtcdSources();

/** Starts etcdsim etcd on https with etcd's server certificate and `flags`; resolves once it is ready. */
async function start(flags: readonly string[]): Promise<{ port: number; stop(): Promise<void> }> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-tls-flags-'));
  const url = `https://127.0.0.1:${port}`;
  const child = spawn(
    process.execPath,
    [resolve('bin/etcdsim.js'), 'etcd', '--data-dir', join(dir, 'd'), '--listen-client-urls', url, '--advertise-client-urls', url, '--listen-peer-urls', `http://127.0.0.1:${await freePort()}`,
      '--cert-file', join(FIXTURES, 'server.crt'), '--key-file', join(FIXTURES, 'server.key.insecure'), '--trusted-ca-file', join(FIXTURES, 'ca.crt'), '--client-cert-auth', ...flags],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ETCDSIM_ETCD_VERSION: '3.4' } },
  );
  const exited = new Promise<void>((res) => child.on('exit', () => res()));
  let err = '';
  await new Promise<void>((res, rej) => {
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      if (err.includes('enabled capabilities for version')) res();
    });
    void exited.then(() => rej(new Error(`exited: ${err}`)));
  });
  return {
    port,
    stop: async () => {
      child.kill('SIGKILL');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** GET /health with client certificate `cert`: its status, or the error that ended the connection. */
function health(port: number, cert: string, tls: { ciphers?: string; maxVersion?: 'TLSv1.2' } = {}): Promise<string> {
  return new Promise((res) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/health',
        ca: readFileSync(join(FIXTURES, 'ca.crt')),
        cert: readFileSync(join(FIXTURES, `${cert}.crt`)),
        key: readFileSync(join(FIXTURES, `${cert}.key.insecure`)),
        agent: false,
        ...tls,
      },
      (r) => {
        r.resume();
        res(String(r.statusCode));
      },
    );
    req.on('error', (e) => res(`error ${(e as { code?: string }).code ?? e.message}`));
    req.end();
  });
}

test('--client-crl-file: a revoked client certificate is dropped, a valid one served; an unreadable CRL drops every client', { skip, timeout: 60_000 }, async () => {
  const m = await start(['--client-crl-file', join(FIXTURES, 'revoke.crl')]);
  try {
    assert.equal(await health(m.port, 'server'), '200');
    assert.match(await health(m.port, 'server-revoked'), /^error /);
  } finally {
    await m.stop();
  }
  const none = await start(['--client-crl-file', join(FIXTURES, 'no-such.crl')]);
  try {
    assert.match(await health(none.port, 'server'), /^error /);
  } finally {
    await none.stop();
  }
});

test("--cipher-suites: TLS 1.2 only with the suites named (Go's names), TLS 1.3 as before", { skip, timeout: 60_000 }, async () => {
  const m = await start(['--cipher-suites', 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256']);
  try {
    assert.equal(await health(m.port, 'server', { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-RSA-AES128-GCM-SHA256' }), '200');
    assert.match(await health(m.port, 'server', { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-RSA-AES256-GCM-SHA384' }), /^error /);
    assert.equal(await health(m.port, 'server'), '200');
  } finally {
    await m.stop();
  }
});
