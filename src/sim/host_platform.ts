/**
 * The host's own time and wake-ups, out of reach of a test's fake timers. A real etcd keeps its clock in
 * another process: a test that installs @sinonjs/fake-timers (or jest's / vitest's `useFakeTimers`, built on
 * it) and jumps 20 s does not expire that etcd's leases, and a fake clock nobody advances does not stop its
 * watch sync. A simulator in the test's process must behave the same, so nothing here goes through what fake
 * timers replace — the globals `Date`, `performance`, `process.hrtime`, `setTimeout`/`setInterval`/
 * `setImmediate`/`queueMicrotask`, nor the exports of `node:timers`, `node:timers/promises` and
 * `perf_hooks.performance.now` (all patched in place, so capturing them when this module loads would not help
 * when the fakes were installed first):
 *  - time: `process.uptime()` (libuv's monotonic clock) on the epoch of `perf_hooks.performance.timeOrigin`;
 *  - a timed wake-up: `Atomics.waitAsync` with a timeout, which V8 resolves from the platform's own task
 *    queue (measured: ~8 µs to arm and cancel, resolves within a millisecond of its timeout, sometimes a
 *    little early — callers re-check the time);
 *  - a turn of the event loop: `node:timers`' setImmediate as this module found it, unless fake timers had
 *    already replaced it (their functions carry a `clock`; jest's legacy ones are mocks) — then a message on
 *    a `MessageChannel` (Node's global, the one `node:worker_threads` exports: taken from the global, it does
 *    not load Node's worker machinery, ~15 ms of a member's start), sent twice so that a whole check phase
 *    (the immediates client code queued) passes in between, as it does behind a setImmediate;
 *  - a microtask: a resolved promise's `then`;
 *  - keeping the process alive: a referenced `MessagePort` (an `Atomics.waitAsync` alone does not).
 * Fake timers patch none of these (fake-timers 15: `timers`, `timers/promises`, `perf_hooks.now`, globals).
 * The time origin and `Atomics` are read when used, not when this module loads: `etcdsim etcd` starts from a
 * V8 start-up snapshot in which this module was evaluated while the snapshot was built (bin/etcd_snapshot.cjs)
 * — in another process, whose time origin is not this one's, and whose builder has no `Atomics` at all.
 * The playground bundle (scripts/build.mjs) resolves this file to src/playground/browser/host_platform.ts,
 * the browser's timers, where no test fakes them.
 */

import { performance as perfHooks } from 'node:perf_hooks';
import { setImmediate as timersSetImmediate } from 'node:timers';
import type { MessagePort } from 'node:worker_threads';

/** `Atomics.waitAsync` (ES2024, in Node since 16), typed here as the project's lib is ES2022. */
const waitAsync = (cell: Int32Array, index: number, value: number, timeoutMs: number): { async: boolean; value: Promise<string> | string } =>
  (Atomics as unknown as { waitAsync: typeof waitAsync }).waitAsync(cell, index, value, timeoutMs);

/** Host monotonic time in ms since the process started; never moved by fake timers. */
export function hostMonotonicMs(): number {
  return process.uptime() * 1000;
}

/** Host wall-clock time in ms (epoch), advancing with the monotonic clock; never moved by fake timers. */
export function hostEpochMs(): number {
  return perfHooks.timeOrigin + process.uptime() * 1000;
}

const resolved = Promise.resolve();

/** Runs `fn` in a microtask (as queueMicrotask, which fake timers may replace). */
export function hostMicrotask(fn: () => void): void {
  void resolved.then(fn);
}

/**
 * Keeps the process alive while at least one hold is taken, as an open socket to etcd would. One referenced
 * port serves every hold.
 */
let keepAliveChannel: InstanceType<typeof MessageChannel> | undefined; // both ends kept: a collected end would close the other
let keepAliveHolds = 0;

/** Takes a hold on the process; the returned function releases it (releasing twice is harmless). */
export function hostKeepAlive(): () => void {
  if (keepAliveHolds++ === 0) {
    if (keepAliveChannel === undefined) {
      keepAliveChannel = new MessageChannel();
      keepAliveChannel.port1.on('message', noop); // a port with a listener is referenced: it keeps the loop running
    }
    keepAliveChannel.port1.ref();
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--keepAliveHolds === 0) keepAliveChannel?.port1.unref();
  };
}

const noop = (): void => {};

/** node:timers' setImmediate if it is the host's own (see the header), else undefined. */
const genuineSetImmediate = ((): ((fn: () => void) => unknown) | undefined => {
  const fn = timersSetImmediate as unknown as { clock?: unknown; _isMockFunction?: unknown };
  return fn.clock === undefined && fn._isMockFunction === undefined ? timersSetImmediate : undefined;
})();

/** Callbacks waiting for the next turn of the event loop, and the channel that delivers that turn. */
let turnQueue: Array<() => void> = [];
let turnChannel: { readonly rx: MessagePort; readonly tx: MessagePort } | undefined;
let turnHops = 0;

/**
 * Runs `fn` on a later turn of the event loop, after the I/O and immediates already due (as setImmediate,
 * which fake timers may replace). While callbacks wait, the process stays alive.
 */
export function hostNextTurn(fn: () => void): void {
  if (genuineSetImmediate !== undefined) {
    genuineSetImmediate(fn);
    return;
  }
  if (turnChannel === undefined) {
    const { port1, port2 } = new MessageChannel();
    port1.on('message', runTurn);
    port1.unref();
    turnChannel = { rx: port1, tx: port2 };
  }
  if (turnQueue.length === 0) {
    turnChannel.rx.ref();
    turnHops = 0;
    turnChannel.tx.postMessage(0);
  }
  turnQueue.push(fn);
}

function runTurn(): void {
  if (turnHops++ === 0) {
    turnChannel!.tx.postMessage(0);
    return;
  }
  const due = turnQueue;
  turnQueue = [];
  turnChannel!.rx.unref();
  for (const fn of due) fn();
}

/**
 * One timed wake-up at a time: `set(delayMs, fn)` replaces any pending one. It does not keep the process
 * alive by itself (see {@link hostKeepAlive}) and may fire up to about a millisecond early: callers compare
 * with {@link hostMonotonicMs} and re-arm.
 */
export class HostAlarm {
  private readonly cell = new Int32Array(new SharedArrayBuffer(4));
  private generation = 0;
  private pending = false;

  set(delayMs: number, fn: () => void): void {
    this.cancel();
    const generation = ++this.generation;
    const wait = waitAsync(this.cell, 0, 0, Math.max(0, delayMs));
    this.pending = true;
    const fire = (): void => {
      if (generation !== this.generation) return;
      this.pending = false;
      fn();
    };
    if (typeof wait.value !== 'string') void wait.value.then(fire);
    else hostNextTurn(fire); // a zero timeout answers synchronously: fn still runs on a later turn
  }

  cancel(): void {
    if (!this.pending) return;
    this.pending = false;
    this.generation++;
    Atomics.notify(this.cell, 0, 1);
  }
}
