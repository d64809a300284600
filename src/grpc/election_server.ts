/**
 * etcd's v3electionpb.Election service as served (etcd's server/etcdserver/api/v3election), over the
 * member's ElectionService (src/server/election_service.ts). Campaign may wait, as Lock does
 * (lock_server.ts); Observe is a server stream piped from an ObserveCall with etcd's backpressure
 * (stream_pipe.ts), ending when the client cancels, its deadline passes or the server closes. Every call is
 * held by a token's raft index as a KV call is: etcd's election server reads through the member's KV.
 */
import { toGrpcError, type CallContext, type ObserveCall } from '../server/index.js';
import type * as M from '../server/messages.js';
import { GrpcCode } from '../etcd/index.js';
import { afterHostTime, hostNow } from '../sim/index.js';
import { frameMessage, type MethodImpl, type ServerStreamCall } from './call.js';
import { deadlineExceeded, type Handlers, type MethodTable } from './handlers.js';
import { MalformedRequest } from './request_decoding.js';
import { pipeResponses } from './stream_pipe.js';

export function electionServer(h: Handlers): MethodTable {
  const election = () => h.member().services.election;
  return {
    Campaign: h.abortableUnary((req: M.CampaignRequest, ctx) => election().campaign(req, ctx as CallContext & { signal: AbortSignal }), true),
    Proclaim: h.abortableUnary((req: M.ProclaimRequest, ctx) => election().proclaim(req, ctx)),
    Leader: h.abortableUnary((req: M.LeaderRequest, ctx) => election().leader(req, ctx)),
    Observe: observe(h),
    Resign: h.abortableUnary((req: M.ResignRequest, ctx) => election().resign(req, ctx)),
  };
}

/** Observe: the election's leader now and at every change, until the client, the deadline or the server ends it. */
function observe(h: Handlers): MethodImpl {
  return (m) => {
    const deserialize = m.requestDeserialize;
    const serialize = m.responseSerialize as (r: M.LeaderResponse) => Buffer;
    /** The Observe stream, once the token check let it through. */
    const follow = (call: ServerStreamCall, req: M.LeaderRequest, ctx: CallContext): void => {
      let sc: ObserveCall;
      try {
        sc = h.member().services.election.observe(req, ctx);
      } catch (err) {
        const e = toGrpcError(err);
        return call.end(e.code, e.details);
      }
      h.open.add(sc);
      let clientGone = false;
      const timer = call.deadline === undefined ? undefined : afterHostTime(call.deadline - hostNow(), () => sc.abort(deadlineExceeded()));
      pipeResponses(sc, call, (r) => frameMessage(serialize(r)));
      sc.onEnd((err) => {
        h.open.delete(sc);
        timer?.cancel();
        if (clientGone || h.host.shuttingDown()) return;
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
        if (req instanceof MalformedRequest) return call.end(GrpcCode.INTERNAL, h.host.streamUnmarshalPrefix + req.error);
        const ctx = h.host.callContext(call);
        // Held by a token's raft index as the unary calls are (observed on 3.4.23: held until the deadline).
        h.afterTokenWait(call, ctx, () => follow(call, req, ctx));
      },
    };
  };
}
