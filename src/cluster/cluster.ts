/**
 * A simulated etcd cluster in one process: N members, each a full EtcdServer (its own MVCC store, watchable
 * store, lessor and auth store), on one shared clock and one seed, kept in step by a model of etcd's Raft
 * with each member running its own Raft node (src/raft, as a member in a process of its own does; see
 * docs/cluster.md). This file assembles the parts, one idea each:
 *  - member_state.ts: one member, its identity, server, Raft node and disk;
 *  - raft_group.ts: the members' Raft nodes and loops, ticked every heartbeat interval, over the network
 *    of peer_network.ts; checker.ts checks Raft's invariants (src/raft/checker.ts) and the members' stores;
 *  - apply.ts: every member applies the committed entries through its own server path, at its own pace;
 *  - proposals.ts: proposals and linearizable reads (ReadIndex) waiting for Raft;
 *  - membership.ts: MemberAdd, MemberRemove, MemberPromote, MemberUpdate; a member added starts (join);
 *  - lease_handoff.ts: leases expire only on the leader, whose lessor proposes their revokes;
 *  - routing.ts: calls over each client's link to a member; levers.ts: the faults.
 * Random choices (each node's election timeouts, generated lease IDs) come from the cluster's seeded PRNG,
 * a lease ID made once, before an entry is proposed: same seed, same run.
 */
import { hostNextTurn, SimRandom, VirtualClock, type Clock, type TimerHandle } from '../sim/index.js';
import { errTransportClosing, type GrpcError, type EtcdServer, type EtcdServerOptions, clusterIdOf, memberIdOf } from '../server/index.js';
import { Applier } from './apply.js';
import { LeaseHandoff } from './lease_handoff.js';
import { Levers, checkLag, type ClusterLevers } from './levers.js';
import type { EtcdClusterView } from './cluster_view.js';
import {
  MemberState,
  storeMembers,
  type ConnectOptions,
  type EntryBody,
  type MemberRaftStatus,
  type MemberRef,
  type Reply,
} from './member_state.js';
import { joinCluster, removedFromCluster } from './membership.js';
import { RaftGroup } from './raft_group.js';
import { Requests } from './proposals.js';
import { Routing, type CallAnswer, type Link } from './routing.js';
import { ClusterMemberServices } from './services.js';

/** Server options every member shares; identity (name, URLs, IDs) is per member, see `memberConfigs`. @public */
export type SharedServerOptions = Omit<
  EtcdServerOptions,
  'clock' | 'seed' | 'memberId' | 'clusterId' | 'memberName' | 'clientUrls' | 'peerUrls' | 'raftTerm' | 'fromSnapshot' | 'initialRaftIndex'
>;

/** One member's identity, as its etcd flags give it (--name, --advertise-client-urls, --initial-advertise-peer-urls). @public */
export interface ClusterMemberConfig {
  readonly name?: string | undefined;
  readonly clientUrls?: readonly string[] | undefined;
  readonly peerUrls?: readonly string[] | undefined;
}

/** Options of {@link EtcdCluster}: etcd's flags where etcd has one. @public */
export interface EtcdClusterOptions extends SharedServerOptions {
  /** Number of voting members (default 3). */
  readonly members?: number | undefined;
  /** The shared clock (default a new VirtualClock at 0). */
  readonly clock?: Clock | undefined;
  /** Seed of every random choice in the cluster and its members. */
  readonly seed?: number | bigint | undefined;
  /** --pre-vote (etcd 3.4's default: off; 3.5 and later: on). */
  readonly preVote?: boolean | undefined;
  /** Names and URLs per member (default infra1.. with etcd's Procfile ports). */
  readonly memberConfigs?: readonly ClusterMemberConfig[] | undefined;
  /** How long after commit each member applies an entry, in ms: one value for all, or one per member (default 0). */
  readonly applyLagMs?: number | readonly number[] | undefined;
  /** --snapshot-count: applied entries after which the leader compacts its log (default 100000). */
  readonly snapshotCount?: number | undefined;
  /** Entries kept behind a compaction for slow followers (etcd's SnapshotCatchUpEntries, 5000). */
  readonly snapshotCatchUpEntries?: number | undefined;
  /** The server-side request timeout in ms (etcd: 5 s + 2 × election timeout). */
  readonly requestTimeoutMs?: number | undefined;
  /** Whether the trace records every proposal (default true); elections, faults and snapshots always. */
  readonly traceProposals?: boolean | undefined;
}

