/**
 * etcd's Watch service as served (etcd's v3rpc/watch.go): one bidirectional stream per Watch call, its
 * requests piped into the member's WatchCall (src/server/watch_service.ts) and its responses out through
 * codec.ts's framed encoder with etcd's backpressure. A client that half-closes does not end the call: its
 * watchers go on sending until it cancels, as etcd's handler waits for the call's context.
 */
import type * as M from '../server/messages.js';
import { framedEncoders } from './codec.js';
import type { Handlers, MethodTable } from './handlers.js';

export function watchServer(h: Handlers): MethodTable {
  return {
    Watch: h.bidi<M.WatchRequest, M.WatchResponse>(
      'Watch',
      (ctx) => {
        const call = h.member().services.watch.watch(ctx);
        // The handler's write quota is this stream's transport window: the send loop hands responses
        // straight to it, and the channel of 128 is the only buffer before it, as in etcd.
        call.stream.windowBytes = 0;
        // Each response is encoded as the send loop takes it (framedEncoders.watch copies the event's bytes
        // into the frame), so its message form need not copy them first.
        call.viewsOut = true;
        return call;
      },
      framedEncoders.watch,
    ),
  };
}
