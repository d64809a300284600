/**
 * The permission checks the server makes before applying a KV or lease request while auth is enabled
 * (server/etcdserver/apply/auth.go): Range READ over its range; Put WRITE on its key, WRITE on every key
 * already attached to its lease, READ on the key with prev_kv; DeleteRange WRITE over its range, READ too
 * with prev_kv; Txn every compare (READ) and every op of both branches, nested txns included (not on
 * etcd 3.4: AuthStore.checksNestedTxns), whichever branch would run (CheckTxnAuth); LeaseRevoke WRITE on every attached key unless the caller is root.
 * Each throws etcd's error (ErrUserEmpty without a token, ErrPermissionDenied) and changes nothing.
 */
import type { DeleteRangeRequest, PutRequest, RangeRequest, RequestOp, TxnRequest } from '../mvcc/index.js';
import type { AuthInfo, AuthStore } from './store.js';

/** The keys attached to a lease (byte form), empty for an unknown lease. */
export type LeaseKeys = (leaseId: bigint) => readonly Uint8Array[];

export function checkRangeAuth(as: AuthStore, ai: AuthInfo | undefined, r: RangeRequest): void {
  as.checkOp(ai, 'READ', r.key, r.rangeEnd);
}

export function checkPutAuth(as: AuthStore, ai: AuthInfo | undefined, leaseKeys: LeaseKeys, r: PutRequest): void {
  as.checkOp(ai, 'WRITE', r.key);
  if (r.lease !== undefined && r.lease !== 0n) checkLeaseKeysAuth(as, ai, leaseKeys(r.lease));
  if (r.prevKv === true) as.checkOp(ai, 'READ', r.key);
}

export function checkDeleteRangeAuth(as: AuthStore, ai: AuthInfo | undefined, r: DeleteRangeRequest): void {
  as.checkOp(ai, 'WRITE', r.key, r.rangeEnd);
  if (r.prevKv === true) as.checkOp(ai, 'READ', r.key, r.rangeEnd);
}

export function checkTxnAuth(as: AuthStore, ai: AuthInfo | undefined, leaseKeys: LeaseKeys, t: TxnRequest): void {
  for (const c of t.compare ?? []) as.checkOp(ai, 'READ', c.key, c.rangeEnd);
  checkOpsAuth(as, ai, leaseKeys, t.success ?? []);
  checkOpsAuth(as, ai, leaseKeys, t.failure ?? []);
}

function checkOpsAuth(as: AuthStore, ai: AuthInfo | undefined, leaseKeys: LeaseKeys, ops: readonly RequestOp[]): void {
  for (const op of ops) {
    if (op.requestRange !== undefined) checkRangeAuth(as, ai, op.requestRange);
    else if (op.requestPut !== undefined) checkPutAuth(as, ai, leaseKeys, op.requestPut);
    else if (op.requestDeleteRange !== undefined) {
      const d = op.requestDeleteRange;
      if (d.prevKv === true) as.checkOp(ai, 'READ', d.key, d.rangeEnd);
      as.checkOp(ai, 'WRITE', d.key, d.rangeEnd);
    } else if (op.requestTxn !== undefined && as.checksNestedTxns) checkTxnAuth(as, ai, leaseKeys, op.requestTxn);
  }
}

/** checkLeasePutsKeys: root may touch any lease; others need WRITE on every attached key. */
export function checkLeaseKeysAuth(as: AuthStore, ai: AuthInfo | undefined, keys: readonly Uint8Array[]): void {
  if (as.isAdmin(ai)) return;
  for (const k of keys) as.checkOp(ai, 'WRITE', k);
}
