/**
 * etcd's Auth service as served (etcd's v3rpc/auth.go): every method forwarded to the member's AuthService
 * (src/server/auth_service.ts) by name, with the caller's context (its token or certificate name).
 */
import type { Handlers, MethodTable } from './handlers.js';

export function authServer(h: Handlers): MethodTable {
  return h.forwarded('Auth');
}
