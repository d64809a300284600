/**
 * etcd3 adapter benchmarks: what the real `etcd3` npm client costs when it runs on the simulator in-process
 * (sim.etcd3(), through its mock() plug point), each against a same-run baseline of the raw service call on
 * an identical simulator:
 *  - put: `await client.put(k).value(v)` vs `sim.services.kv.put({key, value})`;
 *  - get: `await client.get(k).exec()` vs `sim.services.kv.range({key, limit: 1})` over 1000 keys;
 *  - txn: `await client.if(k, 'Mod', '>', 0).then(put).else(get).commit()` vs `sim.services.kv.txn(...)` of the
 *    same compare / success / failure;
 *  - watch event: raw puts on a watched key in batches of 100, each batch awaited until an etcd3 Watcher has
 *    emitted its 'put' events, vs the same puts with one flush per batch into a raw Watch call's listener (the
 *    writes cost the same on both sides; the difference is delivery through the adapter's duplex — one
 *    event-loop turn per batch — and etcd3's Watcher).
 * The subject's ops run one at a time (each awaited), the way application code calls etcd3; the baseline is
 * the synchronous service call, so a ratio includes etcd3's builders, the promise round trip, the adapter's
 * enum/error mapping, and etcd3's response handling.
 *
 * harness.measurePair is synchronous; these subjects are async, so this file measures with the same method
 * (untimed warm-up, interleaved rounds, forced GC before each round, medians) in an async variant.
 */
import type { Etcd3, Watcher } from 'etcd3';
import { createEtcdSim, type EtcdSim } from '../src/index.js';
import { collectGarbage, consume, row, type BenchContext, type BenchSection, type Row, type Sample } from './harness.js';

interface Sizes {
  readonly ops: number;
  readonly events: number;
  readonly rounds: number;
  readonly warmup: number;
}
const FULL: Sizes = { ops: 20_000, events: 50_000, rounds: 7, warmup: 2 };
const QUICK: Sizes = { ops: 2_000, events: 5_000, rounds: 3, warmup: 1 };

const KEYS = 1_000;
/** Watch events are written and delivered in batches below the watch stream's buffer (128 responses): a
 *  fuller buffer makes the watcher a victim, served later on the virtual clock's sync step. */
const BATCH = 100;
const keyBuf = (i: number): Buffer => Buffer.from(`bench/k${i % KEYS}`);
const VALUE = Buffer.from('value-0123456789');

/** An async benchmarked operation: untimed setup and teardown around the timed run. */
export interface AsyncCase<S> {
  setup(warmup: boolean): Promise<S> | S;
  run(state: S): Promise<number> | number;
  teardown?(state: S): Promise<void> | void;
}

/**
 * What a round's time is: 'wall' (default), or 'cpu' — the CPU time this process used (user + system, GC
 * threads included). For in-process rows that never wait on anything outside the process, CPU time is the
 * work itself; wall time on a machine shared by many jobs adds whatever time the process waited for a core.
 */
export type RoundClock = 'wall' | 'cpu';

function nowNs(clock: RoundClock): number {
  if (clock === 'wall') return Number(process.hrtime.bigint());
  const u = process.cpuUsage();
  return (u.user + u.system) * 1000;
}

