/**
 * The history recorder and its client workload (src/diff/kv_history.ts) on the in-process simulator: what
 * it records is what the KV API answered, a failed write becomes an unknown outcome, the workload is a
 * function of its seed, and a single simulated member's history is linearizable while a member that
 * serves stale reads is caught.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createEtcdSim } from '../../src/index.js';
import { KvHistory, runKvClients, type HistoryKv } from '../../src/diff/kv_history.js';
import { checkLinearizable } from '../../src/diff/linearizability.js';
import type * as M from '../../src/server/messages.js';

/** The simulator's KV service as a history client (its answers are synchronous). */
function simKv(): { kv: HistoryKv; close(): void } {
  const sim = createEtcdSim({ time: 'virtual', seed: 1 });
  const s = sim.services.kv;
  return {
    kv: {
      range: async (r) => s.range(r),
      put: async (r) => s.put(r),
      deleteRange: async (r) => s.deleteRange(r),
      txn: async (r) => s.txn(r),
    },
    close: () => sim.close(),
  };
}

/** A clock that ticks once per reading, so every call and answer gets its own instant. */
function ticking(): () => number {
  let t = 0;
  return () => ++t;
}

test('the recorder writes down what etcd answered; a failed write has an unknown outcome, a failed read none', async () => {
  const { kv, close } = simKv();
  try {
    const h = new KvHistory(ticking());
    assert.deepEqual(await h.run(0, kv, { type: 'cas', key: 'k', expect: null, value: 'v1' }), { type: 'cas', client: 0, key: 'k', invoke: 1, ret: 2, expect: null, value: 'v1', succeeded: true });
    const second = await h.run(0, kv, { type: 'cas', key: 'k', expect: null, value: 'v2' });
    assert.equal(second.type === 'cas' ? second.succeeded : undefined, false);
    assert.deepEqual(await h.run(1, kv, { type: 'cas', key: 'k', expect: 'v1', value: 'v3' }), { type: 'cas', client: 1, key: 'k', invoke: 5, ret: 6, expect: 'v1', value: 'v3', succeeded: true });
    assert.deepEqual(await h.run(1, kv, { type: 'get', key: 'k' }), { type: 'get', client: 1, key: 'k', invoke: 7, ret: 8, value: 'v3' });
    assert.deepEqual(await h.run(1, kv, { type: 'delete', key: 'k' }), { type: 'delete', client: 1, key: 'k', invoke: 9, ret: 10, deleted: 1 });
    assert.deepEqual(await h.run(1, kv, { type: 'get', key: 'k' }), { type: 'get', client: 1, key: 'k', invoke: 11, ret: 12, value: null });
    // A VALUE compare on an absent key is false in etcd, even against "".
    const empty = await h.run(1, kv, { type: 'cas', key: 'k', expect: '', value: 'x' });
    assert.equal(empty.type === 'cas' ? empty.succeeded : undefined, false);
    const failing: HistoryKv = {
      ...kv,
      put: () => Promise.reject(new Error('4 DEADLINE_EXCEEDED')),
      range: () => Promise.reject(new Error('14 UNAVAILABLE')),
    };
    assert.deepEqual(await h.run(2, failing, { type: 'put', key: 'k', value: 'lost?' }), { type: 'put', client: 2, key: 'k', invoke: 15, ret: 'unknown', value: 'lost?' });
    assert.equal((await h.run(2, failing, { type: 'get', key: 'k' })).ret, 'unknown');
    assert.equal(h.operations.length, 9);
    assert.equal(checkLinearizable(h.operations).verdict, 'linearizable');
  } finally {
    close();
  }
});

