/**
 * One member of a simulated etcd cluster: its identity (as etcd's --name, --advertise-client-urls and
 * --initial-advertise-peer-urls give it, and the member ID etcd derives from its peer URLs), its current
 * EtcdServer (a new one after each restart, rebuilt from the backend the crash left, as etcd rebuilds from
 * bbolt), its Raft node and loop (src/raft, as a member in a process of its own runs them) with the disk
 * they persist to (what survives a crash: hard state, entries, snapshot), and the committed entries it has
 * not applied yet. What the member waits on — proposals without a leader, linearizable reads, calls held
 * while it is paused — is kept here too, because a crash loses all of it at once.
 */
import type { ConfChange, Entry, MemoryStorage, RaftLoop } from '../raft/index.js';
import type { TimerHandle } from '../sim/index.js';
import type { EtcdBackend } from '../snapshot/index.js';
import { type GrpcError, EtcdServer, type EtcdServerOptions, type KeepAliveCall, type ListedMember } from '../server/index.js';
import type { EtcdCluster } from './cluster.js';
import { ClusterMemberServices } from './services.js';
import type { ClusterStreamLink } from './stream_link.js';
import type { SimulatedMember } from './cluster_view.js';

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

/** Options of a client's connection to a member (see EtcdCluster.connect). @public */
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

/** What kind of Raft entry: a leader's empty entry at the start of its term, a request, a lease expiry or checkpoint. @public */
export type EntryKind = 'empty' | 'request' | 'leaseExpire' | 'leaseCheckpoint';

/**
 * What a proposal's entry does: the request, and how every member applies it through that member's own
 * server path (its services and lessor) — the same function for every member, so every member reaches the
 * same state. Returns the response message of that member; throws the error that member answers with. The
 * entry's bytes name it (raft_group.ts): members of one process share the request instead of encoding it.
 */
export interface EntryBody {
  readonly kind: EntryKind;
  /** Short description for traces, e.g. `put`, `leaseGrant 7587…`, `leaseExpire 7587…`. */
  readonly label: string;
  /** `member`: the member applying it (a membership change applies to its list of members). */
  readonly apply: (server: EtcdServer, member: MemberState) => unknown;
  /** A membership change: proposed as Raft's conf change entry (etcd's ConfChange), not a normal one. */
  readonly conf?: ConfChange;
}

/** A committed entry a member has not applied yet, and when it was first known committed (its lag counts from there). */
export interface CommittedEntry {
  readonly entry: Entry;
  readonly at: number;
}

/** A proposal waiting for its member to apply it (etcd's wait registry, keyed by the entry). */
export interface Proposal {
  readonly member: MemberState;
  readonly incarnation: number;
  readonly reply: Reply<unknown>;
  stage: 'noLeader' | 'proposed' | 'done';
  timer: TimerHandle | undefined;
  /** Its entry's bytes, once proposed (a leader appends them as an entry, or they are lost on the way). */
  data: Uint8Array | undefined;
  /** Its label, for the trace once a leader appended it. */
  label: string;
}

/** A ReadIndex waiting for a read index, then for the member to apply up to it. */
export interface ReadWait {
  readonly member: MemberState;
  readonly incarnation: number;
  readonly serve: () => void;
  readonly reply: Reply<unknown>;
  /** The ReadIndex request's context (raft's ReadState names it). */
  readonly context: string;
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
export class MemberState implements SimulatedMember {
  server: EtcdServer;
  /** Its Raft role and term and the leader it knows, as its node last said (raft's SoftState, HardState). */
  role: RaftRole = 'follower';
  term: bigint;
  lead: MemberState | undefined;
  /** The Raft loop around its node; undefined while it is down. */
  loop: RaftLoop | undefined;
  /** @internal What its Raft node persisted (its WAL and snap files): a restart starts from it. */
  disk!: MemoryStorage;
  /** The index its server applied up to (etcd's appliedi). */
  applied: number;
  /**
   * @internal The cluster's members as this member applied them (etcd's RaftCluster, kept in its backend:
   * a crash keeps it, a snapshot brings the leader's): MemberList answers from it, the membership changes
   * change it (membership.ts).
   */
  members: Map<bigint, ListedMember> = new Map();
  /** @internal The IDs it removed (etcd's members_removed): their messages are refused, their IDs never taken again. */
  removedIds: Set<bigint> = new Set();
  /** Removed from the cluster: it stopped for good (a restart leaves it down). */
  removed = false;
  /** Committed entries handed over by its node, applied each once its apply lag has passed. */
  applyQueue: CommittedEntry[] = [];
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
    this.applied = start;
    this.applyLagMs = lag;
    this.services = new ClusterMemberServices(cluster, this, { client: DEFAULT_CLIENT });
  }

