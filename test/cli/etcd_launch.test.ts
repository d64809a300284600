/**
 * How `etcd` (etcdsim as the etcd binary) starts: bin/etcd_launch.sh, which install-bin's DIR/etcd and the
 * process tests run, starts the member from the build's V8 start-up snapshot only when that snapshot can be
 * trusted — a finished build, no file under src/ newer than it, the blob made by this very Node binary — and
 * otherwise hands over to bin/etcdsim.js; either way without NODE_EXTRA_CA_CERTS, which etcd does not read and
 * Node would parse at every start. The choice is tested on a package of its own with a stand-in Node
 * that prints what it was asked to run; then the real snapshot of this checkout's build starts a member that
 * serves, with today's time in its log and in the certificate --peer-auto-tls makes (the builder made one
 * too, to have x509's schemas in the snapshot: what it saw must not leak into the process).
 * The second test needs a fresh build with a snapshot (`npm ci` makes one); without it the test skips, in
 * CI it fails.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { etcdsimCommand } from '../../src/diff/etcd_cluster.js';
import { freePort } from '../../src/diff/etcd_process.js';
import { inCI } from '../support/prerequisites.js';

const LAUNCH = resolve('bin/etcd_launch.sh');

test('the launcher starts the snapshot only from a finished, fresh build made by the same Node', () => {
  const root = mkdtempSync(join(tmpdir(), 'etcdsim-launch-'));
  try {
    mkdirSync(join(root, 'bin'));
    mkdirSync(join(root, 'dist'));
    mkdirSync(join(root, 'src'));
    cpSync(LAUNCH, join(root, 'bin', 'etcd_launch.sh'));
    const node = join(root, 'node');
    const extraCa = join(root, 'extra-ca');
    writeFileSync(node, `#!/bin/sh\necho "$@"\nprintf %s "\${NODE_EXTRA_CA_CERTS-unset}" > '${extraCa}'\n`);
    chmodSync(node, 0o755);
    const at = (path: string, seconds: number): void => utimesSync(path, seconds, seconds);
    const blob = join(root, 'dist', 'etcd.blob');
    const stamp = join(root, 'dist', '.build-stamp');
    const source = join(root, 'src', 'a.ts');
    writeFileSync(blob, '');
    writeFileSync(stamp, '');
    writeFileSync(source, '');
    at(node, 1_000_000);
    at(blob, 1_000_000);
    at(source, 2_000_000);
    at(stamp, 2_000_000);
    const started = (): string =>
      execFileSync('/bin/sh', [join(root, 'bin', 'etcd_launch.sh'), '--name', "a b'c"], { env: { PATH: process.env['PATH'], ETCDSIM_NODE: node, NODE_EXTRA_CA_CERTS: '/etc/ssl/certs/ca-certificates.crt' }, encoding: 'utf8' }).trim();
    const fromSnapshot = `--snapshot-blob ${root}/bin/../dist/etcd.blob -- --name a b'c`;
    const fromCommand = `${root}/bin/../bin/etcdsim.js etcd --name a b'c`;

    assert.equal(started(), fromSnapshot);
    assert.equal(readFileSync(extraCa, 'utf8'), 'unset', "the member's Node does not parse NODE_EXTRA_CA_CERTS");
    at(source, 2_000_001);
    assert.equal(started(), fromCommand, 'a source newer than the build');
    assert.equal(readFileSync(extraCa, 'utf8'), 'unset', 'nor on the way through bin/etcdsim.js');
    rmSync(join(root, 'src'), { recursive: true });
    assert.equal(started(), fromSnapshot, 'an installed package has no src/');
    at(node, 1_000_001);
    assert.equal(started(), fromCommand, 'another Node binary than the one that made the blob');
    at(node, 999_999);
    assert.equal(started(), fromCommand, 'an older one either');
    at(node, 1_000_000);
    rmSync(stamp);
    assert.equal(started(), fromCommand, 'a build that did not finish');
    writeFileSync(stamp, '');
    rmSync(blob);
    assert.equal(started(), fromCommand, 'a build without a snapshot');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

/** The launcher's own test of a fresh build (bin/build_fresh.js, plain JavaScript without declarations). */
const { buildIsFresh } = (await import(pathToFileURL(resolve('bin/build_fresh.js')).href)) as { buildIsFresh(): boolean };

function snapshotPrerequisites(): string | false {
  if (buildIsFresh() && existsSync(resolve('dist/etcd.blob'))) return false;
  if (inCI) throw new Error('dist/ is not a fresh build with dist/etcd.blob: `npm ci` should have built it (scripts/build.mjs)');
  return 'dist/ is older than src/ or has no start-up snapshot (run `npm run build`)';
}

test("a member started from the snapshot serves, and its log and self-signed peer certificate have its own process's time", { skip: snapshotPrerequisites(), timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-snapshot-'));
  const cmd = etcdsimCommand('3.4');
  const port = await freePort();
  const peer = await freePort();
  const args = [
    '--name', 's', '--data-dir', join(dir, 'data'),
    '--listen-client-urls', `http://127.0.0.1:${port}`, '--advertise-client-urls', `http://127.0.0.1:${port}`,
    '--listen-peer-urls', `https://127.0.0.1:${peer}`, '--initial-advertise-peer-urls', `https://127.0.0.1:${peer}`,
    '--initial-cluster', `s=https://127.0.0.1:${peer}`, '--peer-auto-tls',
  ];
  const spawnedAt = Date.now();
  const child = spawn(cmd.command, [...cmd.args, ...args], { env: { ...process.env, ...cmd.env } });
  try {
    let stderr = '';
    const ready = await new Promise<boolean>((res) => {
      const guard = setTimeout(() => res(false), 50_000);
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
        if (!stderr.includes('ready to serve client requests')) return;
        clearTimeout(guard);
        res(true);
      });
      child.on('close', () => res(false));
    });
    assert.ok(ready, stderr);
    const cmdline = readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').split('\0');
    assert.ok(cmdline.includes('--snapshot-blob'), `started from the snapshot: ${cmdline.join(' ')}`);
    const answer = await fetch(`http://127.0.0.1:${port}/v3/kv/put`, { method: 'POST', body: JSON.stringify({ key: 'YQ==', value: 'MQ==' }) });
    assert.equal(answer.status, 200);
    // capnslog's local time, to the second: the builder's time origin would put it at the build.
    const stamp = /^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\.\d{6} I \| etcdmain: etcd Version/m.exec(stderr);
    assert.ok(stamp !== null, stderr);
    const [y, mo, d, h, mi, s] = stamp.slice(1).map(Number) as [number, number, number, number, number, number];
    const logged = new Date(y, mo - 1, d, h, mi, s).getTime();
    assert.ok(logged >= spawnedAt - 1_000 && logged <= Date.now(), `logged at ${stamp[0]}, started at ${new Date(spawnedAt).toString()}`);
    const cert = new X509Certificate(readFileSync(join(dir, 'data', 'fixtures', 'peer', 'cert.pem')));
    const from = new Date(cert.validFrom).getTime(); // to the second
    assert.ok(from >= spawnedAt - 1_000 && from <= Date.now(), `the peer certificate is valid from ${cert.validFrom}, the member started at ${new Date(spawnedAt).toString()}`);
    assert.equal(cert.subjectAltName, 'IP Address:127.0.0.1');
  } finally {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
