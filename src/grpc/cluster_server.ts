/**
 * etcd's Cluster (membership) service as served (etcd's v3rpc/member.go): MemberList, MemberAdd,
 * MemberRemove, MemberUpdate and MemberPromote forwarded to the member's ClusterService
 * (src/server/membership_service.ts) by name.
 */
import type { Handlers, MethodTable } from './handlers.js';

export function clusterServer(h: Handlers): MethodTable {
  return h.forwarded('Cluster');
}
