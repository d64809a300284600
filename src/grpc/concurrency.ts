/**
 * Server mode for etcd's two extra services, v3lockpb.Lock and v3electionpb.Election (etcd's v3lock and
 * v3election servers, which jetcd and Go's clientv3 call): handlers over the member's
 * LockService / ElectionService (src/server). serve() (server.ts) registers them next to etcd's six.
 *
 * Lock and Campaign may wait: each runs with an AbortSignal that the client's cancel or disconnect, the call's deadline (`2 context deadline exceeded`, as etcd's handlers end on their
 * context) and the server's close abort — and the service then releases the key as etcd does. Observe is
 * a server stream piped from an ObserveCall with etcd's backpressure (stream_pipe.ts); it ends when the client cancels,
 * its deadline passes or the server closes. Requests are checked as the release's Go decoder checks them
 * (request_decoding.ts), errors mapped by the server layer's toGrpcError, so codes and messages are etcd's.
 */
import { cancelledError, grpcError, toGrpcError, type CallContext, type GrpcError, type ObserveCall } from '../server/index.js';
import { isPromiseLike, type Awaitable, type ServedServices } from './served_member.js';
import type * as M from '../server/messages.js';
import { GrpcCode } from '../mvcc/index.js';
import { afterHostTime, hostNow } from '../sim/index.js';
import { MalformedRequest, unaryUnmarshalError } from './request_checks.js';
import { pipeResponses } from './stream_pipe.js';
import { frameMessage, type MethodImpl, type ServerCall, type ServerStreamCall, type UnaryCall } from './call.js';

/** What the handlers need of serve(). */
export interface ConcurrencyHost {
  /** The member whose Lock and Election services answer (throws before it started): a single member's, or a cluster member's. */
  member(): { readonly services: Pick<ServedServices, 'lock' | 'election'> };
  /** The caller of a call (token metadata, client certificate). */
  callContext(call: ServerCall): CallContext;
  /** Calls open over the network: close() aborts each. */
  readonly open: Set<{ abort(): void }>;
  /** True once close() began: calls are then dropped without an answer. */
  shuttingDown(): boolean;
  /** grpc-go's text before a stream request it cannot decode (differs by etcd version). */
  readonly streamUnmarshalPrefix: string;
  /**
   * Runs `run` once etcd's simple-token check lets the call through: etcd's v3lock and v3election servers
   * call the member's KV with the caller's context, so a token naming a raft index not applied yet holds
   * them as it holds a KV call (observed on 3.4.23: Lock, Unlock and Leader answered only at the deadline).
   */
  afterTokenWait(call: ServerCall, ctx: CallContext, run: () => void): void;
}

/**
 * What etcd's Lock, Campaign and Observe handlers answer when the call's deadline passes: they return the
 * context's error, which grpc-go sends as code 2 (observed on 3.4.23 with Go's client: `code = Unknown desc =
 * context deadline exceeded`, or the client's own DeadlineExceeded when its timer fires first).
 */
const deadlineExceeded = (): GrpcError => grpcError(GrpcCode.UNKNOWN, 'context deadline exceeded');

/** The methods of Lock and Election, served by the member's services. */
export function concurrencyImplementations(host: ConcurrencyHost): {
  readonly Lock: Readonly<Record<string, MethodImpl>>;
  readonly Election: Readonly<Record<string, MethodImpl>>;
} {
  /** A unary method whose service may wait (Lock, Campaign: `waits`) — its signal aborts on the client's cancel, the deadline, or the server's close. */
  const unary =
    <Req, Res>(fn: (req: Req, ctx: CallContext & { signal?: AbortSignal }) => Awaitable<Res>, waits = false): MethodImpl =>
    (m) => {
      const deserialize = m.requestDeserialize;
      const serialize = m.responseSerialize as (r: Res) => Buffer;
      /** The call's answer, once the token check let it through. */
      const answer = (call: UnaryCall, req: Req, ctx: CallContext): void => {
        const controller = waits ? new AbortController() : undefined;
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
        if (controller !== undefined) host.open.add(entry);
        const settle = (err: GrpcError | undefined, res?: Res): void => {
          if (settled) return;
          settled = true;
          host.open.delete(entry);
          timer?.cancel();
          offCancel?.();
          if (clientGone || host.shuttingDown()) return;
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
      return {
        kind: 'unary',
        serve: (call) => {
          const req = deserialize(call.message) as Req | MalformedRequest;
          if (req instanceof MalformedRequest) return call.fail(GrpcCode.INTERNAL, unaryUnmarshalError(req));
          const ctx = host.callContext(call);
          host.afterTokenWait(call, ctx, () => answer(call, req, ctx));
        },
      };
    };

  const observe: MethodImpl = (m) => {
    const deserialize = m.requestDeserialize;
    const serialize = m.responseSerialize as (r: M.LeaderResponse) => Buffer;
    /** The Observe stream, once the token check let it through. */
    const follow = (call: ServerStreamCall, req: M.LeaderRequest, ctx: CallContext): void => {
      let sc: ObserveCall;
      try {
        sc = host.member().services.election.observe(req, ctx);
      } catch (err) {
        const e = toGrpcError(err);
        return call.end(e.code, e.details);
      }
      host.open.add(sc);
      let clientGone = false;
      const timer = call.deadline === undefined ? undefined : afterHostTime(call.deadline - hostNow(), () => sc.abort(deadlineExceeded()));
      pipeResponses(sc, call, (r) => frameMessage(serialize(r)));
      sc.onEnd((err) => {
        host.open.delete(sc);
        timer?.cancel();
        if (clientGone || host.shuttingDown()) return;
        if (err === undefined) call.end(GrpcCode.OK, '');
        else call.end(err.code, err.details);
      });
      call.onCancel(() => {
        clientGone = true;
        sc.cancel();
      });
    };
    return {
      kind: 'serverStream',
      serve: (call) => {
        const req = deserialize(call.message) as M.LeaderRequest | MalformedRequest;
        if (req instanceof MalformedRequest) return call.end(GrpcCode.INTERNAL, host.streamUnmarshalPrefix + req.error);
        const ctx = host.callContext(call);
        // Held by a token's raft index as the unary calls are: etcd's Observe reads the election through the
        // member's KV (observed on 3.4.23: held until the deadline).
        host.afterTokenWait(call, ctx, () => follow(call, req, ctx));
      },
    };
  };

  const lock = () => host.member().services.lock;
  const election = () => host.member().services.election;
  return {
    Lock: {
      Lock: unary((req: M.LockRequest, ctx) => lock().lock(req, ctx as CallContext & { signal: AbortSignal }), true),
      Unlock: unary((req: M.UnlockRequest, ctx) => lock().unlock(req, ctx)),
    },
    Election: {
      Campaign: unary((req: M.CampaignRequest, ctx) => election().campaign(req, ctx as CallContext & { signal: AbortSignal }), true),
      Proclaim: unary((req: M.ProclaimRequest, ctx) => election().proclaim(req, ctx)),
      Leader: unary((req: M.LeaderRequest, ctx) => election().leader(req, ctx)),
      Observe: observe,
      Resign: unary((req: M.ResignRequest, ctx) => election().resign(req, ctx)),
    },
  };
}
