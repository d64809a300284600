/**
 * The served path under etcd's own Go client: bench/go/loadgen (clientv3 3.4.23; N clients on M
 * connections, each with one request in flight) against a real etcd 3.4.23 and against `etcdsim serve`,
 * both started here on free loopback ports, one after the other in the same run. For every load the
 * server's CPU time (utime + stime from /proc/<pid>/stat) is read around the timed part of the run, so
 * each row compares what one server spends per request with what the other spends: ratio = etcdsim ÷
 * etcd, and the goal is a ratio ≤ 0.5 for CPU per 1000 puts / serializable ranges and ≤ 1 for
 * time per request at full load (throughput at least etcd's).
 *
 * Also: the JSON gateway's put and range latency (sequential requests over one keep-alive HTTP/1.1
 * connection; goal ≤ 2× etcd's), and the server memory a connection and a watch stream cost (resident
 * set growth over many idle ones, read from /proc/<pid>/status).
 *
 * Needs Go and Debian's etcd client sources to build the load generator (`apt-get install golang-go
 * golang-etcd-server-dev`), and etcd on PATH (`apt-get install etcd-server`); without Go the section says
 * so and is skipped, without etcd the rows show etcdsim alone (baseline = subject, noted).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchContext, BenchSection, Row, Sample } from './harness.js';
import { freePort, hasBinary, spawnUntil, startLocalEtcd, stopChild } from './server.bench.js';
import { buildEtcdGoProgram, GO_CLIENTV3_DIR } from '../src/diff/go_build.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const LOADGEN_SRC = join(ROOT, 'bench', 'go', 'loadgen', 'main.go');
const BUILD_DIR = join(ROOT, 'node_modules', '.cache', 'etcdsim-loadgen');
/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ; 100 on Linux). */
const TICKS_PER_SECOND = 100;

export interface Sizes {
  /** Requests per timed run. */
  readonly requests: number;
  /** Untimed requests before it (same process, same connections). */
  readonly warmup: number;
  /** Runs per server and load (the median is taken). */
  readonly rounds: number;
  readonly gatewayRequests: number;
  readonly idleConnections: number;
  readonly idleStreams: number;
}
const FULL: Sizes = { requests: 30_000, warmup: 3_000, rounds: 3, gatewayRequests: 2_000, idleConnections: 500, idleStreams: 5_000 };
const QUICK: Sizes = { requests: 6_000, warmup: 1_000, rounds: 1, gatewayRequests: 300, idleConnections: 200, idleStreams: 2_000 };

/** The load: 64 clients on 8 connections. */
const CLIENTS = 64;
const CONNS = 8;

export type Op = 'put' | 'range-serializable' | 'range-linearizable';
/** Each load, and the CPU ratio it is held to (undefined: shown, no target). */
const LOADS: ReadonlyArray<{ op: Op; cpuTarget: number | undefined }> = [
  { op: 'put', cpuTarget: 0.5 },
  { op: 'range-serializable', cpuTarget: 0.5 },
  { op: 'range-linearizable', cpuTarget: undefined },
];

/** One JSON line of loadgen's output. */
interface LoadResult {
  readonly requests: number;
  readonly errors: number;
  readonly firstError?: string;
  readonly seconds: number;
  readonly opsPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/** A server under test: its process (for /proc) and its client address. */
export interface Served {
  readonly name: string;
  readonly pid: number;
  readonly address: string;
  stop(): Promise<void>;
}

/** utime + stime of `pid`, in ns. */
export function cpuNs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  // Fields after the command name (which may hold spaces) start at field 3 (state).
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(f[11]) + Number(f[12]);
  return (ticks * 1e9) / TICKS_PER_SECOND;
}

/** Resident set size of `pid`, in bytes. */
export function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'latin1'));
  return m === null ? NaN : Number(m[1]) * 1024;
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export function sampleOf(xs: readonly number[], ops: number): Sample {
  return { nsPerOp: median(xs), rounds: xs, ops };
}

/**
 * Builds bench/go/loadgen (again when its source is newer than the binary) in GOPATH mode against Debian's
 * packaged etcd sources, offline. Undefined, with the reason logged, when Go or the sources are missing.
 */
