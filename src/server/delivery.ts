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
 *
 * A scheduled flush visits only the calls poked since the last one (`poke(call)`), so a call whose client
 * stopped reading costs nothing while others deliver: etcd's send loop of a blocked stream sits in gRPC's
 * Send and no other stream's write touches it. Hundreds of watch streams that never read (the attack bench's
 * slow readers) would otherwise be looked at on every put that some other watcher receives. A poke that
 * names no call (something somewhere may be pending) makes the next flush visit every open call, as
 * `flush()` always does.
 */

/** A stream call that can push its queued responses; returns how many it pushed. */
export interface Deliverable {
  deliver(): number;
}

/** Receives a flush function whenever responses may be pending; must not call it synchronously. */
export type DeliveryScheduler = (flush: () => void) => void;

export class Delivery {
  private readonly calls = new Set<Deliverable>();
  /** Calls poked by name since the last flush; `sweep`: a poke named none, so every call is visited. */
  private ready = new Set<Deliverable>();
  private sweep = false;
  private scheduler: DeliveryScheduler | undefined;
  private scheduled = false;
  private flushing = false;
  private again = false;
  private deliveredTotal = 0;
  private visitedTotal = 0;
  private readonly scheduledFlush = (): void => {
    this.scheduled = false;
    if (this.sweep) this.flush();
    else this.flushReady();
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

  /** Calls looked at by flushes so far: what delivering costs, whatever it delivered (tests count it). */
  get visited(): number {
    return this.visitedTotal;
  }

  add(call: Deliverable): void {
    this.calls.add(call);
    this.onOpenChange?.(this.calls.size);
  }

  remove(call: Deliverable): void {
    this.ready.delete(call);
    if (this.calls.delete(call)) this.onOpenChange?.(this.calls.size);
  }

  /** Sets (or clears, with undefined) the scheduler of automatic flushes. */
  setScheduler(scheduler: DeliveryScheduler | undefined): void {
    this.scheduler = scheduler;
    this.scheduled = false;
  }

  /**
   * Something may be pending — on `call` (an open call), or anywhere when none is named: asks the scheduler
   * for a flush (once until it runs) that visits it. Cheap when idle.
   */
  poke(call?: Deliverable): void {
    if (call === undefined) this.sweep = true;
    else if (this.calls.has(call)) this.ready.add(call);
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
        this.sweep = false;
        this.ready.clear();
        pass = 0;
        for (const c of this.calls) pass += c.deliver();
        this.visitedTotal += this.calls.size;
        n += pass;
      } while (pass > 0 || this.again);
    } finally {
      this.flushing = false;
      this.deliveredTotal += n;
    }
    return n;
  }

  /**
   * The scheduled flush: delivers the calls poked since the last flush, and those poked meanwhile (a
   * listener's request may queue responses elsewhere), until none is left; a poke naming no call, or a
   * flush() asked for from inside a listener, turns it into a full flush.
   */
  private flushReady(): void {
    if (this.flushing) {
      this.again = true;
      return;
    }
    this.flushing = true;
    let n = 0;
    try {
      while (this.ready.size > 0 && !this.sweep && !this.again) {
        const batch = this.ready;
        this.ready = new Set();
        for (const c of batch) if (this.calls.has(c)) n += c.deliver();
        this.visitedTotal += batch.size;
      }
    } finally {
      this.flushing = false;
      this.deliveredTotal += n;
    }
    if (this.sweep || this.again) this.flush();
  }
}
