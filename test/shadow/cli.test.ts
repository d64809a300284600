/**
 * `etcdsim shadow` as a user runs it: a child process in front of a real etcd 3.4.23, with the simulator
 * as 3.6 (a planted difference, see planted.test.ts). A divergence is named on stderr as it happens and
 * written under --divergence-dir; SIGTERM prints the per-RPC summary, and --fail-on-divergence makes the
 * exit status 1. Bad flags are one line and exit 2.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Buffer } from 'node:buffer';
import { startEtcd, type EtcdProcess } from '../../src/diff/etcd_process.js';
import { connectEtcd } from '../../src/grpc/client.js';
import { runCli } from '../../src/cli/program.js';
import { requireCommands } from '../support/prerequisites.js';
import { ELECTION_MS, HEARTBEAT_MS, spawnShadow } from './helpers.js';

const skip = requireCommands(['etcd']);
const dir = mkdtempSync(join(tmpdir(), 'etcdsim-shadow-cli-'));
let etcd: EtcdProcess;
before(async () => {
  if (skip === false) etcd = await startEtcd({ heartbeatMs: HEARTBEAT_MS, electionMs: ELECTION_MS });
});
after(async () => {
  await etcd?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('etcdsim shadow: divergences on stderr and in --divergence-dir, the summary at SIGTERM, exit 1 with --fail-on-divergence', { skip }, async () => {
  const shadow = await spawnShadow(['--etcd', etcd.address, '--listen-client-urls', 'http://127.0.0.1:0', '--etcd-version', '3.6', '--divergence-dir', dir, '--fail-on-divergence', '--stats-interval', '1']);
  const endpoint = shadow.endpoint;
  const c = connectEtcd(endpoint);
  const k = Buffer.from('/k');
  try {
    await c.kv.put({ key: k, value: Buffer.from('1') });
    const del = await c.kv.deleteRange({ key: k });
    await c.kv.compact({ revision: del.header.revision, physical: true });
    const w = c.watch.watch();
    let events = 0;
    w.onResponse((rs) => (events += rs.reduce((n, r) => n + r.events.length, 0)));
    w.write({ create_request: { key: k, start_revision: del.header.revision } });
    await c.kv.put({ key: k, value: Buffer.from('2') });
    for (let i = 0; i < 3000 && (events === 0 || !shadow.err().includes('divergence in')); i++) await new Promise((r) => setTimeout(r, 10));
    w.cancel();
    // The live line: totals, and what the simulator holds (compacted at the Compact above).
    const live = new RegExp(`etcdsim shadow: \\d+ requests, .*, holding \\d+ revisions \\(\\d+ bytes\\), compacted at ${del.header.revision}\\n`);
    for (let i = 0; i < 500 && !live.test(shadow.err()); i++) await new Promise((r) => setTimeout(r, 10));
    assert.match(shadow.err(), live);
  } finally {
    c.close();
  }
  const code = await shadow.stop();
  const [out, err] = [shadow.out(), shadow.err()];
  assert.equal(code, 1, `stdout:\n${out}\nstderr:\n${err}`);
  assert.match(err, /etcdsim shadow: divergence in Watch\.Watch id 0 \(written to .*divergence-0001\)/);
  assert.match(out, /^Watch\.Watch +\d+ +\d+ +1 /m);
  assert.match(out, /^KV\.Put +2 +2 +0 /m);
  assert.deepEqual(readdirSync(join(dir, 'divergence-0001')).sort(), ['divergence.json', 'request.json', 'scenario.etcdsim', 'scenario.json']);
});

test('etcdsim shadow: a missing --etcd or a bad --etcd-version is one line and exit 2', async () => {
  const lines: string[] = [];
  const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
  assert.equal(await runCli(['shadow'], io), 2);
  assert.deepEqual(lines, ['etcdsim shadow: --etcd HOST:PORT is required: the real etcd to shadow']);
  lines.length = 0;
  assert.equal(await runCli(['shadow', '--etcd', '127.0.0.1:1', '--etcd-version', '3.3'], io), 2);
  assert.deepEqual(lines, ['etcdsim shadow: --etcd-version must be one of 3.4, 3.5, 3.6, 3.7, got "3.3"']);
});
