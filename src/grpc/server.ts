/**
 * Server mode: etcd's v3 gRPC API on a real port over one EtcdServer (src/server), served by our own gRPC
 * door (door.ts) on our own HTTP/2 layer (src/h2) — grpc-js and node:http2 cost most of a request's CPU
 * (docs/performance.md). Every method maps to the service layer in proto-loader's message form (keepCase,
 * longs and enums as strings, defaults, oneofs; KV's and Watch's responses by src/grpc/codec.ts), so the
 * services' answers go on the wire unchanged and any etcd client — etcdctl, etcd3, Go's clientv3, jetcd —
 * talks to the simulator as to a single-member etcd.
 *
 * Streams: Watch and LeaseKeepAlive pipe requests into a WatchCall / KeepAliveCall and their responses
 * out; a client that half-closes ends a keep-alive call but not a Watch, whose watchers go on sending (as
 * in etcd); one that cancels or disconnects cancels the call — either way every watcher / keep-alive of
 * the call is released once the call ends. Methods the simulator does not model (Downgrade) answer
 * UNIMPLEMENTED (`unknown method`), as grpc-go does for a method its service does not register.
 *
 * Wire errors are etcd's (docs/observed-etcd-3.4.23.md, "Wire errors"): door.ts answers what grpc-go
 * answers before a method runs (unknown paths, the receive limit of max request bytes + 512 KiB, framing,
 * encodings, requests without a message); every request is checked as the release's Go decoder checks it
 * (request_decoding.ts: gogo's generated Unmarshal, protobuf-go from 3.7) and a malformed one is refused with its text; a call carrying a simple token whose raft
 * index is not applied yet waits, as etcd's token check does (the member's rule, EtcdServer.tokenWaitIndex;
 * here the deadline is added, see holdForToken); and close() drops the
 * connections as a stopping etcd does, so open streams end UNAVAILABLE on the client.
 */
import { isIP } from 'node:net';
import type { PeerCertificate } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { EtcdServer, grpcError, sendResponses, toGrpcError, type CallContext, type EndListener, type EtcdServerOptions, type GrpcError, type ResponseListener, type StreamHold } from '../server/index.js';
import type * as M from '../server/messages.js';
import { serverCompat } from '../server/compat.js';
import { DEFAULT_MAX_REQUEST_BYTES, GrpcCode, type EtcdVersion } from '../mvcc/index.js';
import { framedEncoders } from './codec.js';
import { frameMessage, responseSink, type BidiCall, type GrpcMethod, type MethodCodec, type MethodImpl, type ServerCall } from './call.js';
import { createGrpcDoor } from './door.js';
import { snapshotResponseFrames } from './snapshot_wire.js';
import { checkedService, requestDecodingOf } from './request_decoding.js';
import { afterHostTime, hostMicrotask, hostNow, RealClock, type Clock } from '../sim/index.js';
import { MalformedRequest, unaryUnmarshalError, withRequestChecks } from './request_checks.js';
import { pipeResponses } from './stream_pipe.js';
import { createClientHttp, listenClientPort, serveHttpOverH2, type ClientHttp, type HttpRequest, type HttpResponse, type TlsServerOptions } from '../http/index.js';
import { concurrencyImplementations } from './concurrency.js';
import { isPromiseLike, thenMap, type AttachedMember, type Awaitable, type PortSwitch, type ServedMember } from './served_member.js';

/** etcd's default --max-request-bytes (1.5 MiB, defined by mvcc's validation) and the gRPC overhead etcd adds to its receive limit. */
export { DEFAULT_MAX_REQUEST_BYTES };
export const GRPC_OVERHEAD_BYTES = 512 * 1024;

