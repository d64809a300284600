/**
 * Server mode: etcd's v3 gRPC API on a real port, served by @grpc/grpc-js over one EtcdServer (src/server).
 * Every method maps to the service layer in proto-loader's message form (keepCase, longs and enums as
 * strings, defaults, oneofs), so the services' answers go on the wire unchanged and any etcd client —
 * etcdctl, etcd3, Go's clientv3, jetcd — talks to the simulator as to a single-member etcd.
 *
 * Streams: Watch and LeaseKeepAlive pipe requests into a WatchCall / KeepAliveCall and their responses
 * out; a client that half-closes ends the call, one that cancels or disconnects cancels it — either way
 * every watcher / keep-alive of the call is released. Methods the simulator does not model (membership
 * changes, MoveLeader, Downgrade, Hash) answer UNIMPLEMENTED, as grpc-js does for any method a
 * service leaves out. A message larger than max request bytes + 512 KiB is refused with RESOURCE_EXHAUSTED
 * by grpc-js before it reaches a service (etcd's receive limit).
 */
import { fileURLToPath } from 'node:url';
import { isIP } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { EtcdServer, toGrpcError, type CallContext, type EndListener, type EtcdServerOptions, type GrpcError, type ResponseListener } from '../server/index.js';
import type * as M from '../server/messages.js';
import { encodeDeleteRangeResponse, encodePutResponse, encodeRangeResponse, encodeTxnResponse, encodeWatchResponse } from './codec.js';
import { RealClock, type Clock } from '../sim/index.js';

/** Where our .proto files live (etcdserverpb/rpc.proto imports mvccpb/kv.proto and authpb/auth.proto). */
export const PROTO_DIR = fileURLToPath(new URL('./proto/', import.meta.url));

/** The options every etcdsim gRPC peer (server and test clients) loads the protos with. */
export const PROTO_LOADER_OPTIONS: protoLoader.Options = Object.freeze({
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_DIR],
});

/** etcd's default --max-request-bytes (1.5 MiB) and the gRPC overhead etcd adds to its receive limit. */
export const DEFAULT_MAX_REQUEST_BYTES = 1.5 * 1024 * 1024;
export const GRPC_OVERHEAD_BYTES = 512 * 1024;

/** What the Watch and LeaseKeepAlive front doors need of a service-layer stream call. */
interface StreamCall<Req, Res> {
  write(req: Req): void;
  onResponse(listener: ResponseListener<Res> | undefined): void;
  onEnd(listener: EndListener): void;
  end(): void;
  cancel(): void;
  abort(err?: GrpcError): void;
  pause(): void;
  resume(): void;
  readonly isPaused: boolean;
  listenerBatch: number;
}

let cachedDefinition: grpc.GrpcObject | undefined;

/** etcd's API as a grpc-js package object: `.etcdserverpb.KV`, `.Watch`, ... (loaded once). */
export function loadEtcdProtos(): grpc.GrpcObject {
  cachedDefinition ??= grpc.loadPackageDefinition(protoLoader.loadSync('etcdserverpb/rpc.proto', PROTO_LOADER_OPTIONS));
  return cachedDefinition;
}

/** A service constructor of the etcdserverpb package (for servers' addService and for raw clients). */
export function etcdService(name: 'KV' | 'Watch' | 'Lease' | 'Cluster' | 'Maintenance' | 'Auth'): grpc.ServiceClientConstructor {
  const pkg = loadEtcdProtos()['etcdserverpb'] as grpc.GrpcObject;
  return pkg[name] as grpc.ServiceClientConstructor;
}

export interface TlsOptions {
  /** PEM server certificate chain. */
  readonly cert: string | Buffer;
  /** PEM private key. */
  readonly key: string | Buffer;
  /**
   * PEM CA bundle (etcd's --trusted-ca-file). As in etcd (3.4 through 3.7), giving it alone already makes
   * clients present a certificate it signed: a client without one fails the TLS handshake.
   */
  readonly ca?: string | Buffer | undefined;
  /**
   * etcd's --client-cert-auth: require a client certificate even without `ca` (then verified against the
   * system's roots, as etcd verifies against Go's), and, while auth is enabled, take a call without a token
   * as made by the user its certificate's Common Name names (EtcdServerOptions.clientCertAuth). With `ca`
   * alone the certificate is required but its CN is ignored, as in etcd.
   */
  readonly clientCertAuth?: boolean | undefined;
}

