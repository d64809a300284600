/**
 * A simulated etcd cluster in one process: N members, each a full EtcdServer (its own MVCC store, watchable
 * store, lessor and auth store), on one shared clock and one seed, kept in step by a model of etcd's Raft
 * at the level a client observes it (see docs/cluster.md):
 *  - a leader and a term; elections after a randomized election timeout without the leader's heartbeat,
 *    with etcd's CheckQuorum (a leader steps down when it stops hearing from a quorum; a member that heard
 *    from its leader within an election timeout ignores vote requests) and, as etcd's --pre-vote, PreVote;
 *    the Raft vote rule (one vote per term, only for a log at least as up to date);
 *  - one replicated log: a write request becomes an entry at the leader, commits once a quorum holds it,
 *    and every member applies the committed entries in order, each through its own server path — the same
 *    service call the single member makes — at its own pace (a per-member apply lag), so a follower's
 *    store, watches and serializable reads trail the leader's;
 *  - linearizable reads through ReadIndex (the leader confirms it still leads a quorum, the member waits
 *    until it applied up to the leader's commit index, then reads locally); serializable reads local;
 *  - leases expire only on the leader: its lessor hands expired leases over and the leader proposes their
 *    revokes; a new leader's lessor is promoted (every expiry extended by an election timeout), a former
 *    one demoted; keep-alives and TimeToLive go to the leader;
 *  - faults as levers on the virtual clock: pause/resume, partitions, client links dropped or delayed,
 *    crash/restart (the member is rebuilt from its backend), MoveLeader, Raft log compaction and snapshot
 *    install for a follower that fell behind it.
 * Random choices (election timeouts, generated lease IDs) come from the cluster's seeded PRNG and are made
 * once, by the leader, before an entry is proposed: same seed, same run.
 */
import { hostNextTurn, SimRandom, VirtualClock, type Clock, type TimerHandle } from '../sim/index.js';
import { writeEtcdSnapshot, type EtcdBackend } from '../snapshot/index.js';
import { toGrpcError, type GrpcError } from '../server/errors.js';
import { EtcdServer, type EtcdServerOptions } from '../server/etcd_server.js';
import type { KeepAliveCall } from '../server/lease_service.js';
import { clusterIdOf, memberIdOf } from '../server/member_id.js';
import {
  errDeadlineExceeded,
  errLeaderChanged,
  errMemberDown,
  errProposalBlocked,
  errTimeout,
  errTimeoutDueToConnectionLost,
  errTimeoutDueToLeaderFail,
  errTransportClosing,
} from './errors.js';
import { RaftLog, type Entry } from './raft_log.js';
import { ClusterMemberServices } from './services.js';
import type { ClusterStreamLink } from './stream_link.js';

/** Server options every member shares; identity (name, URLs, IDs) is per member, see `memberConfigs`. */
export type SharedServerOptions = Omit<
  EtcdServerOptions,
  'clock' | 'seed' | 'memberId' | 'clusterId' | 'memberName' | 'clientUrls' | 'peerUrls' | 'raftTerm' | 'fromSnapshot' | 'initialRaftIndex'
>;

/** One member's identity, as its etcd flags give it (--name, --advertise-client-urls, --initial-advertise-peer-urls). */
export interface ClusterMemberConfig {
  readonly name?: string | undefined;
  readonly clientUrls?: readonly string[] | undefined;
  readonly peerUrls?: readonly string[] | undefined;
}

/** Options of {@link EtcdCluster}: etcd's flags where etcd has one. */
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

/** A member's Raft role. */
export type RaftRole = 'leader' | 'follower' | 'candidate';

/** What one member reports about itself (Status and the levers' view). */
export interface MemberRaftStatus {
  readonly name: string;
  readonly id: bigint;
  readonly role: RaftRole;
  readonly term: bigint;
  /** The leader this member knows (0n: none). */
  readonly leader: bigint;
  /** Commit index this member knows, in Raft index units (Status raftIndex). */
  readonly raftIndex: number;
  /** Applied index (Status raftAppliedIndex). */
  readonly raftAppliedIndex: number;
  readonly paused: boolean;
  readonly crashed: boolean;
  readonly applyLagMs: number;
}

/** One cluster event, for traces: same seed and same calls give the same list. */
export interface ClusterTraceEvent {
  readonly at: number;
  readonly event: string;
}

/** The client name of calls that name none. */
export const DEFAULT_CLIENT = 'client';

/** Options of a client's connection to a member (see EtcdCluster.connect). */
export interface ConnectOptions {
  /** Name of the client whose link to the member the link levers act on (default 'client'). */
  readonly client?: string | undefined;
  /** The client's deadline for each call, in ms; a call still unanswered then fails with DEADLINE_EXCEEDED. */
  readonly deadlineMs?: number | undefined;
}

/** What a call of a member's services answered: its value or etcd's error (see EtcdCluster.answerOf). */
export type CallAnswer<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: GrpcError };

/** How a reply reaches the caller. */
export interface Reply<T> {
  ok(value: T): void;
  fail(err: unknown): void;
}

/** The levers on one client's link to one member. */
export interface Link {
  dropped: boolean;
  delayMs: number;
}

/** A proposal waiting for its member to apply it (etcd's wait registry, keyed by the entry). */
interface Proposal {
  readonly member: MemberState;
  readonly incarnation: number;
  readonly reply: Reply<unknown>;
  stage: 'noLeader' | 'proposed' | 'done';
  timer: TimerHandle | undefined;
  /** The entry it became, once appended at a leader. */
  entry: Entry | undefined;
}

/** A ReadIndex waiting for a read index, then for the member to apply up to it. */
interface ReadWait {
  readonly member: MemberState;
  readonly incarnation: number;
  readonly serve: () => void;
  readonly reply: Reply<unknown>;
  index: number | undefined;
  done: boolean;
  timer: TimerHandle | undefined;
}

/**
 * One member of a cluster: its identity (index, id, name, URLs), its current EtcdServer (a new one after each
 * restart) and its Raft state (role, term, leader, log and apply progress). Read it freely; change it only
 * through the cluster's levers — the fields are mutable for the cluster's own bookkeeping.
 */
