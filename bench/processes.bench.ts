/**
 * Start-up of a cluster of separate processes (issue 31's acceptance: at most half of real etcd's, in the
 * same run): `npm run bench -- --only processes`.
 *
 * One round starts a fresh cluster with the launcher the process tests and the differential use
 * (src/diff/etcd_cluster.ts: free loopback ports, one --initial-cluster, data dirs in /dev/shm) and is
 * timed from before the first spawn until every member logged that it serves, the members agree on a
 * leader (Maintenance.Status) and a put through the leader is answered; the cluster is then killed,
 * untimed. The subject is etcdsim as the etcd binary (`node bin/etcdsim.js etcd`, release 3.4, as a
 * harness runs it — from dist/'s one-file bundle, built first when src/ is newer), the baseline the real
 * etcd 3.4.23 with the same flags; the two alternate round by round. Rows for 3 members (the acceptance)
 * and for 1 (the floor: one process's own start).
 *
 * Beside each wall-time row, the CPU each member process used by then (Linux's schedstat of its threads, read
 * once the put is answered): on a machine whose cores are shared, a process's CPU becomes wall time in
 * proportion to the load, so the CPU ratio is the one the load does not move — and the note gives the CPU of
 * a bare Node that prints one line (`node -e`, measured in the same run), below which no Node process
 * starts. 25 rounds a side (a full run) with medians, quartiles and the load average over the rounds: the
 * spread of a start-up on a loaded machine is wide, and one quiet or busy round must not decide the ratio.
 *
 * Without an etcd binary the section says so and has no rows; a binary that cannot start the cluster (an
 * etcdsim without multi-member support) leaves its row out with the reason on stderr.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { etcdsimCommand, startEtcdCluster, type EtcdCommand } from '../src/diff/etcd_cluster.js';
import { hasEtcdBinary } from '../src/diff/etcd_process.js';
import { processCpuMs as cpuMs } from '../src/diff/process_cpu.js';
import type { BenchContext, BenchSection, Row, Sample } from './harness.js';
// @ts-expect-error a plain JavaScript module of the launcher, without declarations
import { buildIsFresh } from '../bin/build_fresh.js';

const FULL = { rounds: 25 };
const QUICK = { rounds: 3 };

/** One start: ms from the first spawn to an answered put through the leader, and each member's CPU by then. */
async function startOnce(bin: EtcdCommand | undefined, size: number): Promise<{ ms: number; cpu: number[] }> {
  const t0 = process.hrtime.bigint();
  const c = await startEtcdCluster({ bin, size });
  try {
    const leader = await c.waitForLeader();
    await c.client(leader).kv.put({ key: Buffer.from('bench/startup'), value: Buffer.from('1') });
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    return { ms, cpu: c.members.map((m) => cpuMs(m.pid)).filter((x): x is number => x !== undefined) };
  } finally {
    await c.stop();
  }
}

/** CPU (ms) of a bare Node process by the time it has printed one line: the floor of any member. */
async function nodeFloorMs(): Promise<number | undefined> {
  const child = spawn(process.execPath, ['-e', "process.stdout.write('up\\n'); setInterval(() => {}, 1000)"], { stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout.once('data', () => resolve());
      child.once('error', reject);
    });
    return cpuMs(child.pid!);
  } finally {
    child.kill('SIGKILL');
  }
}

function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  const at = (s.length - 1) * q;
  const lo = Math.floor(at);
  return s[lo]! + (s[Math.min(lo + 1, s.length - 1)]! - s[lo]!) * (at - lo);
}
const median = (xs: readonly number[]): number => quantile(xs, 0.5);
/** `median (p25–p75)` of `xs`, in ms. */
const quartiles = (xs: readonly number[]): string => `${median(xs).toFixed(0)} (${quantile(xs, 0.25).toFixed(0)}–${quantile(xs, 0.75).toFixed(0)})`;

const sample = (ms: readonly number[]): Sample => ({ nsPerOp: median(ms) * 1e6, rounds: ms.map((x) => x * 1e6), ops: 1 });

