/**
 * Issue 15: etcd's own Go client sees the same answers from `etcdsim serve --etcd-version 3.4` as from
 * etcd 3.4.23. test/go/conformance/main.go (clientv3, clientv3/concurrency, the raw etcdserverpb, v3lockpb
 * and v3electionpb clients) runs one fixed script — KV, txn, compaction, watch, leases, Mutex / Election /
 * STM, the v3lock and v3election services, maintenance, cluster, a little auth — against a fresh real etcd
 * and against a fresh serve(), printing one line per step with everything two fresh members must agree on
 * (revisions exactly; IDs, sizes, hashes, versions and times normalized by the program). The two outputs
 * must be equal line by line, except the steps in KNOWN_DIFFERENCES, which must still differ (so a fix
 * shows up as a failure asking to take the entry out).
 *
 * The program is built once, offline, in GOPATH mode against Debian's golang-etcd-server-dev (etcd 3.4.23's
 * Go sources) into node_modules/.cache/etcdsim-go/, and rebuilt when main.go is newer than the binary.
 * etcd runs with the client differential's timing flags (harness.ts): its minimum lease TTL is then 2 s, the
 * simulator's default, which one step checks.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from '../../src/grpc/index.js';
import { startEtcd } from '../../src/diff/etcd_process.js';
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

/**
 * Steps where etcdsim answers otherwise than etcd 3.4.23, each with what etcd says. Found by this test;
 * left for the lead to fix in src/ or to accept. Every later step still sees the same store on both sides.
 */
const KNOWN_DIFFERENCES: Readonly<Record<string, string>> = {
  // The simulator raises no alarms and ignores Alarm ACTIVATE (src/server/maintenance_service.ts answers
  // every Alarm request with an empty list). etcd 3.4.23 activates NOSPACE on request and then refuses writes.
  'alarm-activate-nospace': 'etcd: alarms=[NOSPACE@self]; etcdsim: alarms=[]',
  'alarm-list-active': 'etcd: alarms=[NOSPACE@self]; etcdsim: alarms=[]',
  'txn-under-nospace': 'etcd: code=ResourceExhausted desc=etcdserver: mvcc: database space exceeded; etcdsim: the txn runs (its compare fails, so it writes nothing)',
  'lease-grant-under-nospace': 'etcd: code=ResourceExhausted desc=etcdserver: mvcc: database space exceeded; etcdsim: the lease is granted',
  'status-under-nospace': 'etcd: errors=["memberID:<self> alarm:NOSPACE "]; etcdsim: errors=[]',
  'alarm-deactivate': 'etcd: alarms=[NOSPACE@self] (the alarm it took off); etcdsim: alarms=[]',
  // After MemberUpdate on a learner both list it as a voter (etcd 3.4 replaces the raft attributes, losing
  // is_learner), but etcd's raft still counts it as a learner, so the single member keeps its quorum and
  // goes on changing membership. The simulator counts it as a voter that never answers: every later
  // membership change times out (after 2.7 s each) and the learner stays.
  'member-remove-learner': 'etcd: removed, members=[self]; etcdsim: code=DeadlineExceeded desc=context deadline exceeded',
  'member-remove-removed': 'etcd: code=NotFound desc=etcdserver: member not found; etcdsim: code=DeadlineExceeded',
  'member-add-removed-url': 'etcd: learner added and removed again; etcdsim: code=Unavailable desc=etcdserver: unhealthy cluster',
  'member-list-final': 'etcd: count=1; etcdsim: count=2 (the learner, now listed as a voter, is still there)',
  // Two differences: etcd 3.4.23 does not check a MemberUpdate's URLs (it takes "not a url" for the
  // member's own peer URL; the step puts the real one back), etcdsim refuses with code=InvalidArgument
  // desc=etcdserver: given member URLs are invalid. And etcdsim's restore times out, as above.
  'member-update-invalid-url': 'etcd: ok | restore: ok; etcdsim: InvalidArgument given member URLs are invalid | restore: DeadlineExceeded',
};

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

/** The step a line answers: the text before its first ": ". */
function stepOf(line: string): string {
  const i = line.indexOf(': ');
  return i < 0 ? line : line.slice(0, i);
}

function masked(lines: readonly string[]): string[] {
  return lines.map((l) => (stepOf(l) in KNOWN_DIFFERENCES ? `${stepOf(l)}: (known difference, not compared)` : l));
}

test('etcd 3.4.23 and etcdsim serve (3.4) answer etcd\'s Go client (clientv3) alike', { skip, timeout: 15 * 60_000 }, async (t) => {
  let started = Date.now();
  const bin = await buildEtcdGoProgram(SOURCE, BUILD_DIR, 'conformance');
  t.diagnostic(`build (or cache hit): ${Date.now() - started} ms`);

  started = Date.now();
  const etcd = await startEtcd({ heartbeatMs: CLIENT_ETCD_HEARTBEAT_MS, electionMs: CLIENT_ETCD_ELECTION_MS });
  let etcdLines: string[];
  try {
    etcdLines = await runProgram(bin, etcd.address);
  } finally {
    await etcd.stop();
  }
  t.diagnostic(`etcd 3.4.23 (start + script): ${Date.now() - started} ms`);

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

  await t.test('every known difference names a step of the script', () => {
    const steps = new Set(etcdLines.map(stepOf));
    assert.deepEqual(Object.keys(KNOWN_DIFFERENCES).filter((s) => !steps.has(s)), []);
  });

  await t.test('etcdsim answers every other step as etcd does', () => {
    assert.deepEqual(masked(simLines), masked(etcdLines));
  });

  await t.test('each known difference is still one (take fixed ones out of KNOWN_DIFFERENCES)', () => {
    const etcdBy = new Map(etcdLines.map((l) => [stepOf(l), l]));
    const simBy = new Map(simLines.map((l) => [stepOf(l), l]));
    const nowEqual = Object.keys(KNOWN_DIFFERENCES).filter((s) => etcdBy.get(s) !== undefined && etcdBy.get(s) === simBy.get(s));
    assert.deepEqual(nowEqual, []);
  });
});
