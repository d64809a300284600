/**
 * Time for the simulator. Everything in etcd that depends on time — lease TTL expiry and the
 * lessor's periodic revoke sweep, keepalive deadlines, the watch store's periodic sync of unsynced
 * watchers and retry of blocked ("victim") watchers — reads and schedules through a {@link Clock},
 * never through Date or setTimeout directly. Tests drive a {@link VirtualClock} by hand so that a
 * run is a pure function of its inputs and seed; a live server uses a {@link RealClock}.
 */

import { IndexedHeap, type HeapItem } from './heap.js';
import { HostAlarm, hostEpochMs, hostKeepAlive, hostMonotonicMs } from './host_platform.js';

declare const timerHandleBrand: unique symbol;

/**
 * Opaque handle to a scheduled timer (one-shot or periodic), used to cancel it — e.g. the lessor
 * cancels a lease's expiry timer when the lease is revoked or renewed by a keepalive.
 * @public
 */
export interface TimerHandle {
  readonly [timerHandleBrand]: true;
}

/** Options of {@link Clock.every}. @public */
export interface EveryOptions {
  /**
   * Offset of the tick grid in ms: ticks fall at `phase + k * periodMs` (default 0). Lets two
   * periodic steps with the same period be deliberately staggered instead of always coinciding.
   */
  readonly phase?: number;
  /** Label shown by {@link VirtualClock.pendingTimers}; no effect on scheduling. */
  readonly name?: string;
}

/**
 * The time source and scheduler every time-dependent etcd mechanism (leases, watch sync) is given.
 *
 * Ordering contract (both implementations): a callback never runs before its due time, and
 * callbacks due at the same instant run in the order their timers were created (a periodic timer
 * keeps its creation rank for every tick), so the interleaving of subsystems is reproducible.
 * @public
 */
export interface Clock {
  /** Current time in ms. Never decreases. Lease expiry instants are computed from it. */
  now(): number;
  /**
   * Runs `fn` once at absolute time `atMs` (a time already passed means "as soon as possible",
   * and the callback then sees `now()` unchanged, never a time in the past).
   */
  setTimer(atMs: number, fn: () => void, name?: string): TimerHandle;
  /** Cancels a pending timer; returns whether it was still pending (false once fired or cancelled). */
  cancel(handle: TimerHandle): boolean;
  /**
   * Runs `fn` every `periodMs` ms until cancelled, at the grid instants `phase + k * periodMs`
   * strictly after now — the grid, not the registration time, fixes the instants, so steps with
   * commensurate periods (watch sync every 100 ms, victim retry every 10 ms) always coincide at
   * the same instants, where the creation-order tiebreak decides which runs first.
   */
  every(periodMs: number, fn: () => void, opts?: EveryOptions): TimerHandle;
}

/**
 * First instant of the periodic grid `phaseMs + k * periodMs` strictly after `nowMs`. Shared by the
 * clocks and the ticker so that every periodic etcd step lands on the same documented instants.
 */
export function nextPeriodicDue(nowMs: number, periodMs: number, phaseMs = 0): number {
  checkPeriod(periodMs, phaseMs);
  const phase = ((phaseMs % periodMs) + periodMs) % periodMs;
  let due = phase + (Math.floor((nowMs - phase) / periodMs) + 1) * periodMs;
  if (due <= nowMs) due += periodMs; // guard against float rounding when nowMs is fractional
  return due;
}

/** Validates a period and phase (positive / any safe integers); integer ms keep the grid exact. */
export function checkPeriod(periodMs: number, phaseMs = 0): void {
  if (!Number.isSafeInteger(periodMs) || periodMs <= 0) {
    throw new RangeError(`period must be a positive integer number of ms, got ${periodMs}`);
  }
  if (!Number.isSafeInteger(phaseMs)) throw new RangeError(`phase must be an integer number of ms, got ${phaseMs}`);
}

function checkInstant(what: string, ms: number): void {
  if (!Number.isFinite(ms)) throw new RangeError(`${what} must be a finite number of ms, got ${ms}`);
}