  get up(): boolean {
    return !this.crashed && !this.paused;
  }

  /** The commit index it knows (its node's; while down, what it applied). */
  get commit(): number {
    return this.loop?.node.log.committed ?? this.applied;
  }
}

/** A member by index, name, member ID, or its state. @public */
export type MemberRef = number | string | bigint | SimulatedMember;

/**
 * A member's state at its applied index, as a Raft snapshot carries it (etcd's db in the MsgSnap): the
 * store with the auth state, the alarm bucket and the lease bucket.
 */
export interface MemberImage {
  readonly store: ReturnType<EtcdServer['snapshot']>;
  readonly members: readonly ListedMember[];
  readonly removedIds: readonly bigint[];
  readonly alarms: ReturnType<EtcdServer['services']['maintenance']['alarms']['bucketKeys']>;
  readonly leases: readonly { readonly id: bigint; readonly ttl: number; readonly remaining: number }[];
  readonly applied: number;
}

/** Takes a member's state for a snapshot (etcd's triggerSnapshot at its applied index). */
export function memberImage(from: MemberState): MemberImage {
  const l = from.server.lessor;
  return {
    store: from.server.snapshot(),
    members: [...from.members.values()].map((x) => ({ ...x })),
    removedIds: [...from.removedIds],
    alarms: from.server.services.maintenance.alarms.bucketKeys(),
    leases: l.leases().map((id) => ({ id, ttl: l.timeToLive(id).grantedTTL, remaining: l.checkpointedTTLOf(id) ?? 0 })),
    applied: from.server.raftIndex,
  };
}

/**
 * The member's list of members written through to its server's backend (etcd's members bucket: what
 * Maintenance.Hash and a snapshot file hold), after every change of the list and with every new server.
 */
export function storeMembers(m: MemberState): void {
  const listed = [...m.members.values()].map((x) => ({ id: x.id, name: x.name, peerURLs: x.peerUrls, clientURLs: x.clientUrls, isLearner: x.isLearner }));
  m.server.services.cluster.follow(listed, m.removedIds);
}

/**
 * Installs a snapshot's state on a member's server (etcd's applySnapshot): the store, the alarm bucket and
 * the lease bucket come with it, and the applied index is the snapshot's.
 */
export function installImage(member: MemberState, image: MemberImage): void {
  member.members = new Map(image.members.map((x) => [x.id, { ...x }]));
  member.removedIds = new Set(image.removedIds);
  const to = member.server;
  to.restore(image.store);
  storeMembers(member);
  // The alarm bucket comes with the snapshot, and the follower's refusals follow it (etcd's restoreAlarms).
  to.services.maintenance.alarms.restore(image.alarms);
  // The lease bucket comes with the snapshot: the member's lessor recovers the leader's leases.
  const theirs = new Set(image.leases.map((x) => x.id));
  for (const id of to.lessor.leases()) if (!theirs.has(id)) to.lessor.revoke(id);
  for (const { id, ttl, remaining } of image.leases) {
    if (to.lessor.exists(id)) continue;
    to.lessor.grant(id, ttl);
    if (remaining > 0) to.lessor.checkpoint(id, remaining);
  }
  to.lessor.recoverFromStore();
  to.resetAppliedIndex(image.applied);
}