export interface ServeOptions extends Omit<EtcdServerOptions, 'clock' | 'clientCertAuth'> {
  /** Interface to bind (default 127.0.0.1). Anything but loopback needs `allowNonLoopback`. */
  readonly host?: string | undefined;
  /** Port (default 2379; 0 picks a free port). */
  readonly port?: number | undefined;
  readonly allowNonLoopback?: boolean | undefined;
  /** Time source (default: the wall clock, accelerated by `clockSpeed`). Pass a VirtualClock to drive time from a test. */
  readonly clock?: Clock | undefined;
  /** Simulated seconds per wall-clock second (default 1). Ignored when `clock` is given. */
  readonly clockSpeed?: number | undefined;
  readonly tls?: TlsOptions | undefined;
}

export type StreamMethod = 'Watch' | 'LeaseKeepAlive';
/** How a stream call ended: the client half-closed, the client canceled or went away, or the server aborted it. */
export type StreamEndReason = 'end' | 'cancelled' | 'aborted';
export interface StreamEndInfo {
  readonly method: StreamMethod;
  readonly reason: StreamEndReason;
}

export interface ServeHandle {
  /** `http://host:port` (or https with TLS): what to give a client as its endpoint. */
  readonly endpoint: string;
  /** `host:port`, for clients that take an address. */
  readonly address: string;
  readonly port: number;
  /** The simulated member: its clock, store, lessor, watchable store and services (fault hooks: services.watch.calls()). */
  readonly server: EtcdServer;
  /** Watch and keep-alive calls currently open over the network. */
  readonly openStreams: number;
  /** Calls `listener` whenever a stream call ends (after its watchers / keep-alives are released); returns an unsubscribe. */
  onStreamEnd(listener: (info: StreamEndInfo) => void): () => void;
  /** Ends every open stream, stops listening and stops the member's timers. Idempotent. */
  close(): Promise<void>;
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

/** Whether `host` names only the local machine (localhost, 127.0.0.0/8, ::1). */
export function isLoopback(host: string): boolean {
  if (LOOPBACK_NAMES.has(host)) return true;
  return isIP(host) === 4 && host.startsWith('127.');
}

/** Starts a simulated etcd member on a gRPC port; resolves once it accepts connections. */
export async function serve(opts: ServeOptions = {}): Promise<ServeHandle> {
  const host = opts.host ?? '127.0.0.1';
  const port = opts.port ?? 2379;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new RangeError(`serve: port must be 0..65535, got ${port}`);
  if (!isLoopback(host) && opts.allowNonLoopback !== true) {
    throw new Error(`serve: refusing to bind ${host}: not a loopback address (allow it explicitly with allowNonLoopback / --allow-non-loopback)`);
  }
  const maxRequestBytes = opts.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
  const ownClock = opts.clock === undefined;
  const clock: Clock =
    opts.clock ?? new RealClock({ unref: true, speed: opts.clockSpeed ?? 1 });

  const grpcServer = new grpc.Server({
    'grpc.max_receive_message_length': maxRequestBytes + GRPC_OVERHEAD_BYTES,
    'grpc.max_send_message_length': -1,
    // etcdctl pings every 2 s (--keepalive-time); accept that instead of answering GOAWAY too_many_pings.
    'grpc.http2.min_ping_interval_without_data_ms': 1000,
    'grpc.keepalive_permit_without_calls': 1,
  });
  const state: { server: EtcdServer | undefined } = { server: undefined };
  const member = (): EtcdServer => {
    if (state.server === undefined) throw new Error('etcdsim: request before the member started');
    return state.server;
  };
  const open = new Set<{ abort(): void }>();
  const endListeners = new Set<(info: StreamEndInfo) => void>();
  const streamEnded = (info: StreamEndInfo): void => {
    for (const l of [...endListeners]) l(info);
  };

  // The certificate is read only when its CN can matter (the member ignores it otherwise anyway).
  const readCommonName = opts.tls?.clientCertAuth === true;
  const callContext = (call: CallSurface): CallContext => contextOf(call, readCommonName);
  const unary = <Req, Res>(fn: (req: Req, ctx: CallContext) => Res): grpc.handleUnaryCall<Req, Res> => unaryHandler(fn, callContext);
  const serverStream = <Req, Res>(fn: (req: Req, ctx: CallContext) => Res[]): grpc.handleServerStreamingCall<Req, Res> =>
    serverStreamHandler(fn, callContext);

  const stream = <Req, Res>(
    method: StreamMethod,
    openCall: (ctx: CallContext) => StreamCall<Req, Res>,
    encode?: (r: Res) => Buffer,
  ): grpc.handleBidiStreamingCall<Req, Res> => {
    return (call) => {
      const sc = openCall(callContext(call));
      open.add(sc);
      let clientGone = false;
      let reason: StreamEndReason = 'aborted';
      const resume = (): void => sc.resume();
      if (encode === undefined) {
        // Respect grpc-js's backpressure: stop taking responses once it buffers past its high-water mark.
        sc.onResponse((rs) => {
          let more = true;
          for (const r of rs) more = call.write(r);
          if (!more && !sc.isPaused) {
            sc.pause();
            call.once('drain', resume);
          }
        });
      } else {
        // etcd's send loop blocks in Send while grpc-go's per-stream write quota (64 KiB) is used up; the
        // quota comes back as the transport puts bytes on the wire, within the client's HTTP/2 window. So
        // here: responses are encoded as they are taken, one at a time, and the call stops taking once
        // WRITE_QUOTA bytes are written and not yet flushed; what a client does not read then waits in
        // the stream's window and channel, and its watchers become victims, as in etcd.
        let unflushed = 0;
        const flushed = (bytes: number) => (): void => {
          unflushed -= bytes;
          if (unflushed < WRITE_QUOTA && sc.isPaused) resume();
        };
        sc.listenerBatch = 1;
        sc.onResponse((rs) => {
          for (const r of rs) {
            const buf = encode(r);
            unflushed += buf.byteLength;
            call.write(buf as unknown as Res, flushed(buf.byteLength));
          }
          if (unflushed >= WRITE_QUOTA) sc.pause();
        });
      }
      sc.onEnd((err) => {
        open.delete(sc);
        if (!clientGone) {
          if (err === undefined) call.end();
          else call.emit('error', statusError(err));
        }
        streamEnded({ method, reason });
      });
      call.on('data', (req: Req) => {
        try {
          sc.write(req);
        } catch (err) {
          sc.abort(toGrpcError(err));
        }
      });
      call.on('end', () => {
        // A cancel also ends the request stream, and grpc-js may report the end first: decide on the next turn.
        setImmediate(() => {
          if (clientGone) return;
          if (call.cancelled) {
            clientGone = true;
            reason = 'cancelled';
            sc.cancel();
            return;
          }
          reason = 'end';
          sc.end();
        });
      });
      call.on('cancelled', () => {
        clientGone = true;
        reason = 'cancelled';
        sc.cancel();
      });
      call.on('error', () => {
        // A write failed or we emitted the call's final error: the call is over either way.
        clientGone = true;
        sc.cancel();
      });
    };
  };

  grpcServer.addService(withEncoders(etcdService('KV').service, KV_ENCODERS), {
    Range: unary((req: M.RangeRequest, ctx) => member().services.kv.range(req, ctx)),
    Put: unary((req: M.PutRequest, ctx) => member().services.kv.put(req, ctx)),
    DeleteRange: unary((req: M.DeleteRangeRequest, ctx) => member().services.kv.deleteRange(req, ctx)),
    Txn: unary((req: M.TxnRequest, ctx) => member().services.kv.txn(req, ctx)),
    Compact: unary((req: M.CompactionRequest, ctx) => member().services.kv.compact(req, ctx)),
    RangeStream: serverStream((req: M.RangeRequest, ctx) => rangeStream(member().services.kv.range(req, ctx))),
  } satisfies grpc.UntypedServiceImplementation);
  grpcServer.addService(withEncoders(etcdService('Watch').service, WATCH_ENCODERS), {
    Watch: stream<M.WatchRequest, M.WatchResponse>(
      'Watch',
      (ctx) => {
        const call = member().services.watch.watch(ctx);
        // The handler's write quota is this stream's transport window: the send loop hands responses
        // straight to it, and the channel of 128 is the only buffer before it, as in etcd.
        call.stream.windowBytes = 0;
        return call;
      },
      encodeWatchResponse,
    ),
  });
  grpcServer.addService(etcdService('Lease').service, {
    LeaseGrant: unary((req: M.LeaseGrantRequest, ctx) => member().services.lease.leaseGrant(req, ctx)),
    LeaseRevoke: unary((req: M.LeaseRevokeRequest, ctx) => member().services.lease.leaseRevoke(req, ctx)),
    LeaseTimeToLive: unary((req: M.LeaseTimeToLiveRequest, ctx) => member().services.lease.leaseTimeToLive(req, ctx)),
    LeaseLeases: unary((req: M.LeaseLeasesRequest) => member().services.lease.leaseLeases(req)),
    LeaseKeepAlive: stream<M.LeaseKeepAliveRequest, M.LeaseKeepAliveResponse>('LeaseKeepAlive', (ctx) => member().services.lease.leaseKeepAlive(ctx)),
  });
  grpcServer.addService(etcdService('Cluster').service, {
    MemberList: unary((req: M.MemberListRequest) => member().services.cluster.memberList(req)),
  });
  grpcServer.addService(etcdService('Maintenance').service, {
    Status: unary((req: M.StatusRequest, ctx) => member().services.maintenance.status(req, ctx)),
    HashKV: unary((req: M.HashKVRequest, ctx) => member().services.maintenance.hashKV(req, ctx)),
    Defragment: unary((req: M.DefragmentRequest, ctx) => member().services.maintenance.defragment(req, ctx)),
    Alarm: unary((req: M.AlarmRequest, ctx) => member().services.maintenance.alarm(req, ctx)),
    Snapshot: serverStream((req: M.SnapshotRequest, ctx) => member().services.maintenance.snapshot(req, ctx)),
  });
  const auth = () => member().services.auth;
  grpcServer.addService(etcdService('Auth').service, {
    AuthEnable: unary((req: M.AuthEnableRequest, ctx) => auth().authEnable(req, ctx)),
    AuthDisable: unary((req: M.AuthDisableRequest, ctx) => auth().authDisable(req, ctx)),
    AuthStatus: unary((req: M.AuthStatusRequest, ctx) => auth().authStatus(req, ctx)),
    Authenticate: unary((req: M.AuthenticateRequest, ctx) => auth().authenticate(req, ctx)),
    UserAdd: unary((req: M.AuthUserAddRequest, ctx) => auth().userAdd(req, ctx)),
    UserGet: unary((req: M.AuthUserGetRequest, ctx) => auth().userGet(req, ctx)),
    UserList: unary((req: M.AuthUserListRequest, ctx) => auth().userList(req, ctx)),
    UserDelete: unary((req: M.AuthUserDeleteRequest, ctx) => auth().userDelete(req, ctx)),
    UserChangePassword: unary((req: M.AuthUserChangePasswordRequest, ctx) => auth().userChangePassword(req, ctx)),
    UserGrantRole: unary((req: M.AuthUserGrantRoleRequest, ctx) => auth().userGrantRole(req, ctx)),
    UserRevokeRole: unary((req: M.AuthUserRevokeRoleRequest, ctx) => auth().userRevokeRole(req, ctx)),
    RoleAdd: unary((req: M.AuthRoleAddRequest, ctx) => auth().roleAdd(req, ctx)),
    RoleGet: unary((req: M.AuthRoleGetRequest, ctx) => auth().roleGet(req, ctx)),
    RoleList: unary((req: M.AuthRoleListRequest, ctx) => auth().roleList(req, ctx)),
    RoleDelete: unary((req: M.AuthRoleDeleteRequest, ctx) => auth().roleDelete(req, ctx)),
    RoleGrantPermission: unary((req: M.AuthRoleGrantPermissionRequest, ctx) => auth().roleGrantPermission(req, ctx)),
    RoleRevokePermission: unary((req: M.AuthRoleRevokePermissionRequest, ctx) => auth().roleRevokePermission(req, ctx)),
  });

  const credentials =
    opts.tls === undefined
      ? grpc.ServerCredentials.createInsecure()
      : grpc.ServerCredentials.createSsl(
          opts.tls.ca === undefined ? null : Buffer.from(opts.tls.ca),
          [{ private_key: Buffer.from(opts.tls.key), cert_chain: Buffer.from(opts.tls.cert) }],
          opts.tls.ca !== undefined || opts.tls.clientCertAuth === true,
        );
  const hostPart = isIP(host) === 6 ? `[${host}]` : host;
  const boundPort = await new Promise<number>((resolve, reject) => {
    grpcServer.bindAsync(`${hostPart}:${port}`, credentials, (err, p) => (err ? reject(err) : resolve(p)));
  });
  const scheme = opts.tls === undefined ? 'http' : 'https';
  const address = `${hostPart}:${boundPort}`;
  const endpoint = `${scheme}://${address}`;

  const { host: _h, port: _p, allowNonLoopback: _a, clock: _c, clockSpeed: _s, tls: _t, ...serverOpts } = opts;
  const server = new EtcdServer({
    ...serverOpts,
    clock,
    clientUrls: opts.clientUrls ?? [endpoint],
    clientCertAuth: opts.tls?.clientCertAuth === true,
  });
  server.delivery.setScheduler((flush) => queueMicrotask(flush));
  state.server = server;

  let closing: Promise<void> | undefined;
  return {
    endpoint,
    address,
    port: boundPort,
    server,
    get openStreams() {
      return open.size;
    },
    onStreamEnd(listener) {
      endListeners.add(listener);
      return () => endListeners.delete(listener);
    },
    close() {
      closing ??= (async () => {
        for (const c of [...open]) c.abort();
        await new Promise<void>((resolve) => {
          grpcServer.tryShutdown(() => resolve());
          // Clients that keep connections open must not hold the shutdown: force it on the next turn.
          setImmediate(() => grpcServer.forceShutdown());
        });
        server.delivery.setScheduler(undefined);
        server.close();
        if (ownClock && clock instanceof RealClock) clock.close();
      })();
      return closing;
    },
  };
}

const KV_ENCODERS: Readonly<Record<string, (r: never) => Buffer>> = {
  Range: encodeRangeResponse,
  Put: encodePutResponse,
  DeleteRange: encodeDeleteRangeResponse,
  Txn: encodeTxnResponse,
};
/** Watch responses are encoded by the stream handler (it counts their bytes); grpc-js passes them through. */
const WATCH_ENCODERS: Readonly<Record<string, (r: never) => Buffer>> = { Watch: (r: Buffer) => r };

/** grpc-go's per-stream write quota (defaultWriteQuota): what Send accepts before it blocks. */
const WRITE_QUOTA = 64 * 1024;

/** `def` with the bulk responses encoded by src/grpc/codec.ts instead of proto-loader (the same messages on the wire, less work). */
function withEncoders(def: grpc.ServiceDefinition, encoders: Readonly<Record<string, (r: never) => Buffer>>): grpc.ServiceDefinition {
  const out: Record<string, grpc.MethodDefinition<unknown, unknown>> = { ...def };
  for (const [method, encode] of Object.entries(encoders)) {
    const m = def[method];
    if (m === undefined) throw new Error(`etcdsim: no method ${method} to encode`);
    out[method] = { ...m, responseSerialize: encode as (r: unknown) => Buffer };
  }
  return out;
}

/** A service error as grpc-js sends it: status code and details (no trailing metadata). */
function statusError(err: { code: number; details: string }): grpc.ServerErrorResponse {
  return Object.assign(new Error(err.details), { code: err.code, details: err.details });
}

/** What every kind of grpc-js server call offers: its metadata and its transport's auth context. */
type CallSurface = Pick<grpc.ServerUnaryCall<unknown, unknown>, 'metadata' | 'getAuthContext'>;

/**
 * The caller of a call: etcd reads the simple token from the `token` metadata (or `authorization`) and,
 * when `withCommonName`, the Common Name of the client certificate — only of one the TLS handshake
 * verified (grpc-js reports no certificate otherwise, as Go's VerifiedChains is then empty), and not for a
 * request that came through etcd's gRPC gateway (metadata `grpcgateway-accept`: etcd ignores the CN then).
 */
function contextOf(call: CallSurface, withCommonName: boolean): CallContext {
  const md = call.metadata;
  const v = md.get('token')[0] ?? md.get('authorization')[0];
  const token = v === undefined ? undefined : typeof v === 'string' ? v : v.toString('utf8');
  const cn = withCommonName && md.get('grpcgateway-accept').length === 0 ? peerCommonName(call) : undefined;
  if (cn === undefined) return token === undefined ? {} : { token };
  return token === undefined ? { certCommonName: cn } : { token, certCommonName: cn };
}

/**
 * The verified peer certificate's Common Name: '' when its subject has none; the last of several (Go's
 * pkix.Name keeps the last CN attribute; Node lists them all). Undefined without a verified certificate.
 */
function peerCommonName(call: CallSurface): string | undefined {
  const cert = call.getAuthContext().sslPeerCertificate;
  if (cert === undefined) return undefined;
  const cn: unknown = (cert.subject as Partial<Record<string, unknown>> | undefined)?.['CN'];
  if (typeof cn === 'string') return cn;
  if (Array.isArray(cn)) {
    const last: unknown = cn[cn.length - 1];
    return typeof last === 'string' ? last : '';
  }
  return '';
}

function unaryHandler<Req, Res>(fn: (req: Req, ctx: CallContext) => Res, callContext: (call: CallSurface) => CallContext): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    let res: Res;
    try {
      res = fn(call.request, callContext(call));
    } catch (err) {
      callback(statusError(toGrpcError(err)));
      return;
    }
    callback(null, res);
  };
}

