/**
 * Server mode: the same `etcd3` client and the same load against `etcdsim serve` (a child process, as users
 * run it) and against a real etcd — a local `etcd` binary started by the bench on loopback (fresh data dir,
 * free ports, killed afterwards), or the etcd at ETCD_ENDPOINT (then without a start-up row). Each row's
 * subject is etcdsim, its baseline the real etcd; ratio = etcdsim time ÷ etcd time, so the goal
 * (at least twice etcd's throughput, a fraction of its start-up time) is a ratio ≤ 0.5.
 *
 * Rows: sequential put latency (each put awaited); put throughput with 64 in flight; a range of 10k keys
 * (values included); a paginated list of the same 10k keys at one fixed revision (pages of 500, as a
 * Kubernetes list does); watch delivery of 10k events (64-in-flight puts until a prefix Watcher has emitted
 * all of them); txn CAS (each awaited: compare the value, put the next one); start-up (spawn to ready).
 * Without any etcd, the rows show etcdsim alone (baseline = subject, ratio 1, noted).
 *
 * The put, txn and 10k-range rows also note the floor: the same load against bench/null_server.mjs, a gRPC server that
 * answers at once and does nothing. What the etcd3 client and grpc-js spend per call is in every figure of
 * a row, etcd's included, so when that floor alone is above half of etcd's time no server can reach 0.5.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Etcd3 } from 'etcd3';
import { formatNs, type BenchContext, type BenchSection, type Row, type Sample } from './harness.js';

interface Sizes {
  readonly seqPuts: number;
  readonly inflightPuts: number;
  readonly rangeKeys: number;
  readonly rangeReps: number;
  readonly listReps: number;
  readonly watchEvents: number;
  readonly cas: number;
  readonly rounds: number;
  readonly starts: number;
}
const FULL: Sizes = { seqPuts: 1_000, inflightPuts: 10_000, rangeKeys: 10_000, rangeReps: 10, listReps: 5, watchEvents: 10_000, cas: 1_000, rounds: 3, starts: 3 };
const QUICK: Sizes = { seqPuts: 200, inflightPuts: 2_000, rangeKeys: 10_000, rangeReps: 3, listReps: 2, watchEvents: 2_000, cas: 200, rounds: 1, starts: 1 };

const IN_FLIGHT = 64;
const PAGE = 500;
const PREFIX = 'etcdsim-bench/';
const VALUE = Buffer.from('value-0123456789-value-0123456789');
const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** A running etcd (real or simulated) the bench talks to. */
interface Server {
  readonly name: string;
  readonly hosts: string;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a !== null ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** Spawns `cmd args`, resolves once its output matches `ready`, with the ms it took. */
export function spawnUntil(cmd: string, args: string[], ready: RegExp, onStop: () => void): Promise<{ child: ChildProcess; ms: number; log: string }> {
  const t0 = performance.now();
  const child = spawn(cmd, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  return new Promise((resolve, reject) => {
    const guard = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${cmd} did not become ready:\n${log.slice(-1500)}`));
    }, 30_000);
    const onData = (d: Buffer): void => {
      log += d.toString();
      if (ready.test(log)) {
        clearTimeout(guard);
        child.stdout?.off('data', onData);
        child.stderr?.off('data', onData);
        child.stdout?.resume();
        child.stderr?.resume();
        resolve({ child, ms: performance.now() - t0, log });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', (e) => {
      clearTimeout(guard);
      reject(e);
    });
    child.once('exit', (code) => {
      clearTimeout(guard);
      onStop();
      reject(new Error(`${cmd} exited (${code}) before it was ready:\n${log.slice(-1500)}`));
    });
  });
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

async function startSimServer(): Promise<{ server: Server; ms: number }> {
  const port = await freePort();
  const { child, ms } = await spawnUntil(
    process.execPath,
    ['bin/etcdsim.js', 'serve', '--listen-client-urls', `http://127.0.0.1:${port}`],
    /etcdsim serving etcd v3 API on /,
    () => {},
  );
  child.removeAllListeners('exit');
  return { server: { name: 'etcdsim serve', hosts: `127.0.0.1:${port}`, stop: () => stopChild(child) }, ms };
}

/** Whether an executable `name` is on PATH. */
export function hasBinary(name: string): boolean {
  return (process.env['PATH'] ?? '')
    .split(':')
    .filter((d) => d !== '')
    .some((d) => {
      try {
        accessSync(join(d, name), constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
}

/**
 * A single-member etcd on free loopback ports with a fresh data dir, until it is ready to serve: its
 * process, its start-up time, its client address, and a stop that kills it and removes the dir.
 */
export async function startLocalEtcd(): Promise<{ child: ChildProcess; ms: number; address: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-bench-'));
  const [cp, pp] = [await freePort(), await freePort()];
  const client = `http://127.0.0.1:${cp}`;
  const peer = `http://127.0.0.1:${pp}`;
  const cleanup = (): void => rmSync(dir, { recursive: true, force: true });
  let started: { child: ChildProcess; ms: number; log: string };
  try {
    started = await spawnUntil(
      'etcd',
      ['--name', 'bench', '--data-dir', dir, '--listen-client-urls', client, '--advertise-client-urls', client, '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer, '--initial-cluster', `bench=${peer}`],
      /ready to serve client requests/,
      cleanup,
    );
  } catch (e) {
    cleanup();
    throw e;
  }
  const { child, ms } = started;
  child.removeAllListeners('exit');
  const killOnExit = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  return {
    child,
    ms,
    address: `127.0.0.1:${cp}`,
    stop: async () => {
      process.off('exit', killOnExit);
      await stopChild(child);
      cleanup();
    },
  };
}

async function startRealEtcd(): Promise<{ server: Server; ms: number }> {
  const etcd = await startLocalEtcd();
  return { server: { name: 'etcd', hosts: etcd.address, stop: etcd.stop }, ms: etcd.ms };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Times `rounds` runs of `fn` (each returns its op count) after one untimed warm-up. */
async function sample(rounds: number, fn: (round: number) => Promise<number>): Promise<Sample> {
  await fn(-1);
  const per: number[] = [];
  let ops = 0;
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint();
    ops = await fn(r);
    per.push(Number(process.hrtime.bigint() - t0) / ops);
  }
  return { nsPerOp: median(per), rounds: per, ops };
}

/** Runs `n` async ops with at most `inFlight` outstanding. */
async function pool(n: number, inFlight: number, op: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < n) await op(next++);
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, n) }, worker));
}

type Load = (client: Etcd3, sz: Sizes, p: string) => Promise<Sample>;

interface LoadSpec {
  readonly name: string;
  readonly unit: string;
  readonly load: Load;
  /** Whether the do-nothing server (bench/null_server.mjs) can answer this load: then the row notes the floor. */
  readonly floor?: boolean;
}

const key = (p: string, i: number): string => `${p}${String(i).padStart(6, '0')}`;

const LOADS: readonly LoadSpec[] = [
  {
    name: 'sequential put latency (each awaited)',
    unit: 'put',
    floor: true,
    load: (c, sz, p) =>
      sample(sz.rounds, async (r) => {
        const n = r < 0 ? Math.min(50, sz.seqPuts) : sz.seqPuts;
        for (let i = 0; i < n; i++) await c.put(key(`${p}seq/`, i)).value(VALUE);
        return n;
      }),
  },
  {
    name: `put throughput (${IN_FLIGHT} in flight)`,
    unit: 'put',
    floor: true,
    load: (c, sz, p) =>
      sample(sz.rounds, async (r) => {
        const n = r < 0 ? Math.min(500, sz.inflightPuts) : sz.inflightPuts;
        await pool(n, IN_FLIGHT, (i) => c.put(key(`${p}par/`, i)).value(VALUE).exec());
        return n;
      }),
  },
  {
    name: 'range of 10k keys (with values)',
    unit: 'range',
    floor: true,
    load: async (c, sz, p) => {
      await pool(sz.rangeKeys, IN_FLIGHT, (i) => c.put(key(`${p}r/`, i)).value(VALUE).exec());
      return sample(sz.rounds, async () => {
        for (let i = 0; i < sz.rangeReps; i++) {
          const kvs = await c.getAll().prefix(`${p}r/`).buffers();
          if (Object.keys(kvs).length !== sz.rangeKeys) throw new Error(`range returned ${Object.keys(kvs).length} keys`);
        }
        return sz.rangeReps;
      });
    },
  },
  {
    name: `paginated list of 10k keys at a fixed revision (pages of ${PAGE})`,
    unit: 'list',
    load: (c, sz, p) =>
      // the keys of the previous row are there: list them
      sample(sz.rounds, async () => {
        for (let rep = 0; rep < sz.listReps; rep++) {
          const end = Buffer.from(`${p}r0`); // prefix end of `${p}r/`
          let from = Buffer.from(`${p}r/`);
          let revision = '0';
          let seen = 0;
          for (;;) {
            const res = await c.kv.range({ key: from, range_end: end, limit: PAGE, revision });
            revision = res.header.revision;
            seen += res.kvs.length;
            const last = res.kvs[res.kvs.length - 1];
            if (!res.more || last === undefined) break;
            from = Buffer.concat([last.key, Buffer.from([0])]);
          }
          if (seen !== sz.rangeKeys) throw new Error(`list saw ${seen} keys`);
        }
        return sz.listReps;
      }),
  },
  {
    name: `watch delivery (${IN_FLIGHT}-in-flight puts → Watcher 'put')`,
    unit: 'event',
    load: (c, sz, p) =>
      sample(sz.rounds, async (r) => {
        const n = r < 0 ? Math.min(500, sz.watchEvents) : sz.watchEvents;
        const w = await c.watch().prefix(`${p}w/`).create();
        let got = 0;
        const all = new Promise<void>((resolve) =>
          w.on('put', () => {
            if (++got === n) resolve();
          }),
        );
        await pool(n, IN_FLIGHT, (i) => c.put(key(`${p}w/`, i)).value(VALUE).exec());
        await all;
        await w.cancel();
        return n;
      }),
  },
  {
    name: 'txn CAS (value compare → put, each awaited)',
    unit: 'txn',
    floor: true,
    load: async (c, sz, p) => {
      const k = `${p}cas`;
      let v = 0;
      await c.put(k).value(String(v));
      return sample(sz.rounds, async (r) => {
        const n = r < 0 ? Math.min(50, sz.cas) : sz.cas;
        for (let i = 0; i < n; i++) {
          const res = await c.if(k, 'Value', '==', String(v)).then(c.put(k).value(String(v + 1))).commit();
          if (!res.succeeded) throw new Error('CAS failed');
          v++;
        }
        return n;
      });
    },
  },
];

/** Every load against one server, with a fresh client and key prefix; the prefix is deleted afterwards. */
async function runLoads(server: Server, sz: Sizes, ctx: BenchContext, loads: readonly LoadSpec[] = LOADS): Promise<Sample[]> {
  const client = new Etcd3({ hosts: server.hosts });
  const p = `${PREFIX}${Date.now()}/`;
  try {
    const out: Sample[] = [];
    for (const l of loads) {
      ctx.log(`server: ${server.name}: ${l.name}`);
      out.push(await l.load(client, sz, p));
    }
    return out;
  } finally {
    await client.delete().prefix(PREFIX);
    client.close();
  }
}

/** bench/null_server.mjs: a gRPC server that answers at once and does nothing (the client's own floor). */
async function startNullServer(): Promise<Server> {
  const { child, log } = await spawnUntil(process.execPath, ['bench/null_server.mjs'], /null server on \S+\n/, () => {});
  child.removeAllListeners('exit');
  const hosts = /null server on (\S+)\n/.exec(log)?.[1] ?? '';
  return { name: 'null server', hosts, stop: () => stopChild(child) };
}

async function startups(start: () => Promise<{ server: Server; ms: number }>, n: number): Promise<Sample> {
  const per: number[] = [];
  for (let i = 0; i < n; i++) {
    const { server, ms } = await start();
    per.push(ms * 1e6);
    await server.stop();
  }
  return { nsPerOp: median(per), rounds: per, ops: 1 };
}

const perSecond = (nsPerOp: number): string => `${Math.round(1e9 / nsPerOp).toLocaleString('en-US')}/s`;

export const serverSection: BenchSection = {
  name: 'server',
  title: 'server mode: etcd3 over gRPC, etcdsim serve vs a real etcd on loopback',
  async run(ctx: BenchContext): Promise<Row[]> {
    const sz = ctx.quick ? QUICK : FULL;
    const endpoint = process.env['ETCD_ENDPOINT'];
    const useEndpoint = endpoint !== undefined && endpoint !== '';
    const localEtcd = !useEndpoint && hasBinary('etcd');
    const baselineName = useEndpoint ? `etcd at ${endpoint}` : localEtcd ? 'etcd (local binary, loopback)' : 'none: no etcd found';

    ctx.log('server: etcdsim serve');
    const sim = await startSimServer();
    let simSamples: Sample[];
    try {
      simSamples = await runLoads(sim.server, sz, ctx);
    } finally {
      await sim.server.stop();
    }
    let etcdSamples: Sample[] | undefined;
    if (useEndpoint || localEtcd) {
      ctx.log(`server: ${baselineName}`);
      const real = useEndpoint
        ? { server: { name: 'etcd', hosts: endpoint.replace(/^https?:\/\//, ''), stop: async () => {} } as Server, ms: 0 }
        : await startRealEtcd();
      try {
        etcdSamples = await runLoads(real.server, sz, ctx);
      } finally {
        await real.server.stop();
      }
    }

    ctx.log('server: null server (no work: the client\'s floor)');
    const floorLoads = LOADS.filter((l) => l.floor === true);
    const nul = await startNullServer();
    let floorSamples: Sample[];
    try {
      floorSamples = await runLoads(nul, sz, ctx, floorLoads);
    } finally {
      await nul.stop();
    }
    const floorOf = (l: LoadSpec): Sample | undefined => floorSamples[floorLoads.indexOf(l)];

    const rows: Row[] = LOADS.map((l, i) => {
      const s = simSamples[i]!;
      const b = etcdSamples?.[i] ?? s;
      const f = floorOf(l);
      const floorNote =
        f === undefined
          ? ''
          : `; a server doing no work: ${formatNs(f.nsPerOp)}/${l.unit}` +
            (etcdSamples === undefined ? '' : ` = ${(f.nsPerOp / b.nsPerOp).toFixed(2)}× etcd's time (the client's own floor)`);
      return {
        name: l.name,
        unit: l.unit,
        subject: s,
        baselineName,
        baseline: b,
        ratio: s.nsPerOp / b.nsPerOp,
        target: etcdSamples === undefined ? undefined : { maxRatio: 0.5 },
        note:
          etcdSamples === undefined
            ? `etcdsim ${perSecond(s.nsPerOp)}; no etcd to compare with (install etcd or set ETCD_ENDPOINT)${floorNote}`
            : `etcdsim ${perSecond(s.nsPerOp)} vs etcd ${perSecond(b.nsPerOp)} (${(b.nsPerOp / s.nsPerOp).toFixed(1)}× etcd's rate)${floorNote}`,
      };
    });

    ctx.log('server: start-up times');
    const simStart = await startups(startSimServer, sz.starts);
    const etcdStart = localEtcd ? await startups(startRealEtcd, sz.starts) : undefined;
    rows.push({
      name: 'start-up (spawn → ready line)',
      unit: 'start',
      subject: simStart,
      baselineName: etcdStart === undefined ? 'none: no local etcd binary' : 'etcd (local binary, fresh data dir)',
      baseline: etcdStart ?? simStart,
      ratio: simStart.nsPerOp / (etcdStart ?? simStart).nsPerOp,
      target: etcdStart === undefined ? undefined : { maxRatio: 0.5 },
      note: 'etcdsim: `node bin/etcdsim.js serve` until it prints its address; etcd: until "ready to serve client requests"',
    });
    return rows;
  },
};