export const processesSection: BenchSection = {
  name: 'processes',
  title: 'a cluster of separate processes: start-up of etcdsim etcd vs etcd 3.4.23',
  async run(ctx: BenchContext): Promise<Row[]> {
    if (!hasEtcdBinary()) {
      ctx.log('processes: no etcd binary on PATH: nothing to compare with (apt-get install etcd-server)');
      return [];
    }
    if (!(buildIsFresh() as boolean)) {
      // What a harness runs is the compiled bundle; src/ through tsx would measure the compiler.
      ctx.log('processes: src/ is newer than dist/: building (node scripts/build.mjs --js)');
      try {
        execFileSync(process.execPath, ['scripts/build.mjs', '--js'], { stdio: 'ignore' });
      } catch {
        ctx.log('processes: the build failed: etcdsim runs src/ through tsx, and its figures include compiling it');
      }
    }
    const { rounds } = ctx.quick ? QUICK : FULL;
    const sim = etcdsimCommand('3.4');
    const rows: Row[] = [];
    const floor: number[] = [];
    for (let i = 0; i < 5 && existsSync('/proc/self/schedstat'); i++) {
      const f = await nodeFloorMs();
      if (f !== undefined) floor.push(f);
    }
    for (const size of [1, 3]) {
      const simMs: number[] = [];
      const etcdMs: number[] = [];
      const simCpu: number[] = [];
      const etcdCpu: number[] = [];
      const loads: number[] = [];
      let failed: string | undefined;
      // One untimed start of each first (the page cache, the code cache), then alternating rounds.
      for (let r = -1; r < rounds && failed === undefined; r++) {
        ctx.log(`processes: ${size} member(s), round ${r < 0 ? 'warm-up' : r + 1}`);
        const order = r % 2 === 0 ? (['sim', 'etcd'] as const) : (['etcd', 'sim'] as const);
        for (const which of order) {
          try {
            const { ms, cpu } = await startOnce(which === 'sim' ? sim : undefined, size);
            if (r >= 0) {
              (which === 'sim' ? simMs : etcdMs).push(ms);
              (which === 'sim' ? simCpu : etcdCpu).push(...cpu);
              loads.push(loadavg()[0]!);
            }
          } catch (err) {
            if (which === 'etcd') throw err;
            // The member's own reason (its fatal log line) rather than the launcher's "exited before ready".
            const lines = (err instanceof Error ? err.message : String(err)).split('\n');
            failed = lines.find((l) => /"level":"(fatal|panic)"|^[CE] \|/.test(l)) ?? lines[0]!;
            break;
          }
        }
      }
      if (failed !== undefined) {
        ctx.log(`processes: etcdsim etcd could not start ${size} member(s), row left out: ${failed.slice(0, 300)}`);
        continue;
      }
      const s = sample(simMs);
      const b = sample(etcdMs);
      rows.push({
        name: `start-up: ${size} member process${size === 1 ? '' : 'es'} → all ready, a put answered`,
        unit: 'start',
        subject: s,
        baselineName: 'etcd 3.4.23 (same flags, same launcher)',
        baseline: b,
        ratio: s.nsPerOp / b.nsPerOp,
        target: size === 3 ? { maxRatio: 0.5 } : undefined,
        note: `${rounds} rounds a side, median (p25–p75): etcdsim ${quartiles(simMs)} ms, etcd ${quartiles(etcdMs)} ms (spawn → ready lines, one leader, a put through it); load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)} over the rounds`,
      });
      if (simCpu.length === 0 || etcdCpu.length === 0) continue; // no /proc: no CPU figures
      rows.push({
        name: `CPU of each of ${size} member process${size === 1 ? '' : 'es'} by then`,
        unit: 'member',
        subject: sample(simCpu),
        baselineName: 'etcd 3.4.23',
        baseline: sample(etcdCpu),
        ratio: median(simCpu) / median(etcdCpu),
        note: `${simCpu.length} members a side, median (p25–p75): etcdsim ${quartiles(simCpu)} ms, etcd ${quartiles(etcdCpu)} ms; a bare Node printing one line: ${floor.length === 0 ? 'not measured' : `${quartiles(floor)} ms`}`,
      });
    }
    return rows;
  },
};
