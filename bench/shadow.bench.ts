/**
 * What the shadow (`etcdsim shadow`, issue 34) costs the application behind it: etcd's own Go client
 * (bench/go/loadgen, 64 clients on 8 connections, as in the served section, and 8 and 1 clients that leave
 * the CPU idle between requests) against a local etcd 3.4.23 directly, through a bare TCP relay
 * (bench/relay_server.mjs: a second process and two more socket hops, nothing read — the floor of any proxy)
 * and through the shadow in front of the same etcd, in the same run, the order rotated each round. The
 * shadow runs as a user runs it (compiled src/, its own process) with a divergence directory; the issue's
 * goal is at most 20% on p50 latency against etcd, and the rows against the relay say how much of what is
 * left is the shadow's own work rather than the hop. Where `taskset` is on PATH and there are four cores or
 * more, both proxies share the last core and etcd and the load generator the others, so the proxy's work
 * does not take etcd's core (on a machine whose other load is not pinned, it still shares its core with
 * that). Also its memory over the
 * run: the bytes its simulator retains (its live line's "holding": ShadowHandle.retained()) after the last
 * round against after the first — retained, not the resident set, whose high-water mark V8 keeps long after
 * the garbage is gone — and the divergences the run produced (0 expected). The simulator keeps what etcd
 * keeps, so after each round etcd is compacted at its revision by a client beside the shadow, as an operator
 * or etcd's auto-compaction would: the shadow finds that compaction by itself (src/shadow/compaction.ts,
 * within its 10 s probe), and once it has, what it holds should be the first round's.
 *
 * Needs Go with Debian's etcd client sources (the load generator) and etcd on PATH; without them the
 * section says so and is skipped.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Buffer } from 'node:buffer';
import { connectEtcd } from '../src/grpc/client.js';
import { afterHostTime } from '../src/sim/index.js';
import type { BenchContext, BenchSection, Row } from './harness.js';
import { freePort, hasBinary, spawnUntil, stopChild } from './server.bench.js';
import { buildLoadgen, compileSim, median, rssBytes, runLoad, sampleOf, startEtcd, type Op, type Served, type Sizes } from './served.bench.js';

const FULL: Sizes = { requests: 5_000, warmup: 1_000, rounds: 5, gatewayRequests: 0, idleConnections: 0, idleStreams: 0 };
const QUICK: Sizes = { requests: 4_000, warmup: 1_000, rounds: 1, gatewayRequests: 0, idleConnections: 0, idleStreams: 0 };
const LOADS: readonly Op[] = ['put', 'range-serializable'];
/**
 * Clients (each sending one request after another) and their connections. 64 saturates the two shared cores
 * (etcd, the load generator and the shadow compete for them); 1 and 8 leave the CPU idle between requests, the
 * application's latency the goal is about.
 */
const SHAPES: ReadonlyArray<{ readonly clients: number; readonly conns: number }> = [
  { clients: 64, conns: 8 },
  { clients: 8, conns: 8 },
  { clients: 1, conns: 1 },
];
const label = (op: Op, clients: number): string => (clients === 64 ? op : `${op}, ${clients} client${clients === 1 ? '' : 's'}`);

/** A proxy process in front of `etcd` (the shadow, or the bare relay), once it says it is ready; its last live line of totals is kept. */
async function startProxyProcess(name: string, args: (port: number) => string[], ready: RegExp): Promise<Served & { totals(): string }> {
  const port = await freePort();
  const { child } = await spawnUntil(process.execPath, args(port), ready, () => {});
  child.removeAllListeners('exit');
  let totals = '';
  child.stderr?.on('data', (d: Buffer) => {
    const lines = d.toString().split('\n').filter((l) => l.startsWith('etcdsim shadow: ') && l.includes(' requests, '));
    if (lines.length > 0) totals = lines.at(-1)!;
  });
  const kill = (): void => void child.kill('SIGKILL');
  process.once('exit', kill);
  return {
    name,
    pid: child.pid!,
    address: `127.0.0.1:${port}`,
    totals: () => totals,
    stop: async () => {
      process.off('exit', kill);
      await stopChild(child);
    },
  };
}

/** `etcdsim shadow` (compiled) in front of `etcd`. */
function startShadowProcess(js: string, etcd: Served, divergenceDir: string): Promise<Served & { totals(): string }> {
  const args = (port: number): string[] => [join(js, 'src', 'cli', 'main.js'), 'shadow', '--etcd', etcd.address, '--listen-client-urls', `http://127.0.0.1:${port}`, '--divergence-dir', divergenceDir, '--stats-interval', '1'];
  return startProxyProcess('etcd 3.4.23 behind etcdsim shadow', args, /etcdsim shadowing the etcd at /);
}

