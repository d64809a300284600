/**
 * In-process calls against the client's own floor: the same `etcd3` client on its `mock()` plug point answering
 * canned responses (nothing through etcd3 can be faster) vs `sim.etcd3()` on a simulator in the default
 * real-time mode and in virtual mode, measured in the same run. Each op gets two rows with the same baseline,
 * so the table reads floor, both modes and their ratios side by side; issue 28's goals are the targets (2× in
 * the default mode, 1.5× in virtual mode). What the gap is made of: docs/performance.md, "In-process calls".
 *  - sequential put: `await client.put(k).value(v)`, one at a time;
 *  - CAS txn, 64 in flight: `if(k,'Mod','>',0).then(put).else(get)` from 64 concurrent callers;
 *  - single-key get: `await client.get(k).string()` over 1000 keys.
 */
import { Etcd3 } from 'etcd3';
import { createEtcdSim, type EtcdSim } from '../src/index.js';
import { measurePairAsync, type AsyncCase } from './etcd3.bench.js';
import { consume, row, type BenchContext, type BenchSection, type Row } from './harness.js';

const FULL = { ops: 20_000, rounds: 7, warmup: 2 };
const QUICK = { ops: 2_000, rounds: 3, warmup: 1 };
const KEYS = 1_000;
const IN_FLIGHT = 64;
const key = (i: number): string => `bench/k${i % KEYS}`;
const VALUE = 'value-0123456789';

const header = { cluster_id: '1', member_id: '2', revision: '3', raft_term: '4' };
const kv = { key: Buffer.from('bench/k0'), value: Buffer.from(VALUE), create_revision: '2', mod_revision: '3', version: '2', lease: '0' };
/** etcd3's canned answers: what a server that does no work at all would say. */
const CANNED: Record<string, unknown> = {
  put: { header },
  range: { header, kvs: [kv], count: '1', more: false },
  txn: { header, succeeded: true, responses: [{ response: 'response_put', response_put: { header } }] },
};

type Op = (client: Etcd3, i: number) => Promise<unknown>;
interface World {
  readonly client: Etcd3;
  readonly sim: EtcdSim | undefined;
}

function floorClient(): Etcd3 {
  const client = new Etcd3({ hosts: '127.0.0.1:1' });
  client.mock({
    exec: (_service: string, method: string) => Promise.resolve(CANNED[method]),
    withConnection: () => Promise.reject(new Error('the floor has no streams')),
  } as unknown as Parameters<Etcd3['mock']>[0]);
  return client;
}

function simWorld(time: 'real' | 'virtual'): World {
  const sim = createEtcdSim({ time });
  for (let i = 0; i < KEYS; i++) sim.services.kv.put({ key: Buffer.from(key(i)), value: Buffer.from(VALUE) });
  return { sim, client: sim.etcd3() };
}

function opCase(make: () => World, op: Op, ops: number, inFlight: number): AsyncCase<World> {
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

const OPS: ReadonlyArray<{ name: string; unit: string; inFlight: number; op: Op }> = [
  { name: 'sequential put', unit: 'op', inFlight: 1, op: (c, i) => c.put(key(i)).value(VALUE).exec() },
  {
    name: `CAS txn, ${IN_FLIGHT} in flight`,
    unit: 'txn',
    inFlight: IN_FLIGHT,
    op: async (c, i) => consume((await c.if(key(i), 'Mod', '>', 0).then(c.put(key(i)).value(VALUE)).else(c.get(key(i))).commit()).succeeded ? 1 : 0),
  },
  { name: 'single-key get', unit: 'op', inFlight: 1, op: async (c, i) => consume((await c.get(key(i)).string())?.length ?? 0) },
];

export const floorSection: BenchSection = {
  name: 'floor',
  title: "sim.etcd3() in both time modes against etcd3's own mock() floor (canned answers)",
  async run(ctx: BenchContext): Promise<Row[]> {
    const sz = ctx.quick ? QUICK : FULL;
    const rows: Row[] = [];
    for (const o of OPS) {
      for (const [time, maxRatio] of [['real', 2], ['virtual', 1.5]] as const) {
        ctx.log(`floor: ${o.name}, ${time}`);
        rows.push(
          row(
            { name: `${o.name}: ${time === 'real' ? 'default (real time)' : 'virtual time'}`, unit: o.unit, baselineName: 'etcd3 mock() floor', target: { maxRatio } },
            await measurePairAsync(opCase(() => simWorld(time), o.op, sz.ops, o.inFlight), opCase(() => ({ client: floorClient(), sim: undefined }), o.op, sz.ops, o.inFlight), sz),
          ),
        );
      }
    }
    return rows;
  },
};
