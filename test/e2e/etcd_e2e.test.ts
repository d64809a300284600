/**
 * etcd's own end-to-end suite with etcdsim as the etcd binary (issue 30's acceptance): etcd 3.4.23's
 * `tests/e2e` from Debian's golang-etcd-server-dev, built offline in GOPATH mode (`go test -c`), runs its
 * single-member `ctl_v3_*` and `v3_curl_*` tests with `-bin-dir` holding a launcher named `etcd` (that runs
 * `etcdsim etcd`, ETCDSIM_ETCD_VERSION=3.4) and the real etcdctl; no test and no flag is translated. Every test
 * listed in docs/e2e.md as passing must pass; those that cannot yet are listed there with the reason and are
 * not run. A few tests also run against the real etcd 3.4.23, and the wall times of both are printed.
 *
 * The harness binds fixed ports (20000 and up): each test runs in a network namespace of its own
 * (`unshare -n`, loopback up), so tests run side by side and no other etcd on the machine is disturbed.
 * Needs root (CI runs as root), Go, Debian's etcd sources, `unshare` and `ip`; outside CI the test skips
 * without them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { GO_ETCD_SOURCE_ROOT } from '../../src/diff/go_build.js';
import { freePort } from '../../src/diff/etcd_process.js';
import { processCpuMs } from '../../src/diff/process_cpu.js';
import { findCommand, inCI, requireCommands } from '../support/prerequisites.js';

const E2E_SOURCE = join(GO_ETCD_SOURCE_ROOT, 'src', 'go.etcd.io', 'etcd', 'tests', 'e2e');
const FIXTURES = join(GO_ETCD_SOURCE_ROOT, 'src', 'go.etcd.io', 'etcd', 'integration', 'fixtures');

function prerequisites(): string | false {
  const missing = requireCommands(['etcd', 'etcdctl', 'go', 'unshare', 'ip']);
  if (missing !== false) return missing;
  if (!existsSync(E2E_SOURCE)) {
    if (inCI) throw new Error(`${E2E_SOURCE} is missing: install golang-etcd-server-dev, as .ci/run does`);
    return `etcd's e2e sources are missing (${E2E_SOURCE}): apt-get install golang-etcd-server-dev`;
  }
  if (process.getuid?.() !== 0) return 'the e2e harness runs each test in a network namespace of its own, which needs root';
  return false;
}
const skip = prerequisites();

/** docs/e2e.md's table of tests that cannot pass yet: their names. */
function knownFailing(): Set<string> {
  const doc = readFileSync('docs/e2e.md', 'utf8');
  return new Set([...doc.matchAll(/^\| `(Test\w+)` \|/gm)].map((m) => m[1]!));
}

const CACHE = join(tmpdir(), 'etcdsim-e2e');

/** etcd 3.4.23's e2e test binary, built once per machine (about a minute on two cores). */
function buildE2e(): Promise<string> {
  const bin = join(CACHE, 'e2e.test');
  if (existsSync(bin)) return Promise.resolve(bin);
  mkdirSync(CACHE, { recursive: true });
  const env = { ...process.env, GOPATH: GO_ETCD_SOURCE_ROOT, GO111MODULE: 'off', GOPROXY: 'off', GOFLAGS: '', GOCACHE: join(CACHE, 'gocache') };
  return new Promise((res, rej) => {
    execFile('go', ['test', '-c', '-o', `${bin}.tmp`, '.'], { cwd: E2E_SOURCE, env, maxBuffer: 16 << 20 }, (err, _o, stderr) => {
      if (err !== null) return rej(new Error(`go test -c in ${E2E_SOURCE} failed:\n${stderr}`));
      cpSync(`${bin}.tmp`, bin);
      rmSync(`${bin}.tmp`);
      res(bin);
    });
  });
}

/**
 * The two bin dirs: one with the `etcdsim etcd` launcher, one with the real etcd, both with the real etcdctl.
 * Each `etcd` there is a shell wrapper that counts its starts (a line in `<dir>.starts`, see startsIn) and
 * execs the binary: the same one extra `sh` for both, so the comparison stays even.
 */