export async function buildLoadgen(ctx: BenchContext): Promise<string | undefined> {
  if (!hasBinary('go') || !existsSync(GO_CLIENTV3_DIR)) {
    ctx.log(
      'served: skipped — the Go load generator needs Go and etcd 3.4.23\'s Go client sources: ' +
        '`apt-get install golang-go golang-etcd-server-dev` (Debian/Ubuntu), then run the bench again',
    );
    return undefined;
  }
  ctx.log('served: building bench/go/loadgen if needed (GOPATH mode, offline; about a minute the first time)');
  return buildEtcdGoProgram(LOADGEN_SRC, BUILD_DIR, 'loadgen');
}

export async function startEtcd(): Promise<Served> {
  const etcd = await startLocalEtcd();
  return { name: 'etcd 3.4.23', pid: etcd.child.pid!, address: etcd.address, stop: etcd.stop };
}

/**
 * src/ (and bench/h2_lib_floor_server.ts) compiled to plain ESM JavaScript in a cache folder, file by file, as
 * `npm run build` compiles dist/ — so the served process runs compiled code whatever the state of dist/
 * (which bin/etcdsim.js skips for tsx after any edit: tsx's loader and its per-function name helpers would
 * be in every figure). Returns the folder.
 */
export async function compileSim(ctx: BenchContext): Promise<string> {
  const out = join(BUILD_DIR, 'js');
  rmSync(out, { recursive: true, force: true });
  const esbuild = await import('esbuild');
  const sources: string[] = [join(ROOT, 'bench', 'h2_lib_floor_server.ts')];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) sources.push(p);
    }
  };
  walk(join(ROOT, 'src'));
  await esbuild.build({ entryPoints: sources, outdir: out, outbase: ROOT, format: 'esm', platform: 'node', target: 'node20', logLevel: 'silent' });
  // The .proto files the loader reads beside it (src/proto), not only the compiled modules.
  cpSync(join(ROOT, 'src', 'proto'), join(out, 'src', 'proto'), { recursive: true, filter: (p) => !p.endsWith('.ts') });
  // Under node_modules/ Node looks no further up for a package.json: say the files are ES modules here.
  writeFileSync(join(out, 'package.json'), '{ "type": "module" }\n');
  ctx.log(`served: compiled src/ into ${out}`);
  return out;
}

/** `etcdsim serve` (compiled, see compileSim), Node run with `nodeFlags` (e.g. --cpu-prof). */
export async function startSim(js: string, nodeFlags: readonly string[] = []): Promise<Served> {
  const port = await freePort();
  const args = [...nodeFlags, join(js, 'src', 'cli', 'main.js'), 'serve', '--etcd-version', '3.4', '--listen-client-urls', `http://127.0.0.1:${port}`];
  const { child } = await spawnUntil(process.execPath, args, /etcdsim serving etcd v3 API on /, () => {});
  return servedChild('etcdsim serve', child, `127.0.0.1:${port}`);
}

/** A server process spawned by the bench, as a Served: killed if the bench exits first, else stopped by SIGTERM. */
export function servedChild(name: string, child: ChildProcess, address: string): Served {
  child.removeAllListeners('exit');
  const kill = (): void => void child.kill('SIGKILL');
  process.once('exit', kill);
  return {
    name,
    pid: child.pid!,
    address,
    stop: async () => {
      process.off('exit', kill);
      await stopChild(child);
    },
  };
}

/**
 * bench/h2_floor_server.mjs: node:http2 answering every call with a constant message, doing nothing else;
 * with `ownLayer` (the compiled src/ and bench/), bench/h2_lib_floor_server.ts: the same on our own HTTP/2
 * layer (src/h2), the one etcdsim serve runs on.
 */
async function startFloor(ownLayer?: string): Promise<Served> {
  const port = await freePort();
  const args =
    ownLayer === undefined
      ? [join(ROOT, 'bench', 'h2_floor_server.mjs'), String(port)]
      : [join(ownLayer, 'bench', 'h2_lib_floor_server.js'), String(port)];
  const { child } = await spawnUntil(process.execPath, args, ownLayer === undefined ? /h2 floor server on / : /h2 lib floor server on /, () => {});
  return servedChild(ownLayer === undefined ? 'node:http2 floor' : 'src/h2 floor', child, `127.0.0.1:${port}`);
}