/** One cluster event, for traces: same seed and same calls give the same list. @public */
export interface ClusterTraceEvent {
  readonly at: number;
  readonly event: string;
}

/** etcd's default request timeout: 5 s plus two election timeouts (etcdserver ReqTimeout). */
const BASE_REQUEST_TIMEOUT_MS = 5000;
const DEFAULT_SNAPSHOT_COUNT = 100_000;
const DEFAULT_CATCH_UP_ENTRIES = 5000;
/** A fresh cluster was observed at term 2 (one election at start). */
const INITIAL_TERM = 2n;

/** Default identities: etcd's Procfile (infra1..3, client ports 2379/22379/32379, peer ports 2380/22380/32380). */
function defaultConfig(i: number): { name: string; clientUrls: readonly string[]; peerUrls: readonly string[] } {
  const port = (base: number): number => (i === 0 ? base : 10000 * (i + 1) + base);
  return { name: `infra${i + 1}`, clientUrls: [`http://127.0.0.1:${port(2379)}`], peerUrls: [`http://127.0.0.1:${port(2380)}`] };
}

/**
 * The cluster. Members are addressed by index (0-based), name, member ID, or their state object; the
 * levers take any of these. All of it runs on the shared clock: with a VirtualClock nothing happens until
 * the test moves time (`await cluster.advance(ms)`), and the same seed gives the same run.
 * @public
 */
export class EtcdCluster implements EtcdClusterView {
  readonly clock: Clock;
  readonly random: SimRandom;
  readonly preVote: boolean;
  readonly heartbeatMs: number;
  readonly electionTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly snapshotCount: number;
  readonly snapshotCatchUpEntries: number;
  readonly clusterId: bigint;
  /** @internal The members ever started, in order (join() adds one). */
  readonly states: MemberState[];
  /** The faults, as one interface (the cluster's own methods of the same names call them). */
  readonly levers: ClusterLevers;
  private readonly traceProposals: boolean;
  private readonly rand: SimRandom;
  /** @internal The members' Raft nodes and the network between them (checker.ts reads them). */
  readonly raft: RaftGroup;
  private readonly applier: Applier;
  private readonly requests: Requests;
  private readonly routing: Routing;
  private readonly handoff: LeaseHandoff;
  private readonly traceEvents: ClusterTraceEvent[] = [];
  /** trace() wrote out every ProposalTrace before this position. */
  private tracedUpTo = 0;
  private readonly ticker: TimerHandle;
  private readonly serverHooks: Array<(server: EtcdServer, m: MemberState) => void> = [];
  private readonly tickHooks: Array<() => void> = [];
  private closed = false;