function layout(): { root: string; simBin: string; etcdBin: string } {
  const root = join(CACHE, 'run');
  mkdirSync(root, { recursive: true });
  const simBin = join(root, 'bin-etcdsim');
  const etcdBin = join(root, 'bin-etcd');
  const simLauncher = join(root, 'etcdsim-launcher');
  for (const d of [simBin, etcdBin, simLauncher]) {
    rmSync(d, { recursive: true, force: true });
    rmSync(`${d}.starts`, { force: true });
    mkdirSync(d);
  }
  execFileSync(process.execPath, [resolve('bin/etcdsim.js'), 'install-bin', simLauncher]);
  for (const [d, real] of [[simBin, join(simLauncher, 'etcd')], [etcdBin, findCommand('etcd')!]] as const) {
    symlinkSync(findCommand('etcdctl')!, join(d, 'etcdctl'));
    writeFileSync(join(d, 'etcd'), `#!/bin/sh\necho >> '${d}.starts'\nexec '${real}' "$@"\n`, { mode: 0o755 });
  }
  return { root, simBin, etcdBin };
}

/** How many times `binDir`/etcd was started since the last call (and the count starts again). */
function startsIn(binDir: string): number {
  const file = `${binDir}.starts`;
  const n = existsSync(file) ? readFileSync(file, 'utf8').length : 0;
  rmSync(file, { force: true });
  return n;
}

/**
 * The folder one worker runs its tests in: `wN/tests/e2e`, with `wN/integration/fixtures` a copy of etcd's
 * fixtures (some tests write beside them). One per worker because tests write fixed relative paths in their
 * working directory: TestCtlV3SnapshotCorrupt and TestCtlV3SnapshotStatusBeforeRestore both restore into
 * `snap.etcd`, and run side by side in one folder the second restore finds the first one's data dir (seen in
 * a CI run: "Error: data-dir \"snap.etcd\" exists"). etcd's own CI runs them one after another.
 */
function workerDir(root: string, worker: number): { cwd: string; certDir: string } {
  const base = join(root, `w${worker}`);
  const cwd = join(base, 'tests', 'e2e');
  const certDir = join(base, 'integration', 'fixtures');
  rmSync(cwd, { recursive: true, force: true });
  mkdirSync(cwd, { recursive: true });
  if (!existsSync(certDir)) cpSync(FIXTURES, certDir, { recursive: true });
  return { cwd, certDir };
}

interface Outcome {
  readonly name: string;
  readonly passed: boolean;
  readonly ms: number;
  readonly output: string;
}

/**
 * One test in a network namespace of its own (fixed ports), bounded by the harness's own timeout.
 * `-test.short` turns off only the harness's goroutine-leak check after the test (etcd's testutil; no e2e test
 * reads testing.Short()): it counts the harness's own pty readers, and `ctlV3User` never closes the etcdctl it
 * spawns, so a test that passed fails whenever that etcdctl has not exited yet when the check runs — seen
 * under load in TestCtlV3UserAddPeerTLS, and a known flake of etcd's own CI (etcd-io/etcd#6785). It says
 * nothing about the server, real or simulated.
 */
function runOne(bin: string, name: string, binDir: string, where: { cwd: string; certDir: string }): Promise<Outcome> {
  const started = performance.now();
  const cmd = `ip link set lo up && exec ${bin} -test.run '^${name}$' -bin-dir ${binDir} -cert-dir ${where.certDir} -test.short -test.timeout 90s`;
  return new Promise((res) => {
    const child = spawn('unshare', ['-n', 'sh', '-c', cmd], { cwd: where.cwd, env: { ...process.env, ETCDSIM_ETCD_VERSION: '3.4' } });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
    child.stderr.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
    child.on('close', (code) => res({ name, passed: code === 0, ms: performance.now() - started, output }));
  });
}

async function runAll(bin: string, names: readonly string[], binDir: string, root: string, parallel: number): Promise<{ outcomes: Outcome[]; wallMs: number }> {
  const started = performance.now();
  const queue = [...names];
  const outcomes: Outcome[] = [];
  const worker = async (i: number): Promise<void> => {
    const where = workerDir(root, i);
    for (let n = queue.shift(); n !== undefined; n = queue.shift()) outcomes.push(await runOne(bin, n, binDir, where));
  };
  await Promise.all(Array.from({ length: parallel }, (_, i) => worker(i)));
  return { outcomes, wallMs: performance.now() - started };
}