// ---------------------------------------------------------------------------------------------
// VirtualClock

class VirtualTimer implements HeapItem {
  heapIndex = -1;
  constructor(
    readonly owner: VirtualClock,
    public due: number,
    /** Creation rank: the tiebreak between timers due at the same instant. */
    readonly seq: number,
    readonly fn: () => void,
    /** 0 for one-shot timers. */
    readonly periodMs: number,
    readonly name: string | undefined,
  ) {}
}

const virtualTimerBefore = (a: VirtualTimer, b: VirtualTimer): boolean =>
  a.due < b.due || (a.due === b.due && a.seq < b.seq);

/** A pending timer as reported by {@link VirtualClock.pendingTimers}. @public */
export interface PendingTimer {
  readonly dueMs: number;
  readonly periodMs: number | undefined;
  readonly name: string | undefined;
}

/**
 * Deterministic clock for tests and simulation runs: time stands still until the test moves it,
 * so "the lease expires after exactly TTL ms" or "a slow watcher is retried on the next 10 ms
 * victim tick" can be asserted precisely and replayed.
 *
 * {@link advance}/{@link advanceTo} run every timer due in the window in (due time, creation
 * order), with `now()` set to each timer's due time while it runs; timers created by a callback
 * that fall inside the window run in the same call. If a callback throws, the exception
 * propagates, `now()` stays at that timer's due time and the rest of the window is left pending
 * (a periodic timer that throws has already been re-armed for its next tick).
 * @public
 */
export class VirtualClock implements Clock {
  private nowMs: number;
  private seq = 0;
  private running = false;
  private readonly queue = new IndexedHeap<VirtualTimer>(virtualTimerBefore);

