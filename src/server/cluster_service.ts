/**
 * etcdserverpb.Cluster over one member (etcd's ClusterServer and RaftCluster), as a single-member etcd
 * 3.4.23 answers it (observed). The member itself is the only started one: the members MemberAdd adds never
 * start (there is no second process to join), so
 *  - a learner may be added (at most one, etcd's maxLearners), removed, but never promoted: it is never
 *    "in sync with leader";
 *  - a voting member may be added once; the cluster then has two voters and one started, so it has lost
 *    quorum: every later reconfiguration that needs a Raft proposal never commits (the call waits for its
 *    deadline; here it fails at once with DEADLINE_EXCEEDED, see QUORUM_LOST), another voting MemberAdd is
 *    refused before proposing (not enough started members), a learner MemberAdd too (unhealthy cluster),
 *    and within two election timeouts the member steps down (Status: leader 0, "etcdserver: no leader").
 *    KV writes after that are not modelled: etcd times them out, the simulator still applies them.
 *  - removing the only started voter is refused (not enough started members).
 * Each reconfiguration that reaches Raft is one entry, also when its apply fails (member not found, ID or
 * peer URLs already exist, too many learners), as etcd counts it. Headers carry revision 0, as etcd's cluster
 * server leaves it.
 */
import { header, uint64ToBigInt } from './convert.js';
import { GrpcCode } from '../mvcc/index.js';
import { grpcError, type GrpcError } from './errors.js';
import type * as M from './messages.js';
import type { EtcdServer } from './etcd_server.js';
import { memberIdOf } from './member_id.js';
import { EtcdUrlError, parseEtcdUrl } from './urls.js';
import { serverCompat } from './compat.js';

/** One member of the cluster as etcd's RaftCluster holds it. */
export interface ClusterMember {
  readonly id: bigint;
  readonly name: string;
  readonly peerUrls: readonly string[];
  readonly clientUrls: readonly string[];
  readonly isLearner: boolean;
  /** Whether the member has published its attributes (only this member ever does here). */
  readonly started: boolean;
}

/** The error a client sees (in process as over gRPC: code, and etcd's text as details). */
const err = (code: GrpcCode, message: string): GrpcError => grpcError(code, message);

/** etcd's cluster errors as its gRPC layer sends them (codes as observed on 3.4.23). */
const ErrMemberNotFound = { code: GrpcCode.NOT_FOUND, message: 'etcdserver: member not found' } as const;
const ErrMemberIdExists = { code: GrpcCode.FAILED_PRECONDITION, message: 'etcdserver: member ID already exist' } as const;
const ErrPeerUrlExists = { code: GrpcCode.FAILED_PRECONDITION, message: 'etcdserver: Peer URLs already exists' } as const;
const ErrMemberBadUrls = { code: GrpcCode.INVALID_ARGUMENT, message: 'etcdserver: given member URLs are invalid' } as const;
const ErrTooManyLearners = { code: GrpcCode.FAILED_PRECONDITION, message: 'etcdserver: too many learner members in cluster' } as const;
const ErrLearnerNotReady = { code: GrpcCode.FAILED_PRECONDITION, message: 'etcdserver: can only promote a learner member which is in sync with leader' } as const;
const ErrMemberNotLearner = { code: GrpcCode.FAILED_PRECONDITION, message: 'etcdserver: can only promote a learner member' } as const;
/** etcd 3.4 leaves ErrNotEnoughStartedMembers out of its gRPC error map: the client sees Unknown. */
const ErrNotEnoughStartedMembers = { code: GrpcCode.UNKNOWN, message: 'etcdserver: re-configuration failed due to not enough started members' } as const;
const ErrUnhealthy = { code: GrpcCode.UNAVAILABLE, message: 'etcdserver: unhealthy cluster' } as const;
/**
 * A proposal that cannot commit (quorum lost): etcd's call waits until the client's deadline (forever
 * without one); the simulator answers at once with what the client then sees.
 */
const QUORUM_LOST = { code: GrpcCode.DEADLINE_EXCEEDED, message: 'context deadline exceeded' } as const;

/** etcd's maxLearners. */
const MAX_LEARNERS = 1;

