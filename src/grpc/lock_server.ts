/**
 * etcd's v3lockpb.Lock service as served (etcd's server/etcdserver/api/v3lock, which jetcd and Go's
 * clientv3 call), over the member's LockService (src/server/lock_service.ts). Lock may wait until the
 * older keys under its name are deleted: it runs with a signal that the client's cancel or disconnect, the
 * call's deadline and the server's close abort, and the service then releases its key as etcd does.
 * etcd's v3lock server calls the member's KV with the caller's context, so a token naming a raft index not
 * applied yet holds Lock and Unlock as it holds a KV call (observed on 3.4.23: answered at the deadline).
 */
import type { CallContext } from '../server/index.js';
import type * as M from '../server/messages.js';
import type { Handlers, MethodTable } from './handlers.js';

export function lockServer(h: Handlers): MethodTable {
  const lock = () => h.member().services.lock;
  return {
    Lock: h.abortableUnary((req: M.LockRequest, ctx) => lock().lock(req, ctx as CallContext & { signal: AbortSignal }), true),
    Unlock: h.abortableUnary((req: M.UnlockRequest, ctx) => lock().unlock(req, ctx)),
  };
}
