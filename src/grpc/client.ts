/**
 * A gRPC client for a real etcd (or `etcdsim serve`) over the same service interfaces as the simulator's
 * server layer, in the same message form (src/server/messages.ts): our protos loaded with proto-loader's
 * keepCase / longs String / enums String / defaults / oneofs. Unary methods return Promises that reject
 * with grpc-js's error (an `Error` with numeric `code`, `details`, `metadata`); Watch and LeaseKeepAlive
 * are bidirectional stream objects shaped like the server layer's WatchCall / KeepAliveCall: `write()`,
 * `onResponse()`, `onEnd()`, `end()`, `cancel()` (Election.Observe too, its writes ignored). Every call the
 * member answers is here, derived from the one list (src/server/member_calls.ts).
 *
 * So one workload object can run against `sim.services` (in-process, synchronous results wrapped in
 * Promises by the caller) or against this client. Like the services, every method takes an optional last
 * CallContext: its token travels as the `token` metadata, as etcd's clients send it.
 *
 * The grpc-js service constructors it dials with (etcdService) are exported too, for plain grpc-js clients:
 * the tests', the differential's and the shadow's.
 */
import { createRequire } from 'node:module';
import type * as grpc from '@grpc/grpc-js';
import { etcdPackageDefinition, SERVICE_PACKAGES, type CallName, type EtcdServiceName } from '../proto/index.js';
import {
  type AuthService,
  type BidiStream,
  type CallContext,
  type ClusterService,
  type ElectionService,
  type EndListener,
  type GrpcError,
  type KVService,
  type LeaseService,
  type LockService,
  type MaintenanceService,
  type Promised,
  type ResponseListener,
  memberCalls,
  type MemberCall,
} from '../server/index.js';
import type * as M from '../server/messages.js';
import { hostNow } from '../sim/index.js';

let loaded: typeof grpc | undefined;

/**
 * grpc-js, loaded on the first dial rather than with this file: the gRPC floor's index holds this client,
 * and `etcdsim serve` loads that index for serve() — a serving member never dials, and grpc-js would add
 * some 0.3 s to its start-up. The same module object an `import` would give: Node loads a package once.
 */
function grpcJs(): typeof grpc {
  loaded ??= createRequire(import.meta.url)('@grpc/grpc-js') as typeof grpc;
  return loaded;
}

let cachedObject: grpc.GrpcObject | undefined;

/**
 * etcd's API as a grpc-js package object: `.etcdserverpb.KV`, `.v3lockpb.Lock`, ... (loaded once). Here,
 * beside the client, and not in src/proto: it loads grpc-js, which a serving member never needs.
 * @public
 */
export function loadEtcdProtos(): grpc.GrpcObject {
  cachedObject ??= grpcJs().loadPackageDefinition(etcdPackageDefinition());
  return cachedObject;
}

/** A service constructor (for plain grpc-js clients): `new (etcdService('KV'))(address, creds)`. @public */
export function etcdService(name: EtcdServiceName): grpc.ServiceClientConstructor {
  const pkg = loadEtcdProtos()[SERVICE_PACKAGES[name]] as grpc.GrpcObject;
  return pkg[name] as grpc.ServiceClientConstructor;
}

/** A bidirectional call over gRPC: the server layer's own BidiStream shape (one stream abstraction). */
export type GrpcBidiCall<Req, Res> = BidiStream<Req, Res>;

/** KV over gRPC: KVService's methods (the one list of etcd's KV calls), each answering with a Promise. */
export type GrpcKVClient = Promised<KVService>;

/** Lease over gRPC: LeaseService's unary calls, and LeaseKeepAlive as a bidirectional stream. */
export type GrpcLeaseClient = Promised<Omit<LeaseService, 'leaseKeepAlive' | 'calls'>> & {
  leaseKeepAlive(ctx?: CallContext): GrpcBidiCall<M.LeaseKeepAliveRequest, M.LeaseKeepAliveResponse>;
};

