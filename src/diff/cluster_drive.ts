/**
 * Driving one side of the cluster differential through a plan, as a client of a real cluster would: one
 * watch per member (re-opened after a restart), a lease kept alive by keep-alives spread over the members
 * the harness knows to be running, concurrent KV clients pinned to members (a client of a killed member
 * waits for its restart), and the plan's faults, resolved against whoever leads when each fires. Time
 * moves by one loop (`ClusterSide.sleep`): virtual on the simulator, real on etcd. What happened is
 * recorded here for cluster_checks.ts to judge.
 */
import { Buffer } from 'node:buffer';
import { watchResponseIn } from '../server/index.js';
import type * as M from '../server/messages.js';
import type { HistoryRevision, WatchCreateRequest, WatchResponse } from '../watch/index.js';
import type { Event } from '../mvcc/index.js';
import { KvHistory, runKvClients, type HistoryKv } from './kv_history.js';
import { CALL_DEADLINE_MS, LEASE_KEY, type ClusterFault, type ClusterPlan } from './cluster_plan.js';
import type { ClusterSide, MemberApi, Stream } from './cluster_side.js';

export const bytes = (s: string): Buffer => Buffer.from(s, 'latin1');
export const text = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');
export const ALL = { key: Buffer.from([0]), range_end: Buffer.from([0]) };

/** A watch stream's record: its request and every response it received, until it ended. */
export interface WatchRecord {
  readonly member: number;
  readonly request: WatchCreateRequest;
  readonly responses: WatchResponse[];
  stream: Stream<M.WatchRequest, M.WatchResponse>;
  ended: boolean;
  lastRevision: number;
}

/** A renewal: when it was sent and when a positive answer came (undefined: it failed or timed out). */
export interface Renewal {
  readonly invoke: number;
  ret: number | undefined;
}

/** One side's run of a plan: the members as the harness knows them, and what the run recorded. */
export class ClusterRun {
  readonly n: number;
  readonly state: Array<'running' | 'paused' | 'killed'>;
  /** Resolvers waiting for a killed member's restart. */
  private readonly backUp: Array<Array<() => void>>;
  readonly watches: WatchRecord[] = [];
  readonly faultLog: string[] = [];
  readonly history: KvHistory;
  /** The lease kept alive, and its renewals (the grant counts as the first). */
  leaseId = '0';
  readonly renewals: Renewal[] = [];
  /** Whether renewals go on (the lease check stops them). */
  renewing = true;
  private renewer = 0;
  private nextRenewal = Infinity;
  /** When the workload started (the fault log's times count from here). */
  t0 = 0;

  constructor(
    readonly side: ClusterSide,
    readonly plan: ClusterPlan,
  ) {
    this.n = side.size;
    this.state = Array.from({ length: this.n }, () => 'running');
    this.backUp = Array.from({ length: this.n }, () => []);
    this.history = new KvHistory(() => side.now());
  }

  /** `p`'s value, or undefined once `ms` of the side's time passed first (or it failed). */
  readonly timeout = <T>(p: Promise<T>, ms: number): Promise<T | undefined> =>
    new Promise((resolve) => {
      let done = false;
      this.side.after(ms, () => {
        if (!done) resolve(undefined);
        done = true;
      });
      p.then(
        (v) => {
          if (!done) resolve(v);
          done = true;
        },
        () => {
          if (!done) resolve(undefined);
          done = true;
        },
      );
    });

  /** Runs `task` while driving the side's time in `stepMs` steps, until it settles (renewals go on meanwhile). */
  readonly drive = async <T>(task: Promise<T>, stepMs = 20): Promise<T> => {
    let settled = false;
    const t = task.finally(() => (settled = true));
    while (!settled) {
      await this.side.sleep(stepMs);
      this.step();
    }
    return t;
  };

  /** Retries `fn` on any member that runs until it answers (setup and settle-phase requests). */
  async anyMember<T>(fn: (m: MemberApi) => Promise<T>, what: string): Promise<T> {
    for (let attempt = 0; attempt < 60; attempt++) {
      const i = attempt % this.n;
      if (this.state[i] !== 'running') continue;
      const r = await this.drive(this.timeout(fn(this.side.member(i)), 1500));
      if (r !== undefined) return r;
      await this.side.sleep(100);
    }
    throw new Error(`${this.side.name}: ${what}: no member answered`);
  }

  /**
   * What the driving loop does after each step besides letting time pass: the lease's renewals, once they
   * start (a real restart takes a second or two, and renewals must not pause for it).
   */
  step(): void {
    if (this.renewing && this.side.now() >= this.nextRenewal) {
      this.nextRenewal = this.side.now() + this.plan.keepAliveEveryMs;
      this.renew();
    }
  }

