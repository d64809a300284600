/**
 * Snapshots in etcd's format, side by side with a real etcd 3.4.23 on the same data (issue 16's goal:
 * within 2× of etcd's own time). The bench builds one revision history — N revisions (key-bucket entries:
 * txns of many puts over N/10 keys, so most keys have ten revisions) — in a real etcd started on free
 * loopback ports and, by the same txns, in a simulator, then times:
 *
 *   save: `etcdctl snapshot save` against the real etcd ÷ the same command against the simulator served in
 *         this process (`serve()`: the member writes its bbolt file and streams it over the Snapshot RPC);
 *         plus the in-process write alone (`sim.server.etcdSnapshot()` and writing it to a file), for orientation.
 *         The member streams as it writes (MaintenanceService.snapshotStream), so the save is not the sum of both.
 *   load: `etcdctl snapshot restore` of etcd's snapshot + etcd started from the restored data dir until it
 *         logs "ready to serve client requests" ÷ reading the same file + `createEtcdSim({ fromSnapshot })`
 *         (and `serve({ fromSnapshot })` until it listens).
 *
 * Both sides load etcd's own snapshot file (the same bytes), and after loading each reports etcd's HashKV,
 * checked equal before anything is timed. N defaults to 1,000,000 (100,000 with --quick); set
 * ETCDSIM_BENCH_SNAPSHOT_REVISIONS to choose another. Needs etcd and etcdctl on PATH; without them the section
 * says so and is skipped.
 */
import { execFile, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectEtcd } from '../src/grpc/client.js';
import { serve } from '../src/grpc/index.js';
import { createEtcdSim } from '../src/index.js';
import type { BenchContext, BenchSection, Row, Sample } from './harness.js';
import { collectGarbage, FastRandom, formatBytes } from './harness.js';
import { freePort, hasBinary, spawnUntil, stopChild } from './server.bench.js';

/** Puts per txn: etcd's --max-txn-ops is raised to this for the load (its default is 128). */
const TXN_OPS = 5000;
const VALUE_BYTES = 100;
const ETCD_FLAGS = ['--max-txn-ops', String(TXN_OPS), '--max-request-bytes', String(8 << 20), '--quota-backend-bytes', String(8 << 30)];
/** Scratch space in memory where there is some, so fsync costs both sides little and the same. */
const SCRATCH = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();

function revisionsFor(ctx: BenchContext): number {
  const env = process.env['ETCDSIM_BENCH_SNAPSHOT_REVISIONS'];
  if (env !== undefined && env !== '') {
    const n = Number(env);
    if (!Number.isInteger(n) || n < TXN_OPS) throw new Error(`ETCDSIM_BENCH_SNAPSHOT_REVISIONS must be an integer >= ${TXN_OPS}, got ${env}`);
    return n;
  }
  return ctx.quick ? 100_000 : 1_000_000;
}

/** The history, txn by txn: each txn's puts as [key, value] text. */
function* history(n: number): Generator<[string, string][]> {
  const keys = Math.max(TXN_OPS, Math.floor(n / 10));
  const rnd = new FastRandom(16, 'snapshot-bench');
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  let i = 0;
  while (i < n) {
    const txn: [string, string][] = [];
    for (let j = 0; j < TXN_OPS && i < n; j++, i++) {
      let v = '';
      for (let c = 0; c < VALUE_BYTES; c++) v += alphabet[rnd.below(alphabet.length)];
      // Consecutive keys within a txn (etcd rejects a txn that puts one key twice).
      txn.push([`/bench/key/${String(i % keys).padStart(8, '0')}`, v]);
    }
    yield txn;
  }
}

