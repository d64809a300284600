// vitest: one simulator per test (created and closed in the test), the run's shared served simulator, and fake
// timers installed after etcdsim is imported (a jump neither expires a lease nor stalls the watch sync).
import { afterEach, expect, inject, test, vi } from 'vitest';
import { Etcd3 } from 'etcd3';
import { createEtcdSim } from 'etcdsim';

afterEach(() => vi.useRealTimers());

test('a fresh simulator for this test', async () => {
  const sim = createEtcdSim();
  const client = sim.etcd3();
  try {
    await client.put('/svc/a').value('up');
    expect(await client.get('/svc/a').string()).toBe('up');
  } finally {
    client.close();
    sim.close();
  }
});

test('the shared served simulator of the run', async () => {
  const client = new Etcd3({ hosts: inject('endpoint') });
  try {
    await client.put(`/vitest/${process.pid}`).value('up');
    expect(await client.get(`/vitest/${process.pid}`).string()).toBe('up');
  } finally {
    client.close();
  }
});

test('fake timers after import: a jump past a lease TTL does not expire it, the watch sync still runs', async () => {
  const sim = createEtcdSim();
  const c = sim.client(); // etcd's raw API: its calls need no timers of the test's
  try {
    await c.kv.put({ key: '/w/a', value: '1' });
    const { ID } = await c.lease.leaseGrant({ TTL: 30 });
    vi.useFakeTimers();
    vi.advanceTimersByTime(60_000);
    expect(Number((await c.lease.leaseTimeToLive({ ID })).TTL)).toBeGreaterThanOrEqual(29);
    const w = c.watch();
    const it = w[Symbol.asyncIterator]();
    w.create({ key: '/w/a', start_revision: 2 });
    expect((await it.next()).value.created).toBe(true);
    expect((await it.next()).value.events).toHaveLength(1); // replayed by the 100 ms sync step, on real time
    w.close();
  } finally {
    sim.close();
  }
});
