/**
 * What one simulator per test costs: a test that creates its own simulator (createEtcdSim() on real time, as a
 * test would, an etcd3 client on it, one put, both closed) against one that resets a shared simulator and
 * client instead (`delete().all()`, then the same put) — the two ways README's runner recipes offer. One op is
 * one test's worth of set-up, work and clean-up.
 */
import type { Etcd3 } from 'etcd3';
import { createEtcdSim, type EtcdSim } from '../src/index.js';
import { measurePairAsync, type AsyncCase } from './etcd3.bench.js';
import { row, type BenchContext, type BenchSection, type Row } from './harness.js';

const FULL = { tests: 2_000, rounds: 7, warmup: 2 };
const QUICK = { tests: 200, rounds: 3, warmup: 1 };

function perTest(tests: number): AsyncCase<null> {
  return {
    setup: () => null,
    run: async () => {
      for (let i = 0; i < tests; i++) {
        const sim = createEtcdSim();
        const client = sim.etcd3();
        await client.put('/svc/a').value('up');
        client.close();
        sim.close();
      }
      return tests;
    },
  };
}

function shared(tests: number): AsyncCase<{ sim: EtcdSim; client: Etcd3 }> {
  return {
    setup: () => {
      const sim = createEtcdSim();
      return { sim, client: sim.etcd3() };
    },
    run: async ({ client }) => {
      for (let i = 0; i < tests; i++) {
        await client.delete().all();
        await client.put('/svc/a').value('up');
      }
      return tests;
    },
    teardown: ({ sim, client }) => {
      client.close();
      sim.close();
    },
  };
}

export const lifecycleSection: BenchSection = {
  name: 'lifecycle',
  title: 'A simulator per test vs resetting a shared one (real time, etcd3 client, one put per test)',
  async run(ctx: BenchContext): Promise<Row[]> {
    const sz = ctx.quick ? QUICK : FULL;
    return [
      row(
        { name: 'a fresh simulator per test (create, etcd3(), put, close)', unit: 'test', baselineName: 'reset a shared one (delete().all(), put)' },
        await measurePairAsync(perTest(sz.tests), shared(sz.tests), sz),
      ),
    ];
  },
};