/** The single-member v3 tests of the suite: ctl_v3_* and v3_curl_*, by name. */
function listTests(bin: string): Promise<string[]> {
  return new Promise((res, rej) => {
    execFile(bin, ['-test.list', '.*'], (err, out) => {
      if (err !== null) return rej(err);
      res(out.split('\n').filter((n) => /^Test(CtlV3|V3Curl)/.test(n)));
    });
  });
}

/**
 * What a test pays per member, measured apart from the suite: `DIR/etcd` spawned with the flags the harness
 * gives a ctl test's member (its default configuration, configAutoTLS: https peer URLs with `--peer-auto-tls`,
 * so the member makes a self-signed certificate at every start), the time until both lines the harness waits
 * for (`published`, `enabled capabilities`), the CPU the member had used by then (what a loaded machine turns
 * into wall time), and the time from the stop signal until it has exited — SIGKILL, the harness's own stop
 * (expect.ExpectProcess's default), on even starts, SIGINT on odd ones. Medians of `times` starts, one at a
 * time, with quartiles.
 */
async function startStop(binDir: string, times: number): Promise<{ readyMs: number; text: string; stopText: string }> {
  const ready: number[] = [];
  const exit: Record<'SIGKILL' | 'SIGINT', number[]> = { SIGKILL: [], SIGINT: [] };
  const cpu: number[] = [];
  for (let i = 0; i < times; i++) {
    const dir = mkdtempSync(join(tmpdir(), 'etcdsim-e2e-start-'));
    const [client, peer] = [await freePort(), await freePort()];
    const url = (scheme: string, port: number): string => `${scheme}://localhost:${port}`;
    const args = ['--name', 'testname0', '--listen-client-urls', url('http', client), '--advertise-client-urls', url('http', client), '--listen-peer-urls', url('https', peer), '--initial-advertise-peer-urls', url('https', peer), '--initial-cluster-token', 'new', '--data-dir', join(dir, 'm.etcd'), '--snapshot-count', '100000', '--experimental-initial-corrupt-check', '--peer-auto-tls', '--initial-cluster', `testname0=${url('https', peer)}`];
    const started = performance.now();
    const child = spawn(join(binDir, 'etcd'), args, { env: { ...process.env, ETCDSIM_ETCD_VERSION: '3.4' } });
    const exited = new Promise<void>((res) => child.on('close', () => res()));
    let log = '';
    const up = await new Promise<boolean>((res) => {
      child.stderr.on('data', (d: Buffer) => {
        log += d.toString();
        if (log.includes('published') && log.includes('enabled capabilities for version')) res(true);
      });
      void exited.then(() => res(false));
    });
    assert.ok(up, `${binDir}/etcd served:\n${log}`);
    ready.push(performance.now() - started);
    const used = processCpuMs(child.pid!); // the wrappers exec: the pid is the member's
    if (used !== undefined) cpu.push(used);
    const signal = i % 2 === 0 ? 'SIGKILL' : 'SIGINT';
    const stopping = performance.now();
    child.kill(signal);
    await exited;
    exit[signal].push(performance.now() - stopping);
    rmSync(dir, { recursive: true, force: true });
  }
  const at = (xs: number[], q: number): number => [...xs].sort((a, b) => a - b)[Math.round((xs.length - 1) * q)]!;
  const quartiles = (xs: number[]): string => `${at(xs, 0.5).toFixed(0)} (${at(xs, 0.25).toFixed(0)}–${at(xs, 0.75).toFixed(0)}) ms`;
  const text = `spawn to ready ${quartiles(ready)}, CPU by then ${cpu.length === 0 ? 'not measured' : quartiles(cpu)}`;
  const stopText = `SIGKILL ${at(exit.SIGKILL, 0.5).toFixed(0)} ms, SIGINT ${at(exit.SIGINT, 0.5).toFixed(0)} ms`;
  return { readyMs: at(ready, 0.5), text, stopText };
}

