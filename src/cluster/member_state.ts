/**
 * One member of a simulated etcd cluster: its identity (as etcd's --name, --advertise-client-urls and
 * --initial-advertise-peer-urls give it, and the member ID etcd derives from its peer URLs), its current
 * EtcdServer (a new one after each restart, rebuilt from the backend the crash left, as etcd rebuilds from
 * bbolt) and its Raft state: role, term, vote, leader, how much of the log it holds, its commit and applied
 * indexes. What the member waits on — proposals without a leader, linearizable reads, calls held while it
 * is paused — is kept here too, because a crash loses all of it at once.
 */
import type { TimerHandle } from '../sim/index.js';
import type { EtcdBackend } from '../snapshot/index.js';
import { type GrpcError, EtcdServer, type EtcdServerOptions, type KeepAliveCall } from '../server/index.js';
import type { EtcdCluster } from './cluster.js';
import type { Entry } from './raft_log.js';
import { ClusterMemberServices } from './services.js';
import type { ClusterStreamLink } from './stream_link.js';

/** A member's Raft role. @public */
export type RaftRole = 'leader' | 'follower' | 'candidate';

/** What one member reports about itself (Status and the levers' view). @public */
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

/** The client name of calls that name none. */
export const DEFAULT_CLIENT = 'client';

/** Options of a client's connection to a member (see EtcdCluster.connect). */
export interface ConnectOptions {
  /** Name of the client whose link to the member the link levers act on (default 'client'). */
  readonly client?: string | undefined;
  /** The client's deadline for each call, in ms; a call still unanswered then fails with DEADLINE_EXCEEDED. */
  readonly deadlineMs?: number | undefined;
}

/** How a reply reaches the caller. */
export interface Reply<T> {
  ok(value: T): void;
  fail(err: unknown): void;
}

/** What a proposal becomes at the leader: an entry without its place in the log yet. */
export type EntryBody = Omit<Entry, 'index' | 'term' | 'committedAt'>;

/** A proposal waiting for its member to apply it (etcd's wait registry, keyed by the entry). */
export interface Proposal {
  readonly member: MemberState;
  readonly incarnation: number;
  readonly reply: Reply<unknown>;
  stage: 'noLeader' | 'proposed' | 'done';
  timer: TimerHandle | undefined;
  /** The entry it became, once appended at a leader. */
  entry: Entry | undefined;
}

/** A ReadIndex waiting for a read index, then for the member to apply up to it. */
export interface ReadWait {
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
 * @public
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
  noLeader: Array<{ proposal: Proposal; make: (leader: MemberState) => EntryBody }> = [];
  reads: ReadWait[] = [];
  /** @internal Links of streams on this member with requests or responses waiting in them (stream_link.ts). */
  readonly streamLinks = new Set<ClusterStreamLink>();
  /** Keep-alive streams opened on this member (they break when it crashes). */
  readonly keepAlives = new Set<KeepAliveCall>();
  /** What else breaks when it crashes (Lock/Election waits and Observe streams, cluster/lock_election.ts). */
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

/** A member by index, name, member ID, or its state. @public */
export type MemberRef = number | string | bigint | MemberState;

/**
 * Installs a leader's state on a follower's server (etcd's MsgSnap and the member's applySnapshot): the
 * store, the alarm bucket and the lease bucket come with the snapshot, and the applied index is the leader's.
 */
export function installLeaderState(to: EtcdServer, from: EtcdServer): void {
  to.restore(from.snapshot());
  // The alarm bucket comes with the snapshot, and the follower's refusals follow it (etcd's restoreAlarms).
  to.services.maintenance.alarms.restore(from.services.maintenance.alarms.bucketKeys());
  // The lease bucket comes with the snapshot: the member's lessor recovers the leader's leases.
  const theirs = new Set(from.lessor.leases());
  for (const id of to.lessor.leases()) if (!theirs.has(id)) to.lessor.revoke(id);
  for (const id of theirs) {
    if (to.lessor.exists(id)) continue;
    to.lessor.grant(id, from.lessor.timeToLive(id).grantedTTL);
    const rem = from.lessor.checkpointedTTLOf(id) ?? 0;
    if (rem > 0) to.lessor.checkpoint(id, rem);
  }
  to.lessor.recoverFromStore();
  to.resetAppliedIndex(from.raftIndex);
}
