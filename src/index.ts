/**
 * etcdsim: etcd v3 semantics, simulated in-process. The package's root entry point (`import … from 'etcdsim'`).
 *
 * What a test author needs, listed name by name so the public surface is a decision, not an accident:
 * the simulator and its options, the clients on it, etcd's errors, the byte helpers, the engine (MvccStore)
 * and the types its API returns, the watch-guarantee checker and the clocks. `sim.server` and `sim.cluster`
 * are interfaces (EtcdServerView, EtcdClusterView): what a user may rely on, not the classes' wiring. Classes
 * a user reaches through `sim.lessor`, `sim.watchable`, `sim.services` or `sim.clock` but never constructs
 * are exported as types only, and what of them is the member's wiring (constructors, the engine's
 * step-by-step pipeline, helpers the floors above call) carries the internal release tag, which
 * tsconfig.build.json's stripInternal leaves out of the published types (this comment must not spell the
 * tag: it would strip the declaration below it), so each shows a user only what they may call.
 * The other entry point is `etcdsim/grpc` (server mode: serve()). etc/*.api.md records each surface;
 * `npm run api-report` regenerates them.
 */

// The simulator.
export {
  createEtcdSim,
  type EtcdSim,
  type EtcdSimOptions,
  type TimeMode,
  type TimerDriver,
  type Etcd3SimOptions,
  type EtcdClusterSim,
  type EtcdClusterSimOptions,
  type ClusterClientOptions,
} from './client/create.js';
// A simulated cluster (createEtcdSim({ members: 3 })): sim.cluster and its levers, the members' async services.
export type {
  CallAnswer,
  ClusterLevers,
  EtcdClusterView,
  SimulatedMember,
  ClusterMemberServices,
  ClusterKV,
  ClusterLease,
  ClusterMaintenance,
  ClusterMembership,
  ClusterAuth,
  ClusterLock,
  ClusterElection,
  ClusterTraceEvent,
  ClusterMemberConfig,
  ConnectOptions,
  SharedServerOptions,
  EtcdClusterOptions,
  MemberRaftStatus,
  MemberRef,
  RaftRole,
} from './cluster/index.js';
export type { SimEtcd3Options } from './client/etcd3.js';
export type { EtcdServices } from './server/etcd_server.js';
// sim.services, service by service: etcd's calls in message form (the classes' wiring is not published).
export type { KVService } from './server/kv_service.js';
export type { WatchService, WatchCall } from './server/watch_service.js';
export type { LeaseService, KeepAliveCall } from './server/lease_service.js';
export type { MaintenanceService } from './server/maintenance_service.js';
export type { ClusterService } from './server/membership_service.js';
export type { AuthService } from './server/auth_service.js';
export type { LockService } from './server/lock_service.js';
export type { ElectionService, ObserveCall } from './server/election_service.js';
export type { StreamCall, ResponseStream, BidiStream, FlowControl, ResponseListener, EndListener } from './server/stream_call.js';
// What every door takes of one member: an EtcdServer, a cluster member's view (ClusterMemberView), a member process.
export type { MemberServices, MemberView } from './server/member_view.js';
// sim.server: one member, its engine and its levers.
export type { EtcdServerView } from './server/server_view.js';
export type { Awaitable } from './server/awaitable.js';
export type { Promised } from './server/answers.js';
export type { WaitingCallContext } from './server/concurrency_rules.js';
export { DEFAULT_CLUSTER_ID, DEFAULT_MEMBER_ID, type EtcdServerOptions, type MemberInfo } from './server/member_options.js';
export type { CompactionCrash, MemberRestart, MemberSnapshot } from './server/restart.js';
export type { InterruptedCompaction } from './snapshot/compaction.js';
export type { EtcdVersion } from './etcd/index.js';
export type { AuthSetup, AuthSnapshot } from './auth/store.js';
export type { PasswordHash } from './auth/password.js';
export type { TokenProvider, TokenProviderFactory } from './auth/simple_token.js';
export type { KeyPermission, PermissionType } from './auth/range_perm.js';
export type { CallContext } from './server/call_context.js';

