/**
 * EtcdClient: etcd's raw v3 API, typed, in-process — for code that wants etcd's own services without
 * the `etcd3` package. Its shape is etcd's six-service client (`kv`, `lease`, `watch`, `maintenance`,
 * `cluster`); requests and responses are the message form of src/server/messages.ts (snake_case fields,
 * int64 as decimal strings, bytes as Buffers).
 *
 * Thin on purpose: every call goes to the server layer's services (sim.services) and nothing else, so
 * every rule, every validation and every error is the server's. What this layer adds:
 *  - unary calls return Promises and reject with the server's grpc-js-shaped error (an `Error` with a
 *    numeric `code`, `details` and `message = "<code> <NAME>: <details>"`);
 *  - the bytes fields of requests (`key`, `range_end`, `value`, in txn compares and ops too) may be
 *    strings, sent as UTF-8 (a string in a bytes field given to the services directly would be read as
 *    base64, as protobufjs does); `prefix()` and `fromKey()` build the usual key ranges;
 *  - the two bidirectional streams (Watch, LeaseKeepAlive) as small typed objects: requests in with
 *    send() and friends, responses out through `on('data')` listeners or async iteration, close();
 *    Election.Observe, a server stream, the same way (responses only);
 *  - Lock and Election (etcd's v3lock / v3election services) as `lock` and `election`; the calls that
 *    wait (Lock.lock, Election.campaign) take an optional AbortSignal that stops waiting, as a canceled
 *    gRPC call does (etcd then releases the key);
 *  - auth: `authenticate(name, password)` keeps the token it gets and sends it with every later call
 *    (the CallContext server mode fills from the `token` metadata); `auth` is etcd's Auth service.
 *
 * Responses reach a stream at the simulator's delivery points (src/server/delivery.ts): `sim.client()`
 * sets the event-loop scheduler, so they arrive on a later turn of the event loop, as over a network;
 * `await sim.advance(ms)` and `await sim.settle()` deliver too (engine-level: `sim.server.advance()`, `.flush()`).
 *
 * Here: the eight services' clients; the streams are raw_streams.ts, the text keys text_keys.ts.
 */
import { Buffer } from '../sim/index.js';
import { toGrpcError, type CallContext, type EtcdServices, type WaitingCallContext, tokenApplied } from '../server/index.js';
import type * as M from '../server/messages.js';
import { encode, isRecord, type Req } from './text_keys.js';
import { EtcdWatchStream, EtcdKeepAliveStream, EtcdObserveStream } from './raw_streams.js';

/** Runs a unary service call as a gRPC call completes: a Promise, rejected with a grpc-js-shaped error. */
async function unary<T>(fn: () => T): Promise<T> {
  try {
    return fn();
  } catch (err) {
    throw toGrpcError(err);
  }
}

/**
 * A unary call made with the session's token: run at once, as unary(), unless the token names a raft index
 * the member has not applied yet — then it waits for that index first, as etcd's token check (and serve()'s
 * gRPC door) waits (src/server/applied_wait.ts), and runs with the token it was made with.
 */
async function unaryAs<T>(services: EtcdServices, session: Session, fn: (ctx: CallContext) => T): Promise<T> {
  const ctx = ctxOf(session);
  const held = tokenApplied(services, ctx);
  if (held !== undefined) await held;
  return unary(() => fn(ctx));
}

/** The caller's credentials, shared by an EtcdClient's service clients (what gRPC metadata carries). @public */
export interface Session {
  token?: string | undefined;
}

const ctxOf = (session: Session): CallContext => (session.token === undefined ? {} : { token: session.token });

/** etcdserverpb.KV. @public */
export class KVClient {
  constructor(
    private readonly services: EtcdServices,
    private readonly session: Session = {},
  ) {}

  range(req: Req<M.RangeRequest>): Promise<M.RangeResponse> {
    return unaryAs(this.services, this.session, (ctx) => this.services.kv.range(encode<M.RangeRequest>(req), ctx));
  }

  put(req: Req<M.PutRequest>): Promise<M.PutResponse> {
    return unaryAs(this.services, this.session, (ctx) => this.services.kv.put(encode<M.PutRequest>(req), ctx));
  }

  deleteRange(req: Req<M.DeleteRangeRequest>): Promise<M.DeleteRangeResponse> {
    return unaryAs(this.services, this.session, (ctx) => this.services.kv.deleteRange(encode<M.DeleteRangeRequest>(req), ctx));
  }

  txn(req: Req<M.TxnRequest>): Promise<M.TxnResponse> {
    return unaryAs(this.services, this.session, (ctx) => this.services.kv.txn(encode<M.TxnRequest>(req), ctx));
  }

  compact(req: M.CompactionRequest): Promise<M.CompactionResponse> {
    return unaryAs(this.services, this.session, (ctx) => this.services.kv.compact(req, ctx));
  }
}

