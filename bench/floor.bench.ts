/**
 * In-process calls against the client's own floor: the same client on a plug point answering canned
 * responses (nothing through that client can be faster) vs the client on a simulator in the default
 * real-time mode and in virtual mode, measured in the same run. Each op gets two rows with the same
 * baseline, so the table reads floor, both modes and their ratios side by side; issue 28's goals are the
 * targets (2× in the default mode, 1.5× in virtual mode). What the gap is made of: docs/performance.md,
 * "In-process calls".
 *
 * `sim.etcd3()` against etcd3's `mock()` answering canned responses of the same size:
 *  - sequential put: `await client.put(k).value(v)`, one at a time; puts, 64 in flight: the same from 64 callers;
 *  - CAS txn, 64 in flight: `if(k,'Mod','>',0).then(put).else(get)` from 64 concurrent callers;
 *  - single-key get: `await client.get(k).string()` over 1000 keys;
 *  - a 10k-key prefix range: `getAll().prefix(p).strings()` over 10 000 keys (the floor answers 10 000 canned kvs);
 *  - a paged list: the same 10 000 keys in pages of 500 (`inRange` from the last key + "\0", `limit`, the
 *    first page's revision), 20 calls per list; once against the canned floor, and once against a floor that
 *    answers fresh copies of its 500 kvs per page (what any server whose answers a client may change must
 *    make at the least: the simulator's pages are such copies, the canned floor's are not);
 *  - watch delivery (floor_watch.ts): 10 000 puts, 64 in flight, until an etcd3 Watcher has emitted each
 *    one's 'put' (the floor's mock emits one canned event per put).
 * `sim.client()` against the same EtcdClient on do-nothing services that return canned responses:
 * sequential put and single-key get.
 *
 * Rounds are timed in CPU time (measurePairAsync's 'cpu' clock): nothing here waits on anything outside the
 * process, and on a machine shared by many jobs wall time mostly measured the wait for a core (spreads of
 * 30-400 % between rounds). Every row is measured twice: with a forced full GC before each round, after
 * which the next ~20-35 ms of CPU run slower on both sides (the single-call rows' ratios read lower than in a
 * steady state: docs/performance.md, "Third pass"), and without (", no forced GC").
 */
import { Etcd3 } from 'etcd3';
import { EtcdClient, createEtcdSim, type EtcdSim } from '../src/index.js';
import type { EtcdServices } from '../src/server/index.js';
import { measurePairAsync, type AsyncCase } from './etcd3.bench.js';
import { watchDeliveryCases } from './floor_watch.js';
import { consume, row, type BenchContext, type BenchSection, type Row } from './harness.js';

interface Sizes {
  readonly ops: number;
  /** Calls per round of the rows whose call is 10 000 keys' worth (a range, a list). */
  readonly bigOps: number;
  readonly events: number;
  readonly rounds: number;
  readonly warmup: number;
}
const FULL: Sizes = { ops: 20_000, bigOps: 30, events: 10_000, rounds: 7, warmup: 2 };
const QUICK: Sizes = { ops: 2_000, bigOps: 5, events: 10_000, rounds: 3, warmup: 1 };
const KEYS = 1_000;
const BIG_KEYS = 10_000;
const PAGE = 500;
const IN_FLIGHT = 64;
const key = (i: number): string => `bench/k${i % KEYS}`;
const VALUE = 'value-0123456789';
const BIG_PREFIX = 'big/';
const bigKey = (i: number): string => `${BIG_PREFIX}${String(i).padStart(5, '0')}`;

const header = { cluster_id: '1', member_id: '2', revision: '3', raft_term: '4' };
const kvOf = (k: string): object => ({ key: Buffer.from(k), value: Buffer.from(VALUE), create_revision: '2', mod_revision: '3', version: '2', lease: '0' });
const rangeAnswer = (keys: readonly string[], more: boolean, count: number): object => ({ header, kvs: keys.map(kvOf), count: String(count), more });
const bigKeys = Array.from({ length: BIG_KEYS }, (_, i) => bigKey(i));
/** etcd3's canned answers: what a server that does no work at all would say. */
const CANNED: Readonly<Record<string, Readonly<Record<string, unknown>>>> = {
  small: {
    put: { header },
    range: rangeAnswer([key(0)], false, 1),
    txn: { header, succeeded: true, responses: [{ response: 'response_put', response_put: { header } }] },
  },
  prefix: { range: rangeAnswer(bigKeys, false, BIG_KEYS) },
  page: { range: rangeAnswer(bigKeys.slice(0, PAGE), true, BIG_KEYS) },
};

type Canned = keyof typeof CANNED;
type Op = (client: Etcd3, i: number) => Promise<unknown>;
interface World<C> {
  readonly client: C;
  readonly sim: EtcdSim | undefined;
}

/**
 * etcd3 on canned answers; with `copies`, each answer's kvs are fresh copies (new objects, new key and value
 * Buffers), the least any server must do whose answers a client may change without changing the server.
 */
