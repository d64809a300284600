/**
 * Server mode: etcd's v3 gRPC API on a real port, served by @grpc/grpc-js over one EtcdServer (src/server),
 * its unary calls by the front door's thin path on node:http2 (front_door.ts; `grpcUnary: 'grpc-js'` keeps
 * them on grpc-js: the same answers, more CPU per call).
 * Every method maps to the service layer in proto-loader's message form (keepCase, longs and enums as
 * strings, defaults, oneofs), so the services' answers go on the wire unchanged and any etcd client —
 * etcdctl, etcd3, Go's clientv3, jetcd — talks to the simulator as to a single-member etcd.
 *
 * Streams: Watch and LeaseKeepAlive pipe requests into a WatchCall / KeepAliveCall and their responses
 * out; a client that half-closes ends a keep-alive call but not a Watch, whose watchers go on sending (as
 * in etcd); one that cancels or disconnects cancels the call — either way every watcher / keep-alive of
 * the call is released once the call ends. Methods the simulator does not model (Downgrade) answer
 * UNIMPLEMENTED, as grpc-js does for any method a service leaves out.
 *
 * Wire errors are etcd's (docs/observed-etcd-3.4.23.md, "Wire errors"): front_door.ts answers what grpc-go
 * answers before a method runs (unknown paths, the receive limit of max request bytes + 512 KiB, framing,
 * encodings, requests without a message); every request is checked as the release's Go decoder checks it
 * (request_decoding.ts: gogo's generated Unmarshal, protobuf-go from 3.7) and a malformed one is refused with its text; a call carrying a simple token whose raft
 * index is not applied yet waits, as etcd's token check does (the member's rule, EtcdServer.tokenWaitIndex;
 * here the deadline is added, see holdForToken); and close() drops the
 * connections as a stopping etcd does, so open streams end UNAVAILABLE on the client.
 */
import { fileURLToPath } from 'node:url';
import { isIP } from 'node:net';
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { TLSSocket, type PeerCertificate } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { EtcdServer, grpcError, sendResponses, toGrpcError, type CallContext, type EndListener, type EtcdServerOptions, type GrpcError, type ResponseListener, type StreamHold } from '../server/index.js';
import type * as M from '../server/messages.js';
import { serverCompat } from '../server/compat.js';
import { DEFAULT_MAX_REQUEST_BYTES, type EtcdVersion } from '../mvcc/index.js';
import { encodeDeleteRangeResponse, encodePutResponse, encodeRangeResponse, encodeTxnResponse, encodeWatchResponse, framedEncoders } from './codec.js';
import { claimDoorStream, DEADLINE_METADATA, frameMessage, installFrontDoor, type DoorServerStreamCall, type DoorUnaryCall, type MethodKind } from './front_door.js';
import { encodeSnapshotResponse, snapshotResponseFrames } from './snapshot_wire.js';
import { requestChecks, requestDecodingOf } from './request_decoding.js';
import { afterHostTime, hostNow, RealClock, type Clock } from '../sim/index.js';
import { MalformedRequest, withRequestChecks } from './request_checks.js';
import { pipeResponses } from './stream_pipe.js';
import { createClientHttp, listenClientPort, type ClientHttp } from '../http/index.js';
import { addConcurrencyServices, concurrencyDefinitions } from './concurrency.js';
import { isPromiseLike, thenMap, type AttachedMember, type Awaitable, type PortSwitch, type ServedMember } from './served_member.js';

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

/** etcd's default --max-request-bytes (1.5 MiB, defined by mvcc's validation) and the gRPC overhead etcd adds to its receive limit. */
export { DEFAULT_MAX_REQUEST_BYTES };
export const GRPC_OVERHEAD_BYTES = 512 * 1024;

/** What the Watch and LeaseKeepAlive front doors need of a service-layer stream call. */
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

let cachedPackage: protoLoader.PackageDefinition | undefined;
let cachedDefinition: grpc.GrpcObject | undefined;

function etcdPackageDefinition(): protoLoader.PackageDefinition {
  cachedPackage ??= protoLoader.loadSync('etcdserverpb/rpc.proto', PROTO_LOADER_OPTIONS);
  return cachedPackage;
}

