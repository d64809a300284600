/**
 * What the shadow (`etcdsim shadow`, issue 34) costs the application behind it: etcd's own Go client
 * (bench/go/loadgen, 64 clients on 8 connections, as in the served section, and 8 and 1 clients that leave
 * the CPU idle between requests) against a local etcd 3.4.23 directly and through the shadow in front of the
 * same etcd, alternating, in the same run. The shadow
 * runs as a user runs it (compiled src/, its own process) with a divergence directory; the goal
 * is at most 20% on p50 latency. Also its memory over the run: the shadow's resident set after the last
 * round against after the first (the scenario log, stream comparisons and divergence directory are
 * bounded, so a long run should not grow it), and the divergences the run produced (0 expected).
 *
 * Needs Go with Debian's etcd client sources (the load generator) and etcd on PATH; without them the
 * section says so and is skipped.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchContext, BenchSection, Row } from './harness.js';
import { freePort, hasBinary, spawnUntil, stopChild } from './server.bench.js';
import { buildLoadgen, compileSim, median, rssBytes, runLoad, sampleOf, startEtcd, type Op, type Served, type Sizes } from './served.bench.js';

const FULL: Sizes = { requests: 20_000, warmup: 2_000, rounds: 3, gatewayRequests: 0, idleConnections: 0, idleStreams: 0 };
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

/** `etcdsim shadow` (compiled) in front of `etcd`; its last live line of totals is kept. */
async function startShadowProcess(js: string, etcd: Served, divergenceDir: string): Promise<Served & { totals(): string }> {
  const port = await freePort();
  const args = [join(js, 'src', 'cli', 'main.js'), 'shadow', '--etcd', etcd.address, '--listen-client-urls', `http://127.0.0.1:${port}`, '--divergence-dir', divergenceDir, '--stats-interval', '1'];
  const { child } = await spawnUntil(process.execPath, args, /etcdsim shadowing the etcd at /, () => {});
  child.removeAllListeners('exit');
  let totals = '';
  child.stderr?.on('data', (d: Buffer) => {
    const lines = d.toString().split('\n').filter((l) => l.startsWith('etcdsim shadow: ') && l.includes(' requests, '));
    if (lines.length > 0) totals = lines.at(-1)!;
  });
  const kill = (): void => void child.kill('SIGKILL');
  process.once('exit', kill);
  return {
    name: 'etcd 3.4.23 behind etcdsim shadow',
    pid: child.pid!,
    address: `127.0.0.1:${port}`,
    totals: () => totals,
    stop: async () => {
      process.off('exit', kill);
      await stopChild(child);
    },
  };
}

export const shadowSection: BenchSection = {
  name: 'shadow',
  title: "etcdsim shadow's overhead under etcd's Go client (bench/go/loadgen: 64 clients on 8 connections, 8 clients, 1 client): etcd 3.4.23 through the shadow ÷ the same etcd directly",
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
    const rows: Row[] = [];
    try {
      const shadow = await startShadowProcess(js, etcd, dir);
      try {
        const figures = new Map<string, number[]>();
        const add = (k: string, v: number): void => void figures.set(k, [...(figures.get(k) ?? []), v]);
        let rssFirst = 0;
        for (let r = 0; r < sz.rounds; r++) {
          for (const shape of SHAPES) {
            for (const op of LOADS) {
              const order: Served[] = r % 2 === 0 ? [etcd, shadow] : [shadow, etcd];
              for (const s of order) {
                const { res, cpu } = await runLoad(bin, s, op, sz, shape);
                const l = label(op, shape.clients);
                // The CPU of the process served (etcd, or the shadow alone: etcd behind it is not counted).
                add(`${s.name}|${l}|cpu`, cpu / sz.requests);
                add(`${s.name}|${l}|p50`, res.p50Ms * 1e6);
                add(`${s.name}|${l}|p99`, res.p99Ms * 1e6);
                add(`${s.name}|${l}|wall`, 1e9 / res.opsPerSec);
                ctx.log(`shadow: ${l} on ${s.name}: ${Math.round(res.opsPerSec)}/s, p50 ${res.p50Ms.toFixed(2)} ms, p99 ${res.p99Ms.toFixed(2)} ms`);
              }
            }
          }
          if (r === 0) rssFirst = rssBytes(shadow.pid);
        }
        const rssLast = rssBytes(shadow.pid);
        const pair = (name: string, key: string, l: string, target: number | undefined, note?: string): void => {
          const s = figures.get(`${shadow.name}|${l}|${key}`)!;
          const b = figures.get(`${etcd.name}|${l}|${key}`)!;
          rows.push({ name, unit: 'req', subject: sampleOf(s, sz.requests), baselineName: etcd.name, baseline: sampleOf(b, sz.requests), ratio: median(s) / median(b), target: target === undefined ? undefined : { maxRatio: target }, note });
        };
        for (const shape of SHAPES) {
          for (const op of LOADS) {
            const l = label(op, shape.clients);
            pair(`${l}: latency p50 through the shadow`, 'p50', l, 1.2);
            pair(`${l}: latency p99 through the shadow`, 'p99', l, undefined);
            pair(`${l}: time per request${shape.clients === 64 ? ' at full load' : ''} through the shadow`, 'wall', l, undefined);
            if (shape.clients === 64) pair(`${l}: the shadow's own CPU per request (÷ etcd's)`, 'cpu', l, undefined);
          }
        }
        const requests = sz.rounds * SHAPES.length * LOADS.length * (sz.requests + sz.warmup);
        rows.push({
          name: `shadow's resident set after ${sz.rounds} rounds (about ${requests} requests)`,
          unit: 'process',
          subject: { nsPerOp: rssLast, rounds: [rssLast], ops: 1 },
          baselineName: 'after the first round',
          baseline: { nsPerOp: rssFirst, rounds: [rssFirst], ops: 1 },
          ratio: rssLast / rssFirst,
          measure: 'bytes',
          note: shadow.totals().replace(/^etcdsim shadow: /, ''),
        });
      } finally {
        await shadow.stop();
      }
    } finally {
      await etcd.stop();
      rmSync(dir, { recursive: true, force: true });
    }
    return rows;
  },
};
