// A served simulator under fake timers installed after etcdsim is imported, every API fake-timers can fake
// included (queueMicrotask and process.nextTick too), jumped 120 s while a Lock call waits with a 60 s
// grpc-timeout: the served member keeps its clock and the call its deadline (fake_timers_served.ts). The
// install-before-import order is fake_timers_served_first.test.ts (its own process).
import { test } from 'node:test';
import FakeTimers from '@sinonjs/fake-timers';
import { serve } from '../../src/grpc/server.js';
import { JUMP_MS, servedUnderFakeTimers } from './fake_timers_served.js';

test('fake timers installed after import and jumped 120 s move neither a served lease nor a waiting call’s deadline', async () => {
  const door = await serve({ port: 0 });
  // shouldAdvanceTime: the fakes follow real time between jumps, as in etcd3's own lease tests.
  const clock = FakeTimers.install({ shouldAdvanceTime: true, shouldClearNativeTimers: true, toFake: [...FAKEABLE] });
  try {
    await servedUnderFakeTimers(door, () => clock.tick(JUMP_MS));
  } finally {
    clock.uninstall();
    await door.close();
  }
});

/** Every timer API fake-timers 15 fakes: its defaults, plus queueMicrotask and nextTick, which it leaves out by default. */
const FAKEABLE = [
  'setTimeout',
  'clearTimeout',
  'setImmediate',
  'clearImmediate',
  'setInterval',
  'clearInterval',
  'Date',
  'hrtime',
  'performance',
  'queueMicrotask',
  'nextTick',
] as const;