export interface GrpcWatchClient {
  watch(ctx?: CallContext): GrpcBidiCall<M.WatchRequest, M.WatchResponse>;
}

/** Maintenance over gRPC: its calls the member answers, Snapshot's pieces collected into one array as the member answers it. */
export type GrpcMaintenanceClient = Promised<Pick<MaintenanceService, CallName<'Maintenance'> & keyof MaintenanceService>>;

/** Auth over gRPC: AuthService's methods, each answering with a Promise. */
export type GrpcAuthClient = Promised<AuthService>;

/** Cluster over gRPC: etcd's membership calls. */
export type GrpcClusterClient = Promised<Pick<ClusterService, CallName<'Cluster'> & keyof ClusterService>>;

/** v3lockpb.Lock over gRPC. */
export type GrpcLockClient = Promised<Pick<LockService, CallName<'Lock'>>>;

/** v3electionpb.Election over gRPC: its unary calls, and Observe as a stream of responses (its writes are ignored). */
export type GrpcElectionClient = Promised<Pick<ElectionService, Exclude<CallName<'Election'>, 'observe'>>> & {
  observe(req: M.LeaderRequest, ctx?: CallContext): GrpcBidiCall<never, M.LeaderResponse>;
};

/** etcd's services over one gRPC channel, in message form. */
export interface EtcdGrpcClient {
  readonly address: string;
  readonly kv: GrpcKVClient;
  readonly lease: GrpcLeaseClient;
  readonly watch: GrpcWatchClient;
  readonly maintenance: GrpcMaintenanceClient;
  readonly cluster: GrpcClusterClient;
  readonly auth: GrpcAuthClient;
  readonly lock: GrpcLockClient;
  readonly election: GrpcElectionClient;
  /** Cancels open streams and closes the channel. */
  close(): void;
}

export interface ConnectOptions {
  /** Deadline of each unary call in ms (default 10 s). */
  readonly deadlineMs?: number | undefined;
  /** TLS to the server (grpc-js's createSsl); default none. */
  readonly credentials?: grpc.ChannelCredentials | undefined;
}

type UnaryFn = (req: unknown, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: unknown) => void) => void;
type ServerStreamFn = (req: unknown, md: grpc.Metadata, opts?: grpc.CallOptions) => grpc.ClientReadableStream<unknown>;
type BidiFn = (md: grpc.Metadata) => grpc.ClientDuplexStream<unknown, unknown>;

/**
 * Connects (lazily, as grpc-js does) to `address` (`host:port`), without TLS unless `opts.credentials` say so.
 * Each service's table is the member's calls (src/server/member_calls.ts) by the wire's kind of each: a unary
 * RPC a Promise, a server stream the member answers in full (Snapshot) a Promise of every response, a
 * streaming call a stream object — so an RPC the member answers is a method here without being listed.
 */
