/**
 * etcd's Lease service as served (etcd's v3rpc/lease.go): the unary methods forwarded to the member's
 * LeaseService (src/server/lease_service.ts) by name; LeaseKeepAlive a bidirectional stream piped into the
 * member's KeepAliveCall, which a client's half-close ends with OK (etcd's handler returns at EOF).
 */
import type * as M from '../server/messages.js';
import type { Handlers, MethodTable } from './handlers.js';

export function leaseServer(h: Handlers): MethodTable {
  return {
    ...h.forwarded('Lease'),
    LeaseKeepAlive: h.bidi<M.LeaseKeepAliveRequest, M.LeaseKeepAliveResponse>('LeaseKeepAlive', (ctx) => h.member().services.lease.leaseKeepAlive(ctx)),
  };
}