/** What the Watch and LeaseKeepAlive handlers need of a service-layer stream call. */
interface BidiServiceCall<Req, Res> {
  write(req: Req): void;
  onResponse(listener: ResponseListener<Res> | undefined): void;
  onEnd(listener: EndListener): void;
  end(): void;
  /** Only Watch has it: a half-close that leaves the call open (see WatchCall.closeSend). */
  closeSend?(): void;
  cancel(): void;
  abort(err?: GrpcError): void;
  pause(): void;
  resume(): void;
  readonly isPaused: boolean;
  listenerBatch: number;
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
  /**
   * etcd's --grpc-keepalive-min-time in ms (default 5000): a client on a plain connection that pings more
   * often sees its connection end (GOAWAY ENHANCE_YOUR_CALM "too_many_pings"), as grpc-go enforces it.
   */
  readonly grpcKeepAliveMinTimeMs?: number | undefined;
}

/** etcd's default --grpc-keepalive-min-time. */
export const DEFAULT_GRPC_KEEPALIVE_MIN_TIME_MS = 5000;

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
  /**
   * HTTP/2 streams open on the port's gRPC connections: calls not yet answered or still being answered
   * (every one ends once its client or the server is done with it; a leak would show here).
   */
  readonly openHttp2Streams: number;
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
export function serve(opts: ServeOptions = {}): Promise<ServeHandle> {
  return serveMember(opts, undefined);
}

/**
 * @internal serve(), or with `attach` a member made elsewhere (a cluster member: cluster_serve.ts) instead of
 * a new EtcdServer: `attach` is called once the port is bound, with its endpoint; the member's options then
 * come from its maker, and close() stops only the port.
 */
