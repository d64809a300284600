// A served simulator under fake timers installed before etcdsim is imported and never advanced — how jest and
// vitest configure `useFakeTimers` for a whole file: the served member still answers, its lease keeps its
// TTL, and a Lock call waiting with a 60 s grpc-timeout keeps waiting until its holder's lease is revoked
// (fake_timers_served.ts). Its own file, so that the fakes are in place before the first import of etcdsim
// in this process.
import { test } from 'node:test';
import FakeTimers from '@sinonjs/fake-timers';

// Every API fake-timers knows but process.nextTick, which Node's own streams and test runner call through the
// global process object (jest fakes its sandbox's copy instead; vitest leaves it real by default). A faked
// queueMicrotask is included: nothing of the simulator's may wait for a fake one.
const clock = FakeTimers.install({ toNotFake: ['nextTick'] });
const { serve } = await import('../../src/grpc/server.js');
const { JUMP_MS, servedUnderFakeTimers } = await import('./fake_timers_served.js');

test("with every timer API faked before import (advanced only by one 120 s jump), a served simulator answers, keeps its leases and its deadlines", async (t) => {
  t.after(() => clock.uninstall());
  const door = await serve({ port: 0 });
  try {
    await servedUnderFakeTimers(door, () => clock.tick(JUMP_MS));
  } finally {
    await door.close();
  }
});