function run(cmd: string, args: readonly string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, { env: { ...process.env, ETCDCTL_API: '3' }, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      if (err !== null) reject(new Error(`${cmd} ${args.slice(0, 4).join(' ')} failed: ${stderr}${stdout}`));
      else resolve(stdout);
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

interface RealEtcd {
  readonly address: string;
  stop(): Promise<void>;
}

/** A real etcd on free loopback ports with its data dir in `dir` (restored there, or fresh). */
async function startEtcd(dir: string, peer: string, client: string, name: string): Promise<{ etcd: RealEtcd; ms: number }> {
  const { child, ms } = await spawnUntil(
    'etcd',
    ['--name', name, '--data-dir', dir, '--listen-client-urls', client, '--advertise-client-urls', client, '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer, '--initial-cluster', `${name}=${peer}`, ...ETCD_FLAGS],
    /ready to serve client requests/,
    () => {},
  );
  child.removeAllListeners('exit');
  const kill = (): void => void (child as ChildProcess).kill('SIGKILL');
  process.once('exit', kill);
  return {
    etcd: {
      address: client.slice('http://'.length),
      stop: async () => {
        process.off('exit', kill);
        await stopChild(child);
      },
    },
    ms,
  };
}

async function loopbackUrls(): Promise<{ peer: string; client: string }> {
  return { peer: `http://127.0.0.1:${await freePort()}`, client: `http://127.0.0.1:${await freePort()}` };
}

/** This process's resident set and V8 heap, for the notes. */
function residentMiB(): string {
  const m = process.memoryUsage();
  return `rss ${(m.rss / 2 ** 20).toFixed(0)} MiB, heap ${(m.heapUsed / 2 ** 20).toFixed(0)} MiB`;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

const sample = (msRounds: readonly number[]): Sample => {
  const ns = msRounds.map((ms) => ms * 1e6);
  return { nsPerOp: median(ns), rounds: ns, ops: 1 };
};

async function timed(f: () => Promise<unknown>): Promise<number> {
  collectGarbage();
  const t0 = performance.now();
  await f();
  return performance.now() - t0;
}

/** etcd's HashKV of a real etcd (endpoint hashkv's hash). */
async function etcdHashKV(address: string): Promise<number> {
  const out = await run('etcdctl', [`--endpoints=${address}`, '--command-timeout=120s', 'endpoint', 'hashkv', '-w', 'json']);
  const m = /"hash":(\d+)/.exec(out);
  if (m === null) throw new Error(`unexpected endpoint hashkv output: ${out}`);
  return Number(m[1]);
}

/** What the save phase measured; its etcd, simulator and served member are gone when it returns. */
interface SavePhase {
  readonly etcdSave: number[];
  readonly simSave: number[];
  readonly simWrite: number[];
  /** etcd's own snapshot, loaded by both sides in the load phase. */
  readonly etcdFile: string;
  readonly etcdSize: number;
  readonly simSize: number;
  readonly memory: string[];
}

/**
 * The history in a real etcd and in a simulator, then the save rounds. Everything it starts is closed before
 * it returns, and nothing outside keeps the two members: the load rounds that follow load a third store of N
 * revisions each round, and with the first two still reachable a 1M run's heap neared V8's limit and its
 * rounds stalled in garbage collection.
 */
async function savePhase(ctx: BenchContext, n: number, rounds: number, work: string): Promise<SavePhase> {
  const stops: (() => Promise<void>)[] = [];
  try {
    // --- the same history in a real etcd and in a simulator
    const urls = await loopbackUrls();
    const { etcd } = await startEtcd(join(work, 'source.etcd'), urls.peer, urls.client, 'source');
    stops.push(() => etcd.stop());
    const sim = createEtcdSim({ time: 'virtual', etcdVersion: '3.4', maxTxnOps: TXN_OPS, maxRequestBytes: 8 << 20 });
    stops.push(async () => sim.close());
    const enc = new TextEncoder();
    const t0 = performance.now();
    let txns = 0;
    // etcd's own gRPC API (grpc-js), one txn at a time: the history's order must be the simulator's.
    const client = connectEtcd(etcd.address, { deadlineMs: 120_000 });
    try {
      for (const txn of history(n)) {
        const req = { success: txn.map(([k, v]) => ({ request_put: { key: enc.encode(k), value: enc.encode(v) } })) };
        const pending = client.kv.txn(req);
        sim.services.kv.txn(req);
        await pending;
        txns++;
      }
    } finally {
      client.close();
    }
    ctx.log(`snapshot: ${n} revisions in ${txns} txns of up to ${TXN_OPS} puts loaded into etcd and the simulator in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const etcdHash = await etcdHashKV(etcd.address);
    const simHash = sim.services.maintenance.hashKV({}).hash;
    if (etcdHash !== simHash) throw new Error(`snapshot bench: HashKV differs after loading (etcd ${etcdHash}, simulator ${simHash})`);

    // The served door runs its own member: it gets the same state by loading the simulator's snapshot.
    const door = await serve({ port: 0, etcdVersion: '3.4', fromSnapshot: sim.server.etcdSnapshot() });
    stops.push(() => door.close());
    const memory = [`with both members: ${residentMiB()}`];

    // --- save
    const etcdSave: number[] = [];
    const simSave: number[] = [];
    const simWrite: number[] = [];
    const etcdFile = join(work, 'etcd.db');
    const simSaved = join(work, 'sim.db');
    for (let r = 0; r < rounds; r++) {
      const sides = [
        async () => etcdSave.push(await timed(() => run('etcdctl', [`--endpoints=${etcd.address}`, '--command-timeout=600s', 'snapshot', 'save', etcdFile]))),
        async () => simSave.push(await timed(() => run('etcdctl', [`--endpoints=${door.address}`, '--command-timeout=600s', 'snapshot', 'save', simSaved]))),
      ];
      if (r % 2 === 1) sides.reverse();
      for (const s of sides) await s();
      simWrite.push(await timed(async () => writeFileSync(join(work, 'sim-inprocess.db'), sim.server.etcdSnapshot())));
    }
    memory.push(`after the saves: ${residentMiB()}`);
    return { etcdSave, simSave, simWrite, etcdFile, etcdSize: statSync(etcdFile).size, simSize: statSync(simSaved).size, memory };
  } finally {
    for (const s of stops.reverse()) await s().catch(() => {});
  }
}

export const snapshotSection: BenchSection = {
  name: 'snapshot',
  title: "snapshots in etcd's format: etcdsim ÷ etcd 3.4.23 on the same history (save over the Snapshot RPC; load = restore + start until ready)",
  async run(ctx) {
    if (!hasBinary('etcd') || !hasBinary('etcdctl')) {
      ctx.log('snapshot: skipped — needs etcd and etcdctl 3.4 on PATH (`apt-get install etcd-server etcd-client`)');
      return [];
    }
    const n = revisionsFor(ctx);
    const rounds = 3;
    const work = mkdtempSync(join(SCRATCH, 'etcdsim-snapshot-bench-'));
    try {
      const { etcdSave, simSave, simWrite, etcdFile, etcdSize, simSize, memory } = await savePhase(ctx, n, rounds, work);
      collectGarbage();
      memory.push(`members closed: ${residentMiB()}`);

      // --- load: both from etcd's own snapshot file
      const etcdLoad: number[] = [];
      const simLoad: number[] = [];
      const simServeLoad: number[] = [];
      let loadedHash: number | undefined;
      for (let r = 0; r < rounds; r++) {
        const sides = [
          async () => {
            const dir = join(work, `restored-${r}.etcd`);
            const u = await loopbackUrls();
            let started: RealEtcd | undefined;
            etcdLoad.push(
              await timed(async () => {
                await run('etcdctl', ['snapshot', 'restore', etcdFile, '--data-dir', dir, '--name', 'restored', '--initial-cluster', `restored=${u.peer}`, '--initial-advertise-peer-urls', u.peer]);
                started = (await startEtcd(dir, u.peer, u.client, 'restored')).etcd;
              }),
            );
            if (r === 0 && started !== undefined) loadedHash = await etcdHashKV(started.address);
            await started?.stop();
            rmSync(dir, { recursive: true, force: true });
          },
          async () => {
            let loaded: ReturnType<typeof createEtcdSim> | undefined;
            simLoad.push(await timed(async () => (loaded = createEtcdSim({ time: 'virtual', etcdVersion: '3.4', fromSnapshot: readFileSync(etcdFile) }))));
            if (loaded !== undefined && loadedHash !== undefined && loaded.services.maintenance.hashKV({}).hash !== loadedHash) {
              throw new Error('snapshot bench: the simulator loaded from etcd\'s snapshot reports another HashKV than the restored etcd');
            }
            loaded?.close();
          },
        ];
        if (r % 2 === 1) sides.reverse();
        for (const s of sides) await s();
        let s: Awaited<ReturnType<typeof serve>> | undefined;
        simServeLoad.push(await timed(async () => (s = await serve({ port: 0, etcdVersion: '3.4', fromSnapshot: readFileSync(etcdFile) }))));
        await s?.close();
      }
      memory.push(`after the loads: ${residentMiB()}`);

      const size = `${n.toLocaleString('en')} revisions (${formatBytes(etcdSize)} etcd file, ${formatBytes(simSize)} etcdsim file)`;
      const pair = (name: string, subject: number[], baseline: number[], baselineName: string, note: string, target = true): Row => {
        const s = sample(subject);
        const b = sample(baseline);
        return { name, unit: 'op', subject: s, baseline: b, baselineName, ratio: s.nsPerOp / b.nsPerOp, target: target ? { maxRatio: 2 } : undefined, note };
      };
      return [
        pair('save: etcdctl snapshot save', simSave, etcdSave, 'etcd 3.4.23', `${size}; etcdctl against serve() in this process vs against etcd`),
        pair('save: sim.server.etcdSnapshot() + write', simWrite, etcdSave, 'etcdctl snapshot save (etcd)', 'in-process, no RPC', false),
        pair('load: createEtcdSim({ fromSnapshot })', simLoad, etcdLoad, 'restore + etcd start', `etcd's own snapshot file on both sides; HashKV checked equal (${loadedHash ?? '?'})`),
        pair('load: serve({ fromSnapshot }) until listening', simServeLoad, etcdLoad, 'restore + etcd start', `in-process serve, port bound; bench process ${memory.join('; ')}`, false),
      ];
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  },
};