function floorClient(canned: Canned, copies = false): Etcd3 {
  const answers = CANNED[canned]!;
  const client = new Etcd3({ hosts: '127.0.0.1:1' });
  const answer = (method: string): unknown => {
    const a = answers[method] as { kvs?: { key: Buffer; value: Buffer }[] } | undefined;
    if (!copies || a?.kvs === undefined) return a;
    return { ...a, kvs: a.kvs.map((kv) => ({ ...kv, key: Buffer.from(kv.key), value: Buffer.from(kv.value) })) };
  };
  client.mock({
    exec: (_service: string, method: string) => Promise.resolve(answer(method)),
    withConnection: () => Promise.reject(new Error('the floor has no streams')),
  } as unknown as Parameters<Etcd3['mock']>[0]);
  return client;
}

/** A simulator on `time` holding the 1000 small keys, or the 10 000 keys under big/ for the range rows. */
function simOf(time: 'real' | 'virtual', big: boolean): EtcdSim {
  const sim = createEtcdSim({ time });
  const n = big ? BIG_KEYS : KEYS;
  for (let i = 0; i < n; i++) sim.services.kv.put({ key: Buffer.from(big ? bigKey(i) : key(i)), value: Buffer.from(VALUE) });
  return sim;
}

function opCase<C extends { close(): void }>(make: () => World<C>, op: (client: C, i: number) => Promise<unknown>, ops: number, inFlight: number): AsyncCase<World<C>> {
  return {
    setup: make,
    run: async ({ client }) => {
      let next = 0;
      const worker = async (): Promise<void> => {
        for (let i = next++; i < ops; i = next++) await op(client, i);
      };
      await Promise.all(Array.from({ length: inFlight }, worker));
      return ops;
    },
    teardown: ({ client, sim }) => {
      client.close();
      sim?.close();
    },
  };
}

/** 10 000 keys in pages of PAGE at the first page's revision, as a paginating lister (kubectl, informers) reads them. */
async function pagedList(c: Etcd3): Promise<number> {
  const end = Buffer.from(BIG_PREFIX.slice(0, -1) + String.fromCharCode(BIG_PREFIX.charCodeAt(BIG_PREFIX.length - 1) + 1));
  let start = Buffer.from(BIG_PREFIX);
  let rev: string | undefined;
  let seen = 0;
  for (let page = 0; page < BIG_KEYS / PAGE; page++) {
    const b = c.getAll().inRange({ start, end }).limit(PAGE);
    if (rev !== undefined) b.revision(rev);
    const res = await b.exec();
    rev ??= res.header.revision;
    const last = res.kvs[res.kvs.length - 1];
    if (last === undefined || (page < BIG_KEYS / PAGE - 1 && !res.more)) throw new Error(`paged list: page ${page} ended the list early`);
    seen += res.kvs.length;
    start = Buffer.concat([last.key, Buffer.from([0])]);
  }
  if (seen !== BIG_KEYS) throw new Error(`paged list saw ${seen} keys`);
  return seen;
}

/**
 * How many times the subject's calls the floor makes per round, for a row whose floor call is so cheap that
 * the subject's count would make a round of about a millisecond: a round that short in process CPU time
 * mostly measures the GC threads finishing the collection made before it (rounds of 1 ms read 0.02-8.6 ms
 * of CPU on this machine), which made the paged list's floor 15× too slow.
 */
const SHORT_FLOOR_SCALE = 50;

const ETCD3_OPS: ReadonlyArray<{
  name: string;
  unit: string;
  inFlight: number;
  canned: Canned;
  big?: boolean;
  floorScale?: number;
  /** The floor answers fresh copies of its kvs (see floorClient). */
  copies?: boolean;
  op: Op;
}> = [
  { name: 'sequential put', unit: 'op', inFlight: 1, canned: 'small', op: (c, i) => c.put(key(i)).value(VALUE).exec() },
  { name: `puts, ${IN_FLIGHT} in flight`, unit: 'op', inFlight: IN_FLIGHT, canned: 'small', op: (c, i) => c.put(key(i)).value(VALUE).exec() },
  {
    name: `CAS txn, ${IN_FLIGHT} in flight`,
    unit: 'txn',
    inFlight: IN_FLIGHT,
    canned: 'small',
    op: async (c, i) => consume((await c.if(key(i), 'Mod', '>', 0).then(c.put(key(i)).value(VALUE)).else(c.get(key(i))).commit()).succeeded ? 1 : 0),
  },
  { name: 'single-key get', unit: 'op', inFlight: 1, canned: 'small', op: async (c, i) => consume((await c.get(key(i)).string())?.length ?? 0) },
  {
    name: `${BIG_KEYS / 1000}k-key prefix range`,
    unit: 'range',
    inFlight: 1,
    canned: 'prefix',
    big: true,
    op: async (c) => consume(Object.keys(await c.getAll().prefix(BIG_PREFIX).strings()).length),
  },
  {
    name: `paged list (${BIG_KEYS / PAGE} pages of ${PAGE})`,
    unit: 'list',
    inFlight: 1,
    canned: 'page',
    big: true,
    floorScale: SHORT_FLOOR_SCALE,
    op: async (c) => consume(await pagedList(c)),
  },
  {
    name: `paged list (${BIG_KEYS / PAGE} pages of ${PAGE}), copying floor`,
    unit: 'list',
    inFlight: 1,
    canned: 'page',
    big: true,
    copies: true,
    op: async (c) => consume(await pagedList(c)),
  },
];

