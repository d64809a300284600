/**
 * etcdserverpb.KV over one member: Range, Put, DeleteRange, Txn, Compact in message form. Every rule is
 * the MvccStore's; this layer converts, fills headers as etcd does and maps errors (errors.ts).
 *
 * Headers: the outer header carries cluster_id, member_id, raft_term and the revision — the current
 * store revision (for Range even when reading the past; for a write the revision it created; for
 * Compact the current one). Inside a Txn, range/put/delete responses carry only `revision` (the txn's
 * revision as of that op) and a nested txn's header is empty, as etcd 3.4.23 was observed to answer.
 *
 * Steps, once each and in etcd's order on every version profile (etcd 3.4.23 was observed to answer so):
 * the space quota (quota.ts: a Put's or a writing Txn's cost, before anything else) → validate (v3rpc's
 * checks) → the caller's token (AuthInfoFromCtx: a stale token fails before anything else looks at the
 * request) → size (a write's proposal must fit --max-request-bytes) → a raised alarm's
 * refusal (alarms.ts) → permissions (src/auth/enforce.ts) → apply. The validating, sizing and applying
 * are the MvccStore's (validatePut → checkPutSize → applyPut, ...); this layer puts the token, alarm and
 * permission checks between them. A read (Range, a read-only Txn) is not proposed: no size limit, and a
 * denied read is no Raft entry; a denied or alarm-refused write still is one, as etcd refuses it at apply
 * time. The token is looked up while auth is enabled, and on etcd 3.4 also while it is disabled
 * (AuthStore.checksTokens), so a stale one fails there too.
 *
 * A get of one key's current revision that no step could refuse but for an empty key takes one pass instead
 * (range): the same answer, without converting and checking every field a plain request leaves unset (issue 28:
 * those steps cost as much as etcd3's own call). A put takes its steps: they cost less than the store's write,
 * and a one-pass put beside them measured within noise of them (docs/performance.md, "Sixth pass").
 */
import { checkDeleteRangeAuth, checkPutAuth, checkRangeAuth, checkTxnAuth, type AuthInfo, type LeaseKeys } from '../auth/index.js';
import { isTxnReadOnly, keyBytes } from '../mvcc/index.js';
import { appliedTxn, type CallContext } from './call_context.js';
import { deleteRangeIn, deleteRangeOut, header, int64ToNumber, plainRangeIn, putIn, putOut, rangeIn, rangeOut, txnIn, txnOut } from './convert.js';
import { asGrpc, toGrpcError } from './errors.js';
import { refuseUnderAlarm } from './alarms.js';
import { checkQuota, costPut, costTxn } from './quota.js';
import type * as D from '../mvcc/index.js';
import type * as M from './messages.js';
import type { EtcdServer } from './etcd_server.js';

export { isTxnReadOnly };

/**
 * How a Txn is served: a write (proposal), a serializable read, or a linearizable one (etcd's isTxnReadonly
 * and isTxnSerializable) — what a member that runs Raft (a cluster's, a process's) decides before it
 * proposes or reads.
 */
export function txnKind(req: M.TxnRequest, t: D.TxnRequest | undefined = tryTxnIn(req)): 'write' | 'serializable' | 'linearizable' {
  // A malformed txn (no converted form) fails the same way on every member when applied.
  if (t === undefined || !isTxnReadOnly(t)) return 'write';
  const ops = [...(req.success ?? []), ...(req.failure ?? [])];
  return ops.every((op) => op.request_range?.serializable === true) ? 'serializable' : 'linearizable';
}

/**
 * The txn in the engine's form, or undefined when its message cannot be converted (the member's own Txn then
 * refuses it with the conversion's error): what a member that runs Raft converts once, before it proposes.
 */
export function tryTxnIn(req: M.TxnRequest): D.TxnRequest | undefined {
  try {
    return txnIn(req);
  } catch {
    return undefined;
  }
}

/** @public */
export class KVService {
  private readonly leaseKeys: LeaseKeys;

  /** @internal */
  constructor(private readonly server: EtcdServer) {
    this.leaseKeys = (id) => server.lessor.keyStringsOf(id).map(keyBytes);
  }