function serverStreamHandler<Req, Res>(
  fn: (req: Req, ctx: CallContext) => Res[],
  callContext: (call: CallSurface) => CallContext,
): grpc.handleServerStreamingCall<Req, Res> {
  return (call) => {
    let rs: Res[];
    try {
      rs = fn(call.request, callContext(call));
    } catch (err) {
      call.emit('error', statusError(toGrpcError(err)));
      return;
    }
    for (const r of rs) call.write(r);
    call.end();
  };
}

/** RangeStream chunk size (keys per response). */
const RANGE_STREAM_CHUNK = 1000;

/**
 * RangeStream (etcd 3.7): the Range result at one revision, cut into responses of up to 1000 keys.
 * Every chunk carries the header, `more` and `count`, so merging the chunks (protobuf merge: repeated
 * fields concatenate, scalars keep the last value) gives exactly the Range response.
 */
export function rangeStream(r: M.RangeResponse): Array<{ range_response: M.RangeResponse }> {
  const out: Array<{ range_response: M.RangeResponse }> = [];
  for (let i = 0; i === 0 || i < r.kvs.length; i += RANGE_STREAM_CHUNK) {
    out.push({ range_response: { header: r.header, kvs: r.kvs.slice(i, i + RANGE_STREAM_CHUNK), more: r.more, count: r.count } });
  }
  return out;
}