// Clients on the simulator: etcd's raw v3 API (sim.client()) in etcd's message form.
export {
  EtcdClient,
  type KVClient,
  type LeaseClient,
  type MaintenanceClient,
  type ClusterClient,
  type AuthClient,
  type LockClient,
  type ElectionClient,
  type WaitOptions,
  type Session,
  type ServiceClient,
  type ClientCall,
} from './client/raw_client.js';
export type { EtcdServiceName } from './proto/calls.js';
export { EtcdStream, EtcdWatchStream, EtcdKeepAliveStream, EtcdObserveStream, type StreamEvents } from './client/raw_streams.js';
export { prefix, fromKey, type Req } from './client/text_keys.js';
// An import and export rather than `export type * as`: the same namespace the client's own signatures name.
import type * as messages from './server/messages.js';
export type { messages };

// Errors: every rejection is an EtcdError (engine) or a grpc-js-shaped GrpcError (services, clients), with
// etcd's gRPC code and exact message.
export { ErrCompacted, ErrFutureRev, ErrEmptyKey, ErrKeyNotFound, ErrValueProvided, ErrLeaseProvided, ErrTooManyOps, ErrDuplicateKey, ErrInvalidSortOption, ErrRequestTooLarge, ErrLeaseNotFound, ErrEmptyWatcherRange, ErrWatcherDuplicateID, ErrWatcherNotExist } from './mvcc/errors.js';
export { EtcdError, isEtcdError, GrpcCode, type EtcdErrorKind } from './etcd/index.js';
export {
  ErrRootUserNotExist,
  ErrRootRoleNotExist,
  ErrUserAlreadyExist,
  ErrUserEmpty,
  ErrUserNotFound,
  ErrRoleAlreadyExist,
  ErrRoleNotFound,
  ErrRoleEmpty,
  ErrAuthFailed,
  ErrPermissionNotGiven,
  ErrPermissionDenied,
  ErrRoleNotGranted,
  ErrPermissionNotGranted,
  ErrAuthNotEnabled,
  ErrInvalidAuthToken,
  ErrInvalidAuthMgmt,
  ErrNoPasswordUser,
} from './auth/errors.js';
export { ErrLeaseExist, ErrLeaseTTLTooLarge } from './lease/errors.js';
export { ErrNotPrimary } from './lease/lessor.js';
export { grpcError, isGrpcError, statusName, type GrpcError, type GrpcMetadata } from './server/errors.js';

// Bytes: keys and values are Uint8Array, ordered by byte.
export { utf8, text, prefixEnd, compareBytes, bytesEqual } from './mvcc/bytes.js';

// The engine (sim.mvcc, or a bare store) and the types of its API.
export { MvccStore, type HashKVResult, type MvccOptions } from './mvcc/kv.js';
export type { KeyString } from './mvcc/bytes.js';
export type { CommitListener, StoreSnapshot } from './mvcc/store.js';
export { DEFAULT_MAX_REQUEST_BYTES, DEFAULT_MAX_TXN_OPS } from './mvcc/validate.js';
export type {
  KeyValue,
  Event,
  EventType,
  SortOrder,
  SortTarget,
  RangeRequest,
  RangeResponse,
  PutRequest,
  PutResponse,
  DeleteRangeRequest,
  DeleteRangeResponse,
  Compare,
  CompareTarget,
  CompareResult,
  RequestOp,
  ResponseOp,
  TxnRequest,
  TxnResponse,
  CompactResponse,
  LeaseHook,
} from './mvcc/types.js';

// Leases (sim.lessor).
export { MAX_LEASE_TTL, type Lease } from './lease/lease.js';
export type { Lessor, GrantResult, RevokeResult, TimeToLiveResult, LessorEvent, LessorListener } from './lease/lessor.js';

// Watches in the engine's form (sim.watchStream(), sim.watchable).
export { WATCH_DEFAULTS, type WatchableStore, type WatchableStoreOptions } from './watch/watchable_store.js';
export { INVALID_WATCH_ID, type WatchStream } from './watch/watch_stream.js';
export type { WatchCreateRequest, WatchEvent, WatchFilter, WatchResponse } from './watch/types.js';

// The watch-guarantee checker: judges any recorded watch (the simulator's or a real etcd's).
export {
  checkWatch,
  assertWatchGuarantees,
  recordHistory,
  historyFromStore,
  isProgressNotify,
  isCreateEvent,
  formatViolations,
  type WatchGuarantee,
  type WatchViolation,
  type CommittedHistory,
  type HistoryRevision,
  type CheckWatchOptions,
  type HistorySource,
  type CommitSource,
} from './watch/guarantees.js';

// Clocks (sim.clock; serve({ clock }) takes a VirtualClock to drive a served member from a test).
export { VirtualClock, RealClock, type Clock, type TimerHandle, type EveryOptions, type PendingTimer, type RealClockOptions } from './sim/clock.js';