/** One loadgen run against `s`: its result, and the server CPU (ns) spent during the timed part. */
export function runLoad(
  bin: string,
  s: Served,
  op: Op,
  sz: Sizes,
  shape: { readonly clients: number; readonly conns: number } = { clients: CLIENTS, conns: CONNS },
  /** A taskset CPU list the load generator runs on (undefined: anywhere). */
  cpus?: string,
): Promise<{ res: LoadResult; cpu: number }> {
  const args = ['-endpoints', s.address, '-op', op, '-clients', String(shape.clients), '-conns', String(shape.conns), '-total', String(sz.requests), '-warmup', String(sz.warmup), '-value-size', '256', '-prefill'];
  const child = cpus === undefined ? spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] }) : spawn('taskset', ['-c', cpus, bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let cpu0: number | undefined;
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    err += d.toString();
    // loadgen says when the warm-up is over and the timed run starts.
    if (cpu0 === undefined && err.includes('timed run starts')) cpu0 = cpuNs(s.pid);
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => {
      const cpu1 = cpuNs(s.pid);
      if (code !== 0 || cpu0 === undefined) {
        reject(new Error(`loadgen ${op} against ${s.name} exited ${code}:\n${err.slice(-1500)}`));
        return;
      }
      const res = JSON.parse(out.trim().split('\n').pop()!) as LoadResult;
      if (res.errors > 0) {
        reject(new Error(`loadgen ${op} against ${s.name}: ${res.errors} errors, first: ${res.firstError ?? '?'}`));
        return;
      }
      resolve({ res, cpu: cpu1 - cpu0 });
    });
  });
}

/** Per server and load, over rounds: CPU ns per request, wall ns per request (1 / throughput), p50 and p99 in ns. */
interface LoadFigures {
  cpu: number[];
  wall: number[];
  p50: number[];
  p99: number[];
  opsPerSec: number[];
}

async function measureLoads(bin: string, servers: readonly Served[], sz: Sizes, ctx: BenchContext): Promise<Map<string, LoadFigures>> {
  const out = new Map<string, LoadFigures>();
  for (const { op } of LOADS) {
    for (let r = 0; r < sz.rounds; r++) {
      // Alternate who goes first, so neither always runs on a machine warmed (or loaded) by the other.
      const order = r % 2 === 0 ? servers : [...servers].reverse();
      for (const s of order) {
        const { res, cpu } = await runLoad(bin, s, op, sz);
        const key = `${s.name}|${op}`;
        const f = out.get(key) ?? { cpu: [], wall: [], p50: [], p99: [], opsPerSec: [] };
        f.cpu.push(cpu / res.requests);
        f.wall.push(1e9 / res.opsPerSec);
        f.p50.push(res.p50Ms * 1e6);
        f.p99.push(res.p99Ms * 1e6);
        f.opsPerSec.push(res.opsPerSec);
        out.set(key, f);
        ctx.log(
          `served: ${op} on ${s.name}: ${Math.round(res.opsPerSec)}/s, p50 ${res.p50Ms.toFixed(2)} ms, p99 ${res.p99Ms.toFixed(2)} ms, ` +
            `server CPU ${(cpu / res.requests / 1e3).toFixed(1)} ms per 1000`,
        );
      }
    }
  }
  return out;
}

/** Sequential JSON-gateway requests over one keep-alive connection: latency (ns) of each. */
async function gatewayLatencies(address: string, path: string, body: string, n: number): Promise<number[]> {
  const [host, port] = address.split(':') as [string, string];
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const one = (): Promise<number> =>
    new Promise((resolve, reject) => {
      const t0 = process.hrtime.bigint();
      const req = http.request({ host, port: Number(port), path, method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
        res.resume();
        res.once('end', () => {
          if (res.statusCode !== 200) reject(new Error(`${path}: HTTP ${res.statusCode}`));
          else resolve(Number(process.hrtime.bigint() - t0));
        });
      });
      req.once('error', reject);
      req.end(body);
    });
  const out: number[] = [];
  try {
    for (let i = 0; i < n; i++) out.push(await one());
  } finally {
    agent.destroy();
  }
  return out;
}

function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(p * (s.length - 1))]!;
}

/** A gRPC frame of a serialized message. */
function grpcFrame(hex: string): Buffer {
  const msg = Buffer.from(hex, 'hex');
  const head = Buffer.alloc(5);
  head.writeUInt32BE(msg.length, 1);
  return Buffer.concat([head, msg]);
}
const RANGE_A = grpcFrame('0a0161'); // RangeRequest{key: "a"}
const WATCH_A = grpcFrame('0a030a0161'); // WatchRequest{create_request: {key: "a"}}

/** Waits until the server's resident set stops growing (a GC or allocator settling), then reads it. */
async function settledRss(pid: number): Promise<number> {
  let last = rssBytes(pid);
  for (let i = 0; i < 10; i++) {
    await new Promise((r) => setTimeout(r, 200));
    const now = rssBytes(pid);
    if (Math.abs(now - last) < 64 * 1024) return now;
    last = now;
  }
  return last;
}

