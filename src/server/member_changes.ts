/**
 * etcd's Cluster service on a member of a cluster of several — a cluster of processes (src/peer) and the
 * in-process cluster (src/cluster) share it (etcd's ClusterServer over RaftCluster): MemberAdd, MemberRemove,
 * MemberPromote and MemberUpdate are Raft conf changes, proposed by the member asked and answered once it
 * applied them, with the membership as it then stands. The checks are etcd's, in its order: the peer URLs
 * (MemberAdd), the caller (root while auth is enabled), then with --strict-reconfig-check the cluster's
 * health — a voter is added only while the started voters stay a quorum and every voter is connected,
 * removed only while the started voters left are a quorum and the connected ones too, a learner promoted
 * only once it caught up with the leader. A member is "started" once it published its attributes (it has
 * client URLs), "connected" once its peer stream has been up for etcd's HealthInterval (5 s, on the member's
 * clock; this member always is) — so right after a start etcd 3.4.23 refuses an add or a remove of a live
 * voter with `unhealthy cluster` for about 5 s, and so does this member.
 *
 * Then the checks etcd's apply makes (etcd's ValidateConfigurationChange: an ID or peer URL taken, a member
 * not found or removed, too many learners, not a learner: confChangeRefusal). etcd makes them when it
 * applies the entry, so a refused change still takes its index (observed on 3.4.23: a MemberAdd refused
 * with "too many learner members" moved the raft index by one). A host that can refuse an entry when it is
 * applied (the in-process cluster: `validatesOnApply`) leaves them to its apply; a member in a process of
 * its own, whose Raft node takes every committed conf change, makes them before proposing, against the
 * membership it applied (no index taken: a known difference).
 *
 * MemberUpdate is Raft's UpdateNode conf change, checked by every member's apply as etcd's (the member
 * exists, no other member has one of its new URLs: member_update.ts), so a refused update still takes its
 * index; URLs that do not parse are refused before proposing (etcd's other members panic on them: a
 * deliberate difference, as on a single member, membership_service.ts).
 */
import type { ConfChange, NodeId } from '../raft/index.js';
import type { CallContext } from './call_context.js';
import { header, uint64ToBigInt } from './convert.js';
import { asGrpc, grpcError, type GrpcError } from './errors.js';
import type { EtcdServer } from './etcd_server.js';
import { memberIdOf } from './member_id.js';
import { listedOut, memberUpdateAsked, type ListedMember } from './member_update.js';
import {
  ErrLearnerNotReady,
  ErrMemberBadUrls,
  ErrMemberIdExists,
  ErrMemberNotFound,
  ErrMemberNotLearner,
  ErrNotEnoughStartedMembers,
  ErrPeerUrlExists,
  ErrTooManyLearners,
  ErrUnhealthy,
  MAX_LEARNERS,
  fail,
  validUrl,
} from './membership_service.js';
import type * as M from './messages.js';

/** etcd's readyPercent: a learner is ready for promotion once its log reaches 90% of the leader's. */
const READY_PERCENT = 0.9;

/** What the Cluster service uses of its member: its identity, its applied membership, Raft and its peers. */
export interface MembershipHost {
  readonly id: NodeId;
  readonly server: EtcdServer;
  /** The cluster's members as this member applied them. */
  readonly members: ReadonlyMap<NodeId, ListedMember>;
  /** The Raft node that knows the learners' progress: this member's (its leader's, where it reaches it). */
  readonly node: { readonly role: string; matchOf(id: NodeId): number | undefined; readonly log: { readonly committed: number } };
  /** Whether the stream to a peer is up now, and since when (member clock, ms). */
  peerActive(id: NodeId): boolean;
  activeSince(id: NodeId): number | undefined;
  /** Proposes the change and resolves once this member applied it (rejects with what its apply refused). */
  changeMembership(conf: ConfChange): Promise<unknown>;
  /** A conf change's context for a member (etcd puts the member's JSON there). */
  memberContextOf(m: { readonly id: NodeId; readonly name: string; readonly peerUrls: readonly string[]; readonly isLearner: boolean }): Uint8Array;
  /** Whether the host's apply refuses a change etcd's apply refuses (confChangeRefusal), taking its index. */
  readonly validatesOnApply?: boolean | undefined;
}

