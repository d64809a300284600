/**
 * The process-cluster launcher (src/diff/etcd_cluster.ts) that the process fault tests, the differential and
 * the start-up bench share, run with both binaries it starts: the real etcd 3.4.23 and etcdsim as the etcd
 * binary. It must start the members on free ports and wait for them within bounds, put the operating
 * system's faults on one member (SIGSTOP, SIGCONT, SIGTERM, SIGKILL), start a member again on its data dir
 * with its identity, and never leave a process or a data dir behind — after stop(), and after a start that
 * failed or timed out. "Left behind" is read from /proc: no process's command line names the test's folder.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { etcdsimCommand, startEtcdCluster, type EtcdCluster, type StartClusterOptions } from '../../src/diff/etcd_cluster.js';
import { requireCommand } from '../support/prerequisites.js';

/**
 * Each binary and the size it is tried at: the launcher with the etcdsim command is tried on one member
 * here, its multi-member clusters under the same signals in process_faults.test.ts and
 * process_acceptance.test.ts (each etcdsim process costs a Node start-up).
 */
const BINARIES: ReadonlyArray<{ name: string; bin: StartClusterOptions['bin']; size: number; skip: string | false }> = [
  { name: 'etcd 3.4.23', bin: undefined, size: 3, skip: requireCommand('etcd') },
  { name: 'etcdsim etcd', bin: etcdsimCommand('3.4'), size: 1, skip: false },
];

/** A folder of the test's own, where the cluster's data dirs go: what names it in a command line is ours. */
function folder(): string {
  return mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'etcdsim-launcher-'));
}

/** PIDs of the processes whose command line names `dir` (Linux's /proc). */
function processesNaming(dir: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(dir)) found.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

/** The process's state letter from /proc (R, S, T for stopped, ...). */
function procState(pid: number): string {
  return /^\d+ \(.*\) (\S)/.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1] ?? '?';
}

/** Polls `cond` until it holds, a bounded number of times (a signal takes effect at the kernel's pace). */
async function eventually(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(`not within 2 s: ${what}`);
}

function assertNothingLeft(dir: string): void {
  assert.deepEqual(processesNaming(dir), [], `processes left behind under ${dir}`);
  assert.deepEqual(readdirSync(dir), [], `data dirs left behind under ${dir}`);
}

const key = Buffer.from('launcher');

for (const b of BINARIES) {
  test(`${b.name}: ${b.size} member process(es) on free ports, SIGSTOP/SIGCONT, SIGTERM and SIGKILL, restarts on the data dir, nothing left after stop()`, { skip: b.skip, timeout: 60_000 }, async (t) => {
    const dir = folder();
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    let c: EtcdCluster | undefined = await startEtcdCluster({ bin: b.bin, size: b.size, baseDir: dir });
    t.after(() => c?.stop());
    const ids = c.members.map((m) => m.id);
    assert.equal(new Set(ids).size, b.size);
    assert.ok(ids.every((id) => id !== '0'), ids.join());
    const listed = await c.client(0).cluster.memberList({});
    assert.deepEqual(listed.members.map((m) => m.ID).sort(), [...ids].sort());
    assert.deepEqual(processesNaming(dir).sort(), c.members.map((m) => m.pid).sort());
    for (const m of c.members) assert.ok(existsSync(join(m.dataDir, 'member')), `${m.name} keeps its member dir in ${m.dataDir}`);
    await c.client(0).kv.put({ key, value: Buffer.from('1') });

    const m0 = c.members[0]!;
    c.pause(0);
    await eventually(() => procState(m0.pid) === 'T', `${m0.name} stopped`);
    assert.equal(m0.state, 'paused');
    c.resume(0);
    await eventually(() => procState(m0.pid) !== 'T', `${m0.name} continued`);
    assert.equal(m0.state, 'running');

    // etcd's graceful stop, then a start on the same data dir: the same member, what it answered kept.
    const first = m0.pid;
    await c.kill(0, 'SIGTERM');
    assert.equal(m0.state, 'killed');
    assert.deepEqual(processesNaming(dir).includes(first), false);
    await c.restart(0);
    assert.notEqual(m0.pid, first);
    const r = await c.client(0).kv.range({ key });
    assert.equal(r.header.member_id, ids[0]);
    assert.equal(r.kvs[0]?.value.toString(), '1');

    // A crash of a paused member (SIGKILL needs no SIGCONT), then a start again.
    c.pause(0);
    await c.kill(0);
    await c.restart(0);
    assert.equal((await c.client(0).maintenance.status({})).header.member_id, ids[0]);

    await c.stop();
    c = undefined;
    assertNothingLeft(dir);
  });

  test(`${b.name}: a start that fails, or is not ready in time, leaves no process and no data dir`, { skip: b.skip, timeout: 60_000 }, async (t) => {
    const dir = folder();
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    // A flag value both refuse as Go's flag package does: the member exits before it serves.
    await assert.rejects(startEtcdCluster({ bin: b.bin, size: b.size, baseDir: dir, flags: ['--snapshot-count=x'] }), (err: Error) => {
      assert.match(err.message, /exited \(2\) before it was ready/);
      assert.match(err.message, /invalid value "x" for flag -snapshot-count/);
      return true;
    });
    assertNothingLeft(dir);
    await assert.rejects(startEtcdCluster({ bin: b.bin, size: b.size, baseDir: dir, readyTimeoutMs: 1 }), /not ready within 1 ms/);
    assertNothingLeft(dir);
  });
}