function startRelayProcess(etcd: Served): Promise<Served> {
  return startProxyProcess('etcd 3.4.23 behind a bare TCP relay', (port) => [join('bench', 'relay_server.mjs'), String(port), etcd.address], /relay ready/);
}

/**
 * The CPUs for the proxies (the last core) and for etcd and the load generator (the others), when taskset is
 * on PATH and there are at least four cores (ETCDSIM_BENCH_PIN=1 pins on two or three, =0 never): on a
 * machine of two cores whose other load is not pinned, confining each side to one core made every target
 * slower and the figures noisier (docs/performance.md, "The shadow's overhead").
 */
function pinning(): { readonly proxies: string; readonly rest: string } | undefined {
  const n = cpus().length;
  const asked = process.env['ETCDSIM_BENCH_PIN'];
  if (asked === '0' || n < 2 || (n < 4 && asked !== '1') || !hasBinary('taskset')) return undefined;
  return { proxies: String(n - 1), rest: n === 2 ? '0' : `0-${n - 2}` };
}

/** Every thread of process `pid` onto `list` (threads it starts later inherit it). */
function pin(pid: number, list: string): void {
  execFileSync('taskset', ['-a', '-cp', list, String(pid)], { stdio: 'ignore' });
}

/** The live line's "holding N revisions (B bytes), compacted at C". */
const HOLDING = /holding \d+ revisions \((\d+) bytes\), compacted at (-?\d+)$/;

/**
 * The bytes the shadow's simulator retains once it followed etcd's compaction at `rev` (its probe asks every
 * 10 s; its live line, every second, says where it is compacted); throws after 30 s.
 */
async function heldOnceCompacted(shadow: Served & { totals(): string }, rev: number): Promise<number> {
  for (let waited = 0; waited < 30_000; waited += 100) {
    const m = HOLDING.exec(shadow.totals());
    if (m !== null && Number(m[2]) >= rev) return Number(m[1]);
    await new Promise<void>((resolve) => afterHostTime(100, resolve));
  }
  throw new Error(`the shadow did not follow etcd's compaction at ${rev} in 30 s: ${shadow.totals()}`);
}