async function timeRound<S>(c: AsyncCase<S>, warmup: boolean, clock: RoundClock, forceGc: boolean): Promise<{ ns: number; ops: number }> {
  const state = await c.setup(warmup);
  if (forceGc) collectGarbage();
  const t0 = nowNs(clock);
  const ops = await c.run(state);
  const t1 = nowNs(clock);
  await c.teardown?.(state);
  if (!(ops > 0)) throw new Error(`a benchmark round reported ${ops} operations`);
  return { ns: t1 - t0, ops };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * harness.measurePair for async cases: baseline first on even rounds, subject first on odd ones. `forceGc`
 * (default true) forces a full GC before each round: the rounds then start from the same heap, but V8 shrinks
 * its young generation on a forced GC, and the next ~20-35 ms of CPU run slower on both sides until it grows
 * back (docs/performance.md, "Third pass") — which pulls the ratios of short single-call rounds towards 1.
 * Without it the heap of one round carries into the next (garbage a side left is collected in the other's
 * round, so alternating the order matters more).
 */
export async function measurePairAsync<S, B>(
  subject: AsyncCase<S>,
  baseline: AsyncCase<B>,
  opts: { rounds: number; warmup: number; clock?: RoundClock | undefined; forceGc?: boolean | undefined },
): Promise<{ subject: Sample; baseline: Sample }> {
  const clock = opts.clock ?? 'wall';
  const forceGc = opts.forceGc ?? true;
  for (let i = 0; i < opts.warmup; i++) {
    await timeRound(baseline, true, clock, forceGc);
    await timeRound(subject, true, clock, forceGc);
  }
  const s: number[] = [];
  const b: number[] = [];
  let sOps = 0;
  let bOps = 0;
  for (let i = 0; i < opts.rounds; i++) {
    for (const side of i % 2 === 0 ? ['b', 's'] : ['s', 'b']) {
      if (side === 'b') {
        const r = await timeRound(baseline, false, clock, forceGc);
        b.push(r.ns / r.ops);
        bOps = r.ops;
      } else {
        const r = await timeRound(subject, false, clock, forceGc);
        s.push(r.ns / r.ops);
        sOps = r.ops;
      }
    }
  }
  return { subject: { nsPerOp: median(s), rounds: s, ops: sOps }, baseline: { nsPerOp: median(b), rounds: b, ops: bOps } };
}

interface ClientWorld {
  readonly sim: EtcdSim;
  readonly client: Etcd3;
}

/** A simulator holding KEYS keys, and (for the subject) an etcd3 client on it. */
function world(withClient: boolean): { sim: EtcdSim; client: Etcd3 | undefined } {
  const sim = createEtcdSim({ time: 'virtual' });
  for (let i = 0; i < KEYS; i++) sim.services.kv.put({ key: keyBuf(i), value: VALUE });
  return { sim, client: withClient ? sim.etcd3() : undefined };
}

function clientCase(sz: Sizes, op: (w: ClientWorld, i: number) => Promise<unknown>): AsyncCase<ClientWorld> {
  return {
    setup: () => {
      const w = world(true);
      return { sim: w.sim, client: w.client as Etcd3 };
    },
    run: async (w) => {
      for (let i = 0; i < sz.ops; i++) await op(w, i);
      return sz.ops;
    },
    teardown: (w) => w.client.close(),
  };
}

function rawCase(sz: Sizes, op: (sim: EtcdSim, i: number) => unknown): AsyncCase<EtcdSim> {
  return {
    setup: () => world(false).sim,
    run: (sim) => {
      for (let i = 0; i < sz.ops; i++) op(sim, i);
      return sz.ops;
    },
  };
}

async function putRow(sz: Sizes): Promise<Row> {
  return row(
    { name: 'put (await client.put(k).value(v))', unit: 'op', baselineName: 'services.kv.put' },
    await measurePairAsync(
      clientCase(sz, ({ client }, i) => client.put(keyBuf(i)).value(VALUE).exec()),
      rawCase(sz, (sim, i) => sim.services.kv.put({ key: keyBuf(i), value: VALUE })),
      sz,
    ),
  );
}

async function getRow(sz: Sizes): Promise<Row> {
  return row(
    { name: 'get (await client.get(k).exec())', unit: 'op', baselineName: 'services.kv.range (limit 1)' },
    await measurePairAsync(
      clientCase(sz, async ({ client }, i) => consume((await client.get(keyBuf(i)).exec()).kvs.length)),
      rawCase(sz, (sim, i) => consume(sim.services.kv.range({ key: keyBuf(i), limit: 1 }).kvs.length)),
      sz,
    ),
  );
}

async function txnRow(sz: Sizes): Promise<Row> {
  return row(
    { name: "txn (if(k,'Mod','>',0).then(put).else(get))", unit: 'txn', baselineName: 'services.kv.txn (same ops)' },
    await measurePairAsync(
      clientCase(sz, async ({ client }, i) => {
        const k = keyBuf(i);
        const res = await client.if(k, 'Mod', '>', 0).then(client.put(k).value(VALUE)).else(client.get(k)).commit();
        consume(res.succeeded ? 1 : 0);
      }),
      rawCase(sz, (sim, i) => {
        const key = keyBuf(i);
        const res = sim.services.kv.txn({
          compare: [{ key, result: 'GREATER', target: 'MOD', mod_revision: 0 }],
          success: [{ request_put: { key, value: VALUE } }],
          failure: [{ request_range: { key } }],
        });
        consume(res.succeeded ? 1 : 0);
      }),
      sz,
    ),
  );
}

async function watchRow(sz: Sizes): Promise<Row> {
  const key = Buffer.from('bench/watched');
  interface Subject {
    sim: EtcdSim;
    client: Etcd3;
    watcher: Watcher;
    seen: number;
    wanted: number;
    done: (() => void) | undefined;
  }
  const subject: AsyncCase<Subject> = {
    setup: async () => {
      const { sim, client } = world(true);
      const c = client as Etcd3;
      const watcher = await c.watch().key(key).create();
      const s: Subject = { sim, client: c, watcher, seen: 0, wanted: 0, done: undefined };
      watcher.on('put', () => {
        s.seen++;
        if (s.seen >= s.wanted) s.done?.();
      });
      return s;
    },
    run: async (s) => {
      for (let sent = 0; sent < sz.events; ) {
        const n = Math.min(BATCH, sz.events - sent);
        s.wanted = sent + n;
        const batch = new Promise<void>((resolve) => {
          s.done = resolve;
        });
        for (let i = 0; i < n; i++) s.sim.services.kv.put({ key, value: VALUE });
        sent += n;
        await batch;
      }
      return s.seen;
    },
    teardown: async (s) => {
      await s.watcher.cancel();
      s.client.close();
    },
  };
  interface Raw {
    sim: EtcdSim;
    seen: number;
  }
  const baseline: AsyncCase<Raw> = {
    setup: () => {
      const { sim } = world(false);
      const r: Raw = { sim, seen: 0 };
      const call = sim.services.watch.watch();
      call.onResponse((rs) => {
        for (const res of rs) r.seen += res.events.length;
      });
      call.write({ create_request: { key } });
      sim.server.flush();
      return r;
    },
    run: (r) => {
      for (let sent = 0; sent < sz.events; ) {
        const n = Math.min(BATCH, sz.events - sent);
        for (let i = 0; i < n; i++) r.sim.services.kv.put({ key, value: VALUE });
        sent += n;
        r.sim.server.flush();
      }
      if (r.seen !== sz.events) throw new Error(`raw watch saw ${r.seen} of ${sz.events} events`);
      return r.seen;
    },
  };
  return row(
    {
      name: `watch event (puts in batches of ${BATCH} → etcd3 Watcher 'put')`,
      unit: 'event',
      baselineName: 'same puts, flush → raw Watch call listener',
      note: 'both sides include the raw put of each event; the subject adds delivery through the duplex and etcd3',
    },
    await measurePairAsync(subject, baseline, sz),
  );
}

const perSecond = (nsPerOp: number): string => `${Math.round(1e9 / nsPerOp).toLocaleString('en-US')}/s`;

/** The table shows ns/op; ops/s of both sides goes into the row's note. */
function withOpsPerSecond(r: Row): Row {
  const rate = `${perSecond(r.subject.nsPerOp)} vs raw ${perSecond(r.baseline.nsPerOp)}`;
  return { ...r, note: r.note === undefined ? rate : `${rate}; ${r.note}` };
}

export const etcd3Section: BenchSection = {
  name: 'etcd3',
  title: 'etcd3 npm client through the in-process adapter',
  async run(ctx: BenchContext): Promise<Row[]> {
    const sz = ctx.quick ? QUICK : FULL;
    const rows: Row[] = [];
    ctx.log('etcd3: put');
    rows.push(await putRow(sz));
    ctx.log('etcd3: get');
    rows.push(await getRow(sz));
    ctx.log('etcd3: txn');
    rows.push(await txnRow(sz));
    ctx.log('etcd3: watch event');
    rows.push(await watchRow(sz));
    return rows.map(withOpsPerSecond);
  },
};