  /** Starts at `startMs` (default 0). */
  constructor(startMs = 0) {
    checkInstant('startMs', startMs);
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  setTimer(atMs: number, fn: () => void, name?: string): TimerHandle {
    checkInstant('atMs', atMs);
    return this.add(Math.max(atMs, this.nowMs), fn, 0, name);
  }

  cancel(handle: TimerHandle): boolean {
    const timer = handle as unknown as VirtualTimer;
    return timer instanceof VirtualTimer && timer.owner === this && this.queue.remove(timer);
  }

  every(periodMs: number, fn: () => void, opts?: EveryOptions): TimerHandle {
    return this.add(nextPeriodicDue(this.nowMs, periodMs, opts?.phase ?? 0), fn, periodMs, opts?.name);
  }

  /** Moves time forward by `ms` (>= 0), running everything due up to and including the new now. Returns callbacks run. */
  advance(ms: number): number {
    checkInstant('ms', ms);
    if (ms < 0) throw new RangeError(`VirtualClock.advance: negative duration ${ms}`);
    return this.advanceTo(this.nowMs + ms);
  }

  /** Moves time forward to absolute `t` (>= now), running everything due up to and including `t`. Returns callbacks run. */
  advanceTo(t: number): number {
    checkInstant('t', t);
    if (t < this.nowMs) throw new RangeError(`VirtualClock.advanceTo: ${t} is before now (${this.nowMs})`);
    if (this.running) throw new Error('VirtualClock: advance/runDue called from inside a timer callback');
    this.running = true;
    let ran = 0;
    try {
      for (let top = this.queue.peek(); top !== undefined && top.due <= t; top = this.queue.peek()) {
        this.queue.pop();
        this.nowMs = top.due;
        if (top.periodMs > 0) {
          top.due += top.periodMs;
          this.queue.push(top);
        }
        ran++;
        top.fn();
      }
      this.nowMs = t;
    } finally {
      this.running = false;
    }
    return ran;
  }

  /** Runs the timers already due at the current instant without moving time. Returns callbacks run. */
  runDue(): number {
    return this.advanceTo(this.nowMs);
  }

  /** Number of pending timers (a periodic timer counts once). */
  pending(): number {
    return this.queue.size;
  }

  /** Due time of the earliest pending timer, or undefined when nothing is scheduled. */
  nextDue(): number | undefined {
    return this.queue.peek()?.due;
  }

  /** Snapshot of the pending timers in the order they would run; for debugging and assertions. */
  pendingTimers(): PendingTimer[] {
    return [...this.queue.values()]
      .sort((a, b) => (virtualTimerBefore(a, b) ? -1 : 1))
      .map((t) => ({ dueMs: t.due, periodMs: t.periodMs > 0 ? t.periodMs : undefined, name: t.name }));
  }

  private add(due: number, fn: () => void, periodMs: number, name: string | undefined): TimerHandle {
    const timer = new VirtualTimer(this, due, this.seq++, fn, periodMs, name);
    this.queue.push(timer);
    return timer as unknown as TimerHandle;
  }
}

// ---------------------------------------------------------------------------------------------
// RealClock

/** Longest single host wait; longer ones are chained (the alarm re-checks the time anyway). */
const MAX_WAIT_MS = 2 ** 31 - 1;

class RealTimer implements HeapItem {
  heapIndex = -1;
  constructor(
    readonly owner: RealClock,
    public due: number,
    public seq: number,
    readonly fn: () => void,
    /** 0 for one-shot timers. */
    readonly periodMs: number,
    readonly phaseMs: number,
  ) {}
}

const realTimerBefore = (a: RealTimer, b: RealTimer): boolean => a.due < b.due || (a.due === b.due && a.seq < b.seq);

/** Options of {@link RealClock}. @public */
export interface RealClockOptions {
  /** Pending timers do not keep the process alive (default false: they do, as Node's timers do). */
  readonly unref?: boolean;
  /**
   * Simulated milliseconds per host millisecond (default 1). Server mode's `--clock-speed`: at 10 a 60 s
   * lease expires after 6 s of wall time — for demos and teaching sessions.
   */
  readonly speed?: number;
}

/**
 * Wall-clock implementation for running the simulator as a live server or as a drop-in for a real etcd in a
 * test. It reads and waits on the host's own time through ./host.ts, which a test's fake timers cannot
 * move, stall or fire early — as they cannot touch a real etcd in another process.
 *
 * `now()` is epoch-anchored but advances with the monotonic clock (like Go's monotonic reading,
 * which etcd's lessor relies on), so a wall-clock step cannot expire or resurrect leases.
 * Timers wait in one queue behind a single host alarm set for the earliest; callbacks never run before
 * their due time, and those due at the same instant run in creation order (the {@link Clock} contract).
 * A periodic timer that falls behind skips the ticks it missed, like Go's time.Ticker.
 * @public
 */
export class RealClock implements Clock {
  private readonly originMs = hostEpochMs();
  private readonly originMono = hostMonotonicMs();
  private readonly speed: number;
  private readonly queue = new IndexedHeap<RealTimer>(realTimerBefore);
  private readonly alarm = new HostAlarm();
  private alarmDue = Infinity;
  private seq = 0;
  private closed = false;
  private running = false;
  private holds = 0;
  private releaseKeepAlive: (() => void) | undefined;

  constructor(private readonly opts: RealClockOptions = {}) {
    this.speed = opts.speed ?? 1;
    if (!(Number.isFinite(this.speed) && this.speed > 0)) throw new RangeError(`RealClock: speed must be a positive number, got ${this.speed}`);
  }

  now(): number {
    return Math.floor(this.originMs + (hostMonotonicMs() - this.originMono) * this.speed);
  }

  setTimer(atMs: number, fn: () => void, _name?: string): TimerHandle {
    checkInstant('atMs', atMs);
    return this.add(atMs, fn, 0, 0);
  }

  cancel(handle: TimerHandle): boolean {
    const timer = handle as unknown as RealTimer;
    if (!(timer instanceof RealTimer) || timer.owner !== this || !this.queue.remove(timer)) return false;
    this.rearm();
    return true;
  }

