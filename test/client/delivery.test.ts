// Clients on the event loop see what they would see against etcd: responses keep up with bursts of writes,
// time flows by default, a client that stops reading is a slow consumer, and a stuck virtual clock says so.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createEtcdSim, WATCH_DEFAULTS, type messages as M } from '../../src/index.js';

const keysOf = (rs: readonly M.WatchResponse[]): string[] => rs.flatMap((r) => r.events.map((e) => Buffer.from(e.kv!.key).toString()));

test('etcd3 on a virtual clock nobody moves: 300 awaited puts and 10k puts 64 in flight reach a prefix watcher, every one, in order', async () => {
  const sim = createEtcdSim({ time: 'virtual' });
  const client = sim.etcd3();
  try {
    const watcher = await client.watch().prefix('/p/').create();
    const seen: string[] = [];
    watcher.on('put', (kv) => seen.push(kv.key.toString()));
    for (let i = 0; i < 300; i++) await client.put(`/p/${i}`).value('v');
    assert.equal(seen.length, 300);
    const n = 10_000;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < n) await client.put(`/p/${next++}`).value('w');
    };
    await Promise.all(Array.from({ length: 64 }, worker));
    await sim.settle();
    assert.equal(seen.length, 300 + n);
    assert.deepEqual(seen.slice(300), Array.from({ length: n }, (_, i) => `/p/${i}`));
    assert.equal(sim.clock.now(), 0, 'no virtual time passed');
    assert.equal(sim.watchable.victims.length, 0);
    await watcher.cancel();
  } finally {
    client.close();
    sim.close();
  }
});

test('by default time flows: a watcher opened at a past revision gets its history and later events, nobody advancing', async () => {
  const sim = createEtcdSim();
  assert.equal(sim.time, 'real');
  const client = sim.etcd3();
  try {
    for (let i = 0; i < 5; i++) await client.put(`/h/${i}`).value(String(i));
    const watcher = await client.watch().prefix('/h/').startRevision('2').create();
    const seen: string[] = [];
    const done = new Promise<void>((resolve) =>
      watcher.on('put', (kv) => {
        seen.push(kv.key.toString());
        if (seen.length === 6) resolve();
      }),
    );
    await client.put('/h/5').value('5');
    await done; // the replay comes from the watch sync step, on the real clock
    assert.deepEqual(seen, ['/h/0', '/h/1', '/h/2', '/h/3', '/h/4', '/h/5']);
    assert.throws(() => sim.server.advance(10), /runs on real time/);
    await assert.rejects(sim.advance(10), /time: 'virtual'/);
    await watcher.cancel();
  } finally {
    client.close();
    sim.close();
  }
});

test('the raw client is a slow consumer when nobody iterates: window, channel, victim; iterating catches it up in batches', async () => {
  const sim = createEtcdSim({ time: 'virtual' });
  const c = sim.client();
  const ws = c.watch();
  ws.create({ key: '/s/', range_end: '/s0' });
  const value = 'x'.repeat(200);
  const n = 3000;
  for (let i = 0; i < n; i++) await c.kv.put({ key: `/s/${i % 50}`, value });
  const call = sim.services.watch.calls()[0]!;
  assert.ok(call.isPaused, 'the client stopped reading at its high-water mark');
  assert.equal(call.stream.channelLength, WATCH_DEFAULTS.chanBufLen);
  assert.ok(call.stream.inTransport.bytes <= WATCH_DEFAULTS.sendWindowBytes + 400);
  assert.equal(sim.watchable.victims.length, 1);
  // Reading again: what waits arrives at once, the rest after the victim retry and the sync steps.
  const got: M.WatchResponse[] = [];
  const reader = (async () => {
    for await (const r of ws) {
      got.push(r);
      if (keysOf(got).length === n) return;
    }
  })();
  await sim.advance(300);
  await reader;
  const revs = got.flatMap((r) => r.events.map((e) => Number(e.kv!.mod_revision)));
  assert.deepEqual(revs, Array.from({ length: n }, (_, i) => i + 2), 'every event, in order, once');
  const batched = got.filter((r) => r.events.length > 1);
  assert.ok(batched.length >= 1 && got.length < n, `caught up in batches: ${got.length} responses for ${n} events`);
  c.close();
  sim.close();
});

test('a virtual clock nobody moves while a client waits for a replay: a process warning says what to do', async () => {
  const sim = createEtcdSim({ time: 'virtual', stallWarningMs: 20 });
  const client = sim.etcd3();
  const warned = new Promise<Error>((resolve) => {
    const onWarning = (w: Error): void => {
      if (w.name !== 'EtcdsimVirtualClockWarning') return; // another warning of the process
      process.off('warning', onWarning);
      resolve(w);
    };
    process.on('warning', onWarning);
  });
  try {
    await client.put('/w/a').value('1');
    const watcher = await client.watch().prefix('/w/').startRevision('1').create();
    const warning = await warned;
    assert.equal(warning.name, 'EtcdsimVirtualClockWarning');
    assert.match(warning.message, /await sim\.advance\(ms\)/);
    let replayed = false;
    watcher.on('put', () => (replayed = true));
    await sim.advance(100);
    assert.ok(replayed);
    await watcher.cancel();
  } finally {
    client.close();
    sim.close();
  }
});

test('settle() waits for chains that hop through many event-loop turns', async () => {
  const sim = createEtcdSim({ time: 'virtual' });
  const c = sim.client();
  let last = 0;
  const chain = async (): Promise<void> => {
    for (let i = 0; i < 50; i++) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      last = Number((await c.kv.put({ key: 'k', value: String(i) })).header.revision);
    }
  };
  void chain();
  await sim.settle();
  assert.equal(last, 51);
  sim.close();
});