  constructor(opts: EtcdClusterOptions = {}) {
    const n = opts.members ?? 3;
    if (!Number.isSafeInteger(n) || n < 1) throw new RangeError(`EtcdCluster: members must be an integer >= 1, got ${n}`);
    this.clock = opts.clock ?? new VirtualClock();
    this.random = new SimRandom(opts.seed ?? 0);
    this.rand = this.random.fork('cluster');
    this.preVote = opts.preVote ?? false;
    this.heartbeatMs = opts.heartbeatIntervalMs ?? 100;
    this.electionTimeoutMs = this.heartbeatMs * (opts.electionTicks ?? 10);
    this.requestTimeoutMs = opts.requestTimeoutMs ?? BASE_REQUEST_TIMEOUT_MS + 2 * this.electionTimeoutMs;
    this.snapshotCount = opts.snapshotCount ?? DEFAULT_SNAPSHOT_COUNT;
    this.snapshotCatchUpEntries = opts.snapshotCatchUpEntries ?? DEFAULT_CATCH_UP_ENTRIES;
    this.traceProposals = opts.traceProposals ?? true;
    const token = opts.initialClusterToken ?? 'etcd-cluster';
    const configs = Array.from({ length: n }, (_, i) => {
      const d = defaultConfig(i);
      const o = opts.memberConfigs?.[i];
      return { name: o?.name ?? d.name, clientUrls: o?.clientUrls ?? d.clientUrls, peerUrls: o?.peerUrls ?? d.peerUrls };
    });
    const ids = configs.map((c) => memberIdOf(c.peerUrls, token));
    if (new Set(ids).size !== n) throw new RangeError('EtcdCluster: two members have the same peer URLs');
    this.clusterId = clusterIdOf(ids);
    // A fresh cluster's log before the first request (observed on 3.4.23: 8 for three members, 4 for one):
    // one ConfChange per member, the first leader's empty entry, one attribute publish per member, the
    // cluster version. Members start with all but the last applied; the first leader's entry is the last.
    const start = 2 * n + 2;
    const lags = opts.applyLagMs;
    const lagOf: number[] = [];
    const { members: _n, clock: _c, seed, preVote: _p, memberConfigs: _m, applyLagMs: _l, snapshotCount: _s, snapshotCatchUpEntries: _e, requestTimeoutMs: _r, traceProposals: _t, ...shared } = opts;
    this.states = configs.map((c, i) => {
      const lag = typeof lags === 'number' ? lags : (lags?.[i] ?? 0);
      checkLag(lag);
      const serverOptions: EtcdServerOptions = {
        ...shared,
        clock: this.clock,
        // One seed for every member: what a member draws while applying entries (auth tokens) comes out
        // the same on all of them, as etcd's members agree on what the leader proposed.
        seed: seed ?? 0,
        initialClusterToken: token,
        memberId: ids[i],
        clusterId: this.clusterId,
        memberName: c.name,
        clientUrls: c.clientUrls,
        peerUrls: c.peerUrls,
        raftTerm: INITIAL_TERM,
        initialRaftIndex: start - 1,
      };
      // The lag applies from the first request on: a fresh cluster's own entries are applied before it serves.
      lagOf.push(lag);
      return new MemberState(this, i, ids[i]!, c.name, c.clientUrls, c.peerUrls, serverOptions, INITIAL_TERM, start - 1, 0);
    });
    const trace = (event: string): void => this.trace(event);
    this.raft = new RaftGroup(
      this.states,
      {
        clock: this.clock,
        random: this.rand,
        preVote: this.preVote,
        heartbeatMs: this.heartbeatMs,
        electionTimeoutMs: this.electionTimeoutMs,
        snapshotCount: this.snapshotCount,
        snapshotCatchUpEntries: this.snapshotCatchUpEntries,
      },
      {
        trace,
        committed: (m) => this.applier.markDirty(m),
        snapshotInstalled: (m) => {
          this.applier.cancelApplyTimer(m);
          this.applier.markDirty(m);
        },
        leaderChanged: (m) => this.requests.leaderChanged(m),
        leaderKnown: (m) => this.requests.forwardWaiting(m),
        leads: (l) => this.handoff.promote(l),
        demoted: (m) => this.handoff.demote(m),
        leaderTick: (l) => this.handoff.leaderTick(l),
        appended: (entries) => this.requests.appended(entries),
        readState: (m, r) => this.requests.readState(m, r),
        pump: () => this.applier.pump(),
        removedFromCluster: (m) => removedFromCluster(this, m, 0),
      },
      start,
    );
    this.applier = new Applier(this.raft, this.clock, (m, e, result, error) => this.requests.applied(m, e, result, error));
    this.requests = new Requests(this.raft, {
      clock: this.clock,
      requestTimeoutMs: this.requestTimeoutMs,
      traceProposal: (label, index, via) => {
        if (this.traceProposals) this.traceEvents.push(new ProposalTrace(this.clock.now(), label, index, via.name));
      },
    });
    this.routing = new Routing(this.clock);
    this.handoff = new LeaseHandoff(this.raft, { electionTimeoutMs: this.electionTimeoutMs, traceProposals: this.traceProposals, trace });
    this.levers = new Levers({
      raft: this.raft,
      applier: this.applier,
      requests: this.requests,
      routing: this.routing,
      handoff: this.handoff,
      member: (ref) => this.member(ref),
      trace,
      serverBuilt: (m) => this.serverBuilt(m),
    });
    for (const m of this.states) {
      // Every member starts out listing every member as --initial-cluster names them, all started.
      for (const x of this.states) m.members.set(x.id, { id: x.id, name: x.name, peerUrls: [...x.peerUrls], clientUrls: [...x.clientUrls], isLearner: false });
      this.wireMember(m);
    }
    // A lessor is primary only on the leader (it is promoted when its member wins an election).
    for (const m of this.states) m.server.lessor.demote();
    // Member 0 wins the first election (term 2).
    this.raft.start();
    this.states.forEach((m, i) => (m.applyLagMs = lagOf[i]!));
    this.ticker = this.clock.every(this.heartbeatMs, () => this.tick(), { name: 'cluster.raft' });
  }