/** etcd's API as a grpc-js package object: `.etcdserverpb.KV`, `.Watch`, ... (loaded once). */
export function loadEtcdProtos(): grpc.GrpcObject {
  cachedDefinition ??= grpc.loadPackageDefinition(etcdPackageDefinition());
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
  /**
   * Who serves unary calls and Maintenance.Snapshot's stream: 'door' (default), the thin path on node:http2
   * in front_door.ts, or 'grpc-js' for everything. The answers on the wire are the same; the door spends
   * 0.5–0.7× of grpc-js's CPU per call (docs/performance.md).
   */
  readonly grpcUnary?: 'door' | 'grpc-js' | undefined;
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

  const grpcServer = new grpc.Server({
    'grpc.max_receive_message_length': maxRequestBytes + GRPC_OVERHEAD_BYTES,
    'grpc.max_send_message_length': -1,
    // etcdctl pings every 2 s (--keepalive-time); accept that instead of answering GOAWAY too_many_pings.
    'grpc.http2.min_ping_interval_without_data_ms': 1000,
    'grpc.keepalive_permit_without_calls': 1,
  });
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
  const callContext = (call: CallSurface): CallContext => contextOf(call, readCommonName);

  // Calls held by etcd's simple-token check (EtcdServer.tokenWaitIndex, src/server/applied_wait.ts): each
  // waits for the member's applied index, or for its deadline — etcd's wait ends with the call's context —
  // and then runs, to be refused as etcd refuses it (`etcdserver: invalid auth token`; without a deadline
  // the call never ends, as observed on 3.4.23). Here only the deadline and the client's cancel are added.
  const holds = new Set<{ cancel(): void }>();
  const holdForToken = (call: UnaryInvocation<unknown, unknown>, index: bigint, run: () => void): void => {
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

  /** One unary call, from grpc-js or from the front door's thin path: checked, held for a token, run, answered. */
  const runUnary = <Req, Res>(fn: (req: Req, ctx: CallContext) => Awaitable<Res>, call: UnaryInvocation<Req, Res>): void => {
    const req = call.request;
    if (req instanceof MalformedRequest) {
      call.fail({ code: grpc.status.INTERNAL, details: `grpc: error unmarshalling request: ${req.error}` });
      return;
    }
    const ctx = call.context();
    const run = (): void => {
      let res: Awaitable<Res>;
      try {
        res = fn(req, ctx);
      } catch (err) {
        call.fail(toGrpcError(err));
        return;
      }
      // A cluster member answers once Raft let it (served_member.ts).
      if (isPromiseLike(res)) res.then((v) => call.reply(v), (err: unknown) => call.fail(toGrpcError(err)));
      else call.reply(res);
    };
    const index = member().tokenWaitIndex(ctx);
    if (index === undefined) run();
    else holdForToken(call as UnaryInvocation<unknown, unknown>, index, run);
  };
  // The service functions of the unary methods, for the thin path (see addService).
  const unaryFns = new WeakMap<object, (req: never, ctx: CallContext) => unknown>();
  const unary = <Req, Res>(fn: (req: Req, ctx: CallContext) => Awaitable<Res>): grpc.handleUnaryCall<Req, Res> => {
    const handler: grpc.handleUnaryCall<Req, Res> = (call, callback) => {
      runUnary(fn, {
        request: call.request as Req | MalformedRequest,
        context: () => callContext(call),
        deadline: deadlineOf(call),
        onCancel: (listener) => {
          call.once('cancelled', listener);
          return () => call.off('cancelled', listener);
        },
        reply: (res) => callback(null, res),
        fail: (err) => callback(statusError(err)),
      });
    };
    unaryFns.set(handler, fn as (req: never, ctx: CallContext) => unknown);
    return handler;
  };
  // The thin unary path (front_door.ts, FrontDoorOptions.unary): every unary method of the services added
  // here is served on node:http2 directly — decoded and checked by the method's own deserializer, answered
  // through its serializer (KV's straight into a framed buffer) — instead of through grpc-js's call stack.
  const doorUnary = new Map<string, (call: DoorUnaryCall) => void>();
  const thinUnary = opts.grpcUnary !== 'grpc-js';
  const addService = (def: grpc.ServiceDefinition, impl: grpc.UntypedServiceImplementation): void => {
    grpcServer.addService(def, impl);
    if (!thinUnary) return;
    for (const [name, handler] of Object.entries(impl)) {
      const fn = unaryFns.get(handler);
      const m = def[name];
      if (fn === undefined || m === undefined) continue;
      const framed = FRAMED_ENCODERS[m.path];
      const serialize = m.responseSerialize;
      const deserialize = m.requestDeserialize;
      doorUnary.set(m.path, (call) => {
        runUnary(fn as (req: unknown, ctx: CallContext) => unknown, {
          request: deserialize(call.message) as unknown,
          context: () => contextOfHeaders(call.headers, call.stream, readCommonName),
          deadline: call.deadline,
          onCancel: (listener) => call.onCancel(listener),
          reply: (res) => call.reply(framed !== undefined ? framed(res as never) : frameMessage(serialize(res))),
          fail: (err) => call.fail(err.code, err.details),
        });
      });
    }
    for (const [name, handler] of Object.entries(impl)) {
      const own = doorStreamFns.get(handler);
      const m = def[name];
      if (own === undefined || m === undefined) continue;
      const deserialize = m.requestDeserialize;
      doorServerStream.set(m.path, (call) => runDoorServerStream(own, call, deserialize));
    }
  };
  const serverStream = <Req, Res>(fn: (req: Req, ctx: CallContext) => Awaitable<Iterable<Res | StreamHold>>): grpc.handleServerStreamingCall<Req, Res> =>
    serverStreamHandler(fn, callContext, streamUnmarshal);
  // Server-streaming methods the thin path serves (front_door.ts, FrontDoorOptions.serverStream): the same
  // service function as on grpc-js, its responses written as framed buffers by `frames` as the stream drains
  // (the same bytes as the method's serializer on grpc-js writes; see withEncoders).
  const doorServerStream = new Map<string, (call: DoorServerStreamCall) => void>();
  const doorStreamFns = new WeakMap<object, DoorStreamFn>();
  const thinServerStream = <Req, Res>(
    fn: (req: Req, ctx: CallContext) => Awaitable<Iterable<Res | StreamHold>>,
    frames: (r: Res) => Buffer[],
  ): grpc.handleServerStreamingCall<Req, Res> => {
    const handler = serverStream(fn);
    doorStreamFns.set(handler, { fn, frames } as unknown as DoorStreamFn);
    return handler;
  };
  /** One door-served server-streaming call: decoded and run as serverStreamHandler runs it on grpc-js. */
  const runDoorServerStream = (
    own: DoorStreamFn,
    call: DoorServerStreamCall,
    deserialize: (b: Buffer) => unknown,
  ): void => {
    const req = deserialize(call.message);
    if (req instanceof MalformedRequest) {
      call.fail(grpc.status.INTERNAL, streamUnmarshal + req.error);
      return;
    }
    let rs: Awaitable<Iterable<unknown | StreamHold>>;
    try {
      rs = own.fn(req, contextOfHeaders(call.headers, call.stream, readCommonName));
    } catch (err) {
      const e = toGrpcError(err);
      call.fail(e.code, e.details);
      return;
    }
    // Responses are asked for as the stream drains: a snapshot's are written as they are sent.
    const send = (all: Iterable<unknown | StreamHold>): void => {
      const sink = call.sink(own.frames);
      if (sink !== undefined) sendResponses(all, sink);
    };
    if (isPromiseLike(rs)) {
      rs.then(send, (err: unknown) => {
        const e = toGrpcError(err);
        call.fail(e.code, e.details);
      });
    } else send(rs);
  };

  const stream = <Req, Res>(
    method: StreamMethod,
    openCall: (ctx: CallContext) => BidiServiceCall<Req, Res>,
    encode?: (r: Res) => Buffer,
  ): grpc.handleBidiStreamingCall<Req, Res> => {
    return (call) => {
      // The front door's state of this very request (grpc-js starts a bidi handler inside the door's call).
      const door = claimDoorStream();
      let sc: BidiServiceCall<Req, Res>;
      try {
        sc = openCall(callContext(call));
      } catch (err) {
        // A member that cannot take the stream (a crashed cluster member) answers its error.
        call.emit('error', statusError(toGrpcError(err)));
        return;
      }
      open.add(sc);
      let clientGone = false;
      let reason: StreamEndReason = 'aborted';
      if (door !== undefined) door.fail = (code, details) => sc.abort(grpcError(code, details));
      // etcd's stream handlers end with the context's error when the call's deadline passes (its Watch
      // handler with code 2 or 4, a race between its receive loop and the context; 4 here).
      const deadline = deadlineOf(call);
      const deadlineTimer =
        deadline === undefined
          ? undefined
          : afterHostTime(deadline - hostNow(), () => sc.abort(grpcError(grpc.status.DEADLINE_EXCEEDED, 'context deadline exceeded')));
      const resume = (): void => sc.resume();
      if (encode === undefined) {
        pipeResponses(sc, call);
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
        deadlineTimer?.cancel();
        if (!clientGone && !state.shuttingDown) {
          if (err === undefined) call.end();
          else call.emit('error', statusError(err));
        }
        streamEnded({ method, reason });
      });
      call.on('data', (req: Req | MalformedRequest) => {
        if (req instanceof MalformedRequest) {
          sc.abort(grpcError(grpc.status.INTERNAL, streamUnmarshal + req.error));
          return;
        }
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
          // A half-closed Watch goes on streaming until the client cancels (etcd's handler waits for the
          // call's context); a half-closed LeaseKeepAlive ends with OK (its handler returns at EOF).
          if (sc.closeSend !== undefined) {
            sc.closeSend();
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

  // Requests are checked as the release's Go decoder checks them (gogo's, or protobuf-go's from 3.7).
  const decoding = requestDecodingOf(etcdVersion, opts.seed);
  const etcdRequestCheck = requestChecks(etcdPackageDefinition(), 'etcdserverpb', decoding);
  const definitions = {
    KV: withRequestChecks(withEncoders(etcdService('KV').service, KV_ENCODERS), etcdRequestCheck),
    Watch: withRequestChecks(withEncoders(etcdService('Watch').service, WATCH_ENCODERS), etcdRequestCheck),
    Lease: withRequestChecks(etcdService('Lease').service, etcdRequestCheck),
    Cluster: withRequestChecks(etcdService('Cluster').service, etcdRequestCheck),
    Maintenance: withRequestChecks(withEncoders(etcdService('Maintenance').service, MAINTENANCE_ENCODERS), etcdRequestCheck),
    Auth: withRequestChecks(etcdService('Auth').service, etcdRequestCheck),
    // etcd's v3lock and v3election services (./concurrency.ts).
    ...concurrencyDefinitions(PROTO_LOADER_OPTIONS, decoding),
  };
  addService(definitions.KV, {
    Range: unary((req: M.RangeRequest, ctx) => member().services.kv.range(req, ctx)),
    Put: unary((req: M.PutRequest, ctx) => member().services.kv.put(req, ctx)),
    DeleteRange: unary((req: M.DeleteRangeRequest, ctx) => member().services.kv.deleteRange(req, ctx)),
    Txn: unary((req: M.TxnRequest, ctx) => member().services.kv.txn(req, ctx)),
    Compact: unary((req: M.CompactionRequest, ctx) => member().services.kv.compact(req, ctx)),
    RangeStream: serverStream((req: M.RangeRequest, ctx) => thenMap(member().services.kv.range(req, ctx), rangeStream)),
  } satisfies grpc.UntypedServiceImplementation);
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
      encodeWatchResponse,
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
    MemberAdd: unary((req: M.MemberAddRequest) => member().services.cluster.memberAdd(req)),
    MemberRemove: unary((req: M.MemberRemoveRequest) => member().services.cluster.memberRemove(req)),
    MemberUpdate: unary((req: M.MemberUpdateRequest) => member().services.cluster.memberUpdate(req)),
    MemberPromote: unary((req: M.MemberPromoteRequest) => member().services.cluster.memberPromote(req)),
  });
  addService(definitions.Maintenance, {
    Status: unary((req: M.StatusRequest, ctx) => member().services.maintenance.status(req, ctx)),
    Hash: unary((req: M.HashRequest, ctx) => member().services.maintenance.hash(req, ctx)),
    HashKV: unary((req: M.HashKVRequest, ctx) => member().services.maintenance.hashKV(req, ctx)),
    MoveLeader: unary((req: M.MoveLeaderRequest, ctx) => member().services.maintenance.moveLeader(req, ctx)),
    Defragment: unary((req: M.DefragmentRequest, ctx) => member().services.maintenance.defragment(req, ctx)),
    Alarm: unary((req: M.AlarmRequest, ctx) => member().services.maintenance.alarm(req, ctx)),
    // The member streams its file as it writes it (snapshotStream; a cluster member once it takes the call),
    // into a few reused buffers: the door holds at most 64 KiB of responses, grpc-js its stream's 16 (512 KiB),
    // far less than the reuse allows.
    Snapshot: thinServerStream(
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
  addConcurrencyServices(grpcServer, definitions, {
    member,
    callContext,
    open,
    shuttingDown: () => state.shuttingDown,
    streamUnmarshalPrefix: streamUnmarshal,
    statusError,
    deadlineOf,
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
  // One port for gRPC and etcd's HTTP endpoints, as etcd's client URL serves both (src/http/port.ts).
  let clientHttp: ClientHttp | undefined;
  const clientPort = await listenClientPort({
    host,
    port,
    grpcServer,
    credentials,
    tls: opts.tls !== undefined,
    handler: (req, res) => clientHttp?.handle(req, res),
  });
  const boundPort = clientPort.port;
  const methods = new Map<string, MethodKind>();
  for (const def of Object.values(definitions)) {
    for (const m of Object.values(def)) methods.set(m.path, m.requestStream ? 'bidi' : m.responseStream ? 'serverStream' : 'unary');
  }
  const door = installFrontDoor(grpcServer, {
    methods,
    services: new Set([...methods.keys()].map((p) => p.slice(1, p.lastIndexOf('/')))),
    maxReceiveBytes: maxRequestBytes + GRPC_OVERHEAD_BYTES,
    malformedMethodCode: serverCompat(etcdVersion).malformedMethodResourceExhausted ? grpc.status.RESOURCE_EXHAUSTED : grpc.status.UNIMPLEMENTED,
    headerErrorsAnswered: serverCompat(etcdVersion).headerErrorsAnswered,
    unary: doorUnary,
    serverStream: doorServerStream,
  });
  clientPort.serveHttpOverH2();
  const scheme = opts.tls === undefined ? 'http' : 'https';
  const address = `${hostPart}:${boundPort}`;
  const endpoint = `${scheme}://${address}`;

  const { host: _h, port: _p, allowNonLoopback: _a, clock: _c, clockSpeed: _s, tls: _t, grpcUnary: _g, ...serverOpts } = opts;
  let server: EtcdServer | undefined;
  if (attach !== undefined) {
    try {
      state.attached = await attach(endpoint, {
        refuse: () => {
          // As close() does: the calls etcd would keep waiting are forgotten, their sockets go with the port's.
          door.forgetHeld();
          return clientPort.refuse();
        },
        listen: () => clientPort.listen(),
      });
    } catch (err) {
      door.dropConnections();
      clientPort.dropConnections();
      grpcServer.forceShutdown();
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
    server.delivery.setScheduler((flush) => queueMicrotask(flush));
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
        await new Promise<void>((resolve) => {
          grpcServer.tryShutdown(() => resolve());
          // Clients that keep connections open must not hold the shutdown: force it on the next turn.
          setImmediate(() => grpcServer.forceShutdown());
        });
        await clientPort.close();
        server?.delivery.setScheduler(undefined);
        server?.close();
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
/** KV's responses written straight into a framed buffer (thin unary path), by method path. */
const FRAMED_ENCODERS: Readonly<Record<string, ((r: never) => Buffer) | undefined>> = {
  '/etcdserverpb.KV/Range': framedEncoders.range,
  '/etcdserverpb.KV/Put': framedEncoders.put,
  '/etcdserverpb.KV/DeleteRange': framedEncoders.deleteRange,
  '/etcdserverpb.KV/Txn': framedEncoders.txn,
};

/** A server-streaming method the thin path serves: its service function and its responses' wire frames. */
interface DoorStreamFn {
  readonly fn: (req: unknown, ctx: CallContext) => Awaitable<Iterable<unknown | StreamHold>>;
  readonly frames: (r: unknown) => Buffer[];
}

/** What running a unary method needs of its call, whichever transport carries it. */
interface UnaryInvocation<Req, Res> {
  readonly request: Req | MalformedRequest;
  /** The caller (token, certificate CN), read when the call runs. */
  context(): CallContext;
  /** When the call's deadline passes (host ms), or undefined. */
  readonly deadline: number | undefined;
  /** `listener` runs if the client cancels first; returns an unsubscribe. */
  onCancel(listener: () => void): () => void;
  reply(res: Res): void;
  fail(err: { code: number; details: string }): void;
}

/** Snapshot's responses as etcd writes them, its blobs as they are (snapshot_wire.ts), on grpc-js too. */
const MAINTENANCE_ENCODERS: Readonly<Record<string, (r: never) => Buffer>> = { Snapshot: encodeSnapshotResponse };

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

/**
 * grpc-go's text for a stream request it cannot decode; the colon came with grpc-go 1.53 (etcd 3.5.17 uses
 * 1.59; 3.4.23 as observed, 1.33).
 */
function streamUnmarshalPrefix(v: EtcdVersion): string {
  return v === '3.4' ? 'grpc: failed to unmarshal the received message ' : 'grpc: failed to unmarshal the received message: ';
}

/** The call's deadline (epoch ms) as the front door passed it on, or undefined for none. */
function deadlineOf(call: { readonly metadata: grpc.Metadata }): number | undefined {
  const v = call.metadata.get(DEADLINE_METADATA)[0];
  return v === undefined ? undefined : Number(v);
}

/** The parsing of simple tokens now lives with the wait, in the server layer. */
export { simpleTokenIndex } from '../server/applied_wait.js';

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
  const cn = withCommonName && md.get('grpcgateway-accept').length === 0 ? commonNameOf(call.getAuthContext().sslPeerCertificate) : undefined;
  return requiringLeader(callerContext(token, cn), md.get('hasleader')[0]);
}

/** clientv3's WithRequireLeader: metadata `hasleader: true` (etcd's rpctypes.MetadataRequireLeaderKey / MetadataHasLeader). */
function requiringLeader(ctx: CallContext, hasLeader: string | Buffer | undefined): CallContext {
  return hasLeader !== undefined && hasLeader.toString() === 'true' ? { ...ctx, requireLeader: true } : ctx;
}

function callerContext(token: string | undefined, cn: string | undefined): CallContext {
  if (cn === undefined) return token === undefined ? {} : { token };
  return token === undefined ? { certCommonName: cn } : { token, certCommonName: cn };
}

/** contextOf for a call the front door serves itself: the same metadata, read from the request's headers. */
function contextOfHeaders(headers: IncomingHttpHeaders, stream: ServerHttp2Stream, withCommonName: boolean): CallContext {
  const v = firstHeader(headers['token']) ?? firstHeader(headers['authorization']);
  const cn = withCommonName && headers['grpcgateway-accept'] === undefined ? commonNameOf(verifiedPeerCertificate(stream)) : undefined;
  return requiringLeader(callerContext(v, cn), firstHeader(headers['hasleader']));
}

function firstHeader(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** The client certificate the TLS handshake verified (as grpc-js's getAuthContext reports it), or undefined. */
function verifiedPeerCertificate(stream: ServerHttp2Stream): PeerCertificate | undefined {
  const socket = stream.session?.socket;
  if (!(socket instanceof TLSSocket) || !socket.authorized) return undefined;
  const cert = socket.getPeerCertificate();
  return cert.raw === undefined ? undefined : cert;
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

function serverStreamHandler<Req, Res>(
  fn: (req: Req, ctx: CallContext) => Awaitable<Iterable<Res | StreamHold>>,
  callContext: (call: CallSurface) => CallContext,
  unmarshalPrefix: string,
): grpc.handleServerStreamingCall<Req, Res> {
  return (call) => {
    const req = call.request as Req | MalformedRequest;
    if (req instanceof MalformedRequest) {
      call.emit('error', statusError({ code: grpc.status.INTERNAL, details: unmarshalPrefix + req.error }));
      return;
    }
    let rs: Awaitable<Iterable<Res | StreamHold>>;
    try {
      rs = fn(req, callContext(call));
    } catch (err) {
      call.emit('error', statusError(toGrpcError(err)));
      return;
    }
    // Written as grpc-js's stream takes them ('drain'), not all at once: a client that stops reading a
    // snapshot holds back its responses here, not encoded copies of the whole file in grpc-js's queue.
    const send = (all: Iterable<Res | StreamHold>): void =>
      sendResponses(all, {
        write: (r) => call.write(r),
        onDrain: (resume) => void call.once('drain', resume),
        end: () => call.end(),
        get gone() {
          return call.cancelled;
        },
      });
    if (isPromiseLike(rs)) rs.then(send, (err: unknown) => call.emit('error', statusError(toGrpcError(err))));
    else send(rs);
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