export async function serveMember(opts: ServeOptions, attach: ((endpoint: string, port: PortSwitch) => Promise<AttachedMember>) | undefined): Promise<ServeHandle> {
  const host = opts.host ?? '127.0.0.1';
  const port = opts.port ?? 2379;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new RangeError(`serve: port must be 0..65535, got ${port}`);
  if (!isLoopback(host) && opts.allowNonLoopback !== true) {
    throw new Error(`serve: refusing to bind ${host}: not a loopback address (allow it explicitly with allowNonLoopback / --allow-non-loopback)`);
  }
  const maxRequestBytes = opts.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
  const etcdVersion: EtcdVersion = opts.etcdVersion ?? '3.7';
  const streamUnmarshal = streamUnmarshalPrefix(etcdVersion);
  const ownClock = opts.clock === undefined;
  const clock: Clock =
    opts.clock ?? new RealClock({ unref: true, speed: opts.clockSpeed ?? 1 });

  const state: { server: EtcdServer | undefined; attached: AttachedMember | undefined; shuttingDown: boolean } = {
    server: undefined,
    attached: undefined,
    shuttingDown: false,
  };
  const engine = (): EtcdServer => {
    const s = state.attached?.server ?? state.server;
    if (s === undefined) throw new Error('etcdsim: request before the member started');
    return s;
  };
  /** Whom the handlers call: the EtcdServer, or an attached member whose services may answer later. */
  const member = (): ServedMember => state.attached?.member ?? engine();
  const open = new Set<{ abort(): void }>();
  const endListeners = new Set<(info: StreamEndInfo) => void>();
  const streamEnded = (info: StreamEndInfo): void => {
    for (const l of [...endListeners]) l(info);
  };

  // The certificate is read only when its CN can matter (the member ignores it otherwise anyway).
  const readCommonName = opts.tls?.clientCertAuth === true;
  const callContext = (call: ServerCall): CallContext => contextOf(call, readCommonName);

  // Calls held by etcd's simple-token check (EtcdServer.tokenWaitIndex, src/server/applied_wait.ts): each
  // waits for the member's applied index, or for its deadline — etcd's wait ends with the call's context —
  // and then runs, to be refused as etcd refuses it (`etcdserver: invalid auth token`; without a deadline
  // the call never ends, as observed on 3.4.23). Here only the deadline and the client's cancel are added.
  const holds = new Set<{ cancel(): void }>();
  const holdForToken = (call: ServerCall, index: bigint, run: () => void): void => {
    let timer: { cancel(): void } | undefined;
    const fire = (): void => {
      hold.cancel();
      run();
    };
    const wait = member().appliedWait.wait(index, fire);
    const hold = {
      cancel() {
        holds.delete(hold);
        wait.cancel();
        timer?.cancel();
        offCancel();
      },
    };
    holds.add(hold);
    if (call.deadline !== undefined) timer = afterHostTime(call.deadline - hostNow(), fire);
    const offCancel = call.onCancel(hold.cancel);
  };
  /** Runs `run` now, or once etcd's token check would let the call through (holdForToken). */
  const afterTokenWait = (call: ServerCall, ctx: CallContext, run: () => void): void => {
    const index = member().tokenWaitIndex(ctx);
    if (index === undefined) run();
    else holdForToken(call, index, run);
  };

  /**
   * A unary method: its request decoded and checked as the release's Go decoder checks it, held for a
   * token, run, and answered — KV's responses encoded straight into a framed buffer.
   */
  const unary =
    <Req, Res>(fn: (req: Req, ctx: CallContext) => Awaitable<Res>): MethodImpl =>
    (m) => {
      const framed = FRAMED_ENCODERS[m.path] as ((r: Res) => Buffer) | undefined;
      const serialize = m.responseSerialize as (r: Res) => Buffer;
      const encode = framed ?? ((r: Res) => frameMessage(serialize(r)));
      const deserialize = m.requestDeserialize;
      return {
        kind: 'unary',
        serve: (call) => {
          const req = deserialize(call.message) as Req | MalformedRequest;
          if (req instanceof MalformedRequest) return call.fail(GrpcCode.INTERNAL, unaryUnmarshalError(req));
          const ctx = callContext(call);
          const run = (): void => {
            let res: Awaitable<Res>;
            try {
              res = fn(req, ctx);
            } catch (err) {
              const e = toGrpcError(err);
              return call.fail(e.code, e.details);
            }
            // A cluster member answers once Raft let it (served_member.ts).
            if (isPromiseLike(res)) {
              res.then(
                (v) => call.reply(encode(v)),
                (err: unknown) => {
                  const e = toGrpcError(err);
                  call.fail(e.code, e.details);
                },
              );
            } else call.reply(encode(res));
          };
          afterTokenWait(call, ctx, run);
        },
      };
    };

  /**
   * A server-streaming method: its responses written as the client reads them (sendResponses), each as the
   * buffers `frames` makes of it (Snapshot's blobs as they are), or as the method's serializer encodes it.
   */
  const serverStream =
    <Req, Res>(fn: (req: Req, ctx: CallContext) => Awaitable<Iterable<Res | StreamHold>>, frames?: (r: Res) => Buffer[]): MethodImpl =>
    (m) => {
      const serialize = m.responseSerialize as (r: Res) => Buffer;
      const toFrames = frames ?? ((r: Res) => [frameMessage(serialize(r))]);
      const deserialize = m.requestDeserialize;
      return {
        kind: 'serverStream',
        serve: (call) => {
          const req = deserialize(call.message) as Req | MalformedRequest;
          if (req instanceof MalformedRequest) return call.end(GrpcCode.INTERNAL, streamUnmarshal + req.error);
          const fail = (err: unknown): void => {
            const e = toGrpcError(err);
            call.end(e.code, e.details);
          };
          let rs: Awaitable<Iterable<Res | StreamHold>>;
          try {
            rs = fn(req, callContext(call));
          } catch (err) {
            return fail(err);
          }
          // Responses are asked for as the stream drains: a snapshot's are written as they are sent.
          const send = (all: Iterable<Res | StreamHold>): void => sendResponses(all, responseSink(call, toFrames));
          if (isPromiseLike(rs)) rs.then(send, fail);
          else send(rs);
        },
      };
    };

  /**
   * A bidirectional method (Watch, LeaseKeepAlive): requests piped into the service-layer call, its
   * responses out with etcd's backpressure (stream_pipe.ts).
   */
  const stream =
    <Req, Res>(method: StreamMethod, openCall: (ctx: CallContext) => BidiServiceCall<Req, Res>, encode?: (r: Res) => Buffer): MethodImpl =>
    (m) => {
      const serialize = m.responseSerialize as (r: Res) => Buffer;
      const frame = encode ?? ((r: Res) => frameMessage(serialize(r)));
      const deserialize = m.requestDeserialize;
      return { kind: 'bidi', serve: (call) => runBidi(method, openCall, call, deserialize, frame) };
    };
  const runBidi = <Req, Res>(
    method: StreamMethod,
    openCall: (ctx: CallContext) => BidiServiceCall<Req, Res>,
    call: BidiCall,
    deserialize: (b: Buffer) => unknown,
    frame: (r: Res) => Buffer,
  ): void => {
    let sc: BidiServiceCall<Req, Res>;
    try {
      sc = openCall(callContext(call));
    } catch (err) {
      // A member that cannot take the stream (a crashed cluster member) answers its error.
      const e = toGrpcError(err);
      return call.end(e.code, e.details);
    }
    open.add(sc);
    let clientGone = false;
    let reason: StreamEndReason = 'aborted';
    call.onRefused = (code, details) => sc.abort(grpcError(code, details));
    // etcd's stream handlers end with the context's error when the call's deadline passes (its Watch
    // handler with code 2 or 4, a race between its receive loop and the context; 4 here).
    const deadlineTimer =
      call.deadline === undefined
        ? undefined
        : afterHostTime(call.deadline - hostNow(), () => sc.abort(grpcError(GrpcCode.DEADLINE_EXCEEDED, 'context deadline exceeded')));
    pipeResponses(sc, call, frame);
    sc.onEnd((err) => {
      open.delete(sc);
      deadlineTimer?.cancel();
      if (!clientGone && !state.shuttingDown) {
        if (err === undefined) call.end(GrpcCode.OK, '');
        else call.end(err.code, err.details);
      }
      streamEnded({ method, reason });
    });
    call.onMessage = (msg) => {
      const req = deserialize(msg) as Req | MalformedRequest;
      if (req instanceof MalformedRequest) return sc.abort(grpcError(GrpcCode.INTERNAL, streamUnmarshal + req.error));
      try {
        sc.write(req);
      } catch (err) {
        sc.abort(toGrpcError(err));
      }
    };
    call.onHalfClose = () => {
      // A half-closed Watch goes on streaming until the client cancels (etcd's handler waits for the call's
      // context); a half-closed LeaseKeepAlive ends with OK (its handler returns at EOF).
      if (sc.closeSend !== undefined) return sc.closeSend();
      reason = 'end';
      sc.end();
    };
    call.onCancel(() => {
      clientGone = true;
      reason = 'cancelled';
      sc.cancel();
    });
  };

  // Requests are checked as the release's Go decoder checks them (gogo's, or protobuf-go's from 3.7).
  const decoding = requestDecodingOf(etcdVersion, opts.seed);
  const definitions = {
    KV: checkedService('KV', decoding),
    Watch: checkedService('Watch', decoding),
    Lease: checkedService('Lease', decoding),
    Cluster: checkedService('Cluster', decoding),
    Maintenance: checkedService('Maintenance', decoding),
    Auth: checkedService('Auth', decoding),
    // etcd's v3lock and v3election services (./concurrency.ts).
    Lock: checkedService('Lock', decoding),
    Election: checkedService('Election', decoding),
  };
  const methods = new Map<string, GrpcMethod>();
  const services = new Set<string>();
  const addService = (def: grpc.ServiceDefinition, impl: Readonly<Record<string, MethodImpl>>): void => {
    for (const [name, make] of Object.entries(impl)) {
      const m = def[name];
      if (m === undefined) throw new Error(`etcdsim: no method ${name} in the service`);
      methods.set(m.path, make(m as MethodCodec));
    }
    // A registered service whose method is missing answers `unknown method` (Downgrade), not `unknown service`.
    for (const m of Object.values(def)) services.add(m.path.slice(1, m.path.lastIndexOf('/')));
  };
  addService(definitions.KV, {
    Range: unary((req: M.RangeRequest, ctx) => member().services.kv.range(req, ctx)),
    Put: unary((req: M.PutRequest, ctx) => member().services.kv.put(req, ctx)),
    DeleteRange: unary((req: M.DeleteRangeRequest, ctx) => member().services.kv.deleteRange(req, ctx)),
    Txn: unary((req: M.TxnRequest, ctx) => member().services.kv.txn(req, ctx)),
    Compact: unary((req: M.CompactionRequest, ctx) => member().services.kv.compact(req, ctx)),
    RangeStream: serverStream((req: M.RangeRequest, ctx) => thenMap(member().services.kv.range(req, ctx), rangeStream)),
  });
  addService(definitions.Watch, {
    Watch: stream<M.WatchRequest, M.WatchResponse>(
      'Watch',
      (ctx) => {
        const call = member().services.watch.watch(ctx);
        // The handler's write quota is this stream's transport window: the send loop hands responses
        // straight to it, and the channel of 128 is the only buffer before it, as in etcd.
        call.stream.windowBytes = 0;
        return call;
      },
      framedEncoders.watch,
    ),
  });
  addService(definitions.Lease, {
    LeaseGrant: unary((req: M.LeaseGrantRequest, ctx) => member().services.lease.leaseGrant(req, ctx)),
    LeaseRevoke: unary((req: M.LeaseRevokeRequest, ctx) => member().services.lease.leaseRevoke(req, ctx)),
    LeaseTimeToLive: unary((req: M.LeaseTimeToLiveRequest, ctx) => member().services.lease.leaseTimeToLive(req, ctx)),
    LeaseLeases: unary((req: M.LeaseLeasesRequest) => member().services.lease.leaseLeases(req)),
    LeaseKeepAlive: stream<M.LeaseKeepAliveRequest, M.LeaseKeepAliveResponse>('LeaseKeepAlive', (ctx) => member().services.lease.leaseKeepAlive(ctx)),
  });
  addService(definitions.Cluster, {
    MemberList: unary((req: M.MemberListRequest) => member().services.cluster.memberList(req)),
    MemberAdd: unary((req: M.MemberAddRequest, ctx) => member().services.cluster.memberAdd(req, ctx)),
    MemberRemove: unary((req: M.MemberRemoveRequest, ctx) => member().services.cluster.memberRemove(req, ctx)),
    MemberUpdate: unary((req: M.MemberUpdateRequest, ctx) => member().services.cluster.memberUpdate(req, ctx)),
    MemberPromote: unary((req: M.MemberPromoteRequest, ctx) => member().services.cluster.memberPromote(req, ctx)),
  });
  addService(definitions.Maintenance, {
    Status: unary((req: M.StatusRequest, ctx) => member().services.maintenance.status(req, ctx)),
    Hash: unary((req: M.HashRequest, ctx) => member().services.maintenance.hash(req, ctx)),
    HashKV: unary((req: M.HashKVRequest, ctx) => member().services.maintenance.hashKV(req, ctx)),
    MoveLeader: unary((req: M.MoveLeaderRequest, ctx) => member().services.maintenance.moveLeader(req, ctx)),
    Defragment: unary((req: M.DefragmentRequest, ctx) => member().services.maintenance.defragment(req, ctx)),
    Alarm: unary((req: M.AlarmRequest, ctx) => member().services.maintenance.alarm(req, ctx)),
    // The member streams its file as it writes it (snapshotStream; a cluster member once it takes the call),
    // into a few reused buffers: at most 64 KiB of responses wait in the stream, far less than the reuse allows.
    Snapshot: serverStream(
      (req: M.SnapshotRequest, ctx) => member().services.maintenance.snapshotStream(req, ctx, { reusePieces: true }),
      snapshotResponseFrames,
    ),
  });
  const auth = () => member().services.auth;
  addService(definitions.Auth, {
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
  // Lock and Election: Lock and Campaign wait (released on cancel, deadline or close); Observe streams.
  const concurrency = concurrencyImplementations({
    member,
    callContext,
    open,
    shuttingDown: () => state.shuttingDown,
    streamUnmarshalPrefix: streamUnmarshal,
    afterTokenWait,
  });
  addService(definitions.Lock, concurrency.Lock);
  addService(definitions.Election, concurrency.Election);

  const door = createGrpcDoor({
    methods,
    services,
    maxReceiveBytes: maxRequestBytes + GRPC_OVERHEAD_BYTES,
    malformedMethodCode: serverCompat(etcdVersion).malformedMethodResourceExhausted ? GrpcCode.RESOURCE_EXHAUSTED : GrpcCode.UNIMPLEMENTED,
    headerErrorsAnswered: serverCompat(etcdVersion).headerErrorsAnswered,
    keepAliveMinTimeMs: opts.grpcKeepAliveMinTimeMs ?? DEFAULT_GRPC_KEEPALIVE_MIN_TIME_MS,
  });
  const hostPart = isIP(host) === 6 ? `[${host}]` : host;
  // One port for gRPC and etcd's HTTP endpoints, as etcd's client URL serves both (src/http/port.ts).
  let clientHttp: ClientHttp | undefined;
  const handler = (req: HttpRequest, res: HttpResponse): void => clientHttp?.handle(req, res);
  const clientPort = await listenClientPort({
    host,
    port,
    tls: opts.tls === undefined ? undefined : tlsServerOptions(opts.tls),
    handler,
    http2: (socket, head, secure, onHandshake) =>
      // Over TLS, etcd's listener answers an HTTP/2 request that is not gRPC with its HTTP handler.
      door.accept(socket, { head, secure, onHandshake, http: secure ? (st, s) => serveHttpOverH2(st, s, handler) : undefined }),
  });
  const boundPort = clientPort.port;
  const scheme = opts.tls === undefined ? 'http' : 'https';
  const address = `${hostPart}:${boundPort}`;
  const endpoint = `${scheme}://${address}`;

  const { host: _h, port: _p, allowNonLoopback: _a, clock: _c, clockSpeed: _s, tls: _t, grpcKeepAliveMinTimeMs: _k, ...serverOpts } = opts;
  let server: EtcdServer | undefined;
  if (attach !== undefined) {
    try {
      state.attached = await attach(endpoint, {
        refuse: () => {
          // As close() does: the calls etcd would keep waiting are forgotten. The gRPC connections drop now,
          // before the answers the crash gave their streams go out (a killed etcd sends none: its clients see
          // the connection go); the port's other connections go a turn later (clientPort.refuse).
          door.forgetHeld();
          door.dropConnections();
          return clientPort.refuse();
        },
        listen: () => clientPort.listen(),
      });
    } catch (err) {
      door.dropConnections();
      clientPort.dropConnections();
      await clientPort.close();
      throw err;
    }
    clientHttp = state.attached.http;
  } else {
    server = new EtcdServer({
      ...serverOpts,
      clock,
      clientUrls: opts.clientUrls ?? [endpoint],
      clientCertAuth: opts.tls?.clientCertAuth === true,
    });
    server.delivery.setScheduler((flush) => hostMicrotask(flush));
    state.server = server;
    clientHttp = createClientHttp(server);
  }

  let closing: Promise<void> | undefined;
  return {
    endpoint,
    address,
    port: boundPort,
    get server() {
      return engine();
    },
    get openStreams() {
      return open.size;
    },
    get openHttp2Streams() {
      return door.openStreams;
    },
    onStreamEnd(listener) {
      endListeners.add(listener);
      return () => endListeners.delete(listener);
    },
    close() {
      closing ??= (async () => {
        // A stopping etcd drops its client connections (observed on 3.4.23: no GOAWAY, no trailers; a client
        // sees UNAVAILABLE — grpc-js: `14 Connection dropped`). So: sockets first, then the calls are
        // released here without answering anyone.
        state.shuttingDown = true;
        door.dropConnections();
        clientPort.dropConnections();
        clientHttp.close();
        door.forgetHeld();
        for (const h of [...holds]) h.cancel();
        for (const c of [...open]) c.abort();
        await clientPort.close();
        server?.delivery.setScheduler(undefined);
        server?.close();
        if (ownClock && clock instanceof RealClock) clock.close();
      })();
      return closing;
    },
  };
}

/** KV's responses written straight into a framed buffer, by method path. */
const FRAMED_ENCODERS: Readonly<Record<string, ((r: never) => Buffer) | undefined>> = {
  '/etcdserverpb.KV/Range': framedEncoders.range,
  '/etcdserverpb.KV/Put': framedEncoders.put,
  '/etcdserverpb.KV/DeleteRange': framedEncoders.deleteRange,
  '/etcdserverpb.KV/Txn': framedEncoders.txn,
};

/**
 * The TLS server options of etcd's client port: its certificate, and client certificates required when a CA
 * is given or --client-cert-auth is on (verified against that CA, or against the system's roots as Go's
 * are); ALPN offers h2 for gRPC and http/1.1 for etcd's HTTP endpoints.
 */
function tlsServerOptions(t: TlsOptions): TlsServerOptions {
  const requireCert = t.ca !== undefined || t.clientCertAuth === true;
  return {
    cert: t.cert,
    key: t.key,
    ...(t.ca === undefined ? {} : { ca: t.ca }),
    requestCert: requireCert,
    rejectUnauthorized: requireCert,
  };
}

/**
 * grpc-go's text for a stream request it cannot decode; the colon came with grpc-go 1.53 (etcd 3.5.17 uses
 * 1.59; 3.4.23 as observed, 1.33).
 */
function streamUnmarshalPrefix(v: EtcdVersion): string {
  return v === '3.4' ? 'grpc: failed to unmarshal the received message ' : 'grpc: failed to unmarshal the received message: ';
}

/** The parsing of simple tokens now lives with the wait, in the server layer. */
export { simpleTokenIndex } from '../server/applied_wait.js';

/**
 * The caller of a call: etcd reads the simple token from the `token` metadata (or `authorization`) and,
 * when `withCommonName`, the Common Name of the client certificate — only of one the TLS handshake
 * verified (Go's VerifiedChains), and not for a request that came through etcd's gRPC gateway (metadata
 * `grpcgateway-accept`: etcd ignores the CN then).
 */
function contextOf(call: ServerCall, withCommonName: boolean): CallContext {
  const token = call.header('token') ?? call.header('authorization');
  const cn = withCommonName && call.header('grpcgateway-accept') === undefined ? commonNameOf(call.peerCertificate()) : undefined;
  return requiringLeader(callerContext(token, cn), call.header('hasleader'));
}

/** clientv3's WithRequireLeader: metadata `hasleader: true` (etcd's rpctypes.MetadataRequireLeaderKey / MetadataHasLeader). */
function requiringLeader(ctx: CallContext, hasLeader: string | undefined): CallContext {
  return hasLeader === 'true' ? { ...ctx, requireLeader: true } : ctx;
}

function callerContext(token: string | undefined, cn: string | undefined): CallContext {
  if (cn === undefined) return token === undefined ? {} : { token };
  return token === undefined ? { certCommonName: cn } : { token, certCommonName: cn };
}

/**
 * The verified peer certificate's Common Name: '' when its subject has none; the last of several (Go's
 * pkix.Name keeps the last CN attribute; Node lists them all). Undefined without a verified certificate.
 */
function commonNameOf(cert: PeerCertificate | undefined): string | undefined {
  if (cert === undefined) return undefined;
  const cn: unknown = (cert.subject as Partial<Record<string, unknown>> | undefined)?.['CN'];
  if (typeof cn === 'string') return cn;
  if (Array.isArray(cn)) {
    const last: unknown = cn[cn.length - 1];
    return typeof last === 'string' ? last : '';
  }
  return '';
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