  // ---------------------------------------------------------------------------------------------------
  // Reading the cluster

  /** Number of members. */
  get size(): number {
    return this.states.length;
  }

  /** Votes needed: a majority of the voting members. */
  get quorum(): number {
    return this.raft.quorum;
  }

  /** The member that currently acts as leader (up, in the leader role, highest term), if any. */
  get leader(): MemberState | undefined {
    return this.raft.leader;
  }

  /** The highest term any member has seen. */
  get term(): bigint {
    let t = 0n;
    for (const m of this.states) if (m.term > t) t = m.term;
    return t;
  }

  /** The cluster's commit index (the leader's; without one, the highest a member knows). */
  get committedIndex(): number {
    const l = this.raft.leader;
    if (l !== undefined) return l.commit;
    let c = 0;
    for (const m of this.states) c = Math.max(c, m.commit);
    return c;
  }

  /** A member by index, name, member ID or state. */
  member(ref: MemberRef): MemberState {
    if (ref instanceof MemberState) return ref;
    if (typeof ref === 'object') return this.member(ref.id);
    const m =
      typeof ref === 'number' ? this.states[ref] : typeof ref === 'bigint' ? this.states.find((s) => s.id === ref) : this.states.find((s) => s.name === ref);
    if (m === undefined) throw new RangeError(`EtcdCluster: no member ${String(ref)}`);
    return m;
  }

  /** The members in order. */
  get members(): readonly MemberState[] {
    return this.states;
  }

  /** {@inheritDoc EtcdClusterView.join} */
  join(id: bigint, config: ClusterMemberConfig = {}): MemberState {
    return joinCluster(this, id, config, defaultConfig(this.states.length), (m) => this.serverBuilt(m));
  }

  /** A member's Raft status (what Status reports, plus the levers' state). */
  status(ref: MemberRef): MemberRaftStatus {
    const m = this.member(ref);
    const applied = m.server.raftIndex;
    return {
      name: m.name,
      id: m.id,
      role: m.role,
      term: m.term,
      leader: this.knownLeader(m)?.id ?? 0n,
      raftIndex: Math.max(applied, m.commit),
      raftAppliedIndex: applied,
      paused: m.paused,
      crashed: m.crashed,
      applyLagMs: m.applyLagMs,
    };
  }

  /** The cluster's events so far (elections, faults, commits, applies), for determinism checks and debugging. */
  trace(): readonly ClusterTraceEvent[];
  /** @internal Records one event. */
  trace(event: string): void;
  trace(event?: string): readonly ClusterTraceEvent[] | void {
    if (event !== undefined) {
      this.traceEvents.push({ at: this.clock.now(), event });
      return;
    }
    // Proposals are recorded in short form (one per request: their text would be most of a long run's
    // memory) and written out here, once, in place.
    const events = this.traceEvents;
    for (let i = this.tracedUpTo; i < events.length; i++) {
      const e = events[i]!;
      if (e instanceof ProposalTrace) events[i] = { at: e.at, event: e.event };
    }
    this.tracedUpTo = events.length;
    return events;
  }

  /**
   * A client's connection to a member: the member's services in message form, async, over the link the
   * link levers act on. `member(i).services` is the same with the default client and no deadline.
   */
  connect(ref: MemberRef, opts: ConnectOptions = {}): ClusterMemberServices {
    return new ClusterMemberServices(this, this.member(ref), opts);
  }

  // ---------------------------------------------------------------------------------------------------
  // Levers (levers.ts says what each does)