/**
 * Resident-set growth per idle connection (each has answered one Range) and per open Watch stream (each
 * created one watcher and got its `created` response), both in bytes.
 */
async function memoryPer(s: Served, sz: Sizes): Promise<{ perConnection: number; perStream: number }> {
  const url = `http://${s.address}`;
  const unary = (session: http2.ClientHttp2Session): Promise<void> =>
    new Promise((resolve, reject) => {
      const st = session.request({ ':method': 'POST', ':path': '/etcdserverpb.KV/Range', 'content-type': 'application/grpc', te: 'trailers' });
      st.on('error', reject);
      st.resume();
      st.once('close', () => resolve());
      st.end(RANGE_A);
    });
  const before = await settledRss(s.pid);
  const sessions: http2.ClientHttp2Session[] = [];
  try {
    for (let i = 0; i < sz.idleConnections; i++) {
      const session = http2.connect(url);
      session.on('error', () => {});
      sessions.push(session);
      await unary(session);
    }
    const withConns = await settledRss(s.pid);
    const perConnection = (withConns - before) / sz.idleConnections;
    // Streams: spread over a few sessions (a peer may cap concurrent streams per connection).
    const streamSessions = sessions.slice(0, 10);
    const streams: http2.ClientHttp2Stream[] = [];
    await Promise.all(
      Array.from({ length: sz.idleStreams }, (_, i) => {
        const st = streamSessions[i % streamSessions.length]!.request({ ':method': 'POST', ':path': '/etcdserverpb.Watch/Watch', 'content-type': 'application/grpc', te: 'trailers' });
        streams.push(st);
        st.on('error', () => {});
        st.write(WATCH_A);
        return new Promise<void>((resolve) => {
          st.once('data', () => resolve());
          st.once('close', () => resolve());
        });
      }),
    );
    const withStreams = await settledRss(s.pid);
    const perStream = (withStreams - withConns) / sz.idleStreams;
    for (const st of streams) st.close();
    return { perConnection, perStream };
  } finally {
    for (const session of sessions) session.destroy();
  }
}

function kib(n: number): string {
  return `${(n / 1024).toFixed(1)} KiB`;
}