/** The Cluster service of member `pm`; `call` runs a call as every other call of the member runs. */
export function membershipChanges(pm: MembershipHost, call: <T>(f: () => T | PromiseLike<T>, ctx?: CallContext) => Promise<T>) {
  // The member's server as it is now (an in-process member's restart builds a new one).
  const requireAdmin = (ctx: CallContext | undefined): void => asGrpc(() => pm.server.auth.checkAdmin(pm.server.authInfo(ctx)));
  const strict = (): boolean => pm.server.strictReconfigCheck;
  const head = (): M.ResponseHeader => header(pm.server.identity, 0);
  /** The apply's checks, made before proposing by a host whose apply cannot refuse. */
  const checkedAhead = (change: MemberChange): void => {
    if (pm.validatesOnApply === true) return;
    const refused = confChangeRefusal(pm.members, undefined, change);
    if (refused !== undefined) throw refused;
  };
  return {
    memberList: (_req?: M.MemberListRequest, ctx?: CallContext) => call(() => ({ header: head(), members: listedOut(pm.members) }), ctx),

    memberAdd: (req?: M.MemberAddRequest, ctx?: CallContext) =>
      call(async (): Promise<M.MemberAddResponse> => {
        const urls = [...(req?.peerURLs ?? [])];
        if (urls.length === 0 || !urls.every(validUrl)) fail(ErrMemberBadUrls);
        requireAdmin(ctx);
        const isLearner = req?.isLearner === true;
        // etcd's mayAddMember (strict reconfiguration check), before proposing.
        if (!isLearner && strict() && !readyToAddVotingMember(pm)) fail(ErrNotEnoughStartedMembers);
        if (strict() && !voters(pm).every((m) => connectedSince(pm, m.id))) fail(ErrUnhealthy);
        const id = memberIdOf(urls, '', Math.floor(pm.server.clock.now() / 1000));
        const type = isLearner ? 'addLearner' : 'add';
        checkedAhead({ type, id, peerUrls: urls });
        await pm.changeMembership({ type, id, context: pm.memberContextOf({ id, name: '', peerUrls: urls, isLearner }) });
        const added = pm.members.get(id);
        return { header: head(), member: added === undefined ? null : listedOut(new Map([[id, added]]))[0]!, members: listedOut(pm.members) } as M.MemberAddResponse;
      }, ctx),

    memberRemove: (req?: M.MemberRemoveRequest, ctx?: CallContext) =>
      call(async (): Promise<M.MemberRemoveResponse> => {
        const id = uint64ToBigInt(req?.ID ?? 0, 'ID');
        requireAdmin(ctx);
        const target = pm.members.get(id);
        // etcd's mayRemoveMember: a learner goes freely; a voter only if the started voters left are a
        // quorum, and — unless it is down — the connected ones left too.
        if (strict() && target !== undefined && !target.isLearner) {
          const rest = voters(pm).filter((m) => m.id !== id);
          if (rest.filter(started).length < quorum(rest.length)) fail(ErrNotEnoughStartedMembers);
          if (id === pm.id || pm.peerActive(id)) {
            const all = voters(pm);
            if (all.filter((m) => connectedSince(pm, m.id)).length - 1 < quorum(all.length - 1)) fail(ErrUnhealthy);
          }
        }
        checkedAhead({ type: 'remove', id });
        await pm.changeMembership({ type: 'remove', id });
        return { header: head(), members: listedOut(pm.members) };
      }, ctx),

    memberUpdate: (req?: M.MemberUpdateRequest, ctx?: CallContext) =>
      call(async (): Promise<M.MemberUpdateResponse> => {
        // The URLs are checked here, the rest by every member's apply (member_update.ts).
        const { id, peerUrls } = memberUpdateAsked(pm.server, req, ctx);
        await pm.changeMembership({ type: 'update', id, context: pm.memberContextOf({ id, name: '', peerUrls, isLearner: false }) });
        return { header: head(), members: listedOut(pm.members) };
      }, ctx),

    memberPromote: (req?: M.MemberPromoteRequest, ctx?: CallContext) =>
      call(async (): Promise<M.MemberPromoteResponse> => {
        const id = uint64ToBigInt(req?.ID ?? 0, 'ID');
        requireAdmin(ctx);
        // etcd's mayPromoteMember: first whether the leader's Raft progress of the member caught up (any
        // member Raft holds, a voter too: observed on 3.4.23, an unstarted voter's promote is "not in sync").
        if (!learnerReady(pm, id)) fail(ErrLearnerNotReady);
        // IsReadyToPromoteMember: the voters and the promoted member, counted as started, are a quorum.
        const vs = voters(pm);
        if (strict() && vs.filter(started).length + 1 < quorum(vs.length + 1)) fail(ErrNotEnoughStartedMembers);
        checkedAhead({ type: 'promote', id });
        await pm.changeMembership({ type: 'add', id });
        return { header: head(), members: listedOut(pm.members) };
      }, ctx),
  };
}

