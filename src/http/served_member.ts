/**
 * What the front doors of the client port — serve()'s gRPC handlers (src/grpc/server.ts) and the JSON
 * gateway (gateway.ts) — need of the member they serve. A single member is an EtcdServer, whose services
 * answer at once; a member of a simulated cluster (src/cluster, served by src/grpc/serve_cluster.ts)
 * answers a request once Raft let it (a write after the member applied it, a linearizable read after
 * ReadIndex), so its answers may be Promises. Both doors take either through these types: one handler table
 * per door, one path, for both.
 */
import type { AuthService, CallContext, ElectionService, KeepAliveCall, KVService, LockService, StreamHold, WatchCall } from '../server/index.js';
import type { AwaitableService } from '../server/answers.js';
import type { SnapshotStreamOptions } from '../server/maintenance_service.js';
import type * as M from '../server/messages.js';
import type { EtcdVersion } from '../mvcc/index.js';

/** An answer now, or later. */
export type Awaitable<T> = T | PromiseLike<T>;

/** etcd's v3 services of one member in message form, as serve() calls them (EtcdServices satisfies it). */
export interface ServedServices {
  readonly kv: AwaitableService<KVService>;
  readonly watch: { watch(ctx?: CallContext): WatchCall };
  readonly lease: {
    leaseGrant(req: M.LeaseGrantRequest, ctx?: CallContext): Awaitable<M.LeaseGrantResponse>;
    leaseRevoke(req: M.LeaseRevokeRequest, ctx?: CallContext): Awaitable<M.LeaseRevokeResponse>;
    leaseTimeToLive(req: M.LeaseTimeToLiveRequest, ctx?: CallContext): Awaitable<M.LeaseTimeToLiveResponse>;
    leaseLeases(req?: M.LeaseLeasesRequest, ctx?: CallContext): Awaitable<M.LeaseLeasesResponse>;
    leaseKeepAlive(ctx?: CallContext): KeepAliveCall;
  };
  readonly cluster: {
    memberList(req?: M.MemberListRequest): Awaitable<M.MemberListResponse>;
    memberAdd(req?: M.MemberAddRequest, ctx?: CallContext): Awaitable<M.MemberAddResponse>;
    memberRemove(req?: M.MemberRemoveRequest, ctx?: CallContext): Awaitable<M.MemberRemoveResponse>;
    memberUpdate(req?: M.MemberUpdateRequest, ctx?: CallContext): Awaitable<M.MemberUpdateResponse>;
    memberPromote(req?: M.MemberPromoteRequest, ctx?: CallContext): Awaitable<M.MemberPromoteResponse>;
  };
  readonly maintenance: {
    status(req?: M.StatusRequest, ctx?: CallContext): Awaitable<M.StatusResponse>;
    hash(req?: M.HashRequest, ctx?: CallContext): Awaitable<M.HashResponse>;
    hashKV(req?: M.HashKVRequest, ctx?: CallContext): Awaitable<M.HashKVResponse>;
    moveLeader(req?: M.MoveLeaderRequest, ctx?: CallContext): Awaitable<M.MoveLeaderResponse>;
    defragment(req?: M.DefragmentRequest, ctx?: CallContext): Awaitable<M.DefragmentResponse>;
    alarm(req?: M.AlarmRequest, ctx?: CallContext): Awaitable<M.AlarmResponse>;
    snapshot(req?: M.SnapshotRequest, ctx?: CallContext): Awaitable<M.SnapshotResponse[]>;
    /**
     * Maintenance.Snapshot as a stream (MaintenanceService.snapshotStream): the member's backend of the moment
     * the call reaches it, its file written as the responses are asked for — etcd streams its bbolt file as
     * the client reads. A cluster member's comes once the member takes the call, and holds (StreamHold)
     * while the member is paused or the link is dropped.
     */
    snapshotStream(req?: M.SnapshotRequest, ctx?: CallContext, opts?: SnapshotStreamOptions): Awaitable<Iterable<M.SnapshotResponse | StreamHold>>;
  };
  readonly auth: AwaitableService<AuthService>;
  /** Lock waits (a Promise on every member); Unlock answers at once on a single member, later on a cluster member. */
  readonly lock: Pick<LockService, 'lock'> & AwaitableService<Pick<LockService, 'unlock'>>;
  readonly election: Pick<ElectionService, 'campaign' | 'observe'> & AwaitableService<Pick<ElectionService, 'proclaim' | 'leader' | 'resign'>>;
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
