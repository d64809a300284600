/**
 * How the served member's methods run, whatever the service — what etcd's v3rpc gets from grpc-go's
 * generated handlers and its interceptors: a request decoded (and checked as the release's Go decoder
 * checks it: request_decoding.ts) or refused with Go's text, the caller read from the metadata, the call
 * held while etcd's simple-token check waits for the token's raft index, the member's answer (now, or
 * later from a cluster member) written back, and a stream's responses piped out with etcd's backpressure.
 * The per-service files (kv_server.ts, watch_server.ts, ...) map each method to the member's service
 * through these runners; the server (server.ts) owns the Handlers and releases what they hold on close.
 */
import {
  cancelledError,
  grpcError,
  isPromiseLike,
  memberCalls,
  sendResponses,
  toGrpcError,
  type Awaitable,
  type CallContext,
  type EndListener,
  type GrpcError,
  type MemberView,
  type ResponseListener,
  type StreamHold,
} from '../server/index.js';
import type { EtcdServiceName } from '../proto/index.js';
import { GrpcCode } from '../etcd/index.js';
import { afterHostTime, hostNow } from '../sim/index.js';
import { frameMessage, responseSink, type BidiCall, type GrpcMethod, type MethodCodec, type MethodImpl, type ServerCall, type UnaryCall } from './call.js';
import { MalformedRequest, unaryUnmarshalError } from './request_decoding.js';
import { pipeResponses } from './stream_pipe.js';

/** @public */
export type StreamMethod = 'Watch' | 'LeaseKeepAlive';
/** How a stream call ended: the client half-closed, the client canceled or went away, or the server aborted it. @public */
export type StreamEndReason = 'end' | 'cancelled' | 'aborted';
/** @public */
export interface StreamEndInfo {
  readonly method: StreamMethod;
  readonly reason: StreamEndReason;
}

/** What the Watch and LeaseKeepAlive handlers need of a service-layer stream call. */
export interface BidiServiceCall<Req, Res> {
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

/** One service's methods as served, by the method's name in the .proto (`Put`). */
export type MethodTable = Readonly<Record<string, MethodImpl>>;

/**
 * What etcd's Lock, Campaign and Observe handlers answer when the call's deadline passes: they return the
 * context's error, which grpc-go sends as code 2 (observed on 3.4.23 with Go's client: `code = Unknown desc =
 * context deadline exceeded`, or the client's own DeadlineExceeded when its timer fires first).
 */
export const deadlineExceeded = (): GrpcError => grpcError(GrpcCode.UNKNOWN, 'context deadline exceeded');

/** What the runners need of the server that owns them. */
export interface HandlerHost {
  /** The member whose services answer (throws before it started): an EtcdServer, or a cluster member's adapter. */
  member(): MemberView;
  /** The caller of a call (token metadata, client certificate, require-leader). */
  callContext(call: ServerCall): CallContext;
  /** True once close() began: calls are then dropped without an answer. */
  shuttingDown(): boolean;
  /** grpc-go's text before a stream request it cannot decode (differs by etcd version). */
  readonly streamUnmarshalPrefix: string;
  /** Called whenever a Watch or LeaseKeepAlive call ends (after its watchers / keep-alives are released). */
  streamEnded(info: StreamEndInfo): void;
}

export class Handlers {
  /** Calls open over the network (streams, waiting Lock / Campaign calls): release() aborts each. */
  readonly open = new Set<{ abort(): void }>();
  /** Calls held by etcd's simple-token check: release() forgets each. */
  readonly #holds = new Set<{ cancel(): void }>();

  constructor(readonly host: HandlerHost) {}

  /** The member's services now (a cluster member's restart replaces them). */
  member(): MemberView {
    return this.host.member();
  }

  /**
   * Runs `run` now, or once etcd's token check lets the call through (EtcdServer.tokenWaitIndex,
   * src/server/applied_wait.ts): the call waits for the member's applied index, or for its deadline —
   * etcd's wait ends with the call's context — and then runs, to be refused as etcd refuses it
   * (`etcdserver: invalid auth token`; without a deadline the call never ends, as observed on 3.4.23).
   * Here only the deadline and the client's cancel are added.
   */
  afterTokenWait(call: ServerCall, ctx: CallContext, run: () => void): void {
    const index = this.host.member().tokenWaitIndex(ctx);
    if (index === undefined) return run();
    let timer: { cancel(): void } | undefined;
    const fire = (): void => {
      hold.cancel();
      run();
    };
    const wait = this.host.member().appliedWait.wait(index, fire);
    const hold = {
      cancel: () => {
        this.#holds.delete(hold);
        wait.cancel();
        timer?.cancel();
        offCancel();
      },
    };
    this.#holds.add(hold);
    if (call.deadline !== undefined) timer = afterHostTime(call.deadline - hostNow(), fire);
    const offCancel = call.onCancel(hold.cancel);
  }