  /** A watch of every key on `member` from `startRevision`. */
  openWatch(member: number, startRevision: number): void {
    const create = { ...ALL, start_revision: String(startRevision) };
    const request: WatchCreateRequest = { key: new Uint8Array([0]), rangeEnd: new Uint8Array([0]), startRevision };
    const stream = this.side.member(member).watch();
    const rec: WatchRecord = { member, request, responses: [], stream, ended: false, lastRevision: startRevision - 1 };
    stream.onResponse((rs) => {
      for (const r of rs) {
        const d = watchResponseIn(r);
        rec.responses.push(d);
        const last = d.events.at(-1);
        if (last !== undefined) rec.lastRevision = last.kv.modRevision;
      }
    });
    stream.onEnd(() => (rec.ended = true));
    stream.write({ create_request: create });
    this.watches.push(rec);
  }

  /** Grants the lease and puts its key. */
  async startLease(): Promise<void> {
    // The grant starts the TTL no earlier than its call: it counts as the first renewal.
    const granted = this.side.now();
    const grant = await this.anyMember((m) => m.leaseGrant({ TTL: String(this.plan.leaseTtlS), ID: '0' }), 'LeaseGrant');
    this.leaseId = grant.ID;
    await this.anyMember((m) => m.kv.put({ key: bytes(LEASE_KEY), value: bytes('leased'), lease: grant.ID }), 'Put with lease');
    this.renewals.push({ invoke: granted, ret: this.side.now() });
  }

  /** One keep-alive, on the next member the harness knows to be running (like a client balancer). */
  private renew(): void {
    const { n, state, side } = this;
    for (let k = 0; k < n && state[this.renewer % n] !== 'running'; k++) this.renewer++;
    const i = this.renewer++ % n;
    if (state[i] !== 'running') return;
    const r: Renewal = { invoke: side.now(), ret: undefined };
    this.renewals.push(r);
    let ka: Stream<M.LeaseKeepAliveRequest, M.LeaseKeepAliveResponse>;
    try {
      ka = side.member(i).leaseKeepAlive();
    } catch {
      return;
    }
    let open = true;
    const close = (): void => {
      if (!open) return;
      open = false;
      ka.cancel();
    };
    const leaseId = this.leaseId;
    ka.onResponse((rs) => {
      if (rs.some((x) => x.ID === leaseId && BigInt(x.TTL) > 0n) && r.ret === undefined) r.ret = side.now();
      close();
    });
    ka.onEnd(() => (open = false));
    ka.write({ ID: leaseId });
    side.after(CALL_DEADLINE_MS, close);
  }

  /** The KV client `client`, pinned to member client mod n; while that member is killed its calls wait. */
  private kvFor(client: number): HistoryKv {
    const i = client % this.n;
    const gate = async (): Promise<void> => {
      if (this.state[i] === 'killed') await new Promise<void>((resolve) => this.backUp[i]!.push(resolve));
    };
    const kv = (): HistoryKv => this.side.member(i).kv;
    return {
      range: async (r) => (await gate(), kv().range(r)),
      put: async (r) => (await gate(), kv().put(r)),
      deleteRange: async (r) => (await gate(), kv().deleteRange(r)),
      txn: async (r) => (await gate(), kv().txn(r)),
    };
  }

  /**
   * The workload: the KV clients for the plan's duration with the faults and renewals on the side's time,
   * in one loop; every fault healed at the end, and the clients' last calls answered.
   */
  async runWorkload(): Promise<void> {
    const { side, plan } = this;
    let stopClients = false;
    // The KV clients; a client of a killed member waits for its restart (its operation's call time is
    // already recorded, so the wait only widens its interval).
    const clients = runKvClients({ history: this.history, clients: plan.clients, kvFor: (c) => this.kvFor(c), seed: plan.seed, keys: plan.keys, stop: () => stopClients });
    const heal: Array<{ at: number; run: () => Promise<void> }> = [];
    this.t0 = side.now();
    this.nextRenewal = this.t0 + plan.keepAliveEveryMs;
    let nextFault = 0;
    const healDue = async (all: boolean): Promise<void> => {
      for (const h of [...heal]) {
        if (all || h.at <= side.now()) {
          heal.splice(heal.indexOf(h), 1);
          await this.drive(h.run());
        }
      }
    };
    while (side.now() - this.t0 < plan.durationMs) {
      await side.sleep(20);
      const now = side.now();
      this.step();
      await healDue(false);
      const f = plan.faults[nextFault];
      if (f !== undefined && now - this.t0 >= f.at) {
        nextFault++;
        await this.drive(this.fire(f, heal));
      }
    }
    stopClients = true;
    await healDue(true);
    // Renewals go on while the clients finish.
    let done = false;
    void clients.finally(() => (done = true));
    while (!done) {
      await side.sleep(20);
      this.step();
    }
  }

