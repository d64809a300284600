/**
 * Server mode for etcd's two extra services, v3lockpb.Lock and v3electionpb.Election (etcd's v3lock and
 * v3election servers, which jetcd and Go's clientv3 call): their protos, and handlers over the member's
 * LockService / ElectionService (src/server). serve() (server.ts) registers them next to etcd's six.
 *
 * Lock and Campaign may wait: each runs with an AbortSignal that the client's cancel or disconnect (grpc-js
 * `cancelled`), the call's deadline (`2 context deadline exceeded`, as etcd's handlers end on their
 * context) and the server's close abort — and the service then releases the key as etcd does. Observe is
 * a server stream piped from an ObserveCall, with grpc-js's backpressure; it ends when the client cancels,
 * its deadline passes or the server closes. Requests are checked as the release's Go decoder checks them
 * (request_decoding.ts), errors mapped by the server layer's toGrpcError, so codes and messages are etcd's.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { cancelledError, grpcError, toGrpcError, type CallContext, type GrpcError, type ObserveCall } from '../server/index.js';
import { isPromiseLike, type Awaitable, type ServedServices } from './served_member.js';
import type * as M from '../server/messages.js';
import { GrpcCode } from '../mvcc/index.js';
import { afterHostTime, hostNow } from '../sim/index.js';
import { requestChecks, type RequestDecoding } from './request_decoding.js';
import { MalformedRequest, withRequestChecks } from './request_checks.js';
import { pipeResponses } from './stream_pipe.js';

/** The protos of both services (they import etcdserverpb's ResponseHeader and mvccpb's KeyValue). */
const PROTO_FILES = ['v3lockpb/v3lock.proto', 'v3electionpb/v3election.proto'];

let cachedPackage: protoLoader.PackageDefinition | undefined;
let cachedObject: grpc.GrpcObject | undefined;

function packageDefinition(loaderOptions: protoLoader.Options): protoLoader.PackageDefinition {
  cachedPackage ??= protoLoader.loadSync(PROTO_FILES, loaderOptions);
  return cachedPackage;
}

/**
 * The Lock and Election service constructors (for servers' addService and for raw clients), loaded once
 * with the loader options every etcdsim gRPC peer uses (server.ts's PROTO_LOADER_OPTIONS).
 */
export function concurrencyServices(loaderOptions: protoLoader.Options): {
  readonly Lock: grpc.ServiceClientConstructor;
  readonly Election: grpc.ServiceClientConstructor;
} {
  cachedObject ??= grpc.loadPackageDefinition(packageDefinition(loaderOptions));
  const lock = cachedObject['v3lockpb'] as grpc.GrpcObject;
  const election = cachedObject['v3electionpb'] as grpc.GrpcObject;
  return { Lock: lock['Lock'] as grpc.ServiceClientConstructor, Election: election['Election'] as grpc.ServiceClientConstructor };
}

/** `def` with every request checked as the member's Go decoder checks it before protobuf.js decodes it. */
function checked(def: grpc.ServiceDefinition, pkg: string, loaderOptions: protoLoader.Options, decoding: RequestDecoding): grpc.ServiceDefinition {
  return withRequestChecks(def, requestChecks(packageDefinition(loaderOptions), pkg, decoding));
}

/** The two service definitions as serve() adds them (requests checked). */
export function concurrencyDefinitions(loaderOptions: protoLoader.Options, decoding: RequestDecoding): { Lock: grpc.ServiceDefinition; Election: grpc.ServiceDefinition } {
  const s = concurrencyServices(loaderOptions);
  return {
    Lock: checked(s.Lock.service, 'v3lockpb', loaderOptions, decoding),
    Election: checked(s.Election.service, 'v3electionpb', loaderOptions, decoding),
  };
}

/** What the handlers need of serve(). */
export interface ConcurrencyHost {
  /** The member whose Lock and Election services answer (throws before it started): a single member's, or a cluster member's. */
  member(): { readonly services: Pick<ServedServices, 'lock' | 'election'> };
  /** The caller of a call (token metadata, client certificate). */
  callContext(call: grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerWritableStream<unknown, unknown>): CallContext;
  /** Calls open over the network: close() aborts each. */
  readonly open: Set<{ abort(): void }>;
  /** True once close() began: calls are then dropped without an answer. */
  shuttingDown(): boolean;
  /** grpc-go's text before a stream request it cannot decode (differs by etcd version). */
  readonly streamUnmarshalPrefix: string;
  /** A service error as serve() sends it (status code and details). */
  statusError(err: { code: number; details: string }): grpc.ServerErrorResponse;
  /** The call's deadline (epoch ms) as the front door passed it on, or undefined for none. */
  deadlineOf(call: { readonly metadata: grpc.Metadata }): number | undefined;
}

/**
 * What etcd's Lock, Campaign and Observe handlers answer when the call's deadline passes: they return the
 * context's error, which grpc-go sends as code 2 (observed on 3.4.23 with Go's client: `code = Unknown desc =
 * context deadline exceeded`, or the client's own DeadlineExceeded when its timer fires first).
 */
const deadlineExceeded = (): GrpcError => grpcError(GrpcCode.UNKNOWN, 'context deadline exceeded');

