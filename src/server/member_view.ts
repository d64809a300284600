/**
 * What a front door needs of one etcd member — the member view: etcd's v3 services in message form, the
 * release it follows, and etcd's simple-token wait. Every door takes a member through it: serve()'s gRPC
 * handlers (src/grpc), the JSON gateway (src/http), the in-process clients (src/client). Three members
 * implement it: an EtcdServer, whose services answer at once; a member of the simulated cluster
 * (src/cluster/member_view.ts), which answers a request once Raft let it (a write after the member applied
 * it, a linearizable read after ReadIndex), so its answers may be Promises; and a member in a process of
 * its own (src/peer). The calls are the ones etcd's .proto files declare (src/proto), with the signatures of
 * the member's service classes, so an RPC added to a .proto and its class is a call every view must answer.
 */
import type { AuthService } from './auth_service.js';
import type { CallContext } from './call_context.js';
import type { ElectionService } from './election_service.js';
import type { KVService } from './kv_service.js';
import type { LeaseService } from './lease_service.js';
import type { LockService } from './lock_service.js';
import type { MaintenanceService, SnapshotStreamOptions } from './maintenance_service.js';
import type { ClusterService } from './membership_service.js';
import type { StreamCall, StreamHold } from './stream_call.js';
import type { WatchService } from './watch_service.js';
import type * as M from './messages.js';
import type { Awaitable } from './awaitable.js';
import type { CallName, EtcdServiceName } from '../proto/index.js';
import type { EtcdVersion } from '../etcd/index.js';

/**
 * `S`'s methods as a front door calls them: a unary answer now or later (a cluster member's once Raft let
 * it); a stream call (WatchCall, KeepAliveCall, ObserveCall) opened at once; a call that waits (Lock,
 * Campaign) a Promise on every member.
 */
type Served<S> = {
  [K in keyof S]: S[K] extends (...args: infer A) => infer R ? (...args: A) => R extends StreamCall<infer _> | PromiseLike<unknown> ? R : Awaitable<R> : never;
};

/** The calls etcd's .proto declares for service `N` (src/proto), with the signatures of `C`, the member's service class. */
type Calls<C, N extends EtcdServiceName> = Served<Pick<C, CallName<N> & keyof C>>;

/**
 * etcd's v3 services of one member in message form, as the doors call them: each service class's calls
 * that its .proto declares (EtcdServices satisfies it; a cluster member's answer later).
 * @public
 */
export interface MemberServices {
  readonly kv: Calls<KVService, 'KV'>;
  readonly watch: Calls<WatchService, 'Watch'>;
  readonly lease: Calls<LeaseService, 'Lease'>;
  readonly cluster: Calls<ClusterService, 'Cluster'>;
  /**
   * Besides etcd's calls, Snapshot as a stream (MaintenanceService.snapshotStream): the member's backend of
   * the moment the call reaches it, its file written as the responses are asked for — etcd streams its bbolt
   * file as the client reads. A cluster member's comes once the member takes the call, and holds
   * (StreamHold) while the member is paused or the link is dropped.
   */
  readonly maintenance: Calls<MaintenanceService, 'Maintenance'> & {
    /** @internal The doors' streaming Snapshot (above). */
    snapshotStream(req?: M.SnapshotRequest, ctx?: CallContext, opts?: SnapshotStreamOptions): Awaitable<Iterable<M.SnapshotResponse | StreamHold>>;
  };
  readonly auth: Calls<AuthService, 'Auth'>;
  /** Lock waits (a Promise on every member); Unlock answers at once on a single member, later on a cluster member. */
  readonly lock: Calls<LockService, 'Lock'>;
  readonly election: Calls<ElectionService, 'Election'>;
}

/**
 * One member as every front door calls it. An EtcdServer is one; a simulated cluster's member view
 * (src/cluster/member_view.ts) is another, whose token check happens inside its services (so its
 * tokenWaitIndex answers undefined and the doors hold nothing themselves).
 * @public
 */
export interface MemberView {
  /** The release whose rules (and wire texts) the member follows. */
  readonly etcdVersion: EtcdVersion;
  readonly services: MemberServices;
  /** The raft index a call's simple token needs applied first (etcd's token check), or undefined. */
  tokenWaitIndex(ctx: CallContext): bigint | undefined;
  readonly appliedWait: { wait(index: bigint, fn: () => void): { cancel(): void } };
}