/**
 * sim.client()'s floor: the same EtcdClient on services that only return canned answers. Every service is
 * there (the client derives its methods from each one's), only KV answers anything.
 */
function doNothingServices(): EtcdServices {
  const smallKv = rangeAnswer([key(0)], false, 1);
  const none = {};
  const kv = { put: () => ({ header, prev_kv: null }), range: () => smallKv };
  return { kv, watch: none, lease: none, maintenance: none, cluster: none, auth: none, lock: none, election: none } as unknown as EtcdServices;
}

const CLIENT_OPS: ReadonlyArray<{ name: string; op: (c: EtcdClient, i: number) => Promise<unknown> }> = [
  { name: 'sim.client(): sequential put', op: (c, i) => c.kv.put({ key: key(i), value: VALUE }) },
  { name: 'sim.client(): single-key get', op: async (c, i) => consume((await c.kv.range({ key: key(i) })).kvs.length) },
];

const MODES = [
  ['real', 2],
  ['virtual', 1.5],
] as const;
const modeName = (time: 'real' | 'virtual'): string => (time === 'real' ? 'default (real time)' : 'virtual time');

/**
 * Every row twice: rounds after a forced full GC (the harness's default: each round starts from the same
 * heap) and rounds without one (the heap carries over; no shrunken young generation to grow back first).
 * The two bracket the steady state from both sides; neither alone is it (docs/performance.md).
 */
const GC_MODES = [
  [true, ''],
  [false, ', no forced GC'],
] as const;

/** Measures one row in both GC modes, the rounds of each mode one after the other. */
async function bothGcModes<S, B>(spec: Parameters<typeof row>[0], subject: AsyncCase<S>, baseline: AsyncCase<B>, sz: Sizes & { clock: 'cpu' }): Promise<Row[]> {
  const out: Row[] = [];
  for (const [forceGc, suffix] of GC_MODES) out.push(row({ ...spec, name: spec.name + suffix }, await measurePairAsync(subject, baseline, { ...sz, forceGc })));
  return out;
}

export const floorSection: BenchSection = {
  name: 'floor',
  title: "sim.etcd3() / sim.client() in both time modes against the same client's floor (canned answers)",
  async run(ctx: BenchContext): Promise<Row[]> {
    const sz = { ...(ctx.quick ? QUICK : FULL), clock: 'cpu' as const };
    const rows: Row[] = [];
    for (const o of ETCD3_OPS) {
      const ops = o.big === true ? sz.bigOps : sz.ops;
      for (const [time, maxRatio] of MODES) {
        ctx.log(`floor: ${o.name}, ${time}`);
        const sim = (): World<Etcd3> => {
          const s = simOf(time, o.big === true);
          return { sim: s, client: s.etcd3() };
        };
        rows.push(
          ...(await bothGcModes(
            { name: `${o.name}: ${modeName(time)}`, unit: o.unit, baselineName: o.copies === true ? 'etcd3 mock(), fresh kvs' : 'etcd3 mock() floor', target: { maxRatio } },
            opCase(sim, o.op, ops, o.inFlight),
            opCase(() => ({ client: floorClient(o.canned, o.copies), sim: undefined }), o.op, ops * (o.floorScale ?? 1), o.inFlight),
            sz,
          )),
        );
      }
    }
    for (const [time, maxRatio] of MODES) {
      ctx.log(`floor: watch delivery, ${time}`);
      const { subject, baseline } = watchDeliveryCases(() => simOf(time, false), sz.events, IN_FLIGHT);
      rows.push(
        ...(await bothGcModes(
          { name: `watch delivery, ${sz.events / 1000}k events: ${modeName(time)}`, unit: 'event', baselineName: 'etcd3 mock() floor', target: { maxRatio } },
          subject,
          baseline,
          sz,
        )),
      );
    }
    for (const o of CLIENT_OPS) {
      for (const [time, maxRatio] of MODES) {
        ctx.log(`floor: ${o.name}, ${time}`);
        const sim = (): World<EtcdClient> => {
          const s = simOf(time, false);
          return { sim: s, client: s.client() };
        };
        const floor = (): World<EtcdClient> => ({ sim: undefined, client: new EtcdClient(doNothingServices()) });
        rows.push(
          ...(await bothGcModes(
            { name: `${o.name}: ${modeName(time)}`, unit: 'op', baselineName: 'EtcdClient on do-nothing services', target: { maxRatio } },
            opCase(sim, o.op, sz.ops, 1),
            opCase(floor, o.op, sz.ops, 1),
            sz,
          )),
        );
      }
    }
    return rows;
  },
};
