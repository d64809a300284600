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
 * A member's Raft role and its listed is_learner are kept apart, as etcd keeps them: Raft's configuration
 * changes only with AddNode / AddLearnerNode / RemoveNode (a promote is an AddNode), never with UpdateNode,
 * but etcd 3.4's MemberUpdate replaces the listed RaftAttributes whole and so clears is_learner (see
 * memberUpdate). Quorum (whether a proposal commits, whether the leader steps down) and promote's readiness
 * (Raft's progress of the member) read the Raft role; everything RaftCluster answers from its member list
 * reads the listed flag: MemberList and the backend, the voting-member checks before proposing
 * (IsReadyToAddVotingMember, isConnectedFullySince over VotingMembers, mayRemoveMember's learner exemption,
 * IsReadyToRemoveVotingMember, IsReadyToPromoteMember), and the apply checks (the learner count against
 * maxLearners, "can only promote a learner member").
 * Each reconfiguration that reaches Raft is one entry, also when its apply fails (member not found, ID or
 * peer URLs already exist, too many learners), as etcd counts it. Headers carry revision 0, as etcd's cluster
 * server leaves it.
 * With auth enabled, every change (add, remove, update, promote) needs the root role, checked before anything
 * else is (etcd's checkMembershipOperationPermission: IsAdminPermitted on the caller), except MemberAdd's URL
 * check, which etcd's gRPC layer makes first; MemberList is open to anyone.
 */
import { header, uint64ToBigInt } from './convert.js';
import { GrpcCode } from '../etcd/index.js';
import { asGrpc, grpcError, type GrpcError } from './errors.js';
import type { CallContext } from './call_context.js';
import type * as M from './messages.js';
import type { EtcdServer } from './etcd_server.js';
import { memberIdOf } from './member_id.js';
import { EtcdUrlError, parseEtcdUrl } from './urls.js';
import { serverCompat } from './compat.js';
import type { StoredMember } from '../snapshot/index.js';

/** One member of the cluster as etcd's RaftCluster holds it. */
export interface ClusterMember {
  readonly id: bigint;
  readonly name: string;
  readonly peerUrls: readonly string[];
  readonly clientUrls: readonly string[];
  /** is_learner as RaftCluster lists and stores it. */
  readonly isLearner: boolean;
  /** Whether Raft's configuration holds the member as a learner (may differ from isLearner: see the file comment). */
  readonly raftLearner: boolean;
  /** Whether the member has published its attributes (only this member ever does here). */
  readonly started: boolean;
}

/** The error a client sees (in process as over gRPC: code, and etcd's text as details). */
const err = (code: GrpcCode, message: string): GrpcError => grpcError(code, message);

/** etcd's cluster errors as its gRPC layer sends them (codes as observed on 3.4.23). */
export const ErrMemberNotFound = { code: GrpcCode.NOT_FOUND, message: 'etcdserver: member not found' } as const;
export const ErrMemberIdExists = { code: GrpcCode.FAILED_PRECONDITION, message: 'etcdserver: member ID already exist' } as const;
export const ErrPeerUrlExists = { code: GrpcCode.FAILED_PRECONDITION, message: 'etcdserver: Peer URLs already exists' } as const;
export const ErrMemberBadUrls = { code: GrpcCode.INVALID_ARGUMENT, message: 'etcdserver: given member URLs are invalid' } as const;
export const ErrTooManyLearners = { code: GrpcCode.FAILED_PRECONDITION, message: 'etcdserver: too many learner members in cluster' } as const;
export const ErrLearnerNotReady = { code: GrpcCode.FAILED_PRECONDITION, message: 'etcdserver: can only promote a learner member which is in sync with leader' } as const;
export const ErrMemberNotLearner = { code: GrpcCode.FAILED_PRECONDITION, message: 'etcdserver: can only promote a learner member' } as const;
/** etcd 3.4 leaves ErrNotEnoughStartedMembers out of its gRPC error map: the client sees Unknown. */
export const ErrNotEnoughStartedMembers = { code: GrpcCode.UNKNOWN, message: 'etcdserver: re-configuration failed due to not enough started members' } as const;
export const ErrUnhealthy = { code: GrpcCode.UNAVAILABLE, message: 'etcdserver: unhealthy cluster' } as const;
/**
 * A proposal that cannot commit (quorum lost): etcd's call waits until the client's deadline (forever
 * without one); the simulator answers at once with what the client then sees.
 */
const QUORUM_LOST = { code: GrpcCode.DEADLINE_EXCEEDED, message: 'context deadline exceeded' } as const;

/** etcd's maxLearners. */
export const MAX_LEARNERS = 1;

/** @public */
export class ClusterService {
  private readonly members = new Map<bigint, ClusterMember>();
  private readonly removed: bigint[] = [];
  /** When quorum was lost (member clock, ms), or undefined while the started voters are a quorum. */
  private quorumLostAt: number | undefined;

  /** @internal */
  constructor(private readonly server: EtcdServer) {
    const m = server.member;
    this.members.set(m.memberId, { id: m.memberId, name: m.name, peerUrls: [...m.peerUrls], clientUrls: [...m.clientUrls], isLearner: false, raftLearner: false, started: true });
  }

  /** Cluster.MemberList: every member, by ID. */
  memberList(_req: M.MemberListRequest = {}): M.MemberListResponse {
    return { header: this.header(), members: this.list() };
  }

  /**
   * Cluster.MemberAdd: a new, unstarted member whose ID etcd derives from its peer URLs and the time of the
   * request (Unix seconds of the member's clock). See the file comment for what follows.
   */
  memberAdd(req: M.MemberAddRequest = {}, ctx?: CallContext): M.MemberAddResponse {
    const urls = [...(req.peerURLs ?? [])];
    if (urls.length === 0 || !urls.every(validUrl)) fail(ErrMemberBadUrls);
    this.requireAdmin(ctx);
    const isLearner = req.isLearner === true;
    // etcd's mayAddMember (strict reconfiguration check), before proposing.
    if (!isLearner && this.server.strictReconfigCheck && !this.readyToAddVotingMember()) fail(ErrNotEnoughStartedMembers);
    if (this.server.strictReconfigCheck && !this.listedVotersAllStarted()) fail(ErrUnhealthy);
    const id = memberIdOf(urls, '', Math.floor(this.server.clock.now() / 1000));
    this.propose(() => {
      if (this.removed.includes(id)) fail(ErrMemberNotFound);
      if (this.members.has(id)) fail(ErrMemberIdExists);
      if (this.peerUrlsTaken(urls, undefined)) fail(ErrPeerUrlExists);
      if (isLearner && this.list().filter((m) => m.isLearner).length >= MAX_LEARNERS) fail(ErrTooManyLearners);
    });
    const added: ClusterMember = { id, name: '', peerUrls: urls, clientUrls: [], isLearner, raftLearner: isLearner, started: false };
    this.members.set(id, added);
    this.noteQuorum();
    return { header: this.header(), member: memberOut(added), members: this.list() };
  }

  /** Cluster.MemberRemove. */
  memberRemove(req: M.MemberRemoveRequest = {}, ctx?: CallContext): M.MemberRemoveResponse {
    const id = uint64ToBigInt(req.ID, 'ID');
    this.requireAdmin(ctx);
    const target = this.members.get(id);
    // etcd's mayRemoveMember: a listed learner goes freely; a listed voter only if the started listed voters
    // left are a quorum (a voter that never started is then "down", so safe to remove).
    const strict = this.server.strictReconfigCheck || id === this.server.member.memberId;
    if (target?.isLearner !== true && strict && !this.readyToRemoveVotingMember(id)) fail(ErrNotEnoughStartedMembers);
    this.propose(() => {
      if (target === undefined) fail(ErrMemberNotFound);
    });
    this.members.delete(id);
    this.removed.push(id);
    this.noteQuorum();
    return { header: this.header(), members: this.list() };
  }

  /**
   * Cluster.MemberUpdate: new peer URLs. etcd 3.4 replaces the member's listed Raft attributes whole, so an
   * updated learner is listed (and stored) as a voter, while Raft, whose configuration an update does not
   * touch, still holds it as a learner: the cluster keeps its quorum (see the file comment). Fixed by etcd
   * 3.7.0, 3.6.12 and 3.5.31 (only the peer URLs are replaced), the 3.5+ profiles' releases.
   *
   * No release checks the URLs (observed on 3.4.23; 3.5 through 3.7 build the update from the request's URLs
   * as they are too). Applied to the member itself, any URLs are stored and listed ("not a url", "", none at
   * all), and a restart keeps them (observed). Applied to another member, etcd first stores them, then hands
   * them to its peer transport, which panics on a URL types.NewURLs refuses: the process exits, the client
   * sees its connection close, and every restart replays the entry and panics again (observed on 3.4.23 for
   * "not a url", "http://", "ftp://x:1", "http://[::1", "", a path, no port, no URL; the 3.5+ transport
   * panics alike). The simulator cannot exit there: it refuses such an update, after the apply checks (an
   * unknown member or a taken URL still fails as in etcd), with MemberAdd's error — a deliberate difference.
   */
  memberUpdate(req: M.MemberUpdateRequest = {}, ctx?: CallContext): M.MemberUpdateResponse {
    const id = uint64ToBigInt(req.ID, 'ID');
    this.requireAdmin(ctx);
    const urls = [...(req.peerURLs ?? [])];
    const target = this.members.get(id);
    this.propose(() => {
      if (target === undefined) fail(ErrMemberNotFound);
      if (this.peerUrlsTaken(urls, id)) fail(ErrPeerUrlExists);
      if (id !== this.server.member.memberId && (urls.length === 0 || !urls.every(validUrl))) fail(ErrMemberBadUrls);
    });
    const keepsLearner = !serverCompat(this.server.etcdVersion).memberUpdateDropsLearner;
    // Raft's role (raftLearner) stays as it was.
    this.members.set(id, { ...target!, peerUrls: urls, isLearner: keepsLearner && target!.isLearner });
    this.noteQuorum();
    return { header: this.header(), members: this.list() };
  }

  /**
   * Cluster.MemberPromote: a member here other than this one never starts, so its log never catches up
   * and only the errors remain.
   */
  memberPromote(req: M.MemberPromoteRequest = {}, ctx?: CallContext): M.MemberPromoteResponse {
    const id = uint64ToBigInt(req.ID, 'ID');
    this.requireAdmin(ctx);
    const target = this.members.get(id);
    // etcd's isLearnerReady reads the leader's Raft progress: without a leader, etcd forwards the call to
    // one and waits for it until the deadline; a member in Raft's configuration (learner or voter, whatever
    // its listed flag) whose log lags is not ready (observed on 3.4.23 for an updated learner and for an
    // added voter); one Raft does not hold passes on to the proposal.
    if (this.leaderId() === 0n) fail(QUORUM_LOST);
    if (target !== undefined && !target.started) fail(ErrLearnerNotReady);
    // IsReadyToPromoteMember (strict reconfiguration): the member counts as a started voter.
    if (this.server.strictReconfigCheck && !this.readyToPromote()) fail(ErrNotEnoughStartedMembers);
    this.propose(() => {
      if (target === undefined) fail(ErrMemberNotFound);
      if (!target.isLearner) fail(ErrMemberNotLearner);
    });
    // Unreachable while other members never start; kept for a started learner.
    this.members.set(id, { ...target!, isLearner: false, raftLearner: false });
    this.noteQuorum();
    return { header: this.header(), members: this.list() };
  }

  /**
   * @internal The leader Status and MoveLeader see: this member, or 0n once it stepped down for want of a quorum.
   * etcd's Raft (CheckQuorum) steps down at the first quorum check that finds too few voters recently active;
   * a member just added counts as active until one check has passed, so that is between one and two election
   * timeouts after the MemberAdd, by the leader's tick phase: the simulator takes the later bound.
   */
  leaderId(): bigint {
    if (this.quorumLostAt === undefined) return this.server.member.memberId;
    return this.server.clock.now() - this.quorumLostAt >= 2 * this.server.electionTimeoutMs ? 0n : this.server.member.memberId;
  }

  /**
   * @internal The membership a restarted member's backend kept (etcd's RaftCluster.Recover from its store):
   * the other members as they were listed, never started here; this member as its flags now name it (it
   * publishes itself again). A backend that does not list this member keeps the membership as it is.
   */
  restore(members: readonly StoredMember[], removed: readonly bigint[]): void {
    const self = this.server.member.memberId;
    const own = this.members.get(self);
    if (own === undefined || !members.some((m) => m.id === self)) return;
    this.members.clear();
    for (const m of members) {
      this.members.set(m.id, m.id === self ? own : { id: m.id, name: m.name, peerUrls: [...m.peerURLs], clientUrls: [...m.clientURLs], isLearner: m.isLearner, raftLearner: m.isLearner, started: false });
    }
    this.removed.splice(0, this.removed.length, ...removed);
    this.noteQuorum();
  }

  /**
   * @internal A conf change the WAL holds past the db's consistent index, applied again on a restart as
   * etcd's apply would (its ValidateConfigurationChange skipping what no longer applies): an add of a known
   * member promotes a learner and is otherwise skipped, a remove of an unknown member is skipped, an update
   * takes the member's listed URLs and learner flag from the entry's member. `member`: the entry's context.
   */
  replayConfChange(type: 'add' | 'addLearner' | 'remove' | 'update', id: bigint, member: StoredMember | undefined): void {
    const known = this.members.get(id);
    if (type === 'remove') {
      if (known === undefined) return;
      this.members.delete(id);
      this.removed.push(id);
    } else if (type === 'update') {
      if (known === undefined || member === undefined) return;
      this.members.set(id, { ...known, peerUrls: [...member.peerURLs], isLearner: member.isLearner });
    } else if (known !== undefined) {
      if (type === 'add' && known.raftLearner) this.members.set(id, { ...known, isLearner: false, raftLearner: false });
    } else if (!this.removed.includes(id)) {
      const isLearner = type === 'addLearner';
      this.members.set(id, { id, name: member?.name ?? '', peerUrls: [...(member?.peerURLs ?? [])], clientUrls: [...(member?.clientURLs ?? [])], isLearner, raftLearner: isLearner, started: false });
    }
    this.noteQuorum();
  }

  /**
   * @internal The membership a member of a cluster of several applied (src/cluster): its backend's members
   * bucket follows that member's list, as etcd's RaftCluster writes every change through to its store. The
   * cluster's Raft, not this single member's model, decides its quorum.
   */
  follow(members: readonly StoredMember[], removed: Iterable<bigint>): void {
    this.members.clear();
    for (const m of members) {
      const started = m.clientURLs.length > 0;
      this.members.set(m.id, { id: m.id, name: m.name, peerUrls: [...m.peerURLs], clientUrls: [...m.clientURLs], isLearner: m.isLearner, raftLearner: m.isLearner, started });
    }
    this.removed.splice(0, this.removed.length, ...removed);
    this.quorumLostAt = undefined;
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

  /** etcd's checkMembershipOperationPermission: root only while auth is enabled (errors as togRPCError maps them). */
  private requireAdmin(ctx: CallContext | undefined): void {
    asGrpc(() => this.server.auth.checkAdmin(this.server.authInfo(ctx)));
  }

  private header(): M.ResponseHeader {
    return header(this.server.identity, 0);
  }

  /** The voters RaftCluster lists (its VotingMembers). */
  private listedVoters(): ClusterMember[] {
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
    const voters = this.listedVoters();
    const nmembers = voters.length + 1;
    const nstarted = voters.filter((m) => m.started).length;
    if (nstarted === 1 && nmembers === 2) return true;
    return nstarted >= Math.floor(nmembers / 2) + 1;
  }

  /** etcd's IsReadyToRemoveVotingMember: the started voters left must be a quorum of the voters left. */
  private readyToRemoveVotingMember(id: bigint): boolean {
    const rest = this.listedVoters().filter((m) => m.id !== id);
    return rest.filter((m) => m.started).length >= Math.floor(rest.length / 2) + 1;
  }

  /** etcd's IsReadyToPromoteMember: the listed voters and the promoted member, counted as started. */
  private readyToPromote(): boolean {
    const voters = this.listedVoters();
    return voters.filter((m) => m.started).length + 1 >= Math.floor((voters.length + 1) / 2) + 1;
  }

  /** etcd's isConnectedFullySince over the listed voters: here, whether every one is started. */
  private listedVotersAllStarted(): boolean {
    return this.listedVoters().every((m) => m.started);
  }

  private peerUrlsTaken(urls: readonly string[], except: bigint | undefined): boolean {
    for (const m of this.members.values()) if (m.id !== except && m.peerUrls.some((u) => urls.includes(u))) return true;
    return false;
  }

  /** Starts (or clears) the quorum-lost state after a membership change: Raft's voters, not the listed ones. */
  private noteQuorum(): void {
    const voters = [...this.members.values()].filter((m) => !m.raftLearner);
    const hasQuorum = voters.filter((m) => m.started).length >= Math.floor(voters.length / 2) + 1;
    if (hasQuorum) this.quorumLostAt = undefined;
    else this.quorumLostAt ??= this.server.clock.now();
  }
}

export function fail(kind: { readonly code: GrpcCode; readonly message: string }): never {
  throw err(kind.code, kind.message);
}

export function validUrl(u: string): boolean {
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
