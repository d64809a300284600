/**
 * The browser's stand-in for src/sim/host_platform.ts: the playground bundle resolves that module to this one.
 * In the page no test fakes the timers, so the host's time and wake-ups are the browser's own `performance`,
 * `setTimeout` and `queueMicrotask`; a page has no process to keep alive.
 */

export function hostMonotonicMs(): number {
  return performance.now();
}

export function hostEpochMs(): number {
  return performance.timeOrigin + performance.now();
}

export function hostMicrotask(fn: () => void): void {
  queueMicrotask(fn);
}

export function hostKeepAlive(): () => void {
  return () => {};
}

export function hostNextTurn(fn: () => void): void {
  setTimeout(fn, 0);
}

/** One timed wake-up at a time, as the Node module's: `set` replaces any pending one. */
export class HostAlarm {
  private timer: ReturnType<typeof setTimeout> | undefined;

  set(delayMs: number, fn: () => void): void {
    this.cancel();
    this.timer = setTimeout(() => {
      this.timer = undefined;
      fn();
    }, Math.max(0, delayMs));
  }

  cancel(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