  /** {@inheritDoc ClusterLevers.pause} */
  pause(ref: MemberRef): void {
    this.levers.pause(ref);
  }
  /** {@inheritDoc ClusterLevers.resume} */
  resume(ref: MemberRef): void {
    this.levers.resume(ref);
  }
  /** {@inheritDoc ClusterLevers.partition} */
  partition(groups: ReadonlyArray<readonly MemberRef[]>): void {
    this.levers.partition(groups);
  }
  /** {@inheritDoc ClusterLevers.isolate} */
  isolate(ref: MemberRef): void {
    this.levers.isolate(ref);
  }
  /** {@inheritDoc ClusterLevers.heal} */
  heal(): void {
    this.levers.heal();
  }
  /** {@inheritDoc ClusterLevers.setApplyLag} */
  setApplyLag(ref: MemberRef, ms: number): void {
    this.levers.setApplyLag(ref, ms);
  }
  /** {@inheritDoc ClusterLevers.dropLink} */
  dropLink(client: string, ref: MemberRef): void {
    this.levers.dropLink(client, ref);
  }
  /** {@inheritDoc ClusterLevers.delayLink} */
  delayLink(client: string, ref: MemberRef, ms: number): void {
    this.levers.delayLink(client, ref, ms);
  }
  /** {@inheritDoc ClusterLevers.restoreLink} */
  restoreLink(client: string, ref: MemberRef): void {
    this.levers.restoreLink(client, ref);
  }
  /** {@inheritDoc ClusterLevers.crash} */
  crash(ref: MemberRef): void {
    this.levers.crash(ref);
  }
  /** {@inheritDoc ClusterLevers.restart} */
  restart(ref: MemberRef): void {
    this.levers.restart(ref);
  }
  /** {@inheritDoc ClusterLevers.moveLeader} */
  moveLeader(ref: MemberRef): boolean {
    return this.levers.moveLeader(ref);
  }
  /** {@inheritDoc ClusterLevers.forceElection} */
  forceElection(candidate?: MemberRef): void {
    this.levers.forceElection(candidate);
  }
  /** {@inheritDoc ClusterLevers.compactLog} */
  compactLog(keep = 0): number {
    return this.levers.compactLog(keep);
  }
  /** {@inheritDoc ClusterLevers.installSnapshot} */
  installSnapshot(ref: MemberRef): void {
    this.levers.installSnapshot(ref);
  }

  // ---------------------------------------------------------------------------------------------------
  // Time

  /**
   * Calls `fn` with every member's server now and with each server a restart builds later: a front door
   * hooks its delivery scheduler there.
   */
  onServer(fn: (server: EtcdServer, m: MemberState) => void): void {
    this.serverHooks.push(fn);
    for (const m of this.states) if (!m.crashed) fn(m.server, m);
  }

  /** @internal Calls `fn` after every Raft tick (a checker of the cluster's invariants, checker.ts). */
  afterTick(fn: () => void): void {
    this.tickHooks.push(fn);
  }

  /** Pushes queued stream responses of every member to their listeners (delivery points). */
  flush(): number {
    let n = 0;
    for (const m of this.states) if (!m.crashed) n += m.server.flush();
    return n;
  }

  /**
   * Moves the virtual clock forward by `ms`, instant by instant: every Raft tick, apply, lease expiry and
   * watch step due runs, stream responses are delivered after each instant, and client code (promise
   * continuations) runs between instants.
   */
  async advance(ms: number): Promise<void> {
    const clock = this.requireVirtual();
    if (!(ms >= 0)) throw new RangeError(`advance: ms must be >= 0, got ${ms}`);
    const target = clock.now() + ms;
    await turn();
    for (let due = clock.nextDue(); due !== undefined && due <= target; due = clock.nextDue()) {
      clock.advanceTo(due);
      this.flush();
      await turn();
    }
    clock.advanceTo(target);
    this.flush();
    await turn();
  }

  /** The same as advance(), synchronously, for engine-level use without client code in between. */
  advanceSync(ms: number): void {
    const clock = this.requireVirtual();
    const target = clock.now() + ms;
    for (let due = clock.nextDue(); due !== undefined && due <= target; due = clock.nextDue()) {
      clock.advanceTo(due);
      this.flush();
    }
    clock.advanceTo(target);
    this.flush();
  }

  /** Stops the cluster's clock work and every member's; calls still waiting fail as their connections close. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.clock.cancel(this.ticker);
    this.requests.close();
    for (const m of this.states) {
      this.applier.cancelApplyTimer(m);
      for (const h of m.held.splice(0)) h.fail(errTransportClosing());
      if (!m.crashed) m.server.close();
    }
  }

  // ---------------------------------------------------------------------------------------------------
  // Requests (used by ClusterMemberServices)

  /**
   * @internal Carries one call from a client to a member and its answer back, over the client's link:
   * delayed or lost as the link says, held while the member is paused, refused while it is down.
   */
  call<T>(m: MemberState, opts: ConnectOptions, handle: (reply: Reply<T>) => void): Promise<T> {
    return this.routing.call(m, opts, handle);
  }