export class ClusterService {
  private readonly members = new Map<bigint, ClusterMember>();
  private readonly removed: bigint[] = [];
  /** When quorum was lost (member clock, ms), or undefined while the started voters are a quorum. */
  private quorumLostAt: number | undefined;

  constructor(private readonly server: EtcdServer) {
    const m = server.member;
    this.members.set(m.memberId, { id: m.memberId, name: m.name, peerUrls: [...m.peerUrls], clientUrls: [...m.clientUrls], isLearner: false, started: true });
  }

  /** Cluster.MemberList: every member, by ID. */
  memberList(_req: M.MemberListRequest = {}): M.MemberListResponse {
    return { header: this.header(), members: this.list() };
  }

  /**
   * Cluster.MemberAdd: a new, unstarted member whose ID etcd derives from its peer URLs and the time of the
   * request (Unix seconds of the member's clock). See the file comment for what follows.
   */
  memberAdd(req: M.MemberAddRequest = {}): M.MemberAddResponse {
    const urls = [...(req.peerURLs ?? [])];
    if (urls.length === 0 || !urls.every(validUrl)) fail(ErrMemberBadUrls);
    const isLearner = req.isLearner === true;
    // etcd's mayAddMember (strict reconfiguration check), before proposing.
    if (!isLearner && !this.readyToAddVotingMember()) fail(ErrNotEnoughStartedMembers);
    if (!this.votersAllStarted()) fail(ErrUnhealthy);
    const id = memberIdOf(urls, '', Math.floor(this.server.clock.now() / 1000));
    this.propose(() => {
      if (this.removed.includes(id)) fail(ErrMemberNotFound);
      if (this.members.has(id)) fail(ErrMemberIdExists);
      if (this.peerUrlsTaken(urls, undefined)) fail(ErrPeerUrlExists);
      if (isLearner && this.list().filter((m) => m.isLearner).length >= MAX_LEARNERS) fail(ErrTooManyLearners);
    });
    const added: ClusterMember = { id, name: '', peerUrls: urls, clientUrls: [], isLearner, started: false };
    this.members.set(id, added);
    this.noteQuorum();
    return { header: this.header(), member: memberOut(added), members: this.list() };
  }

  /** Cluster.MemberRemove. */
  memberRemove(req: M.MemberRemoveRequest = {}): M.MemberRemoveResponse {
    const id = uint64ToBigInt(req.ID, 'ID');
    const target = this.members.get(id);
    // etcd's mayRemoveMember: a learner goes freely; a voter only if the started voters left are a quorum.
    if (target?.isLearner !== true && !this.readyToRemoveVotingMember(id)) fail(ErrNotEnoughStartedMembers);
    this.propose(() => {
      if (target === undefined) fail(ErrMemberNotFound);
    });
    this.members.delete(id);
    this.removed.push(id);
    this.noteQuorum();
    return { header: this.header(), members: this.list() };
  }

  /**
   * Cluster.MemberUpdate: new peer URLs. etcd 3.4 replaces the member's Raft attributes whole, so an updated
   * learner becomes a voter (fixed in 3.5: it stays a learner). An invalid URL makes etcd 3.4.23 panic when
   * it applies the change (observed); the simulator refuses it as MemberAdd does.
   */
  memberUpdate(req: M.MemberUpdateRequest = {}): M.MemberUpdateResponse {
    const id = uint64ToBigInt(req.ID, 'ID');
    const urls = [...(req.peerURLs ?? [])];
    if (!urls.every(validUrl)) fail(ErrMemberBadUrls);
    const target = this.members.get(id);
    this.propose(() => {
      if (target === undefined) fail(ErrMemberNotFound);
      if (this.peerUrlsTaken(urls, id)) fail(ErrPeerUrlExists);
    });
    const keepsLearner = !serverCompat(this.server.etcdVersion).memberUpdateDropsLearner;
    this.members.set(id, { ...target!, peerUrls: urls, isLearner: keepsLearner && target!.isLearner });
    this.noteQuorum();
    return { header: this.header(), members: this.list() };
  }