test('concurrent clients on one simulated member: a linearizable history, the same one for the same seed', async () => {
  const record = async (seed: number): Promise<string> => {
    const { kv, close } = simKv();
    try {
      const h = new KvHistory(ticking());
      let n = 0;
      await runKvClients({ history: h, clients: 4, kvFor: () => kv, seed, stop: () => n >= 400, onOperation: () => n++ });
      const r = checkLinearizable(h.operations);
      assert.equal(r.verdict, 'linearizable', r.verdict === 'not-linearizable' ? r.text : '');
      const kinds = new Set(h.operations.map((o) => o.type));
      assert.deepEqual([...kinds].sort(), ['cas', 'delete', 'get', 'put']);
      assert.ok(h.operations.some((o) => o.type === 'cas' && o.succeeded === true) && h.operations.some((o) => o.type === 'cas' && o.succeeded === false));
      return JSON.stringify(h.operations);
    } finally {
      close();
    }
  };
  assert.equal(await record(7), await record(7));
  assert.notEqual(await record(7), await record(8));
});

test('a member that serves a read from before the last write is caught', async () => {
  const { kv, close } = simKv();
  try {
    // Reads answer from the revision before the newest one: a follower one write behind.
    const stale: HistoryKv = {
      ...kv,
      range: async (r: M.RangeRequest) => {
        const now = await kv.range({ key: Buffer.from('a') });
        const behind = Number(now.header.revision) - 1;
        return kv.range({ ...r, revision: String(Math.max(1, behind)) });
      },
    };
    const h = new KvHistory(ticking());
    let n = 0;
    await runKvClients({ history: h, clients: 3, kvFor: (c) => (c === 0 ? stale : kv), seed: 3, keys: ['a'], stop: () => n >= 60, onOperation: () => n++ });
    const r = checkLinearizable(h.operations);
    assert.equal(r.verdict, 'not-linearizable');
    assert.ok(r.verdict === 'not-linearizable');
    assert.ok(r.minimal.some((o) => o.type === 'get' && o.client === 0), r.text);
    assert.ok(r.minimal.length <= 5, r.text);
  } finally {
    close();
  }
});

test('unknownWritesPerClient: after that many writes of unknown outcome a client only reads, its keys drawn as before', async () => {
  const { kv, close } = simKv();
  try {
    // Client 0's writes all fail (a paused member); client 1 is healthy.
    const failing: HistoryKv = {
      ...kv,
      put: () => Promise.reject(new Error('4 DEADLINE_EXCEEDED')),
      txn: () => Promise.reject(new Error('4 DEADLINE_EXCEEDED')),
      deleteRange: () => Promise.reject(new Error('4 DEADLINE_EXCEEDED')),
    };
    const record = async (limit: number | undefined): Promise<KvHistory> => {
      const h = new KvHistory(ticking());
      let n = 0;
      await runKvClients({ history: h, clients: 2, kvFor: (c) => (c === 0 ? failing : kv), seed: 5, stop: () => n >= 80, onOperation: () => n++, unknownWritesPerClient: limit });
      return h;
    };
    const unknownWrites = (h: KvHistory, client: number): number => h.operations.filter((o) => o.client === client && o.type !== 'get' && o.ret === 'unknown').length;
    const limited = await record(2);
    const free = await record(undefined);
    assert.equal(unknownWrites(limited, 0), 2);
    assert.ok(unknownWrites(free, 0) > 2, `without a limit client 0 goes on writing (${unknownWrites(free, 0)} unknown writes)`);
    // The healthy client is not held back, and client 0 draws the same keys in the same order either way.
    assert.ok(limited.operations.some((o) => o.client === 1 && o.type !== 'get' && o.ret !== 'unknown'));
    const keysOf = (h: KvHistory): string => h.operations.filter((o) => o.client === 0).map((o) => o.key).join('');
    const [a, b] = [keysOf(limited), keysOf(free)];
    const common = Math.min(a.length, b.length);
    assert.ok(common > 10);
    assert.equal(a.slice(0, common), b.slice(0, common));
    assert.equal(checkLinearizable(limited.operations).verdict, 'linearizable');
  } finally {
    close();
  }
});
