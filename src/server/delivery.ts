/**
 * When stream responses reach a listener. Watch and keep-alive calls queue their responses; a call with
 * an `onResponse` listener gets them pushed at *delivery points*, never from inside a request, a commit
 * or a timer callback (so a listener may call back into the server freely):
 *  - `flush()` here (EtcdServer.flush(), or a call's own flush());
 *  - during `sim.server.advance(ms)` (each step of `await sim.advance(ms)`): after every instant at which a timer ran (lease expiry, watch sync,
 *    progress notify), and once at the end — deterministic on the virtual clock;
 *  - through the scheduler, if one is set: whenever responses may have become pending (a stream write,
 *    a commit, a service call), the scheduler is handed a flush function, once until that flush runs.
 *    An adapter that lives on the event loop sets e.g. `(flush) => queueMicrotask(flush)`, so a client
 *    that reads keeps up with a burst of writes even when the event loop never turns in between, as it
 *    keeps up with etcd over a socket; the simulator itself never touches the event loop.
 * Without a listener, responses simply wait for `take()`.
 */

/** A stream call that can push its queued responses; returns how many it pushed. */
export interface Deliverable {
  deliver(): number;
}

/** Receives a flush function whenever responses may be pending; must not call it synchronously. */
export type DeliveryScheduler = (flush: () => void) => void;

export class Delivery {
  private readonly calls = new Set<Deliverable>();
  private scheduler: DeliveryScheduler | undefined;
  private scheduled = false;
  private flushing = false;
  private again = false;
  private deliveredTotal = 0;
  private readonly scheduledFlush = (): void => {
    this.scheduled = false;
    this.flush();
  };

  /** Open calls (watch and keep-alive streams). */
  get openCalls(): number {
    return this.calls.size;
  }

  /**
   * Told the number of open calls whenever a call opens or ends: a front door whose calls stand for open
   * connections (an in-process client on a real clock) keeps the process alive while any is open.
   */
  onOpenChange: ((open: number) => void) | undefined;

  /** Responses delivered to listeners so far (a front door can tell whether a turn of its loop did anything). */
  get delivered(): number {
    return this.deliveredTotal;
  }

  add(call: Deliverable): void {
    this.calls.add(call);
    this.onOpenChange?.(this.calls.size);
  }

  remove(call: Deliverable): void {
    if (this.calls.delete(call)) this.onOpenChange?.(this.calls.size);
  }

  /** Sets (or clears, with undefined) the scheduler of automatic flushes. */
  setScheduler(scheduler: DeliveryScheduler | undefined): void {
    this.scheduler = scheduler;
    this.scheduled = false;
  }

  /** Something may be pending: asks the scheduler for a flush (once until it runs). Cheap when idle. */
  poke(): void {
    if (this.scheduler === undefined || this.scheduled || this.calls.size === 0) return;
    this.scheduled = true;
    this.scheduler(this.scheduledFlush);
  }

  /**
   * Pushes every open call's queued responses to its listener, repeating until a pass delivers nothing
   * (listeners may cause more; a flush called from inside a listener only asks the running one to go on).
   * Returns the number of responses delivered.
   */
  flush(): number {
    if (this.flushing) {
      this.again = true;
      return 0;
    }
    this.flushing = true;
    let n = 0;
    try {
      let pass: number;
      do {
        this.again = false;
        pass = 0;
        for (const c of this.calls) pass += c.deliver();
        n += pass;
      } while (pass > 0 || this.again);
    } finally {
      this.flushing = false;
      this.deliveredTotal += n;
    }
    return n;
  }
}