  /**
   * The answer a call of this cluster's services (a promise they returned) has already had, read at once;
   * undefined while it still waits. A driver that cannot await — the scenario runner, which moves the
   * virtual clock itself until etcdctl's command timeout — reads it after each instant. Settle-time bookkeeping
   * only: the call's path is the same as for an awaiting client.
   */
  answerOf<T>(call: Promise<T>): CallAnswer<T> | undefined {
    return this.routing.answerOf(call);
  }

  /**
   * @internal Proposes a request at member `m` (etcd's processInternalRaftRequest): forwarded to the leader
   * `m` knows, appended to its log, committed with a quorum, applied by every member; `m` answers with what
   * its own apply gave, once it applied it. Without a leader the proposal waits for one; after the request
   * timeout it fails with etcd's error for the member's situation.
   */
  propose(m: MemberState, make: (leader: MemberState) => EntryBody, reply: Reply<unknown>): void {
    this.requests.propose(m, make, reply);
  }

  /**
   * @internal A linearizable read at `m` (etcd's linearizableReadNotify): ReadIndex through the leader, wait
   * until `m` applied up to it, then `serve` (which reads `m`'s own state and replies).
   */
  readIndex(m: MemberState, serve: () => void, reply: Reply<unknown>): void {
    this.requests.readIndex(m, serve, reply);
  }

  /** @internal The leader `m` knows and can reach, if any: where keep-alives and TimeToLive are forwarded. */
  reachableLeader(m: MemberState): MemberState | undefined {
    return this.requests.reachableLeader(m);
  }

  /** @internal The leader `m` knows (itself if it leads). */
  knownLeader(m: MemberState): MemberState | undefined {
    return this.raft.knownLeader(m);
  }

  /** @internal Draws a positive 63-bit lease ID no lease on the leader has (the leader's choice before proposing). */
  newLeaseId(leader: MemberState): bigint {
    let id: bigint;
    do id = this.rand.nextUint63();
    while (id === 0n || leader.server.lessor.exists(id));
    return id;
  }

  /** @internal The levers set on a client's link to `m`, if any (stream_link.ts reads them per message). */
  linkOf(client: string, m: MemberState): Readonly<Link> | undefined {
    return this.routing.linkOf(client, m);
  }

  /** One heartbeat interval: every member's Raft tick, then the reads still waiting ask again; then the checkers. */
  private tick(): void {
    this.raft.tick();
    for (const m of this.states) if (m.up && m.reads.length > 0) this.requests.tryReads(m);
    this.raft.settle();
    for (const fn of this.tickHooks) fn();
  }

  /** A member's (new) server is hooked into the cluster, and the front doors are told. */
  private serverBuilt(m: MemberState): void {
    this.wireMember(m);
    for (const fn of this.serverHooks) fn(m.server, m);
  }

  /** Hooks a (new) server of a member into the cluster: its term, and no lease hand-off until it leads. */
  private wireMember(m: MemberState): void {
    m.server.setRaftTerm(m.term);
    storeMembers(m);
    this.handoff.unhook(m);
  }

  private requireVirtual(): VirtualClock {
    if (!(this.clock instanceof VirtualClock)) throw new Error('EtcdCluster.advance: the cluster runs on real time; give it a VirtualClock to drive time');
    return this.clock;
  }
}

/** A proposal's trace event before trace() writes it out: `propose <label> at <index> via <member>`. */
class ProposalTrace implements ClusterTraceEvent {
  constructor(
    readonly at: number,
    readonly label: string,
    readonly index: number,
    readonly via: string,
  ) {}

  /** The text (also for a caller that kept the array trace() returned and reads entries added since). */
  get event(): string {
    return `propose ${this.label} at ${this.index} via ${this.via}`;
  }
}

/** One turn of the event loop, so client code reacting to responses runs before time moves on. */
function turn(): Promise<void> {
  return new Promise((resolve) => hostNextTurn(resolve));
}
