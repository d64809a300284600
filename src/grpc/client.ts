/**
 * A gRPC client for a real etcd (or `etcdsim serve`) over the same service interfaces as the simulator's
 * server layer, in the same message form (src/server/messages.ts): our protos loaded with proto-loader's
 * keepCase / longs String / enums String / defaults / oneofs. Unary methods return Promises that reject
 * with grpc-js's error (an `Error` with numeric `code`, `details`, `metadata`); Watch and LeaseKeepAlive
 * are bidirectional stream objects shaped like the server layer's WatchCall / KeepAliveCall: `write()`,
 * `onResponse()`, `onEnd()`, `end()`, `cancel()`.
 *
 * So one workload object can run against `sim.services` (in-process, synchronous results wrapped in
 * Promises by the caller) or against this client. Like the services, every method takes an optional last
 * CallContext: its token travels as the `token` metadata, as etcd's clients send it.
 */
import * as grpc from '@grpc/grpc-js';
import { etcdService } from '../proto/index.js';
import type { CallContext } from '../server/call_context.js';
import type { GrpcError } from '../server/errors.js';
import type { BidiStream, EndListener, ResponseListener } from '../server/stream_call.js';
import type * as M from '../server/messages.js';
import { serviceMethods, type Promised } from '../server/answers.js';
import { AuthService, KVService, LeaseService, type ClusterService, type MaintenanceService } from '../server/index.js';
import { hostNow } from '../sim/index.js';

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

/** The Maintenance calls a workload asks a real etcd for (the rest are operators' tools). */
export type GrpcMaintenanceClient = Promised<Pick<MaintenanceService, 'status' | 'hashKV'>>;

/** Auth over gRPC: AuthService's methods, each answering with a Promise. */
export type GrpcAuthClient = Promised<AuthService>;

/** Cluster over gRPC: MemberList only. */
export type GrpcClusterClient = Promised<Pick<ClusterService, 'memberList'>>;

/** etcd's services over one gRPC channel, in message form. */
export interface EtcdGrpcClient {
  readonly address: string;
  readonly kv: GrpcKVClient;
  readonly lease: GrpcLeaseClient;
  readonly watch: GrpcWatchClient;
  readonly maintenance: GrpcMaintenanceClient;
  readonly cluster: GrpcClusterClient;
  readonly auth: GrpcAuthClient;
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
type BidiFn = (md: grpc.Metadata) => grpc.ClientDuplexStream<unknown, unknown>;

/** Connects (lazily, as grpc-js does) to `address` (`host:port`), without TLS unless `opts.credentials` say so. */
export function connectEtcd(address: string, opts: ConnectOptions = {}): EtcdGrpcClient {
  const deadlineMs = opts.deadlineMs ?? 10_000;
  const creds = opts.credentials ?? grpc.credentials.createInsecure();
  // One channel for every service: grpc-js shares the subchannel when the address and options match.
  const kvc = new (etcdService('KV'))(address, creds);
  const leasec = new (etcdService('Lease'))(address, creds);
  const watchc = new (etcdService('Watch'))(address, creds);
  const maintc = new (etcdService('Maintenance'))(address, creds);
  const clusterc = new (etcdService('Cluster'))(address, creds);
  const authc = new (etcdService('Auth'))(address, creds);
  const clients = [kvc, leasec, watchc, maintc, clusterc, authc];
  const open = new Set<GrpcBidiCall<unknown, unknown>>();

  const method = <F>(client: grpc.Client, name: string): F => {
    const f = (client as unknown as Record<string, unknown>)[name];
    if (typeof f !== 'function') throw new Error(`etcd client: no method ${name}`);
    return (f as (...a: unknown[]) => unknown).bind(client) as F;
  };
  const unary =
    <Req, Res>(client: grpc.Client, name: string) =>
    (req: Req, ctx?: CallContext): Promise<Res> =>
      new Promise<Res>((resolve, reject) => {
        method<UnaryFn>(client, name)(req ?? {}, metadata(ctx), { deadline: hostNow() + deadlineMs }, (err, res) =>
          err ? reject(err) : resolve(res as Res),
        );
      });
  const bidi = <Req, Res>(client: grpc.Client, name: string, ctx: CallContext | undefined): GrpcBidiCall<Req, Res> => {
    const call = new BidiCall<Req, Res>(method<BidiFn>(client, name)(metadata(ctx)) as grpc.ClientDuplexStream<Req, Res>);
    open.add(call as GrpcBidiCall<unknown, unknown>);
    call.onEnd(() => open.delete(call as GrpcBidiCall<unknown, unknown>));
    return call;
  };
  // A service's unary calls, one per etcd call its class in the server layer answers: the RPC's name is the
  // method's capitalised (range → Range, leaseGrant → LeaseGrant, hashKV → HashKV).
  const unaryMethods = <S>(client: grpc.Client, service: { readonly prototype: object }, except: readonly string[] = []): Promised<S> => {
    const out: Record<string, unknown> = {};
    for (const name of serviceMethods(service, except)) out[name] = unary(client, name[0]!.toUpperCase() + name.slice(1));
    return out as Promised<S>;
  };

  return {
    address,
    kv: unaryMethods<KVService>(kvc, KVService),
    lease: {
      ...unaryMethods<Omit<LeaseService, 'leaseKeepAlive' | 'calls'>>(leasec, LeaseService, ['leaseKeepAlive', 'calls']),
      leaseKeepAlive: (ctx?: CallContext) => bidi(leasec, 'LeaseKeepAlive', ctx),
    },
    watch: { watch: (ctx?: CallContext) => bidi(watchc, 'Watch', ctx) },
    maintenance: {
      status: unary<M.StatusRequest | undefined, M.StatusResponse>(maintc, 'Status'),
      hashKV: unary(maintc, 'HashKV'),
    },
    cluster: { memberList: unary<M.MemberListRequest | undefined, M.MemberListResponse>(clusterc, 'MemberList') },
    auth: unaryMethods<AuthService>(authc, AuthService),
    close() {
      for (const c of [...open]) c.cancel();
      for (const c of clients) c.close();
    },
  };
}

/** The call's metadata: the caller's simple token as `token`, as etcd's clients send it. */
function metadata(ctx: CallContext | undefined): grpc.Metadata {
  const md = new grpc.Metadata();
  if (ctx?.token !== undefined) md.set('token', ctx.token);
  return md;
}

class BidiCall<Req, Res> implements GrpcBidiCall<Req, Res> {
  private listener: ResponseListener<Res> | undefined;
  private readonly buffered: Res[] = [];
  private readonly endListeners: EndListener[] = [];
  private endedWith: { err: GrpcError | undefined } | undefined;
  private cancelled = false;

  constructor(private readonly call: grpc.ClientDuplexStream<Req, Res>) {
    call.on('data', (res: Res) => {
      if (this.listener !== undefined) this.listener([res]);
      else this.buffered.push(res);
    });
    call.on('error', (err: grpc.ServiceError) => {
      this.finish(this.cancelled && err.code === grpc.status.CANCELLED ? undefined : (err as unknown as GrpcError));
    });
    call.on('end', () => this.finish(undefined));
  }

  get ended(): boolean {
    return this.endedWith !== undefined;
  }

  write(req: Req): void {
    if (this.ended) return;
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
    if (!this.ended) this.call.end();
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