export const shadowSection: BenchSection = {
  name: 'shadow',
  title: "etcdsim shadow's overhead under etcd's Go client (bench/go/loadgen: 64 clients on 8 connections, 8 clients, 1 client): etcd 3.4.23 through the shadow ÷ the same etcd directly, and ÷ through a bare TCP relay",
  async run(ctx: BenchContext): Promise<Row[]> {
    const sz = ctx.quick ? QUICK : FULL;
    const bin = await buildLoadgen(ctx);
    if (bin === undefined) return [];
    if (!hasBinary('etcd')) {
      ctx.log('shadow: skipped — no etcd on PATH (`apt-get install etcd-server`)');
      return [];
    }
    const js = await compileSim(ctx);
    const dir = mkdtempSync(join(tmpdir(), 'etcdsim-bench-shadow-'));
    const etcd = await startEtcd();
    const pins = pinning();
    const rows: Row[] = [];
    try {
      const relay = await startRelayProcess(etcd);
      const shadow = await startShadowProcess(js, etcd, dir);
      if (pins !== undefined) {
        pin(etcd.pid, pins.rest);
        pin(relay.pid, pins.proxies);
        pin(shadow.pid, pins.proxies);
      }
      ctx.log(pins === undefined ? 'shadow: processes not pinned (taskset, and four cores or ETCDSIM_BENCH_PIN=1, pin them)' : `shadow: the proxies pinned to CPU ${pins.proxies}, etcd and the load generator to ${pins.rest}`);
      const pinned = pins === undefined ? 'not pinned' : `proxies on CPU ${pins.proxies}, etcd and the load generator on ${pins.rest}`;
      try {
        const figures = new Map<string, number[]>();
        const add = (k: string, v: number): void => void figures.set(k, [...(figures.get(k) ?? []), v]);
        let first = 0;
        let last = 0;
        const targets: Served[] = [etcd, relay, shadow];
        for (let r = 0; r < sz.rounds; r++) {
          // Each target goes first, second and third in turn: a drift in the machine's load over a round is spread over all three.
          const order = [...targets.slice(r % 3), ...targets.slice(0, r % 3)];
          for (const shape of SHAPES) {
            for (const op of LOADS) {
              for (const s of order) {
                const { res, cpu } = await runLoad(bin, s, op, sz, shape, pins?.rest);
                const l = label(op, shape.clients);
                // The CPU of the process served (etcd, or the proxy alone: etcd behind it is not counted).
                add(`${s.name}|${l}|cpu`, cpu / sz.requests);
                add(`${s.name}|${l}|p50`, res.p50Ms * 1e6);
                add(`${s.name}|${l}|p99`, res.p99Ms * 1e6);
                add(`${s.name}|${l}|wall`, 1e9 / res.opsPerSec);
                ctx.log(`shadow: ${l} on ${s.name}: ${Math.round(res.opsPerSec)}/s, p50 ${res.p50Ms.toFixed(3)} ms, p99 ${res.p99Ms.toFixed(2)} ms`);
              }
            }
          }
          // Beside the shadow: a compaction no call through it carries.
          const beside = connectEtcd(etcd.address);
          let at: string;
          try {
            at = (await beside.kv.range({ key: Buffer.from([0]), count_only: true })).header.revision;
            await beside.kv.compact({ revision: at });
          } finally {
            beside.close();
          }
          const held = await heldOnceCompacted(shadow, Number(at));
          if (r === 0) first = held;
          last = held;
        }
        const rss = rssBytes(shadow.pid);
        const pair = (name: string, key: string, l: string, target: number | undefined, subject: Served = shadow, base: Served = etcd, note?: string): void => {
          const a = figures.get(`${subject.name}|${l}|${key}`)!;
          const b = figures.get(`${base.name}|${l}|${key}`)!;
          rows.push({ name, unit: 'req', subject: sampleOf(a, sz.requests), baselineName: base.name, baseline: sampleOf(b, sz.requests), ratio: median(a) / median(b), target: target === undefined ? undefined : { maxRatio: target }, note });
        };
        // The goal as a proxy in its own process can be held to on any machine: what the shadow adds to etcd's
        // p50 beyond what the bare relay adds (a second process, two more socket hops — no proxy avoids them),
        // round by round, at most 20 % of etcd's p50 (docs/performance.md, "The shadow's overhead").
        const added = (l: string): void => {
          const [s, r, e] = [shadow, relay, etcd].map((t) => figures.get(`${t.name}|${l}|p50`)!) as [number[], number[], number[]];
          const over = s.map((v, i) => Math.max(v - r[i]!, 1));
          rows.push({ name: `${l}: latency p50 the shadow adds beyond the relay, ÷ etcd's p50`, unit: 'req', subject: sampleOf(over, sz.requests), baselineName: etcd.name, baseline: sampleOf(e, sz.requests), ratio: median(over) / median(e), target: { maxRatio: 0.2 }, note: pinned });
        };
        for (const shape of SHAPES) {
          for (const op of LOADS) {
            const l = label(op, shape.clients);
            pair(`${l}: latency p50 through the shadow`, 'p50', l, 1.2, shadow, etcd, pinned);
            pair(`${l}: latency p50 through a bare relay (the floor of any proxy)`, 'p50', l, undefined, relay, etcd);
            pair(`${l}: latency p50 through the shadow ÷ through the relay (the shadow's own work)`, 'p50', l, undefined, shadow, relay);
            added(l);
            pair(`${l}: latency p99 through the shadow`, 'p99', l, undefined);
            pair(`${l}: time per request${shape.clients === 64 ? ' at full load' : ''} through the shadow`, 'wall', l, undefined);
            if (shape.clients === 64) pair(`${l}: the shadow's own CPU per request (÷ etcd's)`, 'cpu', l, undefined);
            if (shape.clients === 64) pair(`${l}: the shadow's own CPU per request (÷ the relay's)`, 'cpu', l, undefined, shadow, relay);
          }
        }
        const requests = sz.rounds * SHAPES.length * LOADS.length * (sz.requests + sz.warmup);
        rows.push({
          name: `bytes the shadow's simulator retains after ${sz.rounds} rounds (about ${requests} requests), each compacted`,
          unit: 'process',
          subject: { nsPerOp: last, rounds: [last], ops: 1 },
          baselineName: 'after the first round',
          baseline: { nsPerOp: first, rounds: [first], ops: 1 },
          ratio: last / first,
          measure: 'bytes',
          note: `${shadow.totals().replace(/^etcdsim shadow: /, '')}; resident set ${(rss / 2 ** 20).toFixed(0)} MiB`,
        });
      } finally {
        await shadow.stop();
        await relay.stop();
      }
    } finally {
      await etcd.stop();
      rmSync(dir, { recursive: true, force: true });
    }
    return rows;
  },
};
