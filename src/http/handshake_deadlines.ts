/**
 * The client port's handshake deadlines (grpc-go's ConnectionTimeout: a connection that has not finished its
 * handshake some time after accept is closed; see src/http/port.ts), kept for all of a port's connections
 * under one timer.
 *
 * Every connection gets the same time from its accept, so the order of accept is the order of expiry: the
 * connections waiting are a Map in insertion order, the oldest first, and the one timer is armed for the
 * oldest. A connection that finishes its handshake (or closes) leaves the Map and nothing else happens — its
 * deadline is not cancelled, since the timer, when it fires, finds what is due itself and re-arms for the
 * oldest left, or for none. A timer per connection cost each one a queue entry, a cancel handle, and on its close a
 * cancel that re-armed the host alarm whenever it was the oldest — every time, as 2000 half-open connections
 * dropped in the order they came (issue 32's half-open row).
 */

/** Runs `fn` after `ms` unless cancelled, and tells the time (src/sim's host time, or a test's virtual clock). */
export interface HostTimers {
  after(ms: number, fn: () => void): { cancel(): void };
  /** Milliseconds, never going back. */
  now(): number;
}

/** What a deadline ends: the connection's socket. */
export interface Expirable {
  destroy(): void;
}

export class HandshakeDeadlines<T extends Expirable> {
  /** Connections still in their handshake, with the time each must be done by, oldest first. */
  private readonly due = new Map<T, number>();
  private timer: { cancel(): void } | undefined;

  constructor(
    private readonly ms: number,
    private readonly timers: HostTimers,
  ) {}

  /** Connections still in their handshake. */
  get size(): number {
    return this.due.size;
  }

  /** `conn` was accepted now: it is destroyed unless done() comes within the deadline. */
  add(conn: T): void {
    this.due.set(conn, this.timers.now() + this.ms);
    if (this.timer === undefined) this.timer = this.timers.after(this.ms, this.expire);
  }

  /**
   * `conn` finished its handshake or closed. Its deadline is not cancelled, even when it was the last: the
   * timer, when it fires, finds nothing due and is not armed again, so a port at rest holds no timer from then
   * (clear() ends it at once). Cancelling it here and arming it again at the next accept cost every
   * connection of a port that takes them one at a time (slowloris's 2000) a host alarm set and cancelled —
   * about a fifth of what the port added to node:http's opening (issue 32's tenth pass).
   */
  done(conn: T): void {
    this.due.delete(conn);
  }

  /** Forgets every deadline and drops the timer (the port is closing, or refusing connections). */
  clear(): void {
    this.due.clear();
    this.timer?.cancel();
    this.timer = undefined;
  }

  private readonly expire = (): void => {
    this.timer = undefined;
    const now = this.timers.now();
    for (const [conn, at] of this.due) {
      if (at > now) {
        // The oldest left is due later: wait for it (never longer than a deadline, should the clock misbehave).
        this.timer = this.timers.after(Math.min(at - now, this.ms), this.expire);
        return;
      }
      this.due.delete(conn);
      conn.destroy();
    }
  };
}