/** A few tests run against both binaries, for the wall-time comparison (start-up is most of a test). */
const TIMED = ['TestCtlV3Put', 'TestCtlV3Get', 'TestCtlV3Del', 'TestCtlV3Watch', 'TestCtlV3LeaseGrantTimeToLive', 'TestCtlV3UserAdd', 'TestCtlV3RoleAdd', 'TestCtlV3AuthEnable', 'TestCtlV3Compact', 'TestV3CurlPutGetNoTLS'];

test("etcd 3.4.23's e2e suite (ctl_v3_*, v3_curl_*, single member) passes with etcdsim as the etcd binary", { skip, timeout: 15 * 60_000 }, async () => {
  const bin = await buildE2e();
  const where = layout();
  const failing = knownFailing();
  const all = await listTests(bin);
  assert.ok(all.length > 150, `the suite lists ${all.length} tests`);
  for (const f of failing) assert.ok(all.includes(f), `docs/e2e.md names ${f}, which the suite does not have`);
  const only = process.env['ETCDSIM_E2E_ONLY'];
  const names = all.filter((n) => !failing.has(n) && (only === undefined || new RegExp(only).test(n)));
  const sim = await runAll(bin, names, where.simBin, where.root, 3);
  const failed = sim.outcomes.filter((o) => !o.passed);
  startsIn(where.simBin);
  const simTimed = await runAll(bin, TIMED, where.simBin, where.root, 1);
  const simStarts = startsIn(where.simBin);
  const etcdTimed = await runAll(bin, TIMED, where.etcdBin, where.root, 1);
  const etcdStarts = startsIn(where.etcdBin);
  const simStart = await startStop(where.simBin, 9);
  const etcdStart = await startStop(where.etcdBin, 9);
  // What the ten tests spent apart from their members' start-ups (each start at the median spawn-to-ready,
  // measured one at a time): etcdctl, the harness and the serving, which both binaries' tests go through.
  const rest = (wallMs: number, starts: number, readyMs: number): string => `${((wallMs - starts * readyMs) / 1000).toFixed(1)} s`;
  // Which of the ten make the difference: each test's wall with either binary (the same order, one at a time).
  const wallOf = (outcomes: readonly Outcome[], name: string): string => ((outcomes.find((o) => o.name === name)?.ms ?? NaN) / 1000).toFixed(2);
  const perTest = TIMED.map((n) => `${n.replace(/^Test(CtlV3)?/, '')} ${wallOf(simTimed.outcomes, n)}/${wallOf(etcdTimed.outcomes, n)}`).join(', ');
  console.log(
    `e2e: ${sim.outcomes.length - failed.length}/${sim.outcomes.length} passed with etcdsim in ${(sim.wallMs / 1000).toFixed(1)} s (${failing.size} listed in docs/e2e.md as not yet passing); ` +
      `the same ${TIMED.length} tests one at a time: etcdsim ${(simTimed.wallMs / 1000).toFixed(1)} s, etcd 3.4.23 ${(etcdTimed.wallMs / 1000).toFixed(1)} s ` +
      `(${simStarts} and ${etcdStarts} members started; without their start-ups ${rest(simTimed.wallMs, simStarts, simStart.readyMs)} and ${rest(etcdTimed.wallMs, etcdStarts, etcdStart.readyMs)}; ` +
      `each test, etcdsim/etcd in s: ${perTest}); ` +
      `a member, median (p25–p75) of 9 starts: etcdsim ${simStart.text}, etcd 3.4.23 ${etcdStart.text}; ` +
      `from the stop signal to exit, etcdsim: ${simStart.stopText}, etcd 3.4.23: ${etcdStart.stopText}; load average ${loadavg()[0]!.toFixed(1)}`,
  );
  assert.deepStrictEqual(
    failed.map((o) => `${o.name}:\n${o.output}`),
    [],
    'every test docs/e2e.md does not list passes',
  );
  assert.ok(etcdTimed.outcomes.every((o) => o.passed), `the timed tests pass with etcd 3.4.23 too: ${etcdTimed.outcomes.filter((o) => !o.passed).map((o) => `${o.name}\n${o.output}`).join('\n')}`);
});