/** Adds Lock and Election to `server`, served by the member's services. */
export function addConcurrencyServices(
  server: grpc.Server,
  defs: { Lock: grpc.ServiceDefinition; Election: grpc.ServiceDefinition },
  host: ConcurrencyHost,
): void {
  const { statusError, deadlineOf } = host;
  const malformedUnary = (req: unknown, cb: grpc.sendUnaryData<unknown>): boolean => {
    if (!(req instanceof MalformedRequest)) return false;
    cb(statusError({ code: grpc.status.INTERNAL, details: `grpc: error unmarshalling request: ${req.error}` }));
    return true;
  };

  const unary = <Req, Res>(fn: (req: Req, ctx: CallContext) => Awaitable<Res>): grpc.handleUnaryCall<Req, Res> => {
    return (call, callback) => {
      if (malformedUnary(call.request, callback as grpc.sendUnaryData<unknown>)) return;
      let res: Awaitable<Res>;
      try {
        res = fn(call.request, host.callContext(call as grpc.ServerUnaryCall<unknown, unknown>));
      } catch (err) {
        callback(statusError(toGrpcError(err)));
        return;
      }
      // A cluster member answers once Raft let it.
      if (isPromiseLike(res)) {
        res.then(
          (r) => {
            if (!host.shuttingDown()) callback(null, r);
          },
          (err: unknown) => {
            if (!host.shuttingDown()) callback(statusError(toGrpcError(err)));
          },
        );
        return;
      }
      callback(null, res);
    };
  };

  /** A call that may wait: its signal aborts on the client's cancel, the deadline, or the server's close. */
  const waiting = <Req, Res>(fn: (req: Req, ctx: CallContext & { signal: AbortSignal }) => Promise<Res>): grpc.handleUnaryCall<Req, Res> => {
    return (call, callback) => {
      if (malformedUnary(call.request, callback as grpc.sendUnaryData<unknown>)) return;
      const controller = new AbortController();
      let clientGone = false;
      const onCancelled = (): void => {
        clientGone = true;
        controller.abort(cancelledError());
      };
      const entry = { abort: () => controller.abort(grpcError(GrpcCode.UNAVAILABLE, 'etcdsim: server closed')) };
      const deadline = deadlineOf(call);
      const timer = deadline === undefined ? undefined : afterHostTime(deadline - hostNow(), () => controller.abort(deadlineExceeded()));
      host.open.add(entry);
      call.once('cancelled', onCancelled);
      const settle = (err: GrpcError | undefined, res?: Res): void => {
        host.open.delete(entry);
        timer?.cancel();
        call.off('cancelled', onCancelled);
        if (clientGone || host.shuttingDown()) return;
        if (err !== undefined) callback(statusError(err));
        else callback(null, res);
      };
      let p: Promise<Res>;
      try {
        p = fn(call.request, { ...host.callContext(call as grpc.ServerUnaryCall<unknown, unknown>), signal: controller.signal });
      } catch (err) {
        p = Promise.reject(err);
      }
      p.then(
        (res) => settle(undefined, res),
        (err: unknown) => settle(toGrpcError(err)),
      );
    };
  };

  const observe: grpc.handleServerStreamingCall<M.LeaderRequest, M.LeaderResponse> = (call) => {
    const req = call.request as M.LeaderRequest | MalformedRequest;
    if (req instanceof MalformedRequest) {
      call.emit('error', statusError({ code: grpc.status.INTERNAL, details: host.streamUnmarshalPrefix + req.error }));
      return;
    }
    let sc: ObserveCall;
    try {
      sc = host.member().services.election.observe(req, host.callContext(call as grpc.ServerWritableStream<unknown, unknown>));
    } catch (err) {
      call.emit('error', statusError(toGrpcError(err)));
      return;
    }
    host.open.add(sc);
    let clientGone = false;
    const deadline = deadlineOf(call);
    const timer = deadline === undefined ? undefined : afterHostTime(deadline - hostNow(), () => sc.abort(deadlineExceeded()));
    pipeResponses(sc, call);
    sc.onEnd((err) => {
      host.open.delete(sc);
      timer?.cancel();
      if (clientGone || host.shuttingDown()) return;
      if (err === undefined) call.end();
      else call.emit('error', statusError(err));
    });
    const gone = (): void => {
      clientGone = true;
      sc.cancel();
    };
    call.on('cancelled', gone);
    call.on('error', gone);
  };

  const lock = () => host.member().services.lock;
  const election = () => host.member().services.election;
  server.addService(defs.Lock, {
    Lock: waiting((req: M.LockRequest, ctx) => lock().lock(req, ctx)),
    Unlock: unary((req: M.UnlockRequest, ctx) => lock().unlock(req, ctx)),
  });
  server.addService(defs.Election, {
    Campaign: waiting((req: M.CampaignRequest, ctx) => election().campaign(req, ctx)),
    Proclaim: unary((req: M.ProclaimRequest, ctx) => election().proclaim(req, ctx)),
    Leader: unary((req: M.LeaderRequest, ctx) => election().leader(req, ctx)),
    Observe: observe,
    Resign: unary((req: M.ResignRequest, ctx) => election().resign(req, ctx)),
  });
}
