/**
 * etcd's Cluster service on a member of a cluster of processes (etcd's ClusterServer over RaftCluster):
 * MemberAdd, MemberRemove and MemberPromote are Raft conf changes, proposed by the member asked and answered
 * once it applied them, with the membership as it then stands. The checks are etcd's, in its order: the
 * peer URLs (MemberAdd), the caller (root while auth is enabled), then with --strict-reconfig-check the
 * cluster's health — a voter is added only while the started voters stay a quorum and every voter is
 * connected, removed only while the started voters left are a quorum and the connected ones too, a learner
 * promoted only once it caught up with the leader. A member is "started" once it published its attributes
 * (it has client URLs), "connected" once its peer stream has been up for etcd's HealthInterval (5 s, on the
 * member's clock; this member always is) — so right after a start etcd 3.4.23 refuses an add or a remove of
 * a live voter with `unhealthy cluster` for about 5 s, and so does this member. Then the checks
 * etcd's apply makes (an ID or peer URL taken, a member not found, too many learners, not a learner) are
 * made before proposing, against the membership this member applied.
 *
 * MemberUpdate is Raft's UpdateNode conf change, checked by every member's apply as etcd's (the member
 * exists, no other member has one of its new URLs), so a refused update still takes its index; URLs that do
 * not parse are refused before proposing (etcd's other members panic on them: a deliberate difference, as
 * on a single member, src/server/membership_service.ts).
 */
import {
  asGrpc,
  header,
  memberIdOf,
  uint64ToBigInt,
  type CallContext,
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
  listedOut,
  memberUpdateAsked,
  validUrl,
} from '../server/index.js';
import type * as M from '../server/messages.js';
import type { NodeId } from '../raft/index.js';
import type { ProcessClusterMember, ProcessMember } from './process_member.js';

/** etcd's readyPercent: a learner is ready for promotion once its log reaches 90% of the leader's. */
const READY_PERCENT = 0.9;

/** What the Cluster service uses of its process member (a test drives it on a virtual clock). */
export type MembershipHost = Pick<ProcessMember, 'id' | 'server' | 'node' | 'members' | 'peerActive' | 'activeSince' | 'changeMembership' | 'memberContextOf'>;

/** The Cluster service of member `pm`; `call` runs a call as every other call of the member runs. */
export function processMembership(pm: MembershipHost, call: <T>(f: () => T | PromiseLike<T>, ctx?: CallContext) => Promise<T>) {
  const server = pm.server;
  const requireAdmin = (ctx: CallContext | undefined): void => asGrpc(() => server.auth.checkAdmin(server.authInfo(ctx)));
  const strict = (): boolean => server.strictReconfigCheck;
  return {
    memberList: (_req?: M.MemberListRequest, ctx?: CallContext) => call(() => ({ header: header(server.identity, 0), members: list(pm) }), ctx),

    memberAdd: (req?: M.MemberAddRequest, ctx?: CallContext) =>
      call(async (): Promise<M.MemberAddResponse> => {
        const urls = [...(req?.peerURLs ?? [])];
        if (urls.length === 0 || !urls.every(validUrl)) fail(ErrMemberBadUrls);
        requireAdmin(ctx);
        const isLearner = req?.isLearner === true;
        // etcd's mayAddMember (strict reconfiguration check), before proposing.
        if (!isLearner && strict() && !readyToAddVotingMember(pm)) fail(ErrNotEnoughStartedMembers);
        if (strict() && !voters(pm).every((m) => connectedSince(pm, m.id))) fail(ErrUnhealthy);
        const id = memberIdOf(urls, '', Math.floor(server.clock.now() / 1000));
        if (pm.members.has(id)) fail(ErrMemberIdExists);
        if ([...pm.members.values()].some((m) => m.peerUrls.some((u) => urls.includes(u)))) fail(ErrPeerUrlExists);
        if (isLearner && [...pm.members.values()].filter((m) => m.isLearner).length >= MAX_LEARNERS) fail(ErrTooManyLearners);
        await pm.changeMembership({ type: isLearner ? 'addLearner' : 'add', id, context: pm.memberContextOf({ id, name: '', peerUrls: urls, isLearner }) });
        const added = pm.members.get(id);
        return { header: header(server.identity, 0), member: added === undefined ? null : out(added), members: list(pm) } as M.MemberAddResponse;
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
        if (target === undefined) fail(ErrMemberNotFound);
        await pm.changeMembership({ type: 'remove', id });
        return { header: header(server.identity, 0), members: list(pm) };
      }, ctx),

    memberUpdate: (req?: M.MemberUpdateRequest, ctx?: CallContext) =>
      call(async (): Promise<M.MemberUpdateResponse> => {
        // The URLs are checked here, the rest by every member's apply (process_member.ts): src/server/member_update.ts.
        const { id, peerUrls } = memberUpdateAsked(server, req, ctx);
        await pm.changeMembership({ type: 'update', id, context: pm.memberContextOf({ id, name: '', peerUrls, isLearner: false }) });
        return { header: header(server.identity, 0), members: list(pm) };
      }, ctx),

    memberPromote: (req?: M.MemberPromoteRequest, ctx?: CallContext) =>
      call(async (): Promise<M.MemberPromoteResponse> => {
        const id = uint64ToBigInt(req?.ID ?? 0, 'ID');
        requireAdmin(ctx);
        const target = pm.members.get(id);
        if (target === undefined) fail(ErrMemberNotFound);
        if (!target.isLearner) fail(ErrMemberNotLearner);
        if (!learnerReady(pm, id)) fail(ErrLearnerNotReady);
        // IsReadyToPromoteMember: the voters and the promoted member, counted as started, are a quorum.
        const vs = voters(pm);
        if (strict() && vs.filter(started).length + 1 < quorum(vs.length + 1)) fail(ErrNotEnoughStartedMembers);
        await pm.changeMembership({ type: 'add', id });
        return { header: header(server.identity, 0), members: list(pm) };
      }, ctx),
  };
}

function quorum(n: number): number {
  return Math.floor(n / 2) + 1;
}

function voters(pm: MembershipHost): ProcessClusterMember[] {
  return [...pm.members.values()].filter((m) => !m.isLearner);
}

/** A member has started once it published its attributes. */
function started(m: ProcessClusterMember): boolean {
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
 * etcd's isLearnerReady, on the leader (its Raft progress). etcd's follower asks the leader; here a follower
 * takes a learner that published its attributes — it applied the log up to its own entry — as caught up.
 */
function learnerReady(pm: MembershipHost, id: NodeId): boolean {
  if (pm.node.role !== 'leader') return pm.members.get(id)?.clientUrls.length !== 0;
  const match = pm.node.matchOf(id) ?? 0;
  return match >= pm.node.log.committed * READY_PERCENT;
}

function out(m: ProcessClusterMember): M.Member {
  return { ID: String(m.id), name: m.name, peerURLs: [...m.peerUrls], clientURLs: [...m.clientUrls], isLearner: m.isLearner };
}

function list(pm: MembershipHost): M.Member[] {
  return listedOut(pm.members);
}