  /** Cluster.MemberPromote: a learner here is never in sync (it never starts), so only the errors remain. */
  memberPromote(req: M.MemberPromoteRequest = {}): M.MemberPromoteResponse {
    const id = uint64ToBigInt(req.ID, 'ID');
    const target = this.members.get(id);
    // etcd's isLearnerReady, before proposing: a learner whose log lags the leader's.
    if (target?.isLearner === true && !target.started) fail(ErrLearnerNotReady);
    this.propose(() => {
      if (target === undefined) fail(ErrMemberNotFound);
      if (!target.isLearner) fail(ErrMemberNotLearner);
    });
    // Unreachable while learners never start; kept for a started learner.
    this.members.set(id, { ...target!, isLearner: false });
    this.noteQuorum();
    return { header: this.header(), members: this.list() };
  }

  /**
   * The leader Status and MoveLeader see: this member, or 0n once it stepped down for want of a quorum.
   * etcd's Raft (CheckQuorum) steps down at the first quorum check that finds too few voters recently active;
   * a member just added counts as active until one check has passed, so that is between one and two election
   * timeouts after the MemberAdd, by the leader's tick phase: the simulator takes the later bound.
   */
  leaderId(): bigint {
    if (this.quorumLostAt === undefined) return this.server.member.memberId;
    return this.server.clock.now() - this.quorumLostAt >= 2 * this.server.electionTimeoutMs ? 0n : this.server.member.memberId;
  }

  /** @internal The members and removed IDs as etcd's backend holds them (for Maintenance.Hash). */
  backendState(): { members: ClusterMember[]; removed: bigint[] } {
    return { members: this.list(true), removed: [...this.removed] };
  }

  /** Members by ID (etcd's RaftCluster.Members order); `raw` for the stored form. */
  private list(raw: true): ClusterMember[];
  private list(raw?: false): M.Member[];
  private list(raw = false): ClusterMember[] | M.Member[] {
    const ms = [...this.members.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return raw ? ms : ms.map(memberOut);
  }

  private header(): M.ResponseHeader {
    return header(this.server.identity, 0);
  }

  private voters(): ClusterMember[] {
    return [...this.members.values()].filter((m) => !m.isLearner);
  }

  /** Runs a reconfiguration through Raft: never commits without a quorum; else one entry, then the apply checks. */
  private propose(applyChecks: () => void): void {
    if (this.quorumLostAt !== undefined) fail(QUORUM_LOST);
    this.server.noteRaftEntry();
    applyChecks();
  }

  /** etcd's IsReadyToAddVotingMember, with the special case of growing a one-member cluster. */
  private readyToAddVotingMember(): boolean {
    const voters = this.voters();
    const nmembers = voters.length + 1;
    const nstarted = voters.filter((m) => m.started).length;
    if (nstarted === 1 && nmembers === 2) return true;
    return nstarted >= Math.floor(nmembers / 2) + 1;
  }

  /** etcd's IsReadyToRemoveVotingMember: the started voters left must be a quorum of the voters left. */
  private readyToRemoveVotingMember(id: bigint): boolean {
    const rest = this.voters().filter((m) => m.id !== id);
    return rest.filter((m) => m.started).length >= Math.floor(rest.length / 2) + 1;
  }

  /** etcd's isConnectedFullySince over the voters: here, whether every voter is started. */
  private votersAllStarted(): boolean {
    return this.voters().every((m) => m.started);
  }

  private peerUrlsTaken(urls: readonly string[], except: bigint | undefined): boolean {
    for (const m of this.members.values()) if (m.id !== except && m.peerUrls.some((u) => urls.includes(u))) return true;
    return false;
  }

  /** Starts (or clears) the quorum-lost state after a membership change. */
  private noteQuorum(): void {
    const voters = this.voters();
    const hasQuorum = voters.filter((m) => m.started).length >= Math.floor(voters.length / 2) + 1;
    if (hasQuorum) this.quorumLostAt = undefined;
    else this.quorumLostAt ??= this.server.clock.now();
  }
}

function fail(kind: { readonly code: GrpcCode; readonly message: string }): never {
  throw err(kind.code, kind.message);
}

function validUrl(u: string): boolean {
  try {
    parseEtcdUrl(u);
    return true;
  } catch (e) {
    if (e instanceof EtcdUrlError) return false;
    throw e;
  }
}

function memberOut(m: ClusterMember): M.Member {
  return { ID: String(m.id), name: m.name, peerURLs: [...m.peerUrls], clientURLs: [...m.clientUrls], isLearner: m.isLearner };
}