/** etcdserverpb.Lease, with its RPC names (LeaseGrant → leaseGrant), as `sim.services.lease` has them. @public */
export class LeaseClient {
  constructor(
    private readonly services: EtcdServices,
    private readonly opened: (s: EtcdKeepAliveStream) => EtcdKeepAliveStream = (s) => s,
    private readonly session: Session = {},
  ) {}

  leaseGrant(req: M.LeaseGrantRequest): Promise<M.LeaseGrantResponse> {
    return unaryAs(this.services, this.session, (ctx) => this.services.lease.leaseGrant(req, ctx));
  }

  leaseRevoke(req: M.LeaseRevokeRequest): Promise<M.LeaseRevokeResponse> {
    return unaryAs(this.services, this.session, (ctx) => this.services.lease.leaseRevoke(req, ctx));
  }

  leaseTimeToLive(req: M.LeaseTimeToLiveRequest): Promise<M.LeaseTimeToLiveResponse> {
    return unaryAs(this.services, this.session, (ctx) => this.services.lease.leaseTimeToLive(req, ctx));
  }

  leaseLeases(req: M.LeaseLeasesRequest = {}): Promise<M.LeaseLeasesResponse> {
    return unary(() => this.services.lease.leaseLeases(req));
  }

  /** Opens one LeaseKeepAlive call. */
  leaseKeepAlive(): EtcdKeepAliveStream {
    return this.opened(new EtcdKeepAliveStream(this.services.lease.leaseKeepAlive(ctxOf(this.session))));
  }
}

/** etcdserverpb.Maintenance. @public */
export class MaintenanceClient {
  constructor(
    private readonly services: EtcdServices,
    private readonly session: Session = {},
  ) {}

  status(req: M.StatusRequest = {}): Promise<M.StatusResponse> {
    return unaryAs(this.services, this.session, (ctx) => this.services.maintenance.status(req, ctx));
  }

  hash(req: M.HashRequest = {}): Promise<M.HashResponse> {
    return unaryAs(this.services, this.session, (ctx) => this.services.maintenance.hash(req, ctx));
  }

  /** MoveLeader: answered by the leader (a single member is its own leader). */
  moveLeader(req: M.MoveLeaderRequest = {}): Promise<M.MoveLeaderResponse> {
    return unaryAs(this.services, this.session, (ctx) => this.services.maintenance.moveLeader(req, ctx));
  }

  hashKV(req: M.HashKVRequest = {}): Promise<M.HashKVResponse> {
    return unaryAs(this.services, this.session, (ctx) => this.services.maintenance.hashKV(req, ctx));
  }

  defragment(req: M.DefragmentRequest = {}): Promise<M.DefragmentResponse> {
    return unaryAs(this.services, this.session, (ctx) => this.services.maintenance.defragment(req, ctx));
  }

  alarm(req: M.AlarmRequest = {}): Promise<M.AlarmResponse> {
    return unaryAs(this.services, this.session, (ctx) => this.services.maintenance.alarm(req, ctx));
  }

  /** Snapshot (a server stream), all its responses: the simulator's is one token response (see MaintenanceService). */
  snapshot(req: M.SnapshotRequest = {}): Promise<M.SnapshotResponse[]> {
    return unaryAs(this.services, this.session, (ctx) => this.services.maintenance.snapshot(req, ctx));
  }
}

/** The bytes fields of the Lock and Election requests (in a LeaderKey too). */
const CONCURRENCY_BYTES_FIELDS: ReadonlySet<string> = new Set(['name', 'key', 'value']);

/** A Lock or Election request with its string bytes fields as UTF-8 (the caller's object is not changed). */
function encodeConcurrency<T>(req: Req<T>): T {
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(req as Record<string, unknown>)) {
    if (typeof x === 'string' && CONCURRENCY_BYTES_FIELDS.has(k)) out[k] = Buffer.from(x, 'utf8');
    else if (k === 'leader' && isRecord(x)) out[k] = encodeConcurrency(x);
    else out[k] = x;
  }
  return out as T;
}

/** How a waiting call may be stopped: an AbortSignal, as a gRPC client cancels a call. @public */
export interface WaitOptions {
  readonly signal?: AbortSignal | undefined;
}

const waitCtxOf = (session: Session, opts: WaitOptions | undefined): WaitingCallContext =>
  opts?.signal === undefined ? ctxOf(session) : { ...ctxOf(session), signal: opts.signal };

/**
 * A Lock or Campaign: held first by etcd's token check, as unaryAs holds a unary call (etcd's v3lock and
 * v3election servers call the member's KV with the caller's context), then waiting as the service waits.
 */