/** A change of who is a member, as etcd's apply checks it (a promote is Raft's AddNode of a known member). */
export interface MemberChange {
  readonly type: 'add' | 'addLearner' | 'promote' | 'remove';
  readonly id: NodeId;
  readonly peerUrls?: readonly string[] | undefined;
}

/**
 * etcd's ValidateConfigurationChange (3.4): what a member's apply refuses, against the members it applied
 * and the IDs it removed (undefined: not known to the caller). An added ID that was removed or exists, a peer
 * URL another member has, a learner beyond maxLearners; a removed or promoted member that is not there; a
 * promoted member that is no learner.
 */
export function confChangeRefusal(members: ReadonlyMap<NodeId, ListedMember>, removed: ReadonlySet<NodeId> | undefined, change: MemberChange): GrpcError | undefined {
  const refuse = (e: { readonly code: GrpcError['code']; readonly message: string }): GrpcError => grpcError(e.code, e.message);
  const { id } = change;
  if (removed?.has(id) === true) return refuse(ErrMemberNotFound);
  const target = members.get(id);
  if (change.type === 'add' || change.type === 'addLearner') {
    if (target !== undefined) return refuse(ErrMemberIdExists);
    const urls = change.peerUrls ?? [];
    if ([...members.values()].some((m) => m.peerUrls.some((u) => urls.includes(u)))) return refuse(ErrPeerUrlExists);
    if (change.type === 'addLearner' && [...members.values()].filter((m) => m.isLearner).length >= MAX_LEARNERS) return refuse(ErrTooManyLearners);
    return undefined;
  }
  if (target === undefined) return refuse(ErrMemberNotFound);
  if (change.type === 'promote' && !target.isLearner) return refuse(ErrMemberNotLearner);
  return undefined;
}

function quorum(n: number): number {
  return Math.floor(n / 2) + 1;
}

function voters(pm: MembershipHost): ListedMember[] {
  return [...pm.members.values()].filter((m) => !m.isLearner);
}

/** A member has started once it published its attributes. */
function started(m: ListedMember): boolean {
  return m.clientUrls.length > 0;
}

/** etcd's HealthInterval: a peer counts as connected once its stream has been up this long. */
const HEALTH_INTERVAL_MS = 5000;

/** etcd's isConnectedSince(now - HealthInterval): this member, or a peer whose stream has been up 5 s. */
function connectedSince(pm: MembershipHost, id: NodeId): boolean {
  if (id === pm.id) return true;
  const since = pm.activeSince(id);
  return since !== undefined && since < pm.server.clock.now() - HEALTH_INTERVAL_MS;
}

/** etcd's IsReadyToAddVotingMember, with its special case of growing a one-member cluster. */
function readyToAddVotingMember(pm: MembershipHost): boolean {
  const vs = voters(pm);
  const nstarted = vs.filter(started).length;
  if (nstarted === 1 && vs.length + 1 === 2) return true;
  return nstarted >= quorum(vs.length + 1);
}

/**
 * etcd's isLearnerReady, on the leader (its Raft progress; a member Raft does not hold passes on to the
 * apply's checks). etcd's follower asks the leader; a host whose node does not lead takes a member that
 * published its attributes — it applied the log up to its own entry — as caught up.
 */
function learnerReady(pm: MembershipHost, id: NodeId): boolean {
  const listed = pm.members.get(id);
  if (pm.node.role !== 'leader') return listed === undefined || listed.clientUrls.length !== 0;
  const match = pm.node.matchOf(id);
  return match === undefined || match >= pm.node.log.committed * READY_PERCENT;
}