export class MemberState {
  server: EtcdServer;
  role: RaftRole = 'follower';
  term: bigint;
  vote: MemberState | undefined;
  lead: MemberState | undefined;
  /** Its log agrees with the cluster log up to here ... */
  match: number;
  /** ... and continues with these entries of its own. */
  tail: Entry[] = [];
  commit: number;
  applied: number;
  electionElapsed = 0;
  randomizedTimeout = 0;
  /** As leader: ms since the last CheckQuorum, and when each member was last heard from. */
  quorumElapsed = 0;
  readonly lastHeard = new Map<MemberState, number>();
  paused = false;
  crashed = false;
  /** Expired leases a paused leader's lessor handed over, proposed when it runs again. */
  readonly pendingExpiries = new Set<bigint>();
  /** Bumped on every crash: calls of an earlier incarnation never get an answer from a later one. */
  incarnation = 0;
  applyLagMs: number;
  applyTimer: TimerHandle | undefined;
  applyTimerAt = Infinity;
  /** Calls that arrived and answers due while paused: they go on, in order, on resume (or fail on a crash). */
  held: Array<{ readonly run: () => void; readonly fail: (err: GrpcError) => void }> = [];
  /** Proposals waiting for this member to know a leader. */
  noLeader: Array<{ proposal: Proposal; make: (leader: MemberState) => Omit<Entry, 'index' | 'term' | 'committedAt'> }> = [];
  reads: ReadWait[] = [];
  /** @internal Links of streams on this member with requests or responses waiting in them (stream_link.ts). */
  readonly streamLinks = new Set<ClusterStreamLink>();
  /** Keep-alive streams opened on this member (they break when it crashes). */
  readonly keepAlives = new Set<KeepAliveCall>();
  /** What else breaks when it crashes (Lock/Election waits and Observe streams, cluster/concurrency.ts). */
  readonly onCrash = new Set<(err: GrpcError) => void>();
  /** The backend a crash left behind (what the restart rebuilds from) and the applied index it holds. */
  backend: EtcdBackend | undefined;
  /** The front door of this member (message form, async). */
  readonly services: ClusterMemberServices;

  constructor(
    readonly cluster: EtcdCluster,
    readonly index: number,
    readonly id: bigint,
    readonly name: string,
    readonly clientUrls: readonly string[],
    readonly peerUrls: readonly string[],
    readonly serverOptions: EtcdServerOptions,
    term: bigint,
    start: number,
    lag: number,
  ) {
    this.server = new EtcdServer(serverOptions);
    this.term = term;
    this.match = start;
    this.commit = start;
    this.applied = start;
    this.applyLagMs = lag;
    this.services = new ClusterMemberServices(cluster, this, { client: DEFAULT_CLIENT });
  }

  get up(): boolean {
    return !this.crashed && !this.paused;
  }