  /** Forgets every held call and aborts every open one, without answering anyone (close). */
  release(): void {
    for (const h of [...this.#holds]) h.cancel();
    for (const c of [...this.open]) c.abort();
  }

  /**
   * A unary method: its request decoded and checked, held for a token, run, and answered — with `encode`
   * when given (KV's responses encoded straight into a framed buffer), else the method's serializer.
   */
  unary<Req, Res>(fn: (req: Req, ctx: CallContext) => Awaitable<Res>, encode?: (r: Res) => Buffer): MethodImpl {
    return (m) => {
      const serialize = m.responseSerialize as (r: Res) => Buffer;
      const frame = encode ?? ((r: Res) => frameMessage(serialize(r)));
      return this.#unaryMethod(m, (call, req: Req, ctx) => {
        const fail = (err: unknown): void => {
          const e = toGrpcError(err);
          call.fail(e.code, e.details);
        };
        let res: Awaitable<Res>;
        try {
          res = fn(req, ctx);
        } catch (err) {
          return fail(err);
        }
        if (!isPromiseLike(res)) return call.reply(frame(res));
        // A cluster member answers once Raft let it (src/server/member_view.ts); meanwhile the call counts as in
        // progress, and a call the client gave up on is not encoded (grpc-go's handler writes to a dead stream).
        const done = call.busy();
        res.then(
          (v) => {
            done();
            if (!call.gone) call.reply(frame(v));
          },
          (err: unknown) => {
            done();
            fail(err);
          },
        );
      });
    };
  }

  /**
   * A unary method whose request is decoded and checked (a malformed one refused with grpc-go's text), its
   * caller read, and `answer` run once etcd's token check lets the call through.
   */
  #unaryMethod<Req>(m: MethodCodec, answer: (call: UnaryCall, req: Req, ctx: CallContext) => void): GrpcMethod {
    const deserialize = m.requestDeserialize;
    return {
      kind: 'unary',
      serve: (call) => {
        const req = deserialize(call.message) as Req | MalformedRequest;
        if (req instanceof MalformedRequest) return call.fail(GrpcCode.INTERNAL, unaryUnmarshalError(req));
        const ctx = this.host.callContext(call);
        this.afterTokenWait(call, ctx, () => answer(call, req, ctx));
      },
    };
  }

  /**
   * The unary methods of `service` that only hand the request and the caller to the member's service of
   * the same name (`LeaseGrant` → `services.lease.leaseGrant(req, ctx)`): every call of the member's list
   * (src/server/member_calls.ts: what the .proto declares and the member's service class answers) whose
   * requests and responses do not stream — so an RPC added to the proto and the class is served without
   * being listed here. One the class lacks (Downgrade) stays unregistered: the door answers grpc-go's
   * `unknown method`. A service's file replaces the ones it serves otherwise.
   */
  forwarded(service: EtcdServiceName): MethodTable {
    const out: Record<string, MethodImpl> = {};
    for (const c of memberCalls()) {
      if (c.service !== service || c.requestStream || c.responseStream) continue;
      out[c.method] = this.unary((req: unknown, ctx) => (this.host.member().services[c.services] as unknown as Record<string, (req: unknown, ctx: CallContext) => Awaitable<unknown>>)[c.call]!(req, ctx));
    }
    return out;
  }

  /**
   * A unary method of etcd's v3lock / v3election servers, whose answer is dropped once the client or the
   * server is gone. With `waits` (Lock, Campaign) the service may wait: the call's signal aborts on the
   * client's cancel, the call's deadline (`2 context deadline exceeded`, as etcd's handlers end on their
   * context) or the server's close — and the service then releases the key as etcd does.
   */
  abortableUnary<Req, Res>(fn: (req: Req, ctx: CallContext & { signal?: AbortSignal }) => Awaitable<Res>, waits = false): MethodImpl {
    return (m) => {
      const serialize = m.responseSerialize as (r: Res) => Buffer;
      /** The call's answer, once the token check let it through. */
      const answer = (call: UnaryCall, req: Req, ctx: CallContext): void => {
        const controller = waits ? new AbortController() : undefined;
        const done = call.busy();
        let clientGone = false;
        let settled = false;
        const entry = { abort: () => controller?.abort(grpcError(GrpcCode.UNAVAILABLE, 'etcdsim: server closed')) };
        const timer =
          controller === undefined || call.deadline === undefined ? undefined : afterHostTime(call.deadline - hostNow(), () => controller.abort(deadlineExceeded()));
        const offCancel =
          controller === undefined
            ? undefined
            : call.onCancel(() => {
                clientGone = true;
                controller.abort(cancelledError());
              });
        if (controller !== undefined) this.open.add(entry);
        const settle = (err: GrpcError | undefined, res?: Res): void => {
          if (settled) return;
          settled = true;
          done();
          this.open.delete(entry);
          timer?.cancel();
          offCancel?.();
          if (clientGone || this.host.shuttingDown()) return;
          if (err !== undefined) call.fail(err.code, err.details);
          else call.reply(frameMessage(serialize(res as Res)));
        };
        let res: Awaitable<Res>;
        try {
          res = fn(req, controller === undefined ? ctx : { ...ctx, signal: controller.signal });
        } catch (err) {
          return settle(toGrpcError(err));
        }
        // A cluster member answers once Raft let it.
        if (isPromiseLike(res)) {
          res.then(
            (r) => settle(undefined, r),
            (err: unknown) => settle(toGrpcError(err)),
          );
        } else settle(undefined, res);
      };
      return this.#unaryMethod(m, answer);
    };
  }

