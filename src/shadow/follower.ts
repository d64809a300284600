/**
 * The simulator behind the shadow, following the real etcd's revisions rather than its own clock.
 *
 * Calls complete at the proxy in any order (one client's slow read, another's write on a second
 * connection), but etcd committed them in one order, and every answer says where: its header revision.
 * A step is applied to the simulator at the revision etcd answered it at:
 *  - a write that made revision R (a Put; a DeleteRange or Txn that changed a key; a LeaseRevoke of a
 *    lease with keys) runs when the simulator is at R - 1, so it makes R there too;
 *  - anything else (reads, lease grants, compactions, a write that changed nothing, a watch created or
 *    canceled) runs once the simulator is at R; a Range that arrives after later revisions were applied
 *    reads at R, a historical read, as etcd answered it;
 *  - an answer without a revision (an error) runs as it arrives.
 * Revisions no call accounts for — a lease's keys deleted by etcd's expiry, a write of a client that is not
 * behind the shadow — come from the shadow's own watch on the etcd (every key): once no write is
 * in flight through the proxy (or `graceMs` after the events came), the revision's events are applied as
 * they are (an expiry's deletes too). Expiry is etcd's decision: the simulator's clock never moves, so its
 * own timers never expire a lease, and a lease etcd reports gone is dropped there too.
 */
import { serverOf, type EtcdSim } from '../client/index.js';
import { afterHostTime } from '../sim/index.js';
import type * as M from '../server/messages.js';

/** One thing to apply to the simulator, at the revision etcd answered it at. */
export interface Step {
  /** etcd's header revision; undefined: apply on arrival (an error answer). */
  readonly rev: number | undefined;
  /** Whether this step made revision `rev` (asked when the simulator is at rev - 1). */
  makesRevision(): boolean;
  /** Runs the step on the simulator; `late` when the simulator is already past `rev`. */
  run(late: boolean): void;
  /** The revision this step made was already applied from etcd's events (its answer came after the grace). */
  skip(): void;
}

/** concurrency's default session TTL: what etcd's Lock and Election grant a call that names no lease. */
const SESSION_TTL = 60;

export interface FollowerHooks {
  /** The simulator could not apply a revision from etcd's own events (it diverged before). */
  onFollowError(rev: number, why: string): void;
  /** After every step: stream responses reach their listeners. */
  afterStep(): void;
  /** A revision's events (from the own watch) were applied. */
  onEvents(count: number): void;
}

export class Follower {
  private queue: Step[] = [];
  /** Events of revisions the own watch delivered and the simulator has not reached yet. */
  private readonly events = new Map<number, M.Event[]>();
  /** Write calls in flight through the proxy (their revision may be among `events`). */
  inflightWrites = 0;
  /** Compact calls in flight through the proxy (a compaction compaction.ts finds may be one of them). */
  private compacting = 0;
  /** What waits for those Compacts to be answered (stream_calls.ts: a held watch; at most one per stream). */
  private afterCompacting: Array<() => void> = [];
  private graceTimer: { cancel(): void } | undefined;
  /** Recent revisions applied from events while a write was in flight: a step that made one must not run again. */
  private readonly fromEvents = new Set<number>();
  private pumping = false;
  /** The grace for in-flight writes ran out: the waiting revision's events go in now. */
  private graceExpired = false;
  private rootToken: string | undefined;
  /** Watch streams holding etcd's responses while etcd is asked about its compaction (stream_calls.ts). */
  holds = 0;

  constructor(
    readonly sim: EtcdSim,
    private readonly hooks: FollowerHooks,
    private readonly graceMs: number,
  ) {}

  get revision(): number {
    return this.sim.mvcc.currentRevision;
  }

  /** Steps waiting for the simulator to reach their revision, and streams waiting to learn theirs (`holds`). */
  get waiting(): number {
    return this.queue.length + this.holds;
  }

  /** Revisions of the own watch's events the simulator has not reached yet. */
  get eventRevisions(): number {
    return this.events.size;
  }

  add(step: Step): void {
    this.queue.push(step);
    this.pump();
  }

  /** A watch response of the shadow's own watch: its events, grouped by revision. */
  addEvents(events: readonly M.Event[]): void {
    for (const e of events) {
      const rev = Number(e.kv?.mod_revision ?? 0);
      if (rev <= this.revision) continue;
      const list = this.events.get(rev) ?? [];
      list.push(e);
      this.events.set(rev, list);
    }
    this.pump();
  }

  get inflightCompactions(): number {
    return this.compacting;
  }

  compactionSent(): void {
    this.compacting++;
  }

  /** A Compact through the shadow was answered, and its step (if any) is queued: what waited for it goes on. */
  compactionAnswered(): void {
    this.compacting--;
    if (this.compacting === 0) for (const fn of this.afterCompacting.splice(0)) fn();
  }

