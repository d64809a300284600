/**
 * etcdserverpb.KV over one member: Range, Put, DeleteRange, Txn, Compact in message form. Every rule is
 * the MvccStore's; this layer converts, fills headers as etcd does and maps errors (errors.ts).
 *
 * Headers: the outer header carries cluster_id, member_id, raft_term and the revision — the current
 * store revision (for Range even when reading the past; for a write the revision it created; for
 * Compact the current one). Inside a Txn, range/put/delete responses carry only `revision` (the txn's
 * revision as of that op) and a nested txn's header is empty, as etcd 3.4.23 was observed to answer.
 *
 * Auth: each call takes the caller's CallContext. While auth is enabled the request is validated (etcd's
 * gRPC-layer checks come first), then the caller's permissions are checked (src/auth/enforce.ts) before
 * anything is applied; a denied write is still one Raft entry, as etcd denies it at apply time. On etcd
 * 3.4 a token is looked up even while auth is disabled (AuthStore.checksTokens), so a stale one fails.
 */
import { checkDeleteRangeAuth, checkPutAuth, checkRangeAuth, checkTxnAuth, type LeaseKeys } from '../auth/index.js';
import { keyBytes, type RequestOp, type TxnRequest as DTxnRequest } from '../mvcc/index.js';
import { deleteRangeSize, putSize, txnSize } from '../mvcc/request_size.js';
import { checkDeleteRequest, checkIntervals, checkPutRequest, checkRangeRequest, checkRequestSize, checkTxnRequest } from '../mvcc/validate.js';
import type { CallContext } from './call_context.js';
import { deleteRangeIn, deleteRangeOut, header, int64ToNumber, putIn, putOut, rangeIn, rangeOut, txnIn, txnOut } from './convert.js';
import { asGrpc } from './errors.js';
import type * as M from './messages.js';
import type { EtcdServer } from './etcd_server.js';

export class KVService {
  private readonly leaseKeys: LeaseKeys;

  constructor(private readonly server: EtcdServer) {
    this.leaseKeys = (id) => server.lessor.keyStringsOf(id).map(keyBytes);
  }

  /** KV.Range. */
  range(req: M.RangeRequest, ctx?: CallContext): M.RangeResponse {
    const server = this.server;
    const r = asGrpc(() => {
      const d = rangeIn(req);
      if (server.auth.checksTokens) {
        checkRangeRequest(d, !server.mvcc.compat.sortOrderUnchecked);
        checkRangeAuth(server.auth, server.authInfo(ctx), d);
      }
      return server.mvcc.range(d);
    });
    return rangeOut(r, header(server.identity, r.revision));
  }

  /** KV.Put: always a new revision. */
  put(req: M.PutRequest, ctx?: CallContext): M.PutResponse {
    const server = this.server;
    const r = asGrpc(() => {
      const d = putIn(req);
      if (server.auth.checksTokens) {
        checkPutRequest(d);
        const ai = server.authInfo(ctx);
        checkRequestSize(putSize(d), server.mvcc.maxRequestBytes); // proposing checks the size; applying, permissions
        this.denied(() => checkPutAuth(server.auth, ai, this.leaseKeys, d));
      }
      return server.mvcc.put(d);
    });
    return putOut(r, header(server.identity, r.revision));
  }

  /** KV.DeleteRange: one revision for all deleted keys, none when nothing matched. */
  deleteRange(req: M.DeleteRangeRequest, ctx?: CallContext): M.DeleteRangeResponse {
    const server = this.server;
    const r = asGrpc(() => {
      const d = deleteRangeIn(req);
      if (server.auth.checksTokens) {
        checkDeleteRequest(d);
        const ai = server.authInfo(ctx);
        checkRequestSize(deleteRangeSize(d), server.mvcc.maxRequestBytes);
        this.denied(() => checkDeleteRangeAuth(server.auth, ai, d));
      }
      return server.mvcc.deleteRange(d);
    });
    if (r.deleted === 0) server.noteRaftEntry(); // proposed and applied, but nothing committed
    return deleteRangeOut(r, header(server.identity, r.revision));
  }

  /** KV.Txn. A read-only txn is served like a Range (no Raft entry), as etcd does. */
  txn(req: M.TxnRequest, ctx?: CallContext): M.TxnResponse {
    const server = this.server;
    const before = server.mvcc.currentRevision;
    let readOnly = true;
    const r = asGrpc(() => {
      const t = txnIn(req);
      readOnly = isTxnReadOnly(t);
      if (server.auth.checksTokens) {
        checkTxnRequest(t, server.mvcc.maxTxnOps, !server.mvcc.compat.sortOrderUnchecked);
        // v3rpc's Txn checks put/delete overlaps too, before any token or permission is looked at (observed
        // on 3.4.23: duplicate key, not permission denied / invalid auth token; 3.5+ keep that order).
        checkIntervals(t.success ?? []);
        checkIntervals(t.failure ?? []);
        const ai = server.authInfo(ctx);
        if (readOnly) checkTxnAuth(server.auth, ai, this.leaseKeys, t);
        else {
          checkRequestSize(txnSize(t), server.mvcc.maxRequestBytes);
          this.denied(() => checkTxnAuth(server.auth, ai, this.leaseKeys, t));
        }
      }
      return server.mvcc.txn(t);
    });
    if (!readOnly && server.mvcc.currentRevision === before) server.noteRaftEntry();
    return txnOut(r, header(server.identity, r.revision));
  }

  /** KV.Compact. `physical` is accepted: the simulator's compaction is complete when the call returns. */
  compact(req: M.CompactionRequest, ctx?: CallContext): M.CompactionResponse {
    const server = this.server;
    const r = asGrpc(() => {
      const rev = int64ToNumber(req.revision, 'revision');
      server.authInfo(ctx); // an invalid token fails before the proposal
      return server.mvcc.compact(rev);
    });
    server.noteRaftEntry();
    return { header: header(server.identity, r.revision) };
  }

  /** A write denied at apply time was still proposed: one Raft entry, then the error. */
  private denied(check: () => void): void {
    try {
      check();
    } catch (err) {
      this.server.noteRaftEntry();
      throw err;
    }
  }
}

/** etcd's isTxnReadonly: every op on every branch, nested txns included, is a range. */
export function isTxnReadOnly(t: DTxnRequest): boolean {
  const ro = (ops: readonly RequestOp[] | undefined): boolean =>
    (ops ?? []).every((op) => op.requestRange !== undefined || (op.requestTxn !== undefined && isTxnReadOnly(op.requestTxn)));
  return ro(t.success) && ro(t.failure);
}
