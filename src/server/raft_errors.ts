/**
 * The errors a member answers with when Raft cannot do what a request needs — etcd keeps them in
 * etcdserver (errors.go) and v3rpc/rpctypes — with the gRPC code and text etcd 3.4.23 gives them (observed
 * on a real 3-member 3.4.23 on loopback). They are a member's, whichever floor runs its Raft: the simulated
 * cluster (src/cluster) and a member in a process of its own (src/peer) answer with the same ones.
 */
import { GrpcCode } from '../etcd/index.js';
import { grpcError, type GrpcError } from './errors.js';

/** etcd's ErrTimeout: a proposal or ReadIndex not done within the request timeout, no leader known. */
export const errTimeout = (): GrpcError => grpcError(GrpcCode.UNAVAILABLE, 'etcdserver: request timed out');
/** ErrTimeoutDueToLeaderFail: the member's leader is not reachable from it. */
export const errTimeoutDueToLeaderFail = (): GrpcError =>
  grpcError(GrpcCode.UNAVAILABLE, 'etcdserver: request timed out, possibly due to previous leader failure');
/** ErrTimeoutDueToConnectionLost: the member is leader but not connected to a quorum. */
export const errTimeoutDueToConnectionLost = (): GrpcError =>
  grpcError(GrpcCode.UNAVAILABLE, 'etcdserver: request timed out, possibly due to connection lost');
/**
 * A proposal made while the member knows no leader: etcd 3.4's raft node holds it until a leader appears,
 * and the request's own deadline ends it with the bare context error, which the gRPC layer maps to Unknown
 * (observed: `rpc error: code = Unknown desc = context deadline exceeded` after 7 s).
 */
export const errProposalBlocked = (): GrpcError => grpcError(GrpcCode.UNKNOWN, 'context deadline exceeded');
/** ErrGRPCNoLeader, for calls that require a leader (a watch with WithRequireLeader, MoveLeader). */
export const errNoLeader = (): GrpcError => grpcError(GrpcCode.UNAVAILABLE, 'etcdserver: no leader');
/** ErrGRPCNotSupportedForLearner: a learner answers only Status and serializable Range, and no stream. */
export const errNotSupportedForLearner = (): GrpcError => grpcError(GrpcCode.UNAVAILABLE, 'etcdserver: rpc not supported for learner');
/** ErrGRPCNotLeader: MoveLeader sent to a member that is not the leader. */
export const errNotLeader = (): GrpcError => grpcError(GrpcCode.FAILED_PRECONDITION, 'etcdserver: not leader');
/** ErrGRPCBadLeaderTransferee: MoveLeader to a member that is not a voting member. */
export const errBadLeaderTransferee = (): GrpcError => grpcError(GrpcCode.FAILED_PRECONDITION, 'etcdserver: bad leader transferee');
/** ErrLeaderChanged: a ReadIndex in flight when the leader changed. */
export const errLeaderChanged = (): GrpcError => grpcError(GrpcCode.UNAVAILABLE, 'etcdserver: leader changed');
