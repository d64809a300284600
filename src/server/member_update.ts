/**
 * etcd's MemberUpdate on a member of a cluster of several (a cluster of processes, src/peer, and the
 * in-process cluster, src/cluster): an UpdateNode conf change through Raft. The member asked checks the
 * caller (root while auth is enabled) and — unlike etcd, whose other members' transports panic on a URL
 * they cannot parse, at every restart again — refuses URLs that do not parse before proposing (as a single
 * member does, membership_service.ts). Every member's apply then checks the entry as etcd's
 * ValidateConfigurationChange does (the member exists; no other member has one of the new URLs), so a
 * refused update still takes its index, and replaces the member's peer URLs in its own list of members
 * (3.4 replaces the member's Raft attributes whole: a learner is listed as a voter from then on).
 */
import type { EtcdVersion } from '../etcd/index.js';
import type { CallContext } from './call_context.js';
import { serverCompat } from './compat.js';
import { uint64ToBigInt } from './convert.js';
import { asGrpc, grpcError, type GrpcError } from './errors.js';
import type { EtcdServer } from './etcd_server.js';
import { ErrMemberBadUrls, ErrMemberNotFound, ErrPeerUrlExists, fail, validUrl } from './membership_service.js';
import type * as M from './messages.js';

/** A member as another member lists it (its RaftCluster entry). */
export interface ListedMember {
  readonly id: bigint;
  /** '' until the member published its attributes (etcd lists an unstarted member without a name). */
  name: string;
  peerUrls: readonly string[];
  clientUrls: readonly string[];
  isLearner: boolean;
}

/** The checks the member asked makes before proposing: the update's member ID and new peer URLs. */
export function memberUpdateAsked(server: EtcdServer, req: M.MemberUpdateRequest | undefined, ctx: CallContext | undefined): { id: bigint; peerUrls: string[] } {
  const id = uint64ToBigInt(req?.ID ?? 0, 'ID');
  asGrpc(() => server.auth.checkAdmin(server.authInfo(ctx)));
  const peerUrls = [...(req?.peerURLs ?? [])];
  if (peerUrls.length === 0 || !peerUrls.every(validUrl)) fail(ErrMemberBadUrls);
  return { id, peerUrls };
}

/** One member's apply of the update to its list of members; the refusal its proposer answers, if any. */
export function applyMemberUpdate(members: ReadonlyMap<bigint, ListedMember>, id: bigint, peerUrls: readonly string[], version: EtcdVersion): GrpcError | undefined {
  const target = members.get(id);
  if (target === undefined) return grpcError(ErrMemberNotFound.code, ErrMemberNotFound.message);
  for (const m of members.values()) if (m.id !== id && m.peerUrls.some((u) => peerUrls.includes(u))) return grpcError(ErrPeerUrlExists.code, ErrPeerUrlExists.message);
  target.peerUrls = [...peerUrls];
  if (serverCompat(version).memberUpdateDropsLearner) target.isLearner = false;
  return undefined;
}

/** The members as MemberList answers them: by ID. */
export function listedOut(members: ReadonlyMap<bigint, ListedMember>): M.Member[] {
  return [...members.values()]
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((m) => ({ ID: String(m.id), name: m.name, peerURLs: [...m.peerUrls], clientURLs: [...m.clientUrls], isLearner: m.isLearner }));
}
