/**
 * Named periodic steps, as etcd's background loops: the watch store syncs unsynced watchers every
 * 100 ms and retries blocked ("victim") watchers every 10 ms, the lessor sweeps expired leases
 * every 500 ms. In etcd these are goroutines racing each other; here they are steps of one
 * {@link Ticker} so that when several are due at the same instant they run in one fixed order.
 */

import { checkPeriod, nextPeriodicDue, type Clock, type TimerHandle } from './clock.js';

/** Options of {@link Ticker.add}. */
export interface StepOptions {
  /** Offset of the step's grid: it runs at `phase + k * periodMs` (default 0). */
  readonly phase?: number;
  /**
   * Primary ordering key among steps due at the same instant, ascending (default 0). Lets a
   * subsystem pin its position (e.g. expire leases before syncing watchers) whatever the
   * construction order of the subsystems; equal ranks run in registration order.
   */
  readonly rank?: number;
}

/** A registered step as reported by {@link Ticker.steps}. */
export interface StepInfo {
  readonly name: string;
  readonly periodMs: number;
  readonly phaseMs: number;
  readonly rank: number;
  /** Next instant the step will run. */
  readonly nextDueMs: number;
}

interface Step {
  readonly name: string;
  readonly periodMs: number;
  readonly phaseMs: number;
  readonly rank: number;
  readonly seq: number;
  readonly fn: () => void;
  nextDue: number;
  active: boolean;
}

const stepBefore = (a: Step, b: Step): boolean => a.rank < b.rank || (a.rank === b.rank && a.seq < b.seq);

/**
 * Runs named periodic steps on a {@link Clock}.
 *
 * Each step runs at the grid instants `phase + k * periodMs` strictly after it is added. Steps due
 * at the same instant run back to back, with no other timer of the clock in between, ordered by
 * rank, then registration order — the order {@link steps} lists. A step added while steps are
 * running first runs at its next grid instant after now; a removed step never runs again.
 * With a RealClock, a step that fell behind runs once and skips the instants it missed.
 *
 * If a step throws, the exception propagates out of the clock; that step has already been moved
 * to its next instant, and the steps after it that were due still run, at the clock's next
 * advance (virtual) or immediately after (real).
 */
export class Ticker {
  private readonly ordered: Step[] = [];
  private readonly byName = new Map<string, Step>();
  private seq = 0;
  private driver: TimerHandle | undefined;
  private driverDue = Infinity;
  private closed = false;

  constructor(private readonly clock: Clock) {}

  /** Registers step `name` (unique in this ticker) to run `fn` every `periodMs` ms. */
  add(name: string, periodMs: number, fn: () => void, opts?: StepOptions): void {
    if (this.closed) throw new Error('Ticker: add on a closed ticker');
    if (this.byName.has(name)) throw new Error(`Ticker: step ${JSON.stringify(name)} is already registered`);
    const phaseMs = opts?.phase ?? 0;
    const rank = opts?.rank ?? 0;
    checkPeriod(periodMs, phaseMs);
    if (!Number.isFinite(rank)) throw new RangeError(`Ticker: rank must be finite, got ${rank}`);
    const step: Step = {
      name,
      periodMs,
      phaseMs,
      rank,
      seq: this.seq++,
      fn,
      nextDue: nextPeriodicDue(this.clock.now(), periodMs, phaseMs),
      active: true,
    };
    let i = this.ordered.length;
    while (i > 0 && stepBefore(step, this.ordered[i - 1]!)) i--;
    this.ordered.splice(i, 0, step);
    this.byName.set(name, step);
    this.rearm();
  }

  /** Unregisters step `name`; returns whether it was registered. */
  remove(name: string): boolean {
    const step = this.byName.get(name);
    if (step === undefined) return false;
    step.active = false;
    this.byName.delete(name);
    this.ordered.splice(this.ordered.indexOf(step), 1);
    this.rearm();
    return true;
  }

  /** Whether step `name` is registered. */
  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** The registered steps in the order they run when due at the same instant. */
  steps(): StepInfo[] {
    return this.ordered.map((s) => ({
      name: s.name,
      periodMs: s.periodMs,
      phaseMs: s.phaseMs,
      rank: s.rank,
      nextDueMs: s.nextDue,
    }));
  }

  /** Unregisters every step and cancels the ticker's timer; add() afterwards throws. */
  close(): void {
    this.closed = true;
    for (const step of this.ordered) step.active = false;
    this.ordered.length = 0;
    this.byName.clear();
    this.rearm();
  }

  private readonly fire = (): void => {
    this.driver = undefined;
    this.driverDue = Infinity;
    const now = this.clock.now();
    try {
      for (const step of [...this.ordered]) {
        if (!step.active || step.nextDue > now) continue;
        step.nextDue = nextPeriodicDue(now, step.periodMs, step.phaseMs);
        step.fn();
      }
    } finally {
      this.rearm();
    }
  };

  /** Keeps exactly one clock timer, set for the earliest step instant. */
  private rearm(): void {
    let due = Infinity;
    for (const step of this.ordered) if (step.nextDue < due) due = step.nextDue;
    if (due === this.driverDue) return;
    if (this.driver !== undefined) this.clock.cancel(this.driver);
    this.driver = undefined;
    this.driverDue = due;
    if (due !== Infinity) this.driver = this.clock.setTimer(due, this.fire, 'ticker');
  }
}