  /**
   * A server-streaming method: its responses written as the client reads them (sendResponses), each as the
   * buffers `frames` makes of it (Snapshot's blobs as they are), or as the method's serializer encodes it.
   */
  serverStream<Req, Res>(fn: (req: Req, ctx: CallContext) => Awaitable<Iterable<Res | StreamHold>>, frames?: (r: Res) => Buffer[]): MethodImpl {
    return (m) => {
      const serialize = m.responseSerialize as (r: Res) => Buffer;
      const toFrames = frames ?? ((r: Res) => [frameMessage(serialize(r))]);
      const deserialize = m.requestDeserialize;
      return {
        kind: 'serverStream',
        serve: (call) => {
          const req = deserialize(call.message) as Req | MalformedRequest;
          if (req instanceof MalformedRequest) return call.end(GrpcCode.INTERNAL, this.host.streamUnmarshalPrefix + req.error);
          const fail = (err: unknown): void => {
            const e = toGrpcError(err);
            call.end(e.code, e.details);
          };
          let rs: Awaitable<Iterable<Res | StreamHold>>;
          try {
            rs = fn(req, this.host.callContext(call));
          } catch (err) {
            return fail(err);
          }
          // Responses are asked for as the stream drains: a snapshot's are written as they are sent.
          const send = (all: Iterable<Res | StreamHold>): void => sendResponses(all, responseSink(call, toFrames));
          if (!isPromiseLike(rs)) return send(rs);
          const done = call.busy();
          rs.then(
            (all) => {
              done();
              send(all);
            },
            (err: unknown) => {
              done();
              fail(err);
            },
          );
        },
      };
    };
  }

  /**
   * A bidirectional method (Watch, LeaseKeepAlive): requests piped into the service-layer call, its
   * responses out with etcd's backpressure (stream_pipe.ts).
   */
  bidi<Req, Res>(method: StreamMethod, openCall: (ctx: CallContext) => BidiServiceCall<Req, Res>, encode?: (r: Res) => Buffer): MethodImpl {
    return (m) => {
      const serialize = m.responseSerialize as (r: Res) => Buffer;
      const frame = encode ?? ((r: Res) => frameMessage(serialize(r)));
      const deserialize = m.requestDeserialize;
      return { kind: 'bidi', serve: (call) => this.#runBidi(method, openCall, call, deserialize, frame) };
    };
  }

  #runBidi<Req, Res>(
    method: StreamMethod,
    openCall: (ctx: CallContext) => BidiServiceCall<Req, Res>,
    call: BidiCall,
    deserialize: (b: Buffer) => unknown,
    frame: (r: Res) => Buffer,
  ): void {
    let sc: BidiServiceCall<Req, Res>;
    try {
      sc = openCall(this.host.callContext(call));
    } catch (err) {
      // A member that cannot take the stream (a crashed cluster member) answers its error.
      const e = toGrpcError(err);
      return call.end(e.code, e.details);
    }
    this.open.add(sc);
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
      this.open.delete(sc);
      deadlineTimer?.cancel();
      if (!clientGone && !this.host.shuttingDown()) {
        if (err === undefined) call.end(GrpcCode.OK, '');
        else call.end(err.code, err.details);
      }
      this.host.streamEnded({ method, reason });
    });
    call.onMessage = (msg) => {
      const req = deserialize(msg) as Req | MalformedRequest;
      if (req instanceof MalformedRequest) return sc.abort(grpcError(GrpcCode.INTERNAL, this.host.streamUnmarshalPrefix + req.error));
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
  }
}