  /** KV.Range. */
  range(req: M.RangeRequest, ctx?: CallContext): M.RangeResponse {
    const server = this.server;
    // A get of one key on a member that looks up no token: one pass (MvccStore.tryPlainRange).
    const key = server.auth.checksTokens ? undefined : plainRangeIn(req);
    const plain = key === undefined ? undefined : server.mvcc.tryPlainRange(key);
    if (plain !== undefined) return rangeOut(plain, this.#sharedHeader(plain.revision));
    const r = asGrpc(() => {
      const mvcc = server.mvcc;
      const v = mvcc.validateRange(rangeIn(req));
      const ai = this.#caller(ctx);
      if (server.auth.enabled) checkRangeAuth(server.auth, ai, v);
      server.auth.checkServedRevision(ai);
      return mvcc.applyRange(v);
    });
    return rangeOut(r, header(server.identity, r.revision));
  }

  /**
   * KV.Put: always a new revision. The steps are written out without a closure (asGrpc's) around them: a put is
   * the call clients make most, and its own checks cost less than one allocation per call (issue 28).
   */
  put(req: M.PutRequest, ctx?: CallContext): M.PutResponse {
    const server = this.server;
    let r: D.PutResponse;
    try {
      const mvcc = server.mvcc;
      const put = putIn(req);
      checkQuota(server, costPut(put), ctx); // etcd's quota KV server, in front of every other check
      const v = mvcc.validatePut(put);
      const ai = this.#caller(ctx);
      const p = mvcc.checkPutSize(v);
      refuseUnderAlarm(server, 'put'); // an alarm's applier refuses before the auth applier checks
      if (server.auth.enabled) {
        try {
          checkPutAuth(server.auth, ai, this.leaseKeys, p);
        } catch (err) {
          throw this.#deniedAtApply(err);
        }
      }
      r = mvcc.applyPut(p);
    } catch (err) {
      throw toGrpcError(err);
    }
    return putOut(r, header(server.identity, r.revision));
  }

  /** KV.DeleteRange: one revision for all deleted keys, none when nothing matched. */
  deleteRange(req: M.DeleteRangeRequest, ctx?: CallContext): M.DeleteRangeResponse {
    const server = this.server;
    const r = asGrpc(() => {
      const mvcc = server.mvcc;
      const v = mvcc.validateDeleteRange(deleteRangeIn(req));
      const ai = this.#caller(ctx);
      const p = mvcc.checkDeleteRangeSize(v);
      refuseUnderAlarm(server, 'deleteRange');
      if (server.auth.enabled) {
        try {
          checkDeleteRangeAuth(server.auth, ai, p);
        } catch (err) {
          throw this.#deniedAtApply(err);
        }
      }
      return mvcc.applyDeleteRange(p);
    });
    if (r.deleted === 0) server.noteRaftEntry(); // proposed and applied, but nothing committed
    return deleteRangeOut(r, header(server.identity, r.revision));
  }

  /**
   * KV.Txn. A read-only txn is served like a Range (no Raft entry, no size limit), as etcd does. Its steps run
   * in a try/catch of their own, as put's do (no closure per call).
   */
  txn(req: M.TxnRequest, ctx?: CallContext): M.TxnResponse {
    const server = this.server;
    const before = server.mvcc.currentRevision;
    let readOnly = true;
    let r: D.TxnResponse;
    try {
      const mvcc = server.mvcc;
      // checkTxnRequest and checkIntervals both come before any token or permission is looked at (observed on
      // 3.4.23: duplicate key, not permission denied / invalid auth token; 3.5+ keep that order).
      const t = appliedTxn(ctx) ?? txnIn(req); // a cluster's entry carries it converted once, by the member asked
      const cost = costTxn(t); // the quota's, and the capped applier's, measure of a txn
      checkQuota(server, cost, ctx);
      const v = mvcc.validateTxn(t);
      const ai = this.#caller(ctx);
      const ro = mvcc.readOnlyTxn(v);
      if (ro !== undefined) {
        if (server.auth.enabled) checkTxnAuth(server.auth, ai, this.leaseKeys, ro);
        server.auth.checkServedRevision(ai);
        r = mvcc.applyTxn(ro);
      } else {
        readOnly = false;
        const p = mvcc.checkTxnSize(v);
        refuseUnderAlarm(server, 'txn', cost);
        if (server.auth.enabled) {
          try {
            checkTxnAuth(server.auth, ai, this.leaseKeys, p);
          } catch (err) {
            throw this.#deniedAtApply(err);
          }
        }
        r = mvcc.applyTxn(p);
      }
    } catch (err) {
      throw toGrpcError(err);
    }
    if (!readOnly && server.mvcc.currentRevision === before) server.noteRaftEntry();
    return txnOut(r, header(server.identity, r.revision));
  }

  /** KV.Compact. `physical` is accepted: the simulator's compaction is complete when the call returns. */
  compact(req: M.CompactionRequest, ctx?: CallContext): M.CompactionResponse {
    const server = this.server;
    const r = asGrpc(() => {
      const rev = int64ToNumber(req.revision, 'revision');
      server.authInfo(ctx); // an invalid token fails before the proposal
      refuseUnderAlarm(server, 'compact');
      return server.mvcc.compact(rev);
    });
    server.noteRaftEntry();
    return { header: header(server.identity, r.revision) };
  }

  /**
   * The header of a plain get's answer at `revision`: made once per revision and member identity, and frozen,
   * so the gets between two writes share one (a fresh header per answer was a quarter of etcd3's own call) and
   * no caller can change what another one reads.
   */
  #sharedHeader(revision: number): M.ResponseHeader {
    const identity = this.server.identity;
    if (revision !== this.#headerRevision || identity !== this.#headerIdentity) {
      this.#header = Object.freeze(header(identity, revision));
      this.#headerRevision = revision;
      this.#headerIdentity = identity;
    }
    return this.#header!;
  }

  #header: M.ResponseHeader | undefined;
  #headerRevision = -1;
  #headerIdentity: EtcdServer['identity'] | undefined;

  /**
   * The caller, from the call's token (etcd's AuthInfoFromCtx): looked up only while tokens are checked, so
   * a request with auth off does no lookup at all.
   */
  #caller(ctx: CallContext | undefined): AuthInfo | undefined {
    return this.server.auth.checksTokens ? this.server.authInfo(ctx) : undefined;
  }

  /** A write denied at apply time was still proposed: one Raft entry, then the error. */
  #deniedAtApply(err: unknown): unknown {
    this.server.noteRaftEntry();
    return err;
  }
}