  every(periodMs: number, fn: () => void, opts?: EveryOptions): TimerHandle {
    const phase = opts?.phase ?? 0;
    checkPeriod(periodMs, phase);
    return this.add(nextPeriodicDue(this.now(), periodMs, phase), fn, periodMs, phase);
  }

  /**
   * Keeps the process alive until the returned release is called, as an open socket to etcd does, even
   * when the timers themselves are unref'd: while a client holds a stream open, the watch sync, victim
   * retry and lease expiry it may be waiting for must get to run. Releasing twice is harmless.
   */
  hold(): () => void {
    this.holds++;
    this.keepAlive();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.holds--;
      this.keepAlive();
    };
  }

  /** Cancels every pending timer; afterwards scheduling throws. Idempotent. */
  close(): void {
    this.closed = true;
    while (this.queue.pop() !== undefined);
    this.holds = 0;
    this.rearm();
  }

  private add(due: number, fn: () => void, periodMs: number, phaseMs: number): TimerHandle {
    if (this.closed) throw new Error('RealClock: scheduling on a closed clock');
    const timer = new RealTimer(this, due, this.seq++, fn, periodMs, phaseMs);
    this.queue.push(timer);
    this.rearm();
    return timer as unknown as TimerHandle;
  }

  /** Runs what is due, one timer at a time so that a callback's cancel or new timer takes effect at once. */
  private readonly fire = (): void => {
    this.alarmDue = Infinity;
    if (this.running) return;
    this.running = true;
    try {
      const now = this.now();
      for (let top = this.queue.peek(); top !== undefined && top.due <= now; top = this.queue.peek()) {
        this.queue.pop();
        if (top.periodMs > 0) {
          top.due = nextPeriodicDue(now, top.periodMs, top.phaseMs);
          this.queue.push(top);
        }
        top.fn();
      }
    } finally {
      this.running = false;
      this.rearm();
    }
  };

  /** Keeps the host alarm set for the earliest timer (re-armed when the host wakes us a little early). */
  private rearm(): void {
    if (this.running) return;
    const due = this.queue.peek()?.due ?? Infinity;
    this.keepAlive();
    if (due === this.alarmDue) return;
    this.alarmDue = due;
    if (due === Infinity) this.alarm.cancel();
    else this.alarm.set(Math.min(Math.max(0, Math.ceil((due - this.now()) / this.speed)), MAX_WAIT_MS), this.fire);
  }

  /** Holds the process while a client holds it, or while timers are pending on a clock that is not unref'd. */
  private keepAlive(): void {
    const want = this.holds > 0 || (this.opts.unref !== true && this.queue.size > 0);
    if (want && this.releaseKeepAlive === undefined) this.releaseKeepAlive = hostKeepAlive();
    else if (!want && this.releaseKeepAlive !== undefined) {
      this.releaseKeepAlive();
      this.releaseKeepAlive = undefined;
    }
  }
}

/** The host-time timers of afterHostTime: one RealClock queue behind one host alarm, made on first use. */
let hostTimers: RealClock | undefined;

/**
 * Runs `fn` once after `ms` of host time unless cancelled: for what lives outside the simulated member —
 * watchdogs that look at it from outside (a virtual clock nobody advances while a client waits) and the
 * transport's own deadlines (a gRPC call's grpc-timeout is host time whatever the member's clock). Like the
 * RealClock it runs on, a test's fake timers can neither fire it early nor hold it back; while it is pending it
 * keeps the process alive, as setTimeout does.
 */
export function afterHostTime(ms: number, fn: () => void): { cancel(): void } {
  const clock = (hostTimers ??= new RealClock());
  const handle = clock.setTimer(clock.now() + (ms > 0 ? ms : 0), fn);
  return { cancel: () => void clock.cancel(handle) };
}

/** The host's wall-clock time in ms (hostEpochMs, out of fake timers' reach): for transport deadlines only, never for simulated behaviour. */
export function hostNow(): number {
  return hostEpochMs();
}
