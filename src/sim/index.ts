/**
 * The simulator's single owner of time and randomness: every other module takes a {@link Clock}
 * and a {@link SimRandom} instead of reaching for Date, timers or Math.random, so a whole etcd
 * run (lease expiries, watch sync ticks, lease IDs) is reproducible from a seed.
 */

export {
  RealClock,
  afterHostTime,
  hostNow,
  VirtualClock,
  checkPeriod,
  nextPeriodicDue,
  type Clock,
  type EveryOptions,
  type PendingTimer,
  type RealClockOptions,
  type TimerHandle,
} from './clock.js';
export { hostEpochMs, hostMicrotask, hostNextTurn } from './host_platform.js';
export { SimRandom, fnv1a64, freshSeed } from './random.js';
export { Ticker, type StepInfo, type StepOptions } from './ticker.js';

// For the floors above, which import this folder only through this index (test/layout/index_imports.test.ts).
export { IndexedHeap } from './heap.js';
export type { HeapItem } from './heap.js';
export { Buffer } from './bytes_platform.js';
export { createHash } from './crypto_platform.js';