export const servedSection: BenchSection = {
  name: 'served',
  title: "served path under etcd's Go client (bench/go/loadgen: 64 clients on 8 connections, 256 B puts): etcdsim serve ÷ etcd 3.4.23 (and do-nothing servers on node:http2 and on src/h2 ÷ etcd), server CPU from /proc",
  async run(ctx: BenchContext): Promise<Row[]> {
    const sz = ctx.quick ? QUICK : FULL;
    const bin = await buildLoadgen(ctx);
    if (bin === undefined) return [];
    const withEtcd = hasBinary('etcd');
    if (!withEtcd) ctx.log('served: no etcd on PATH (`apt-get install etcd-server`): etcdsim alone, ratios 1');
    const js = await compileSim(ctx);
    const servers: Served[] = [];
    try {
      if (withEtcd) servers.push(await startEtcd());
      const sim = await startSim(js);
      servers.push(sim);
      // And what node:http2 alone costs per call (no server on it can spend less).
      const floor = await startFloor();
      servers.push(floor);
      // And our own HTTP/2 layer (src/h2), which etcdsim serve runs on: a do-nothing server on it.
      const rawFloor = await startFloor(js);
      servers.push(rawFloor);
      const base = servers[0]!;
      const alone = base === sim ? 'no etcd on PATH: baseline = etcdsim' : undefined;
      const loads = await measureLoads(bin, servers, sz, ctx);
      const rows: Row[] = [];
      const pair = (name: string, unit: string, s: number[], b: number[], ops: number, target: number | undefined, note: string | undefined, against = base): void => {
        const subject = sampleOf(s, ops);
        const baseline = sampleOf(b, ops);
        rows.push({
          name,
          unit,
          subject,
          baselineName: against.name,
          baseline,
          ratio: subject.nsPerOp / baseline.nsPerOp,
          target: target === undefined ? undefined : { maxRatio: target },
          note: against === base ? (alone ?? note) : note,
        });
      };
      const perThousand = (xs: number[]): string => `${(median(xs) / 1e3).toFixed(1)}`;
      for (const { op, cpuTarget } of LOADS) {
        const s = loads.get(`${sim.name}|${op}`)!;
        const b = loads.get(`${base.name}|${op}`)!;
        const tput = `${Math.round(median(s.opsPerSec))}/s vs ${Math.round(median(b.opsPerSec))}/s`;
        pair(`${op}: server CPU`, 'req', s.cpu, b.cpu, sz.requests, cpuTarget, `${perThousand(s.cpu)} vs ${perThousand(b.cpu)} ms per 1000 requests`);
        pair(`${op}: time per request at full load`, 'req', s.wall, b.wall, sz.requests, op === 'range-linearizable' ? undefined : 1, tput);
        pair(`${op}: latency p50`, 'req', s.p50, b.p50, sz.requests, undefined, undefined);
        pair(`${op}: latency p99`, 'req', s.p99, b.p99, sz.requests, undefined, undefined);
        const f = loads.get(`${floor.name}|${op}`)!;
        pair(`${op}: server CPU of a do-nothing node:http2 server`, 'req', f.cpu, b.cpu, sz.requests, undefined, `the floor of any server on node:http2: ${perThousand(f.cpu)} ms per 1000`);
        const rf = loads.get(`${rawFloor.name}|${op}`)!;
        pair(
          `${op}: server CPU of a do-nothing server on src/h2`,
          'req',
          rf.cpu,
          b.cpu,
          sz.requests,
          undefined,
          `bench/h2_lib_floor_server.ts on our own HTTP/2 layer: ${perThousand(rf.cpu)} ms per 1000 (${Math.round(median(rf.opsPerSec))}/s), node:http2 floor ${perThousand(f.cpu)} (${Math.round(median(f.opsPerSec))}/s)`,
        );
      }
      for (const extra of [floor, rawFloor]) {
        await extra.stop();
        servers.splice(servers.indexOf(extra), 1);
      }
      // The JSON gateway (HTTP/1.1 on the client port), one request at a time.
      const put = JSON.stringify({ key: Buffer.from('gw-key').toString('base64'), value: Buffer.alloc(256, 'v').toString('base64') });
      const get = JSON.stringify({ key: Buffer.from('gw-key').toString('base64'), serializable: true });
      for (const [label, path, body] of [['put', '/v3/kv/put', put], ['range', '/v3/kv/range', get]] as const) {
        const lat = new Map<Served, number[]>();
        for (const s of servers) {
          await gatewayLatencies(s.address, path, body, Math.min(200, sz.gatewayRequests));
          lat.set(s, await gatewayLatencies(s.address, path, body, sz.gatewayRequests));
        }
        const s = lat.get(sim)!;
        const b = lat.get(base)!;
        pair(`gateway ${label}: latency p50`, 'req', [percentile(s, 0.5)], [percentile(b, 0.5)], sz.gatewayRequests, 2, `sequential ${path} over one keep-alive connection; p99 ${(percentile(s, 0.99) / 1e6).toFixed(2)} vs ${(percentile(b, 0.99) / 1e6).toFixed(2)} ms`);
      }
      // Memory: resident set growth per idle connection and per open watch stream, each on a fresh
      // process (one the loads have grown has free heap that new connections fill without growing).
      for (const s of servers.splice(0)) await s.stop();
      const memOf = async (start: () => Promise<Served>): Promise<{ perConnection: number; perStream: number }> => {
        const fresh = await start();
        servers.push(fresh);
        try {
          return await memoryPer(fresh, sz);
        } finally {
          await fresh.stop();
          servers.splice(servers.indexOf(fresh), 1);
        }
      };
      const ms = await memOf(() => startSim(js));
      const mb = alone === undefined ? await memOf(startEtcd) : ms;
      ctx.log(`served: memory per connection ${kib(ms.perConnection)} vs ${kib(mb.perConnection)}, per watch stream ${kib(ms.perStream)} vs ${kib(mb.perStream)}`);
      const memRow = (name: string, unit: string, s: number, b: number, n: number, note: string): void => {
        rows.push({ name, unit, measure: 'bytes', subject: sampleOf([s], n), baselineName: base.name, baseline: sampleOf([b], n), ratio: s / b, note: alone ?? note });
      };
      memRow('memory per idle connection', 'conn', ms.perConnection, mb.perConnection, sz.idleConnections, `resident set growth over ${sz.idleConnections} connections, each after one Range`);
      memRow('memory per open watch stream', 'stream', ms.perStream, mb.perStream, sz.idleStreams, `resident set growth over ${sz.idleStreams} Watch streams with one watcher each`);
      return rows;
    } finally {
      for (const s of servers) await s.stop();
    }
  },
};