export function connectEtcd(address: string, opts: ConnectOptions = {}): EtcdGrpcClient {
  const deadlineMs = opts.deadlineMs ?? 10_000;
  const creds = opts.credentials ?? grpcJs().credentials.createInsecure();
  const open = new Set<GrpcBidiCall<unknown, unknown>>();
  // One channel for every service: grpc-js shares the subchannel when the address and options match.
  const clients = new Map<string, grpc.Client>();
  const clientOf = (c: MemberCall): grpc.Client => {
    let client = clients.get(c.service);
    if (client === undefined) clients.set(c.service, (client = new (etcdService(c.service))(address, creds)));
    return client;
  };
  const method = <F>(client: grpc.Client, name: string): F => {
    const f = (client as unknown as Record<string, unknown>)[name];
    if (typeof f !== 'function') throw new Error(`etcd client: no method ${name}`);
    return (f as (...a: unknown[]) => unknown).bind(client) as F;
  };
  const track = (call: BidiCall<unknown, unknown>): BidiCall<unknown, unknown> => {
    open.add(call);
    call.onEnd(() => open.delete(call));
    return call;
  };
  const callOf = (c: MemberCall): ((...args: unknown[]) => unknown) => {
    const client = clientOf(c);
    if (c.requestStream) return (ctx?: unknown) => track(new BidiCall(method<BidiFn>(client, c.method)(metadata(ctx as CallContext | undefined))));
    if (c.kind === 'stream') return (req: unknown, ctx?: unknown) => track(new BidiCall(method<ServerStreamFn>(client, c.method)(req ?? {}, metadata(ctx as CallContext | undefined))));
    if (c.responseStream) {
      // Answered in full: every response of the stream, once it ends.
      return (req: unknown, ctx?: unknown) =>
        new Promise((resolve, reject) => {
          const out: unknown[] = [];
          const call = method<ServerStreamFn>(client, c.method)(req ?? {}, metadata(ctx as CallContext | undefined), { deadline: hostNow() + deadlineMs });
          call.on('data', (r: unknown) => out.push(r));
          call.on('error', reject);
          call.on('end', () => resolve(out));
        });
    }
    return (req: unknown, ctx?: unknown) =>
      new Promise((resolve, reject) => {
        method<UnaryFn>(client, c.method)(req ?? {}, metadata(ctx as CallContext | undefined), { deadline: hostNow() + deadlineMs }, (err, res) =>
          err ? reject(err) : resolve(res),
        );
      });
  };
  const services: Record<string, Record<string, unknown>> = {};
  for (const c of memberCalls()) (services[c.services] ??= {})[c.call] = callOf(c);
  return {
    ...(services as unknown as Omit<EtcdGrpcClient, 'address' | 'close'>),
    address,
    close() {
      for (const c of [...open]) c.cancel();
      for (const c of clients.values()) c.close();
    },
  };
}

/** The call's metadata: the caller's simple token as `token`, as etcd's clients send it. */
function metadata(ctx: CallContext | undefined): grpc.Metadata {
  const md = new (grpcJs().Metadata)();
  if (ctx?.token !== undefined) md.set('token', ctx.token);
  return md;
}

/** A streaming call over gRPC: bidirectional (Watch, LeaseKeepAlive), or a server stream whose writes are ignored (Observe). */
class BidiCall<Req, Res> implements GrpcBidiCall<Req, Res> {
  private listener: ResponseListener<Res> | undefined;
  private readonly buffered: Res[] = [];
  private readonly endListeners: EndListener[] = [];
  private endedWith: { err: GrpcError | undefined } | undefined;
  private cancelled = false;

  constructor(private readonly call: grpc.ClientDuplexStream<Req, Res> | grpc.ClientReadableStream<Res>) {
    call.on('data', (res: Res) => {
      if (this.listener !== undefined) this.listener([res]);
      else this.buffered.push(res);
    });
    call.on('error', (err: grpc.ServiceError) => {
      this.finish(this.cancelled && err.code === grpcJs().status.CANCELLED ? undefined : (err as unknown as GrpcError));
    });
    call.on('end', () => this.finish(undefined));
  }

  get ended(): boolean {
    return this.endedWith !== undefined;
  }

  write(req: Req): void {
    if (this.ended || !('write' in this.call)) return;
    this.call.write(req);
  }

  onResponse(listener: ResponseListener<Res> | undefined): void {
    this.listener = listener;
    if (listener !== undefined && this.buffered.length > 0) listener(this.buffered.splice(0));
  }

  onEnd(listener: EndListener): void {
    if (this.endedWith !== undefined) listener(this.endedWith.err);
    else this.endListeners.push(listener);
  }

  end(): void {
    if (!this.ended && 'end' in this.call) this.call.end();
  }

  cancel(): void {
    if (this.ended) return;
    this.cancelled = true;
    this.call.cancel();
  }

  private finish(err: GrpcError | undefined): void {
    if (this.endedWith !== undefined) return;
    this.endedWith = { err };
    for (const l of this.endListeners.splice(0)) l(err);
  }
}
