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
 * Here: the eight services' clients, derived rather than written out — each method a .proto declares
 * (src/proto/generated/services.ts) that the member's service class answers, typed from the class's
 * signature — so an RPC added to a .proto and its service class reaches the raw client by itself; the streams
 * are raw_streams.ts, the text keys text_keys.ts.
 */
import { Buffer } from '../sim/index.js';
import { toGrpcError, type CallContext, type EtcdServices, type StreamCall, type WaitingCallContext, tokenApplied } from '../server/index.js';
// calls.ts, not proto's index: the simulator (and the playground's page) reads no .proto file.
import { callNameOf, SERVICE_DECLARATIONS, type CallName, type EtcdServiceName } from '../proto/calls.js';
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
async function unaryAs<T, C extends CallContext>(services: EtcdServices, ctx: C, fn: (ctx: C) => T): Promise<T> {
  const held = tokenApplied(services, ctx);
  if (held !== undefined) await held;
  return unary(() => fn(ctx));
}

/** The caller's credentials, shared by an EtcdClient's service clients (what gRPC metadata carries). @public */
export interface Session {
  token?: string | undefined;
}

const ctxOf = (session: Session): CallContext => (session.token === undefined ? {} : { token: session.token });

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
 * A call of the member's service class as the client offers it: the request (optional where the class
 * gives it a default) with text allowed in its bytes fields, a Promise of the answer; a call that waits (its
 * context takes an AbortSignal: Lock, Campaign) also takes WaitOptions.
 * @public
 */
export type ClientCall<F> = F extends (req: infer Q, ...rest: infer Rest) => infer R
  ? (...args: [...([] extends Parameters<F> ? [req?: Req<Q>] : [req: Req<Q>]), ...(Rest extends [] ? [] : 'signal' extends keyof NonNullable<Rest[0]> ? [opts?: WaitOptions] : [])]) => Promise<Awaited<R>>
  : never;

/**
 * The unary calls of service `N` (`KV`) on its service class `C`: every method its .proto declares that the
 * class answers (src/proto's CallName), but the streams, which a client opens with a method of its own.
 * @public
 */
export type ServiceClient<C, N extends EtcdServiceName> = {
  readonly [K in CallName<N> & keyof C as C[K] extends (...args: never[]) => StreamCall<infer _> ? never : K]: ClientCall<C[K]>;
};

/** etcdserverpb.KV. @public */
export interface KVClient extends ServiceClient<EtcdServices['kv'], 'KV'> {}

/** etcdserverpb.Lease, with its RPC names (LeaseGrant → leaseGrant), as `sim.services.lease` has them. @public */
export interface LeaseClient extends ServiceClient<EtcdServices['lease'], 'Lease'> {
  /** Opens one LeaseKeepAlive call. */
  leaseKeepAlive(): EtcdKeepAliveStream;
}

/**
 * etcdserverpb.Maintenance. MoveLeader is answered by the leader (a single member is its own leader);
 * Snapshot, a server stream, answers all its responses at once: the simulator's is one token response (see
 * MaintenanceService). @public
 */
export interface MaintenanceClient extends ServiceClient<EtcdServices['maintenance'], 'Maintenance'> {}

/** etcdserverpb.Cluster (on a simulated cluster its changes are Raft conf changes, as etcd's). @public */
export interface ClusterClient extends ServiceClient<EtcdServices['cluster'], 'Cluster'> {}

/** etcdserverpb.Auth (method names as etcd's, lower camel case). @public */
export interface AuthClient extends ServiceClient<EtcdServices['auth'], 'Auth'> {}

/** v3lockpb.Lock: `lock` resolves once the lock is held (`key` is the ownership key); `opts.signal` stops waiting. @public */
export interface LockClient extends ServiceClient<EtcdServices['lock'], 'Lock'> {}

/**
 * v3electionpb.Election: `campaign` resolves once this candidate leads; `opts.signal` stops waiting (the
 * candidate then resigns). @public
 */
export interface ElectionClient extends ServiceClient<EtcdServices['election'], 'Election'> {
  /** Opens one Observe call: the leader now (once there is one) and every change after. */
  observe(req: Req<M.LeaderRequest>): EtcdObserveStream;
}

/** Calls sent without the session's token, and so never held for its index: etcd reads no token for them. */
const WITHOUT_TOKEN: ReadonlySet<string> = new Set(['Auth/Authenticate', 'Lease/LeaseLeases', 'Cluster/MemberList']);

/**
 * Service `name`'s unary calls over `services`, one per method its .proto declares that the member's service
 * answers (src/proto/generated/services.ts): a stream call among them is replaced by the caller's own method.
 * Each call holds for the session's token (unaryAs), and sends its bytes fields' text as UTF-8.
 */
function serviceClient(services: EtcdServices, session: Session, name: EtcdServiceName): Record<string, unknown> {
  const key = name.toLowerCase() as keyof EtcdServices;
  // Read at each call, as `services.kv.put(...)` would: `services` may hand out another member's services later.
  const service = (): Record<string, (req: unknown, ctx?: WaitingCallContext) => unknown> => services[key] as unknown as Record<string, (req: unknown, ctx?: WaitingCallContext) => unknown>;
  const encodeRequest: (req: Req<unknown>) => unknown = key === 'lock' || key === 'election' ? encodeConcurrency : encode;
  const client: Record<string, unknown> = {};
  for (const method of Object.keys(SERVICE_DECLARATIONS[name])) {
    const call = callNameOf(method);
    if (typeof service()[call] !== 'function') continue;
    client[call] = WITHOUT_TOKEN.has(`${name}/${method}`)
      ? (req: Req<unknown> = {}) => unary(() => service()[call]!(encodeRequest(req)))
      : (req: Req<unknown> = {}, opts?: WaitOptions) => unaryAs(services, waitCtxOf(session, opts), (ctx) => service()[call]!(encodeRequest(req), ctx));
  }
  return client;
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
    const session = this.session;
    this.kv = serviceClient(services, session, 'KV') as KVClient;
    this.lease = {
      ...serviceClient(services, session, 'Lease'),
      leaseKeepAlive: () => this.track(new EtcdKeepAliveStream(services.lease.leaseKeepAlive(ctxOf(session)))),
    } as LeaseClient;
    this.maintenance = serviceClient(services, session, 'Maintenance') as MaintenanceClient;
    this.cluster = serviceClient(services, session, 'Cluster') as ClusterClient;
    this.auth = serviceClient(services, session, 'Auth') as AuthClient;
    this.lock = serviceClient(services, session, 'Lock') as LockClient;
    this.election = {
      ...serviceClient(services, session, 'Election'),
      observe: (req: Req<M.LeaderRequest>) => {
        const call = (() => {
          try {
            return services.election.observe(encodeConcurrency<M.LeaderRequest>(req), ctxOf(session));
          } catch (err) {
            throw toGrpcError(err);
          }
        })();
        return this.track(new EtcdObserveStream(call));
      },
    } as ElectionClient;
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
