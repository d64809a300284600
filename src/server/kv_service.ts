/**
 * etcdserverpb.KV over one member: Range, Put, DeleteRange, Txn, Compact in message form. Every rule is
 * the MvccStore's; this layer converts, fills headers as etcd does and maps errors (errors.ts).
 *
 * Headers: the outer header carries cluster_id, member_id, raft_term and the revision — the current
 * store revision (for Range even when reading the past; for a write the revision it created; for
 * Compact the current one). Inside a Txn, range/put/delete responses carry only `revision` (the txn's
 * revision as of that op) and a nested txn's header is empty, as etcd 3.4.23 was observed to answer.
 */
import type { RequestOp, TxnRequest as DTxnRequest } from '../mvcc/index.js';
import { deleteRangeIn, deleteRangeOut, header, int64ToNumber, putIn, putOut, rangeIn, rangeOut, txnIn, txnOut } from './convert.js';
import { asGrpc } from './errors.js';
import type * as M from './messages.js';
import type { EtcdServer } from './etcd_server.js';

export class KVService {
  constructor(private readonly server: EtcdServer) {}

  /** KV.Range. */
  range(req: M.RangeRequest): M.RangeResponse {
    const r = asGrpc(() => this.server.kv.range(rangeIn(req)));
    return rangeOut(r, header(this.server.identity, r.revision));
  }

  /** KV.Put: always a new revision. */
  put(req: M.PutRequest): M.PutResponse {
    const r = asGrpc(() => this.server.kv.put(putIn(req)));
    return putOut(r, header(this.server.identity, r.revision));
  }

  /** KV.DeleteRange: one revision for all deleted keys, none when nothing matched. */
  deleteRange(req: M.DeleteRangeRequest): M.DeleteRangeResponse {
    const server = this.server;
    const r = asGrpc(() => server.kv.deleteRange(deleteRangeIn(req)));
    if (r.deleted === 0) server.noteRaftEntry(); // proposed and applied, but nothing committed
    return deleteRangeOut(r, header(server.identity, r.revision));
  }

  /** KV.Txn. A read-only txn is served like a Range (no Raft entry), as etcd does. */
  txn(req: M.TxnRequest): M.TxnResponse {
    const server = this.server;
    const before = server.kv.currentRevision;
    let readOnly = true;
    const r = asGrpc(() => {
      const t = txnIn(req);
      readOnly = isTxnReadOnly(t);
      return server.kv.txn(t);
    });
    if (!readOnly && server.kv.currentRevision === before) server.noteRaftEntry();
    return txnOut(r, header(server.identity, r.revision));
  }

  /** KV.Compact. `physical` is accepted: the simulator's compaction is complete when the call returns. */
  compact(req: M.CompactionRequest): M.CompactionResponse {
    const server = this.server;
    const r = asGrpc(() => server.kv.compact(int64ToNumber(req.revision, 'revision')));
    server.noteRaftEntry();
    return { header: header(server.identity, r.revision) };
  }
}

/** etcd's isTxnReadonly: every op on every branch, nested txns included, is a range. */
function isTxnReadOnly(t: DTxnRequest): boolean {
  const ro = (ops: readonly RequestOp[] | undefined): boolean =>
    (ops ?? []).every((op) => op.requestRange !== undefined || (op.requestTxn !== undefined && isTxnReadOnly(op.requestTxn)));
  return ro(t.success) && ro(t.failure);
}