  private async restartMember(i: number): Promise<void> {
    await this.side.restart(i);
    this.state[i] = 'running';
    for (const w of this.backUp[i]!.splice(0)) w();
    // A new watch on the restarted member, resuming after the last event its broken stream delivered.
    const old = this.watches.filter((w) => w.member === i).at(-1);
    this.openWatch(i, (old?.lastRevision ?? 1) + 1);
  }

  /** Fires one fault; what undoes it (resume, restart) goes on `heal` for its hold time. */
  private async fire(f: ClusterFault, heal: Array<{ at: number; run: () => Promise<void> }>): Promise<void> {
    const { side, faultLog, t0 } = this;
    const leader = await side.leader();
    if (leader === undefined) {
      faultLog.push(`+${side.now() - t0}ms ${f.kind} ${f.target}: skipped (no leader)`);
      return;
    }
    const target = f.target === 'leader' ? leader : (leader + f.follower) % this.n;
    faultLog.push(`+${side.now() - t0}ms ${f.kind} member ${target} (${f.target === 'leader' ? 'the leader' : 'a follower'})`);
    if (f.kind === 'moveLeader') {
      await side.moveLeader(target).catch((err: unknown) => faultLog.push(`  move-leader failed: ${String(err)}`));
    } else if (f.kind === 'pause') {
      side.pause(target);
      this.state[target] = 'paused';
      const run = async (): Promise<void> => {
        side.resume(target);
        this.state[target] = 'running';
        faultLog.push(`+${side.now() - t0}ms resume member ${target}`);
      };
      heal.push({ at: side.now() + f.holdMs, run });
    } else {
      this.state[target] = 'killed';
      await side.kill(target);
      const run = async (): Promise<void> => {
        await this.restartMember(target);
        faultLog.push(`+${side.now() - t0}ms restarted member ${target}`);
      };
      heal.push({ at: side.now() + f.holdMs, run });
    }
  }

  /** Waits until every member answers Status, all name one leader, and all applied the leader's commit index. */
  async settle(): Promise<M.StatusResponse[]> {
    const side = this.side;
    let last: Array<M.StatusResponse | undefined> = [];
    for (let k = 0; k < 100; k++) {
      last = await this.drive(Promise.all(Array.from({ length: side.size }, (_, i) => this.timeout(side.member(i).status(), 1000))));
      const all = last.filter((s): s is M.StatusResponse => s !== undefined);
      if (all.length === side.size) {
        const leader = all[0]!.leader;
        const top = all.reduce((x, s) => (BigInt(s.raftIndex) > x ? BigInt(s.raftIndex) : x), 0n);
        if (leader !== '0' && all.every((s) => s.leader === leader && BigInt(s.raftAppliedIndex) >= top)) return all;
      }
      await side.sleep(100);
    }
    throw new Error(`${side.name}: the members did not settle: ${JSON.stringify(last.map((s) => s && { leader: s.leader, raftIndex: s.raftIndex, applied: s.raftAppliedIndex }))}`);
  }

  /** Every committed revision from 2 to `through`, as a watch from revision 2 on the leader reports them. */
  async readHistory(statuses: readonly M.StatusResponse[], through: number): Promise<HistoryRevision[] | undefined> {
    const leader = Math.max(0, statuses.findIndex((s) => s.leader === s.header.member_id));
    const stream = this.side.member(leader).watch();
    const events: Event[] = [];
    let resolve: () => void = () => undefined;
    const complete = new Promise<void>((r) => (resolve = r));
    stream.onResponse((rs) => {
      for (const r of rs) for (const ev of watchResponseIn(r).events) events.push({ type: ev.type, kv: ev.kv });
      if ((events.at(-1)?.kv.modRevision ?? 1) >= through) resolve();
    });
    stream.write({ create_request: { ...ALL, start_revision: '2' } });
    if (through < 2) resolve();
    const ok = await this.drive(this.timeout(complete.then(() => true), 5000));
    stream.cancel();
    if (ok !== true) return undefined;
    const byRev = new Map<number, Event[]>();
    for (const ev of events) {
      const list = byRev.get(ev.kv.modRevision) ?? [];
      list.push(ev);
      byRev.set(ev.kv.modRevision, list);
    }
    return [...byRev].sort((a, b) => a[0] - b[0]).map(([revision, evs]) => ({ revision, events: evs }));
  }
}
