/**
 * What the front doors of the client port — serve()'s gRPC handlers (src/grpc/server.ts) and the JSON
 * gateway (gateway.ts) — need of the member they serve. A single member is an EtcdServer, whose services
 * answer at once; a member of a simulated cluster (src/cluster, served by src/grpc/serve_cluster.ts)
 * answers a request once Raft let it (a write after the member applied it, a linearizable read after
 * ReadIndex), so its answers may be Promises. Both doors take either through these types: one handler table
 * per door, one path, for both.
 */
import type { AuthService, CallContext, ClusterService, ElectionService, KVService, LeaseService, LockService, MaintenanceService, StreamCall, StreamHold, WatchService } from '../server/index.js';
import type { SnapshotStreamOptions } from '../server/maintenance_service.js';
import type * as M from '../server/messages.js';
import type { CallName, EtcdServiceName } from '../proto/index.js';
import type { EtcdVersion } from '../etcd/index.js';

/** An answer now, or later. */
export type Awaitable<T> = T | PromiseLike<T>;

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
 */
export interface ServedServices {
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
    snapshotStream(req?: M.SnapshotRequest, ctx?: CallContext, opts?: SnapshotStreamOptions): Awaitable<Iterable<M.SnapshotResponse | StreamHold>>;
  };
  readonly auth: Calls<AuthService, 'Auth'>;
  /** Lock waits (a Promise on every member); Unlock answers at once on a single member, later on a cluster member. */
  readonly lock: Calls<LockService, 'Lock'>;
  readonly election: Calls<ElectionService, 'Election'>;
}

/**
 * The member a port serves, as its front doors call it. An EtcdServer is one; a cluster member's adapter
 * (src/grpc/serve_cluster.ts) is another, whose token check happens inside its services (so its
 * tokenWaitIndex answers undefined and the doors hold nothing themselves).
 */
export interface ServedMember {
  /** The release whose rules (and wire texts) the member follows. */
  readonly etcdVersion: EtcdVersion;
  readonly services: ServedServices;
  /** The raft index a call's simple token needs applied first (etcd's token check), or undefined. */
  tokenWaitIndex(ctx: CallContext): bigint | undefined;
  readonly appliedWait: { wait(index: bigint, fn: () => void): { cancel(): void } };
}

/** Whether `v` is a Promise-like answer (a cluster member's) rather than the answer itself. */
export function isPromiseLike<T>(v: Awaitable<T>): v is PromiseLike<T> {
  return typeof (v as { then?: unknown } | null)?.then === 'function';
}

/** `f` of an answer, now or once it comes. */
export function thenMap<T, U>(v: Awaitable<T>, f: (t: T) => U): Awaitable<U> {
  return isPromiseLike(v) ? v.then(f) : f(v);
}