async function waitingAs<T>(services: EtcdServices, session: Session, opts: WaitOptions | undefined, fn: (ctx: WaitingCallContext) => Promise<T>): Promise<T> {
  const ctx = waitCtxOf(session, opts);
  const held = tokenApplied(services, ctx);
  if (held !== undefined) await held;
  return fn(ctx);
}

/** v3lockpb.Lock. @public */
export class LockClient {
  constructor(
    private readonly services: EtcdServices,
    private readonly session: Session = {},
  ) {}

  /** Resolves once the lock is held (`key` is the ownership key); `opts.signal` stops waiting. */
  lock(req: Req<M.LockRequest>, opts?: WaitOptions): Promise<M.LockResponse> {
    return waitingAs(this.services, this.session, opts, (ctx) => this.services.lock.lock(encodeConcurrency<M.LockRequest>(req), ctx));
  }

  unlock(req: Req<M.UnlockRequest>): Promise<M.UnlockResponse> {
    return unaryAs(this.services, this.session, (ctx) => this.services.lock.unlock(encodeConcurrency<M.UnlockRequest>(req), ctx));
  }
}

/** v3electionpb.Election. @public */
export class ElectionClient {
  constructor(
    private readonly services: EtcdServices,
    private readonly opened: (s: EtcdObserveStream) => EtcdObserveStream = (s) => s,
    private readonly session: Session = {},
  ) {}

  /** Resolves once this candidate leads; `opts.signal` stops waiting (the candidate then resigns). */
  campaign(req: Req<M.CampaignRequest>, opts?: WaitOptions): Promise<M.CampaignResponse> {
    return waitingAs(this.services, this.session, opts, (ctx) => this.services.election.campaign(encodeConcurrency<M.CampaignRequest>(req), ctx));
  }

  proclaim(req: Req<M.ProclaimRequest>): Promise<M.ProclaimResponse> {
    return unaryAs(this.services, this.session, (ctx) => this.services.election.proclaim(encodeConcurrency<M.ProclaimRequest>(req), ctx));
  }

  leader(req: Req<M.LeaderRequest>): Promise<M.LeaderResponse> {
    return unaryAs(this.services, this.session, (ctx) => this.services.election.leader(encodeConcurrency<M.LeaderRequest>(req), ctx));
  }

  resign(req: Req<M.ResignRequest>): Promise<M.ResignResponse> {
    return unaryAs(this.services, this.session, (ctx) => this.services.election.resign(encodeConcurrency<M.ResignRequest>(req), ctx));
  }

  /** Opens one Observe call: the leader now (once there is one) and every change after. */
  observe(req: Req<M.LeaderRequest>): EtcdObserveStream {
    const call = (() => {
      try {
        return this.services.election.observe(encodeConcurrency<M.LeaderRequest>(req), ctxOf(this.session));
      } catch (err) {
        throw toGrpcError(err);
      }
    })();
    return this.opened(new EtcdObserveStream(call));
  }
}

/** etcdserverpb.Cluster (a simulated cluster's membership is fixed: its changes answer UNIMPLEMENTED). @public */
export class ClusterClient {
  constructor(
    private readonly services: EtcdServices,
    private readonly session: Session = {},
  ) {}

  memberList(req: M.MemberListRequest = {}): Promise<M.MemberListResponse> {
    return unary(() => this.services.cluster.memberList(req));
  }

  memberAdd(req: M.MemberAddRequest): Promise<M.MemberAddResponse> {
    return unaryAs(this.services, this.session, (ctx) => this.services.cluster.memberAdd(req, ctx));
  }

  memberRemove(req: M.MemberRemoveRequest): Promise<M.MemberRemoveResponse> {
    return unaryAs(this.services, this.session, (ctx) => this.services.cluster.memberRemove(req, ctx));
  }

  memberUpdate(req: M.MemberUpdateRequest): Promise<M.MemberUpdateResponse> {
    return unaryAs(this.services, this.session, (ctx) => this.services.cluster.memberUpdate(req, ctx));
  }

  memberPromote(req: M.MemberPromoteRequest): Promise<M.MemberPromoteResponse> {
    return unaryAs(this.services, this.session, (ctx) => this.services.cluster.memberPromote(req, ctx));
  }
}

/** etcdserverpb.Auth (method names as etcd's, lower camel case). @public */
export class AuthClient {
  constructor(
    private readonly services: EtcdServices,
    private readonly session: Session = {},
  ) {}

  private call<R>(fn: (ctx: CallContext) => R): Promise<R> {
    return unaryAs(this.services, this.session, fn);
  }

