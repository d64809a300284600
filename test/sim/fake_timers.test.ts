// The simulator's real-time clock is the host's, whatever fake timers a test installs after importing
// etcdsim (issue 28's reproduction: jumping a fake clock 20 s must not expire a lease a client keeps alive,
// as it cannot expire one on a real etcd in another process). The install-before-import order, the jest and
// vitest style, is test/sim/fake_timers_first.test.ts (it needs its own process).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import FakeTimers from '@sinonjs/fake-timers';
import { createEtcdSim } from '../../src/index.js';

test('a fake clock installed after import and jumped 20 s does not expire a lease kept alive in-process', async () => {
  const sim = createEtcdSim();
  const client = sim.etcd3();
  try {
    const lease = client.lease(5);
    let lost: string | undefined;
    lease.on('lost', (e: Error) => (lost = e.message));
    const id = await lease.grant();
    // shouldClearNativeTimers: etcd3 clears its keep-alive timer while the fakes are in place; without it
    // that real timer would leak and keep the test process alive (against a real etcd too).
    const clock = FakeTimers.install({ shouldAdvanceTime: true, shouldClearNativeTimers: true });
    try {
      await new Promise((r) => setTimeout(r, 100));
      clock.tick(20_000);
    } finally {
      clock.uninstall();
    }
    await new Promise((r) => setTimeout(r, 50));
    const { TTL } = await client.leaseClient.leaseTimeToLive({ ID: id });
    assert.equal(lost, undefined);
    assert.equal(TTL, '4'); // as a real etcd answers: ~0.2 s of its 5 s have passed
    await lease.revoke();
  } finally {
    client.close();
    sim.close();
  }
});