  /**
   * Runs `fn` once no Compact through the shadow is in flight — now, or when the last one is answered, after
   * its step was queued: steps `fn` queues then come after that Compact's, and etcd, asked then, has applied it.
   */
  afterCompactions(fn: () => void): void {
    if (this.compacting === 0) fn();
    else this.afterCompacting.push(fn);
  }

  writeEnded(): void {
    this.inflightWrites--;
    this.pump();
  }

  pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.next()) this.hooks.afterStep();
    } finally {
      this.pumping = false;
    }
  }

  /** Applies one step or one revision of events; false when nothing can go yet. */
  private next(): boolean {
    const cur = this.revision;
    // Steps at or below the current revision, or without one, in arrival order.
    const i = this.queue.findIndex((s) => s.rev === undefined || s.rev <= cur);
    if (i >= 0) {
      const [s] = this.queue.splice(i, 1);
      this.guard(s!.rev ?? cur, () => {
        if (s!.rev !== undefined && this.fromEvents.has(s!.rev) && s!.makesRevision()) s!.skip();
        else s!.run(s!.rev !== undefined && s!.rev < cur);
      });
      return true;
    }
    const maker = this.queue.findIndex((s) => s.rev === cur + 1 && s.makesRevision());
    if (maker >= 0) {
      const [s] = this.queue.splice(maker, 1);
      this.guard(cur + 1, () => s!.run(false));
      this.events.delete(cur + 1);
      return true;
    }
    const evs = this.events.get(cur + 1);
    if (evs === undefined) return false;
    if (this.inflightWrites > 0) {
      // A write in flight may be the call that made this revision: give its answer time to arrive.
      this.graceTimer ??= afterHostTime(this.graceMs, () => {
        this.graceTimer = undefined;
        this.graceExpired = true;
        this.pump();
        this.graceExpired = false;
      });
      if (!this.graceExpired) return false;
    }
    this.events.delete(cur + 1);
    if (this.inflightWrites > 0 || this.graceExpired) {
      this.fromEvents.add(cur + 1);
      if (this.fromEvents.size > 1000) this.fromEvents.delete(this.fromEvents.values().next().value!);
    }
    this.applyEvents(cur + 1, evs);
    return true;
  }

  /** A step the simulator refused outright (a request it cannot take) is reported, and the shadow goes on. */
  private guard(rev: number, run: () => void): void {
    try {
      run();
    } catch (err) {
      this.hooks.onFollowError(rev, err instanceof Error ? err.message : String(err));
    }
  }

  /**
   * A revision etcd made without a call through the shadow: a lease's expiry, a write of the Lock or
   * Election service, or another client's write. Applied as what it is, one Txn of its puts and deletes in
   * etcd's order — an expiry too: a delete of a lease's last key looks the same as an Unlock of it, so the
   * lease itself stays until etcd says it is gone (unary.ts, `leaseGone`). A put names a lease the simulator
   * never saw granted when etcd granted it itself (a Lock, Campaign or Proclaim without a lease opens a
   * 60 s session) or a client bypassed the shadow: it is granted here, with etcd's ID.
   */
  private applyEvents(rev: number, evs: readonly M.Event[]): void {
    const sim = this.sim;
    this.hooks.onEvents(evs.length);
    try {
      for (const e of evs) {
        const lease = BigInt(e.type === 'PUT' ? (e.kv?.lease ?? '0') : '0');
        if (lease !== 0n && !sim.lessor.exists(lease)) sim.lessor.grant(lease, SESSION_TTL);
      }
      const success = evs.map((e) =>
        e.type === 'DELETE'
          ? { request_delete_range: { key: e.kv!.key, range_end: Buffer.alloc(0) } }
          : { request_put: { key: e.kv!.key, value: e.kv!.value, lease: e.kv!.lease } },
      );
      sim.services.kv.txn({ compare: [], success, failure: [] }, this.asRoot());
    } catch (err) {
      this.hooks.onFollowError(rev, err instanceof Error ? err.message : String(err));
    }
    if (this.revision !== rev) {
      this.hooks.onFollowError(rev, `the simulator is at revision ${this.revision} after applying etcd's revision ${rev}`);
    }
  }

  /**
   * etcd made the revision, whoever asked: with auth on, the simulator applies it as root, with a token of
   * its own (its clock never moves, so the token never expires; a new one after auth was turned off and on).
   */
  asRoot(): { token: string } | undefined {
    const auth = serverOf(this.sim).auth;
    if (!auth.enabled) return undefined;
    if (this.rootToken === undefined || !this.validToken(this.rootToken)) this.rootToken = auth.tokens.assign('root', this.sim.server.raftIndex, auth.revision);
    return { token: this.rootToken };
  }

  private validToken(token: string): boolean {
    try {
      return serverOf(this.sim).auth.authInfo(token) !== undefined;
    } catch {
      return false;
    }
  }

  close(): void {
    this.graceTimer?.cancel();
    this.queue = [];
    this.afterCompacting = [];
    this.events.clear();
  }
}