  authEnable(): Promise<M.AuthHeaderResponse> {
    return this.call((c) => this.services.auth.authEnable({}, c));
  }
  authDisable(): Promise<M.AuthHeaderResponse> {
    return this.call((c) => this.services.auth.authDisable({}, c));
  }
  authStatus(): Promise<M.AuthStatusResponse> {
    return this.call((c) => this.services.auth.authStatus({}, c));
  }
  authenticate(req: M.AuthenticateRequest): Promise<M.AuthenticateResponse> {
    return unary(() => this.services.auth.authenticate(req)); // etcd checks no token for Authenticate
  }
  userAdd(req: M.AuthUserAddRequest): Promise<M.AuthHeaderResponse> {
    return this.call((c) => this.services.auth.userAdd(req, c));
  }
  userGet(req: M.AuthUserGetRequest): Promise<M.AuthUserGetResponse> {
    return this.call((c) => this.services.auth.userGet(req, c));
  }
  userList(): Promise<M.AuthUserListResponse> {
    return this.call((c) => this.services.auth.userList({}, c));
  }
  userDelete(req: M.AuthUserDeleteRequest): Promise<M.AuthHeaderResponse> {
    return this.call((c) => this.services.auth.userDelete(req, c));
  }
  userChangePassword(req: M.AuthUserChangePasswordRequest): Promise<M.AuthHeaderResponse> {
    return this.call((c) => this.services.auth.userChangePassword(req, c));
  }
  userGrantRole(req: M.AuthUserGrantRoleRequest): Promise<M.AuthHeaderResponse> {
    return this.call((c) => this.services.auth.userGrantRole(req, c));
  }
  userRevokeRole(req: M.AuthUserRevokeRoleRequest): Promise<M.AuthHeaderResponse> {
    return this.call((c) => this.services.auth.userRevokeRole(req, c));
  }
  roleAdd(req: M.AuthRoleAddRequest): Promise<M.AuthHeaderResponse> {
    return this.call((c) => this.services.auth.roleAdd(req, c));
  }
  roleGet(req: M.AuthRoleGetRequest): Promise<M.AuthRoleGetResponse> {
    return this.call((c) => this.services.auth.roleGet(req, c));
  }
  roleList(): Promise<M.AuthRoleListResponse> {
    return this.call((c) => this.services.auth.roleList({}, c));
  }
  roleDelete(req: M.AuthRoleDeleteRequest): Promise<M.AuthHeaderResponse> {
    return this.call((c) => this.services.auth.roleDelete(req, c));
  }
  roleGrantPermission(req: Req<M.AuthRoleGrantPermissionRequest>): Promise<M.AuthHeaderResponse> {
    return this.call((c) => this.services.auth.roleGrantPermission(encode<M.AuthRoleGrantPermissionRequest>(req), c));
  }
  roleRevokePermission(req: Req<M.AuthRoleRevokePermissionRequest>): Promise<M.AuthHeaderResponse> {
    return this.call((c) => this.services.auth.roleRevokePermission(encode<M.AuthRoleRevokePermissionRequest>(req), c));
  }
}

/**
 * etcd's v3 API over one simulated member's services. Without `sim.client()`'s event-loop scheduler
 * (e.g. `new EtcdClient(server.services)`), stream responses arrive only at `flush()` / `advance()`.
 * @public
 */
export class EtcdClient {
  readonly kv: KVClient;
  readonly lease: LeaseClient;
  readonly maintenance: MaintenanceClient;
  readonly cluster: ClusterClient;
  readonly auth: AuthClient;
  /** v3lockpb.Lock. */
  readonly lock: LockClient;
  /** v3electionpb.Election. */
  readonly election: ElectionClient;
  private readonly streams = new Set<{ close(): void }>();
  private readonly session: Session = {};

  constructor(private readonly services: EtcdServices) {
    this.kv = new KVClient(services, this.session);
    this.lease = new LeaseClient(services, (s) => this.track(s), this.session);
    this.maintenance = new MaintenanceClient(services, this.session);
    this.cluster = new ClusterClient(services, this.session);
    this.auth = new AuthClient(services, this.session);
    this.lock = new LockClient(services, this.session);
    this.election = new ElectionClient(services, (s) => this.track(s), this.session);
  }

  /**
   * Auth.Authenticate; the token is kept and sent with every later call and stream of this client, as
   * a gRPC client sends it in the `token` metadata. Resolves with the token.
   */
  async authenticate(name: string, password: string): Promise<string> {
    const { token } = await this.auth.authenticate({ name, password });
    this.session.token = token;
    return token;
  }

  /** The token this client sends (undefined before authenticate()). */
  get token(): string | undefined {
    return this.session.token;
  }

  /** Opens one Watch call. */
  watch(): EtcdWatchStream {
    return this.track(new EtcdWatchStream(this.services.watch.watch(ctxOf(this.session))));
  }

  /** Closes every stream this client opened and has not seen end. */
  close(): void {
    for (const s of [...this.streams]) s.close();
  }

  private track<S extends EtcdWatchStream | EtcdKeepAliveStream | EtcdObserveStream>(s: S): S {
    this.streams.add(s);
    s.on('end', () => this.streams.delete(s));
    return s;
  }
}
