// Fake timers in place before etcdsim is imported, `performance` too (vitest fakes timers and Date by
// default): the simulator neither stalls nor follows the fake clock.
import { expect, test, vi } from 'vitest';

vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval', 'Date', 'performance'] });
const { createEtcdSim } = await import('etcdsim');

test('fake timers before import: the watch sync still runs, a fake jump expires nothing', async () => {
  const sim = createEtcdSim();
  const c = sim.client();
  try {
    await c.kv.put({ key: '/w/a', value: '1' });
    const { ID } = await c.lease.leaseGrant({ TTL: 30 });
    vi.advanceTimersByTime(60_000);
    expect(Number((await c.lease.leaseTimeToLive({ ID })).TTL)).toBeGreaterThanOrEqual(29);
    const w = c.watch();
    const it = w[Symbol.asyncIterator]();
    w.create({ key: '/w/a', start_revision: 2 });
    expect((await it.next()).value.created).toBe(true);
    expect((await it.next()).value.events).toHaveLength(1);
    w.close();
  } finally {
    sim.close();
    vi.useRealTimers();
  }
});
