/** The server layer: one simulated etcd member and its gRPC services in message form. */
export { EtcdServer, type EtcdServices } from './etcd_server.js';
// What every door needs of one member (EtcdServer, a cluster's member, a member in a process of its own).
export type { MemberServices, MemberView } from './member_view.js';
// What a test holds of one simulated member (sim.server).
export type { EtcdServerView } from './server_view.js';
export { andThen, isPromiseLike, type Awaitable } from './awaitable.js';
export { DEFAULT_CLUSTER_ID, DEFAULT_MEMBER_ID, type EtcdServerOptions, type MemberInfo } from './member_options.js';
export type { CompactionCrash, MemberRestart, MemberSnapshot } from './restart.js';
// A service class's etcd calls by name, and the shapes of a service whose answers may come later.
export { SERVICE_CLASSES } from './service_classes.js';
export { serviceMethods, promised, type AwaitableService, type Promised } from './answers.js';
export { memberCalls, type CallKind, type MemberCall } from './member_calls.js';
export { KVService } from './kv_service.js';
export { WatchService, WatchCall, type ResponseListener, type EndListener } from './watch_service.js';
export type { BidiStream, FlowControl, ResponseSink, ResponseStream, StreamCall } from './stream_call.js';
export { sendResponses, StreamHold } from './stream_call.js';
export { LeaseService, KeepAliveCall, checkLeaseAccess } from './lease_service.js';
export { MaintenanceService } from './maintenance_service.js';
export { ClusterService } from './membership_service.js';
export { AuthService, permissionIn, permissionOut } from './auth_service.js';
export { LockService } from './lock_service.js';
export { ElectionService, ObserveCall, ErrElectionNotLeader, ErrElectionNoLeader, ErrMissingLeaderKey } from './election_service.js';
export { SESSION_TTL, type WaitingCallContext } from './concurrency_rules.js';
export { requiresLeader, type AppliedCallContext, type CallContext } from './call_context.js';
export { Delivery, type Deliverable, type DeliveryScheduler } from './delivery.js';
export {
  grpcError,
  toGrpcError,
  isGrpcError,
  statusName,
  invalidArgument,
  cancelledError,
  errTransportClosing,
  type GrpcError,
  type GrpcMetadata,
} from './errors.js';
export * as convert from './convert.js';
export type * as messages from './messages.js';
export { serverCompat, type ServerCompat } from './compat.js';

// For the floors above, which import this folder only through this index (test/layout/index_imports.test.ts).
export { bytesOut, header, int64ToBigInt, putIn, txnIn, uint64ToBigInt, watchResponseIn } from './convert.js';
export type { StreamLink } from './stream_call.js';
export { untilAborted } from './concurrency_rules.js';
export type { ConcurrencyClient } from './concurrency_rules.js';
export { ElectionRules } from './election_service.js';
export { LockRules } from './lock_service.js';
export { isTxnReadOnly, tryTxnIn, txnKind } from './kv_service.js';
export { ALARM_CORRUPT, alarmText, alarmTypeName, alarmTypeNumber, ErrNoSpace } from './alarms.js';
export { costPut, costTxn, LEASE_OVERHEAD, noSpaceAlarm, overQuota } from './quota.js';
export type { SnapshotStreamOptions } from './maintenance_service.js';
export { clusterIdOf, memberIdOf } from './member_id.js';
export { tokenApplied } from './applied_wait.js';
export { EtcdUrlError, parseEtcdUrl } from './urls.js';
export type { EtcdUrl } from './urls.js';
export { asGrpc } from './errors.js';
// A member's errors when Raft cannot serve a request (etcdserver's), for every floor that runs its Raft.
export {
  errBadLeaderTransferee,
  errLeaderChanged,
  errNoLeader,
  errNotLeader,
  errNotSupportedForLearner,
  errProposalBlocked,
  errTimeout,
  errTimeoutDueToConnectionLost,
  errTimeoutDueToLeaderFail,
} from './raft_errors.js';
// etcd's membership checks, which a process member (src/peer) makes before proposing a conf change.
export {
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
// MemberUpdate on a member of a cluster of several (src/peer, src/cluster): the checks and the apply.
export { applyMemberUpdate, listedOut, memberUpdateAsked, type ListedMember } from './member_update.js';
// MemberAdd, MemberRemove, MemberPromote, MemberUpdate on a member of a cluster of several: etcd's checks, in its order.
export { confChangeRefusal, membershipChanges, type MemberChange, type MembershipHost } from './member_changes.js';
export type { KeptMemberHooks, KeptMemberStart, KeptState } from './kept_member.js';
