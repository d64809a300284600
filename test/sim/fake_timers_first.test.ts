// Fake timers installed before etcdsim is imported and never advanced — how jest and vitest configure
// `useFakeTimers` for a whole file — must not stop the simulator's real-time clock, nor let a jump of the
// fake clock move it: a watch opened at a past revision still gets its history from the 100 ms sync step,
// and a lease outlives a fake jump past its TTL, as with a real etcd in another process. Its own file, so
// that the fakes are in place before the first import of etcdsim in this process (the test runner itself
// was loaded first, as jest's and vitest's are).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import FakeTimers from '@sinonjs/fake-timers';

// Every API fake-timers knows but process.nextTick, which Node's own streams and test runner call through the
// global process object (jest fakes its sandbox's copy instead; vitest leaves it real by default).
const clock = FakeTimers.install({ toNotFake: ['nextTick', 'queueMicrotask'] });
const { createEtcdSim } = await import('../../src/index.js');

test('with every timer API faked before import, a watch at a past revision replays and a lease outlives a fake jump', async (t) => {
  t.after(() => clock.uninstall());
  const sim = createEtcdSim();
  const c = sim.client();
  try {
    await c.kv.put({ key: '/w/a', value: '1' });
    await c.kv.put({ key: '/w/b', value: '2' });
    const { ID } = await c.lease.leaseGrant({ TTL: 30 });
    clock.tick(60_000); // twice the TTL on the fake clock: nothing of the simulator's may move
    const w = c.watch();
    const it = w[Symbol.asyncIterator]();
    w.create({ key: '/w/', range_end: '/w0', start_revision: 2 });
    assert.equal((await it.next()).value?.created, true);
    const replay = (await it.next()).value;
    assert.deepEqual(replay?.events.map((e: { type: string; kv: { key: unknown; mod_revision: unknown } }) => `${e.type} ${String(e.kv.key)} ${e.kv.mod_revision}`), ['PUT /w/a 2', 'PUT /w/b 3']);
    const { TTL } = await c.lease.leaseTimeToLive({ ID });
    assert.ok(Number(TTL) >= 29, `lease TTL ${TTL}: the fake jump moved the simulator's clock`);
    w.close();
  } finally {
    sim.close();
  }
});

test('with setImmediate faked before import, a virtual simulator still settles and advances its clients', async () => {
  const sim = createEtcdSim({ time: 'virtual' });
  const c = sim.client();
  try {
    const { ID } = await c.lease.leaseGrant({ TTL: 5 });
    await c.kv.put({ key: 'k', value: 'v', lease: ID });
    let last = 0;
    const chain = async (): Promise<void> => {
      for (let i = 0; i < 20; i++) last = Number((await c.kv.put({ key: 'n', value: String(i) })).header.revision);
    };
    void chain();
    await sim.settle();
    assert.equal(last, 22);
    await sim.advance(5_500);
    assert.equal((await c.kv.range({ key: 'k' })).count, '0', 'the lease expired on virtual time');
  } finally {
    sim.close();
  }
});
