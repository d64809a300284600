/**
 * Issue 15: etcd's own Go client sees the same answers from `etcdsim serve --etcd-version 3.4` as from
 * etcd 3.4.23. test/go/conformance/main.go (clientv3, clientv3/concurrency, the raw etcdserverpb, v3lockpb
 * and v3electionpb clients) runs one fixed script — KV, txn, compaction, watch, leases, Mutex / Election /
 * STM, the v3lock and v3election services, maintenance, cluster, a little auth — against a fresh real etcd
 * and against a fresh serve(), printing one line per step with everything two fresh members must agree on
 * (revisions exactly; IDs, sizes, hashes, versions and times normalized by the program). The two outputs
 * must be equal line by line. (It found etcd's alarms missing and a learner's role after MemberUpdate wrong;
 * both are modelled now.)
 *
 * The program is built once, offline, in GOPATH mode against Debian's golang-etcd-server-dev (etcd 3.4.23's
 * Go sources) into node_modules/.cache/etcdsim-go/, and rebuilt when main.go is newer than the binary.
 * etcd runs with the client differential's timing flags (harness.ts): its minimum lease TTL is then 2 s, the
 * simulator's default, which one step checks.
 *
 * The etcd run goes through `etcdsim shadow` (issue 34): the program gets etcd's own answers through the
 * proxy, and the shadow's simulator, following that etcd, must answer every compared call alike — KV,
 * leases, watches, auth, maintenance, member changes, v3lock and v3election — with no divergence.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from '../../src/grpc/index.js';
import { startEtcd } from '../../src/diff/etcd_process.js';
import { startShadow, type ShadowReport } from '../../src/shadow/index.js';
import { CLIENT_ETCD_ELECTION_MS, CLIENT_ETCD_HEARTBEAT_MS } from './harness.js';
import { requireCommands, requireGoEtcdSources } from '../support/prerequisites.js';
import { buildEtcdGoProgram } from '../../src/diff/go_build.js';

const skip = requireCommands(['etcd', 'go']) || requireGoEtcdSources();

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SOURCE = join(ROOT, 'test', 'go', 'conformance', 'main.go');
const BUILD_DIR = join(ROOT, 'node_modules', '.cache', 'etcdsim-go');
const SEED = 15;

/** Steps the program runs (it ends with `end: <n> steps`): a program that prints nothing cannot pass. */
const EXPECTED_STEPS = 173;

/** Runs the script against `address`; resolves to its lines. */
function runProgram(bin: string, address: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    // clientv3 logs its retries on stderr: read it all (a full pipe would stall the program).
    execFile(bin, ['-endpoint', address], { maxBuffer: 64 << 20, timeout: 300_000 }, (err, stdout, stderr) => {
      if (err !== null) reject(new Error(`conformance against ${address} failed: ${err.message}\nstdout:\n${stdout}\nstderr (tail):\n${stderr.slice(-4000)}`));
      else resolve(stdout.split('\n').filter((l) => l !== ''));
    });
  });
}

test('etcd 3.4.23 and etcdsim serve (3.4) answer etcd\'s Go client (clientv3) alike', { skip, timeout: 15 * 60_000 }, async (t) => {
  let started = Date.now();
  const bin = await buildEtcdGoProgram(SOURCE, BUILD_DIR, 'conformance');
  t.diagnostic(`build (or cache hit): ${Date.now() - started} ms`);

  started = Date.now();
  const etcd = await startEtcd({ heartbeatMs: CLIENT_ETCD_HEARTBEAT_MS, electionMs: CLIENT_ETCD_ELECTION_MS });
  let etcdLines: string[];
  let shadowed: { report: ShadowReport; drained: boolean; divergences: string[] };
  try {
    const divergences: string[] = [];
    const shadow = await startShadow({
      etcd: etcd.address,
      host: '127.0.0.1',
      port: 0,
      heartbeatMs: CLIENT_ETCD_HEARTBEAT_MS,
      electionMs: CLIENT_ETCD_ELECTION_MS,
      onDivergence: (where) => divergences.push(where),
    });
    try {
      etcdLines = await runProgram(bin, shadow.endpoint);
      shadowed = { report: shadow.report, drained: await shadow.drained(), divergences };
    } finally {
      await shadow.close();
    }
  } finally {
    await etcd.stop();
  }
  t.diagnostic(`etcd 3.4.23 through the shadow (start + script): ${Date.now() - started} ms`);

  started = Date.now();
  const sim = await serve({ port: 0, etcdVersion: '3.4', seed: SEED });
  let simLines: string[];
  try {
    simLines = await runProgram(bin, sim.address);
  } finally {
    await sim.close();
  }
  t.diagnostic(`etcdsim (start + script): ${Date.now() - started} ms`);

  await t.test('the script ran to its end on etcd', () => {
    assert.equal(etcdLines.length, EXPECTED_STEPS + 1, etcdLines.join('\n'));
    assert.equal(etcdLines.at(-1), `end: ${EXPECTED_STEPS} steps`);
  });

  await t.test('etcdsim answers every step as etcd does', () => {
    assert.deepEqual(simLines, etcdLines);
  });

  await t.test("the shadow's simulator, following etcd, answered every compared call alike", () => {
    const { report, drained, divergences } = shadowed;
    const summary = [...report.summary(), ...divergences].join('\n');
    assert.equal(drained, true, summary);
    assert.equal(report.divergences, 0, summary);
    for (const rpc of ['KV.Txn', 'Watch.Watch', 'Lease.LeaseKeepAlive', 'Auth.AuthEnable', 'Maintenance.HashKV', 'Cluster.MemberAdd', 'Cluster.MemberPromote', 'Lock.Lock', 'Lock.Unlock', 'Election.Campaign', 'Election.Proclaim', 'Election.Resign']) {
      assert.ok((report.rpcs.get(rpc)?.compared ?? 0) > 0, `${rpc} compared\n${summary}`);
    }
  });
});