  get lastIndex(): number {
    return this.match + this.tail.length;
  }
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
 */
export class EtcdCluster {
  readonly clock: Clock;
  readonly random: SimRandom;
  readonly preVote: boolean;
  readonly heartbeatMs: number;
  readonly electionTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly snapshotCount: number;
  readonly snapshotCatchUpEntries: number;
  readonly clusterId: bigint;
  private readonly traceProposals: boolean;
  /** @internal */
  readonly log: RaftLog;
  /** @internal */
  readonly states: readonly MemberState[];
  private readonly rand: SimRandom;
  private readonly links = new Map<string, Link>();
  private partitionOf: number[];
  private commitIndex: number;
  private readonly proposals = new Map<Entry, Proposal>();
  /** Every proposal not answered yet (also those lost on the way to a leader, which no entry holds). */
  private readonly waiting = new Set<Proposal>();
  private readonly traceEvents: ClusterTraceEvent[] = [];
  /** trace() wrote out every ProposalTrace before this position. */
  private tracedUpTo = 0;
  private readonly ticker: TimerHandle;
  private applying = false;
  private readonly serverHooks: Array<(server: EtcdServer, m: MemberState) => void> = [];
  private readonly tickHooks: Array<() => void> = [];
  private readonly dirty = new Set<MemberState>();
  /** Every member applied the entries up to here: their requests were let go (releaseApplied). */
  private releasedTo = 0;
  /** updateCommit's members' match indexes, reused. */
  private readonly matchScratch: number[] = [];
  private closed = false;
  /** Each call's answer once it has one (see answerOf); weak, so a forgotten call costs nothing. */
  private readonly answers = new WeakMap<Promise<unknown>, { answer?: CallAnswer<unknown> }>();

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
    // cluster version.
    const start = 2 * n + 2;
    this.log = new RaftLog(start, INITIAL_TERM);
    this.commitIndex = start;
    this.partitionOf = new Array<number>(n).fill(0);
    const lags = opts.applyLagMs;
    this.traceProposals = opts.traceProposals ?? true;
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
        initialRaftIndex: start,
      };
      return new MemberState(this, i, ids[i]!, c.name, c.clientUrls, c.peerUrls, serverOptions, INITIAL_TERM, start, lag);
    });
    for (const m of this.states) this.wireMember(m);
    // Member 0 won the first election (term 2).
    const first = this.states[0]!;
    for (const m of this.states) {
      m.role = m === first ? 'leader' : 'follower';
      m.lead = first;
      m.vote = first;
      if (m !== first) m.server.lessor.demote();
      this.resetElectionTimer(m);
    }
    this.hookLessor(first);
    this.trace(`leader ${first.name} term ${INITIAL_TERM}`);
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
    return Math.floor(this.states.length / 2) + 1;
  }

  /** The member that currently acts as leader (up, in the leader role, highest term), if any. */
  get leader(): MemberState | undefined {
    let best: MemberState | undefined;
    for (const m of this.states) if (m.role === 'leader' && !m.crashed && (best === undefined || m.term > best.term)) best = m;
    return best;
  }

  /** The highest term any member has seen. */
  get term(): bigint {
    let t = 0n;
    for (const m of this.states) if (m.term > t) t = m.term;
    return t;
  }

  /** The cluster's commit index (the leader's). */
  get committedIndex(): number {
    return this.commitIndex;
  }

  /** A member by index, name, member ID or state. */
  member(ref: MemberRef): MemberState {
    if (ref instanceof MemberState) return ref;
    const m =
      typeof ref === 'number' ? this.states[ref] : typeof ref === 'bigint' ? this.states.find((s) => s.id === ref) : this.states.find((s) => s.name === ref);
    if (m === undefined) throw new RangeError(`EtcdCluster: no member ${String(ref)}`);
    return m;
  }

  /** The members in order. */
  get members(): readonly MemberState[] {
    return this.states;
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
      raftIndex: applied + Math.max(0, m.commit - m.applied),
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
  // Levers (deterministic; each takes effect at the current instant of the clock)

  /** SIGSTOP: the member stops: it neither sends nor receives, applies nothing, answers nothing until resumed. */
  pause(ref: MemberRef): void {
    const m = this.member(ref);
    if (m.crashed || m.paused) return;
    m.paused = true;
    this.cancelApplyTimer(m);
    this.trace(`pause ${m.name}`);
  }

  /** SIGCONT: the member carries on where it stopped; calls it held run now, in order. */
  resume(ref: MemberRef): void {
    const m = this.member(ref);
    if (!m.paused) return;
    m.paused = false;
    this.trace(`resume ${m.name}`);
    this.afterTopologyChange();
    const held = m.held;
    m.held = [];
    for (const h of held) h.run();
    this.releaseStreams(m);
    this.markDirty(m);
    this.pump();
  }

  /**
   * Splits the members into groups that only reach members of their own group (a member in no group is
   * alone). `partition([[0], [1, 2]])` isolates member 0.
   */
  partition(groups: ReadonlyArray<readonly MemberRef[]>): void {
    const of = new Array<number>(this.states.length).fill(-1);
    groups.forEach((g, gi) => {
      for (const r of g) of[this.member(r).index] = gi;
    });
    let lone = groups.length;
    this.partitionOf = of.map((g) => (g >= 0 ? g : lone++));
    this.trace(`partition ${this.partitionOf.join(',')}`);
    this.afterTopologyChange();
  }

  /** Cuts one member off from all others. */
  isolate(ref: MemberRef): void {
    const m = this.member(ref);
    this.partition([this.states.filter((s) => s !== m)]);
  }

  /** Ends every partition. */
  heal(): void {
    this.partitionOf = this.partitionOf.map(() => 0);
    this.trace('heal');
    this.afterTopologyChange();
  }

  /** Sets how long after commit the member applies entries (its lag behind the leader). */
  setApplyLag(ref: MemberRef, ms: number): void {
    checkLag(ms);
    const m = this.member(ref);
    m.applyLagMs = ms;
    this.trace(`lag ${m.name} ${ms}`);
    this.cancelApplyTimer(m);
    this.markDirty(m);
    this.pump();
  }

  /** Drops everything on the link between a client and a member, both ways, until restored. */
  dropLink(client: string, ref: MemberRef): void {
    this.link(client, this.member(ref)).dropped = true;
    this.trace(`drop ${client}->${this.member(ref).name}`);
  }

  /** Delays the link between a client and a member by `ms` each way. */
  delayLink(client: string, ref: MemberRef, ms: number): void {
    checkLag(ms);
    this.link(client, this.member(ref)).delayMs = ms;
    this.trace(`delay ${client}->${this.member(ref).name} ${ms}`);
  }

  /** Restores the link between a client and a member (no drop, no delay). */
  restoreLink(client: string, ref: MemberRef): void {
    const m = this.member(ref);
    this.links.delete(linkKey(client, m));
    this.trace(`restore ${client}->${m.name}`);
    this.releaseStreams(m);
  }

  /**
   * Kills the member (SIGKILL): its calls and streams break, its in-memory state is gone; what survives is
   * its backend (the state it applied, as bbolt holds it) and its Raft log and vote (the WAL).
   */
  crash(ref: MemberRef): void {
    const m = this.member(ref);
    if (m.crashed) return;
    const wasLeader = m.role === 'leader';
    // The backend with its alarm bucket: the alarms are raised again at restart (etcd's restoreAlarms).
    m.backend = m.server.etcdBackend();
    m.crashed = true;
    m.paused = false;
    m.incarnation++;
    this.cancelApplyTimer(m);
    for (const c of m.server.services.watch.calls()) c.abort(errTransportClosing());
    for (const c of m.server.services.lease.calls()) c.abort(errTransportClosing());
    for (const c of [...m.keepAlives]) c.abort(errTransportClosing());
    for (const fn of [...m.onCrash]) fn(errTransportClosing());
    m.onCrash.clear();
    m.server.close();
    const held = m.held;
    m.held = [];
    for (const h of held) h.fail(errTransportClosing());
    const dropped = m.noLeader;
    m.noLeader = [];
    for (const d of dropped) this.settle(d.proposal, undefined, errTransportClosing());
    for (const p of [...this.waiting]) if (p.member === m) this.settle(p, undefined, errTransportClosing(), p.entry);
    const reads = m.reads;
    m.reads = [];
    for (const r of reads) this.finishRead(r, errTransportClosing());
    m.role = 'follower';
    m.lead = undefined;
    this.trace(`crash ${m.name}${wasLeader ? ' (leader)' : ''}`);
    this.afterTopologyChange();
  }

  /**
   * Starts a crashed member again: its server is rebuilt from the backend it left (etcd rebuilds its index
   * from bbolt, its lessor from the lease bucket), it rejoins as a follower of the same term, replays the
   * committed entries it had not applied, and catches up from the leader.
   */
  restart(ref: MemberRef): void {
    const m = this.member(ref);
    if (!m.crashed) return;
    const backend = m.backend!;
    const server = new EtcdServer({ ...m.serverOptions, raftTerm: m.term, fromSnapshot: writeEtcdSnapshot(backend), initialRaftIndex: Number(backend.consistentIndex) });
    server.lessor.demote();
    m.server = server;
    this.wireMember(m);
    for (const fn of this.serverHooks) fn(server, m);
    m.backend = undefined;
    m.crashed = false;
    m.role = 'follower';
    m.lead = undefined;
    m.commit = m.applied;
    this.resetElectionTimer(m);
    this.trace(`restart ${m.name} applied ${m.applied}`);
    this.afterTopologyChange();
  }

  /**
   * Maintenance.MoveLeader as a lever: the leader hands leadership to `target` (etcd's leadership transfer:
   * the transferee campaigns at once, with a term one higher, ignoring the voters' leader lease). Returns
   * whether `target` is leader afterwards.
   */
  moveLeader(ref: MemberRef): boolean {
    const target = this.member(ref);
    const leader = this.leader;
    if (leader === undefined || !leader.up) return false;
    if (target === leader) return true;
    if (!target.up || !this.connected(leader, target)) return false;
    // The leader first brings the transferee's log up to date (MsgTimeoutNow waits for that).
    this.replicate(leader, target);
    this.trace(`transfer ${leader.name} -> ${target.name}`);
    this.campaign(target, true);
    this.pump();
    return this.leader === target;
  }

  /**
   * Forces an election now: the leader steps down and `candidate` (default: the first member up) campaigns
   * as when its election timeout fires.
   */
  forceElection(candidate?: MemberRef): void {
    const leader = this.leader;
    if (leader !== undefined) this.stepDown(leader, leader.term, undefined);
    const c = candidate === undefined ? this.states.find((s) => s.up) : this.member(candidate);
    if (c !== undefined && c.up) this.campaign(c, true);
    this.pump();
  }

  /**
   * The leader compacts its Raft log up to its applied index (etcd does so every --snapshot-count entries,
   * keeping SnapshotCatchUpEntries): a follower whose log ends before the compaction point can then only
   * catch up through a snapshot of the leader's state. `keep` entries stay (default 0).
   */
  compactLog(keep = 0): number {
    const leader = this.leader;
    if (leader === undefined) return this.log.offset;
    this.compactTo(leader.applied - keep);
    return this.log.offset;
  }

  /** Sends the leader's snapshot to a member now (what the leader does for a follower behind its log). */
  installSnapshot(ref: MemberRef): void {
    const m = this.member(ref);
    const leader = this.leader;
    if (leader === undefined || leader === m || !m.up || !this.connected(leader, m)) return;
    this.sendSnapshot(leader, m);
    this.pump();
  }

  /**
   * Calls `fn` with every member's server now and with each server a restart builds later: a front door
   * hooks its delivery scheduler there.
   */
  onServer(fn: (server: EtcdServer, m: MemberState) => void): void {
    this.serverHooks.push(fn);
    for (const m of this.states) if (!m.crashed) fn(m.server, m);
  }

  /** @internal Calls `fn` after every Raft tick (a checker of the cluster's invariants, raft_checker.ts). */
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
    for (const p of [...this.waiting]) this.settle(p, undefined, errTransportClosing(), p.entry);
    for (const m of this.states) {
      this.cancelApplyTimer(m);
      m.noLeader = [];
      for (const r of [...m.reads]) this.finishRead(r, errTransportClosing());
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
    const client = opts.client ?? DEFAULT_CLIENT;
    // What the call got, recorded the moment it is known (answerOf reads it without awaiting).
    const box: { answer?: CallAnswer<T> } = {};
    const promise = new Promise<T>((resolveCall, rejectCall) => {
      const resolve = (v: T): void => {
        box.answer = { ok: true, value: v };
        resolveCall(v);
      };
      const reject = (err: unknown): void => {
        box.answer = { ok: false, error: toGrpcError(err) };
        rejectCall(err);
      };
      let settled = false;
      let deadline: TimerHandle | undefined;
      const finish = (fn: () => void): void => {
        if (settled) return;
        settled = true;
        if (deadline !== undefined) this.clock.cancel(deadline);
        fn();
      };
      if (opts.deadlineMs !== undefined) {
        deadline = this.clock.setTimer(this.clock.now() + opts.deadlineMs, () => finish(() => reject(errDeadlineExceeded())), 'cluster.deadline');
      }
      const back = (fn: () => void): void => {
        // A stopped process sends nothing: an answer due while it is paused leaves when it resumes.
        if (m.paused) {
          m.held.push({ run: () => back(fn), fail: (err) => finish(() => reject(err)) });
          return;
        }
        const link = this.linkOf(client, m);
        if (link?.dropped === true) return;
        if (link !== undefined && link.delayMs > 0) this.clock.setTimer(this.clock.now() + link.delayMs, () => finish(fn), 'cluster.link');
        else finish(fn);
      };
      const reply: Reply<T> = {
        ok: (v) => back(() => resolve(v)),
        fail: (err) => back(() => reject(toGrpcError(err))),
      };
      const arrive = (): void => {
        if (settled) return;
        if (m.crashed) return reply.fail(errMemberDown(m.name));
        const run = (): void => {
          try {
            handle(reply);
          } catch (err) {
            reply.fail(err);
          }
        };
        if (m.paused) m.held.push({ run, fail: (err) => finish(() => reject(err)) });
        else run();
      };
      const link = this.linkOf(client, m);
      if (link?.dropped === true) return;
      if (link !== undefined && link.delayMs > 0) this.clock.setTimer(this.clock.now() + link.delayMs, arrive, 'cluster.link');
      else arrive();
    });
    this.answers.set(promise, box);
    return promise;
  }

  /**
   * The answer a call of this cluster's services (a promise they returned) has already had, read at once;
   * undefined while it still waits. A driver that cannot await — the scenario runner, which moves the
   * virtual clock itself until etcdctl's command timeout — reads it after each instant. Settle-time bookkeeping
   * only: the call's path is the same as for an awaiting client.
   */
  answerOf<T>(call: Promise<T>): CallAnswer<T> | undefined {
    return this.answers.get(call)?.answer as CallAnswer<T> | undefined;
  }

  /**
   * @internal Proposes a request at member `m` (etcd's processInternalRaftRequest): forwarded to the leader
   * `m` knows, appended to its log, committed with a quorum, applied by every member; `m` answers with what
   * its own apply gave, once it applied it. Without a leader the proposal waits for one; after the request
   * timeout it fails with etcd's error for the member's situation.
   */
  propose(m: MemberState, make: (leader: MemberState) => Omit<Entry, 'index' | 'term' | 'committedAt'>, reply: Reply<unknown>): void {
    const p: Proposal = { member: m, incarnation: m.incarnation, reply, stage: 'noLeader', timer: undefined, entry: undefined };
    p.timer = this.clock.setTimer(this.clock.now() + this.requestTimeoutMs, () => this.proposalTimedOut(p), 'cluster.request-timeout');
    this.waiting.add(p);
    this.forward(m, p, make);
    this.pump();
  }

  /**
   * @internal A linearizable read at `m` (etcd's linearizableReadNotify): ReadIndex through the leader, wait
   * until `m` applied up to it, then `serve` (which reads `m`'s own state and replies).
   */
  readIndex(m: MemberState, serve: () => void, reply: Reply<unknown>): void {
    const r: ReadWait = { member: m, incarnation: m.incarnation, serve, reply, index: undefined, done: false, timer: undefined };
    r.timer = this.clock.setTimer(this.clock.now() + this.requestTimeoutMs, () => this.finishRead(r, errTimeout()), 'cluster.read-timeout');
    m.reads.push(r);
    this.tryReads(m);
  }

  /** @internal The leader `m` knows and can reach, if any: where keep-alives and TimeToLive are forwarded. */
  reachableLeader(m: MemberState): MemberState | undefined {
    const l = this.knownLeader(m);
    return l !== undefined && l.up && l.role === 'leader' && (l === m || this.connected(m, l)) ? l : undefined;
  }

  /** @internal The leader `m` knows (itself if it leads). */
  knownLeader(m: MemberState): MemberState | undefined {
    if (m.crashed) return undefined;
    if (m.role === 'leader') return m;
    return m.lead;
  }

  /** @internal Draws a positive 63-bit lease ID no lease on the leader has (the leader's choice before proposing). */
  newLeaseId(leader: MemberState): bigint {
    let id: bigint;
    do id = this.rand.nextUint63();
    while (id === 0n || leader.server.lessor.exists(id));
    return id;
  }

  // ---------------------------------------------------------------------------------------------------
  // Raft

  /** Two members reach each other: both up, same side of every partition. */
  private connected(a: MemberState, b: MemberState): boolean {
    return a.up && b.up && this.partitionOf[a.index] === this.partitionOf[b.index];
  }

  /**
   * @internal The levers set on a client's link to `m`, if any (no key is built while no link lever was
   * ever used). Unary calls and stream links (stream_link.ts) read them as they carry each message.
   */
  linkOf(client: string, m: MemberState): Readonly<Link> | undefined {
    return this.links.size === 0 ? undefined : this.links.get(linkKey(client, m));
  }

  /** What streams on `m` held while their link was down or `m` stopped moves on (responses and requests). */
  private releaseStreams(m: MemberState): void {
    for (const l of [...m.streamLinks]) l.release();
    if (!m.crashed) m.server.delivery.poke();
  }

  private link(client: string, m: MemberState): Link {
    const key = linkKey(client, m);
    let l = this.links.get(key);
    if (l === undefined) {
      l = { dropped: false, delayMs: 0 };
      this.links.set(key, l);
    }
    return l;
  }

  /** One heartbeat interval: leaders heartbeat and check their quorum; followers count toward an election. */
  private tick(): void {
    for (const m of this.states) {
      if (!m.up) continue;
      if (m.role === 'leader') {
        if (m.pendingExpiries.size > 0) {
          const ids = [...m.pendingExpiries].filter((id) => m.server.lessor.exists(id));
          m.pendingExpiries.clear();
          this.proposeExpiries(m, ids);
        }
        this.heartbeat(m);
        if (m.role !== 'leader') continue;
        m.quorumElapsed += this.heartbeatMs;
        if (m.quorumElapsed >= this.electionTimeoutMs) {
          m.quorumElapsed = 0;
          const now = this.clock.now();
          let active = 1;
          for (const f of this.states) if (f !== m && now - (m.lastHeard.get(f) ?? -Infinity) < this.electionTimeoutMs) active++;
          if (active < this.quorum) {
            this.trace(`${m.name} steps down: no quorum (term ${m.term})`);
            this.stepDown(m, m.term, undefined);
          }
        }
      } else {
        m.electionElapsed += this.heartbeatMs;
        if (m.electionElapsed >= m.randomizedTimeout) this.campaign(m, false);
      }
    }
    for (const m of this.states) if (m.up && m.reads.length > 0) this.tryReads(m);
    this.pump();
    for (const fn of this.tickHooks) fn();
  }

  /** The leader's heartbeat (and log replication) to every member it reaches. */
  private heartbeat(l: MemberState): void {
    for (const f of this.states) {
      if (f === l || !this.connected(l, f)) continue;
      if (f.term > l.term) {
        // The follower's answer carries a higher term (a member that campaigned alone without pre-vote):
        // the leader steps down to it (etcd runs with CheckQuorum, so it answers the heartbeat at all).
        this.trace(`${l.name} steps down: ${f.name} has term ${f.term}`);
        this.stepDown(l, f.term, undefined);
        return;
      }
      this.follow(f, l);
      this.replicate(l, f);
    }
    this.updateCommit(l);
  }

  /** `f` hears from leader `l` (of a term >= its own): it follows `l`. */
  private follow(f: MemberState, l: MemberState): void {
    const newLeader = f.lead !== l || f.role !== 'follower';
    if (f.role === 'leader') this.demote(f);
    if (f.term < l.term) f.vote = undefined;
    f.term = l.term;
    f.server.setRaftTerm(f.term);
    f.role = 'follower';
    const changed = f.lead !== l;
    f.lead = l;
    f.electionElapsed = 0;
    l.lastHeard.set(f, this.clock.now());
    if (changed) this.leaderChanged(f);
    if (newLeader) {
      const waiting = f.noLeader;
      f.noLeader = [];
      for (const w of waiting) this.forward(f, w.proposal, w.make);
    }
  }

  /** Brings `f`'s log in line with leader `l`'s: the rest of the log, or a snapshot if `f` is behind its start. */
  private replicate(l: MemberState, f: MemberState): void {
    // Entries it lacks that the leader compacted away come as a snapshot of the leader's state first.
    if (f.match < this.log.offset) this.sendSnapshot(l, f);
    f.match = l.lastIndex;
    if (f.tail.length > 0) f.tail = [];
    const c = Math.min(this.commitIndex, f.match);
    if (c > f.commit) {
      f.commit = c;
      this.markDirty(f);
    }
  }

  /** Installs the leader's state on `f` (etcd's MsgSnap; the member's applySnapshot). */
  private sendSnapshot(l: MemberState, f: MemberState): void {
    // Never backwards: a member that applied more than the leader keeps its state.
    if (f.applied > l.applied) return;
    const s = f.server;
    const ls = l.server;
    s.restore(ls.snapshot());
    // The alarm bucket comes with the snapshot, and the follower's refusals follow it (etcd's restoreAlarms).
    s.services.maintenance.alarms.restore(ls.services.maintenance.alarms.bucketKeys());
    // The lease bucket comes with the snapshot: the member's lessor recovers the leader's leases.
    const theirs = new Set(ls.lessor.leases());
    for (const id of s.lessor.leases()) if (!theirs.has(id)) s.lessor.revoke(id);
    for (const id of theirs) {
      if (s.lessor.exists(id)) continue;
      s.lessor.grant(id, ls.lessor.timeToLive(id).grantedTTL);
      const rem = ls.lessor.checkpointedTTLOf(id) ?? 0;
      if (rem > 0) s.lessor.checkpoint(id, rem);
    }
    s.lessor.recoverFromStore();
    s.resetAppliedIndex(ls.raftIndex);
    f.applied = l.applied;
    f.commit = Math.max(f.commit, l.applied);
    f.match = l.applied;
    f.tail = [];
    this.trace(`snapshot ${l.name} -> ${f.name} at ${l.applied}`);
    this.cancelApplyTimer(f);
    this.markDirty(f);
  }

  /** Raft's commit rule: the highest index a quorum holds, if it is of the leader's term. */
  private updateCommit(l: MemberState): void {
    if (l.role !== 'leader') return;
    // A member's match counts whether it is reachable now or not: it acknowledged those entries (its WAL has them).
    // (One array for every commit: this runs on every proposal.)
    const matches = this.matchScratch;
    for (let i = 0; i < this.states.length; i++) {
      const m = this.states[i]!;
      matches[i] = m === l ? l.lastIndex : m.match;
    }
    matches.sort(descending);
    const n = matches[this.quorum - 1]!;
    if (n > this.commitIndex && this.log.termAt(n) === l.term) {
      const now = this.clock.now();
      for (let i = this.commitIndex + 1; i <= n; i++) this.log.at(i)!.committedAt = now;
      this.commitIndex = n;
      l.commit = n;
      this.markDirty(l);
      for (const f of this.states) {
        if (f !== l && this.connected(l, f)) {
          const c = Math.min(n, f.match);
          if (c > f.commit) {
            f.commit = c;
            this.markDirty(f);
          }
        }
      }
      this.maybeAutoCompact(l);
    }
  }

  /** `c` campaigns (its election timeout fired, or `force`: a leadership transfer). */
  private campaign(c: MemberState, force: boolean): void {
    const voters = this.states.filter((v) => v !== c && this.connected(c, v));
    const inLease = (v: MemberState): boolean => !force && v.lead !== undefined && (v.role === 'leader' || v.electionElapsed < this.electionTimeoutMs);
    const upToDate = (v: MemberState): boolean => {
      const ct = this.lastTerm(c);
      const vt = this.lastTerm(v);
      return ct > vt || (ct === vt && c.lastIndex >= v.lastIndex);
    };
    if (this.preVote && !force) {
      let granted = 1;
      for (const v of voters) if (!inLease(v) && c.term + 1n > v.term && upToDate(v)) granted++;
      if (granted < this.quorum) {
        this.trace(`${c.name} pre-vote lost (term ${c.term})`);
        // A pre-candidate knows no leader (raft's becomePreCandidate clears it) until one's heartbeat
        // reaches it: its Status says no leader, its proposals wait, its require-leader streams count.
        c.lead = undefined;
        this.resetElectionTimer(c);
        return;
      }
    }
    if (c.role === 'leader') this.demote(c);
    c.term += 1n;
    c.server.setRaftTerm(c.term);
    c.role = 'candidate';
    c.vote = c;
    c.lead = undefined;
    this.resetElectionTimer(c);
    let votes = 1;
    for (const v of voters) {
      if (inLease(v)) continue;
      if (c.term > v.term) {
        if (v.role === 'leader') this.trace(`${v.name} steps down: ${c.name} campaigns at term ${c.term}`);
        this.stepDown(v, c.term, undefined);
      }
      if (v.term === c.term && (v.vote === undefined || v.vote === c) && upToDate(v)) {
        v.vote = c;
        v.electionElapsed = 0;
        votes++;
      }
    }
    if (votes >= this.quorum) this.becomeLeader(c);
    else this.trace(`${c.name} campaign lost at term ${c.term} (${votes} votes)`);
  }

  private lastTerm(m: MemberState): bigint {
    return m.tail.length > 0 ? m.tail[m.tail.length - 1]!.term : this.log.termAt(m.match);
  }

  /** `m` wins: its log becomes the cluster log, its lessor is promoted, it appends its term's empty entry. */
  private becomeLeader(l: MemberState): void {
    const changed = l.lead !== l;
    this.rebase(l);
    l.role = 'leader';
    l.lead = l;
    l.quorumElapsed = 0;
    l.lastHeard.clear();
    this.trace(`leader ${l.name} term ${l.term}`);
    if (changed) this.leaderChanged(l);
    // etcd's lessor.Promote(electionTimeout): every lease's expiry = now + election timeout + remaining TTL.
    l.server.lessor.promote(this.electionTimeoutMs);
    this.hookLessor(l);
    this.appendAt(l, { kind: 'empty', label: 'empty', apply: (s) => s.noteRaftEntry() });
    for (const f of this.states) if (f !== l && this.connected(l, f) && f.term <= l.term) this.follow(f, l);
    this.heartbeat(l);
    const waiting = l.noLeader;
    l.noLeader = [];
    for (const w of waiting) this.forward(l, w.proposal, w.make);
  }

  /** A leader becomes a follower (of `lead`, or of nobody yet) at `term`. */
  private stepDown(m: MemberState, term: bigint, lead: MemberState | undefined): void {
    if (m.role === 'leader') this.demote(m);
    if (term > m.term) {
      m.term = term;
      m.vote = undefined;
      m.server.setRaftTerm(term);
    }
    m.role = 'follower';
    m.lead = lead;
    this.resetElectionTimer(m);
  }

  /**
   * `m` learned of a new leader (etcd 3.4's leaderChanged notification, raised whenever the member's
   * leader becomes a different member, also after a time without one): its linearizable reads still
   * waiting for a read index fail with ErrLeaderChanged (v3_server.go requestCurrentIndex), which clients
   * may retry. Reads that have their index and wait for the member's apply are not affected.
   */
  private leaderChanged(m: MemberState): void {
    for (const r of [...m.reads]) if (r.index === undefined && !r.done) this.finishRead(r, errLeaderChanged());
  }

  /** Demotes a leader's lessor: leases stop expiring there (etcd's lessor.Demote). */
  private demote(m: MemberState): void {
    m.pendingExpiries.clear();
    if (!m.crashed) {
      m.server.lessor.demote();
      m.server.lessor.onExpired = undefined;
      m.server.lessor.onCheckpoint = undefined;
    }
  }

  /** The leader's lessor proposes what etcd's proposes: revokes of expired leases, lease checkpoints. */
  private hookLessor(l: MemberState): void {
    l.server.lessor.onExpired = (ids) => this.proposeExpiries(l, ids);
    l.server.lessor.onCheckpoint = (due) => {
      if (l.role !== 'leader' || !l.up) return; // a stopped leader checkpoints nothing; promote reschedules
      for (const { id, remaining } of due) {
        if (this.traceProposals) this.trace(`propose leaseCheckpoint ${id} ${remaining} via ${l.name}`);
        this.appendAt(l, { kind: 'leaseCheckpoint', label: `leaseCheckpoint ${id}`, apply: (s) => s.lessor.checkpoint(id, remaining) });
      }
      this.pump();
    };
  }

  /**
   * Makes `l`'s log the cluster log: every other member's agreement with it is recomputed (Raft's log
   * matching: a common prefix, then the member's own uncommitted entries as its tail).
   */
  private rebase(l: MemberState): void {
    const log = this.log;
    const entryOf = (m: MemberState, i: number): Entry | undefined => (i <= m.match ? log.at(i) : m.tail[i - m.match - 1]);
    const lEntries: Entry[] = [];
    for (let i = l.match + 1; i <= l.lastIndex; i++) lEntries.push(entryOf(l, i)!);
    for (const m of this.states) {
      if (m === l) continue;
      let p = Math.min(m.match, l.match);
      const mine: Entry[] = [];
      for (let i = p + 1; i <= m.lastIndex; i++) mine.push(entryOf(m, i)!);
      let k = 0;
      while (k < mine.length && p + 1 <= l.lastIndex && mine[k] === (p + 1 <= l.match ? log.at(p + 1) : lEntries[p - l.match])) {
        p++;
        k++;
      }
      m.match = p;
      m.tail = mine.slice(k);
    }
    log.truncateAfter(l.match);
    for (const e of lEntries) log.append(e);
    l.match = log.lastIndex;
    l.tail = [];
  }

  /** Appends an entry to the leader's log and replicates it to the members the leader reaches. */
  private appendAt(l: MemberState, body: Omit<Entry, 'index' | 'term' | 'committedAt'>): Entry {
    // One shape for every entry (a spread would make each its own).
    const e: Entry = { index: this.log.lastIndex + 1, term: l.term, kind: body.kind, label: body.label, apply: body.apply, committedAt: -1 };
    this.log.append(e);
    l.match = e.index;
    for (const f of this.states) if (f !== l && this.connected(l, f)) this.replicate(l, f);
    this.updateCommit(l);
    return e;
  }

  /** Sends a proposal from `m` to the leader it knows, or parks it until `m` knows one. */
  private forward(m: MemberState, p: Proposal, make: (leader: MemberState) => Omit<Entry, 'index' | 'term' | 'committedAt'>): void {
    if (p.stage === 'done') return;
    const l = this.knownLeader(m);
    if (l === undefined) {
      p.stage = 'noLeader';
      m.noLeader.push({ proposal: p, make });
      return;
    }
    p.stage = 'proposed';
    // A proposal to a leader that is down or cut off is lost on the way (the request times out).
    if (l !== m && !this.connected(m, l)) return;
    if (l.role !== 'leader' || !l.up) return;
    const e = this.appendAt(l, make(l));
    p.entry = e;
    this.proposals.set(e, p);
    if (this.traceProposals) this.traceEvents.push(new ProposalTrace(this.clock.now(), e.label, e.index, m.name));
  }

  /** The leader's lessor found leases expired: the leader proposes their revokes (etcd's revokeExpiredLeases). */
  private proposeExpiries(l: MemberState, ids: readonly bigint[]): void {
    if (l.role !== 'leader') return;
    if (!l.up) {
      // A paused leader proposes them when it runs again (etcd's lessor retries expired leases).
      for (const id of ids) l.pendingExpiries.add(id);
      return;
    }
    for (const id of ids) {
      if (this.traceProposals) this.trace(`propose leaseExpire ${id} via ${l.name}`);
      this.appendAt(l, {
        kind: 'leaseExpire',
        label: `leaseExpire ${id}`,
        apply: (s) => {
          try {
            return s.lessor.expire(id);
          } catch {
            // Revoked meanwhile (a client revoke or an earlier expiry proposal): etcd's apply fails the
            // same way on every member; the entry still counts.
            s.noteRaftEntry();
            return undefined;
          }
        },
      });
    }
    this.pump();
  }

  private resetElectionTimer(m: MemberState): void {
    m.electionElapsed = 0;
    // Raft's randomized election timeout: [electionTimeout, 2 × electionTimeout), in ticks.
    const ticks = Math.round(this.electionTimeoutMs / this.heartbeatMs);
    m.randomizedTimeout = (ticks + this.rand.nextInt(0, ticks - 1)) * this.heartbeatMs;
  }

  /** After a pause, partition, crash or restart: leaders reach who they can now, reads retry. */
  private afterTopologyChange(): void {
    const l = this.leader;
    if (l !== undefined && l.up) this.heartbeat(l);
    for (const m of this.states) if (m.up && m.reads.length > 0) this.tryReads(m);
    this.pump();
  }

  private compactTo(index: number): void {
    // Entries a member holds but has not applied yet stay: they are in that member's own log (its WAL,
    // which a crashed member replays when it restarts). A member that lacks them gets a snapshot instead.
    let upTo = Math.min(index, this.commitIndex);
    for (const m of this.states) if (m.match >= upTo && m.applied < upTo) upTo = m.applied;
    if (upTo <= this.log.offset) return;
    this.log.compact(upTo);
    this.trace(`compact log to ${upTo}`);
  }

  private maybeAutoCompact(l: MemberState): void {
    if (l.applied - this.log.offset > this.snapshotCount + this.snapshotCatchUpEntries) this.compactTo(l.applied - this.snapshotCatchUpEntries);
  }

  // ---------------------------------------------------------------------------------------------------
  // Applying

  private markDirty(m: MemberState): void {
    this.dirty.add(m);
  }

  /** Applies what is due on every member marked dirty; re-entrant calls just mark. */
  private pump(): void {
    if (this.applying) return;
    this.applying = true;
    try {
      while (this.dirty.size > 0) {
        const m = this.dirty.values().next().value!;
        this.dirty.delete(m);
        this.applyDue(m);
      }
    } finally {
      this.applying = false;
    }
  }

  /** Applies, in order, the committed entries whose time has come on `m` (commit time + its lag). */
  private applyDue(m: MemberState): void {
    if (!m.up) return;
    const now = this.clock.now();
    while (m.applied < m.commit) {
      if (m.applied < this.log.offset) {
        // Its next entries are compacted away: only the leader's snapshot brings it forward.
        const l = this.leader;
        if (l !== undefined && l !== m && this.connected(l, m)) this.sendSnapshot(l, m);
        else return;
        continue;
      }
      const e = this.log.at(m.applied + 1);
      if (e === undefined || e.committedAt < 0) return;
      const due = e.committedAt + m.applyLagMs;
      if (due > now) {
        if (m.applyTimerAt > due) {
          this.cancelApplyTimer(m);
          m.applyTimerAt = due;
          m.applyTimer = this.clock.setTimer(due, () => {
            m.applyTimer = undefined;
            m.applyTimerAt = Infinity;
            this.markDirty(m);
            this.pump();
          }, 'cluster.apply');
        }
        return;
      }
      this.applyEntry(m, e);
    }
  }

  private applyEntry(m: MemberState, e: Entry): void {
    let result: unknown;
    let error: GrpcError | undefined;
    try {
      result = e.apply(m.server);
    } catch (err) {
      error = toGrpcError(err);
    }
    m.applied = e.index;
    this.releaseApplied();
    const p = this.proposals.get(e);
    if (p !== undefined && p.member === m) this.settle(p, result, error, e);
    if (m.reads.length > 0) this.tryReads(m);
  }

  /**
   * Lets go of the requests of entries every member applied: they never run again (a restart replays from
   * the member's own applied index, a snapshot brings state, not entries), and the log keeps them until it
   * compacts (--snapshot-count, 100,000 entries) — each holding its request's keys and values.
   */
  private releaseApplied(): void {
    let min = Infinity;
    for (const s of this.states) if (s.applied < min) min = s.applied;
    if (min <= this.releasedTo) return;
    for (let i = Math.max(this.releasedTo, this.log.offset) + 1; i <= min; i++) {
      const e = this.log.at(i);
      if (e !== undefined) e.apply = appliedEverywhere;
    }
    this.releasedTo = min;
  }

  private settle(p: Proposal, result: unknown, error: GrpcError | undefined, e?: Entry): void {
    if (e !== undefined) this.proposals.delete(e);
    if (p.stage === 'done') return;
    p.stage = 'done';
    this.waiting.delete(p);
    if (p.timer !== undefined) this.clock.cancel(p.timer);
    if (p.incarnation !== p.member.incarnation && error === undefined) return;
    if (error !== undefined) p.reply.fail(error);
    else p.reply.ok(result);
  }

  /** etcd's parseProposeCtxErr: which timeout error the member answers with, by what it knows of its leader. */
  private proposalTimedOut(p: Proposal): void {
    if (p.stage === 'done') return;
    const m = p.member;
    p.timer = undefined;
    let err: GrpcError;
    if (p.stage === 'noLeader') {
      m.noLeader = m.noLeader.filter((w) => w.proposal !== p);
      err = errProposalBlocked();
    } else {
      const l = this.knownLeader(m);
      if (l === undefined) err = errTimeout();
      else if (l === m) err = this.leaderHasQuorum(m) ? errTimeout() : errTimeoutDueToConnectionLost();
      else err = this.connected(m, l) ? errTimeout() : errTimeoutDueToLeaderFail();
    }
    this.settle(p, undefined, err, p.entry);
  }

  private leaderHasQuorum(l: MemberState): boolean {
    let n = 0;
    for (const m of this.states) if (m === l ? m.up : this.connected(l, m)) n++;
    return n >= this.quorum;
  }

  /** Moves the member's waiting reads on: get a read index from the leader, serve those whose index it applied. */
  private tryReads(m: MemberState): void {
    if (!m.up) return;
    const pending = m.reads;
    m.reads = [];
    for (const r of pending) {
      if (r.done) continue;
      if (r.index === undefined) {
        const l = this.reachableLeader(m);
        // ReadIndex: the leader confirms with a quorum that it still leads, and has committed an entry of
        // its term (etcd's ReadOnlySafe); the read index is its commit index.
        if (l !== undefined && this.leaderHasQuorum(l) && this.log.termAt(this.commitIndex) === l.term) r.index = this.commitIndex;
      }
      if (r.index !== undefined && m.applied >= r.index) {
        r.done = true;
        if (r.timer !== undefined) this.clock.cancel(r.timer);
        try {
          r.serve();
        } catch (err) {
          r.reply.fail(err);
        }
        continue;
      }
      m.reads.push(r);
    }
  }

  private finishRead(r: ReadWait, err: GrpcError): void {
    if (r.done) return;
    r.done = true;
    if (r.timer !== undefined) this.clock.cancel(r.timer);
    r.member.reads = r.member.reads.filter((x) => x !== r);
    r.reply.fail(err);
  }

  private cancelApplyTimer(m: MemberState): void {
    if (m.applyTimer !== undefined) this.clock.cancel(m.applyTimer);
    m.applyTimer = undefined;
    m.applyTimerAt = Infinity;
  }

  /** Hooks a (new) server of a member into the cluster. */
  private wireMember(m: MemberState): void {
    m.server.setRaftTerm(m.term);
    m.server.lessor.onExpired = undefined;
    m.server.lessor.onCheckpoint = undefined;
  }

  private requireVirtual(): VirtualClock {
    if (!(this.clock instanceof VirtualClock)) throw new Error('EtcdCluster.advance: the cluster runs on real time; give it a VirtualClock to drive time');
    return this.clock;
  }
}

/** A member by index, name, member ID, or its state. */
export type MemberRef = number | string | bigint | MemberState;

const descending = (a: number, b: number): number => b - a;

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

/** What an entry every member applied holds instead of its request (releaseApplied): it never runs again. */
function appliedEverywhere(): never {
  throw new Error('etcdsim: internal error: a Raft entry applied again after every member applied it');
}

function linkKey(client: string, m: MemberState): string {
  return `${client}\u0000${m.index}`;
}

function checkLag(ms: number): void {
  if (!Number.isSafeInteger(ms) || ms < 0) throw new RangeError(`EtcdCluster: a lag or delay must be an integer number of ms >= 0, got ${ms}`);
}

/** One turn of the event loop, so client code reacting to responses runs before time moves on. */
function turn(): Promise<void> {
  return new Promise((resolve) => hostNextTurn(resolve));
}
