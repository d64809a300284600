/**
 * etcd's backend space quota (--quota-backend-bytes; etcdserver/quota.go and the quota KV and lease servers
 * of v3rpc): before a Put, a Txn or a LeaseGrant goes any further — before its own checks, before its
 * token is looked at — its cost is weighed against the quota, and a request that would take the db file to
 * the quota is refused with ResourceExhausted "etcdserver: mvcc: database space exceeded" after NOSPACE is
 * raised through Raft (one alarm entry per refusal). Once raised, NOSPACE refuses the writes it caps at
 * apply time (alarms.ts) until an operator takes it off — after compacting and defragmenting, since the file
 * never shrinks by itself.
 *
 * The cost: a put 256 bytes of overhead plus its key and value; a Txn the larger of its success and failure
 * puts (top level only: nested txns cost nothing); a lease 64. A request costing nothing (a Txn without
 * puts) always passes. The file is the simulator's estimate (EtcdServer.dbSize), so a quota fills after a
 * different number of puts than on etcd's bolt file (docs/version-differences.md, "Space quota").
 */
import { type PutRequest, type RequestOp } from '../mvcc/index.js';
import { EtcdError } from '../etcd/index.js';
import { ALARM_NOSPACE, ErrNoSpace } from './alarms.js';
import type { CallContext } from './call_context.js';
import { isApplied } from './call_context.js';
import type { EtcdServer } from './etcd_server.js';
import type * as M from './messages.js';

/** etcd's kvOverhead: the estimated metadata cost of storing a key. */
const KV_OVERHEAD = 256;
/** etcd's leaseOverhead: the estimated cost of storing a lease. */
export const LEASE_OVERHEAD = 64;

/** A Put's cost against the quota. */
export function costPut(p: Pick<PutRequest, 'key' | 'value'>): number {
  return KV_OVERHEAD + p.key.byteLength + (p.value?.byteLength ?? 0);
}

/** A Txn's cost: the puts of its success ops or of its failure ops, whichever cost more. */
export function costTxn(t: { readonly success?: readonly RequestOp[] | undefined; readonly failure?: readonly RequestOp[] | undefined }): number {
  return Math.max(costOfPuts(t.success), costOfPuts(t.failure));
}

/** The cost of the puts among `ops` (a nested txn's are not counted, as etcd's costTxnReq does not look in). */
function costOfPuts(ops: readonly RequestOp[] | undefined): number {
  let c = 0;
  if (ops !== undefined) for (const op of ops) if (op.requestPut !== undefined) c += costPut(op.requestPut);
  return c;
}

/** Whether a request costing `cost` is refused by `server`'s quota (a request costing nothing never is). */
export function overQuota(server: EtcdServer, cost: number): boolean {
  return cost !== 0 && server.dbSize + cost >= server.quotaBackendBytes;
}

/** The alarm a member over its quota raises: NOSPACE, naming itself. */
export function noSpaceAlarm(server: EtcdServer): M.AlarmRequest {
  return { action: 'ACTIVATE', memberID: String(server.member.memberId), alarm: ALARM_NOSPACE };
}

/**
 * The quota check of a single member, on a request a client made: over the quota, NOSPACE is raised (a
 * Raft entry) and etcd's ErrNoSpace thrown, nothing else changed. A request applied from a cluster's log
 * is not checked again: the member the client asked did that before proposing it (cluster/services.ts).
 */
export function checkQuota(server: EtcdServer, cost: number, ctx: CallContext | undefined): void {
  if (isApplied(ctx) || !overQuota(server, cost)) return;
  server.services.maintenance.applyAlarm(noSpaceAlarm(server));
  throw new EtcdError(ErrNoSpace);
}
