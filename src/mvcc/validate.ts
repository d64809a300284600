/**
 * Request validation that etcd performs before a request reaches raft (etcdserver/api/v3rpc/key.go):
 * empty keys, sort options, put flags, txn size and duplicate keys, and the request-size limit. A request
 * that fails here changes nothing.
 *
 * Each request is validated once on its way in. MvccStore's validate* methods run these checks and hand the
 * request back typed as Validated; its checkXSize methods add the size limit (Proposable) and its apply*
 * methods take only such types, so a layer that runs steps of its own between etcd's (the server's token
 * and permission checks) can reach the store without the store checking the request a second time.
 */
import { keyString, type KeyString } from './bytes.js';
import { ErrDuplicateKey, ErrEmptyKey, ErrInvalidSortOption, ErrKeyNotFound, ErrLeaseProvided, ErrRequestTooLarge, ErrTooManyOps, ErrValueProvided } from './errors.js';
import { fail } from '../etcd/index.js';
import { raftRequestSize } from './request_size.js';
import type { DeleteRangeRequest, PutRequest, RangeRequest, RequestOp, TxnRequest } from './types.js';

/** etcd's defaults for the limits validation enforces (--max-txn-ops, --max-request-bytes). @public */
export const DEFAULT_MAX_TXN_OPS = 128;
/** @public */
export const DEFAULT_MAX_REQUEST_BYTES = 1.5 * 1024 * 1024;

declare const validated: unique symbol;
declare const proposable: unique symbol;
declare const readOnly: unique symbol;

/**
 * A request that passed etcd's gRPC-layer checks (v3rpc checkRangeRequest, checkPutRequest,
 * checkDeleteRequest, checkTxnRequest + checkIntervals, and the shape protobuf's decoder guarantees): what
 * etcd goes on to authenticate, propose or serve. A type only: validation returns the object it checked, so
 * the mark costs nothing at run time. Made by MvccStore's validate* methods; the request must not change
 * afterwards.
 */
export type Validated<R> = R & { readonly [validated]: true };

/**
 * A validated write whose Raft proposal fits --max-request-bytes (etcd checks the marshaled
 * InternalRaftRequest in processInternalRaftRequestOnce, after the token and before proposing): what etcd
 * proposes, and what MvccStore applies.
 */
export type Proposable<R> = Validated<R> & { readonly [proposable]: true };

/**
 * A validated txn whose every op is a range (etcd's isTxnReadonly): etcd serves it like a Range, without a
 * proposal, so the request-size limit never applies to it.
 */
export type ReadOnlyTxn = Validated<TxnRequest> & { readonly [readOnly]: true };

/**
 * etcd's isTxnReadonly: every op of both branches is a range. A nested txn is not looked into: a txn that
 * holds one is proposed like a write even if it only reads (etcd 3.4's v3_server.go and 3.6's txn.go alike),
 * so --max-request-bytes applies to it and a member that runs Raft proposes it.
 */
export function isTxnReadOnly(t: TxnRequest): boolean {
  return opsReadOnly(t.success) && opsReadOnly(t.failure);
}

function opsReadOnly(ops: readonly RequestOp[] | undefined): boolean {
  if (ops === undefined) return true;
  for (const op of ops) if (op.requestRange === undefined) return false;
  return true;
}

const SORT_ORDERS: ReadonlySet<string> = new Set(['NONE', 'ASCEND', 'DESCEND']);
const SORT_TARGETS: ReadonlySet<string> = new Set(['KEY', 'VERSION', 'CREATE', 'MOD', 'VALUE']);

/** `sortOrderChecked` false: etcd 3.4, whose checkRangeRequest looks at the key only (see compat.ts). */
export function checkRangeRequest(r: RangeRequest, sortOrderChecked = true): void {
  if (r.key.length === 0) fail(ErrEmptyKey);
  if (sortOrderChecked && r.sortOrder !== undefined && !SORT_ORDERS.has(r.sortOrder)) fail(ErrInvalidSortOption);
  if (r.sortTarget !== undefined && !SORT_TARGETS.has(r.sortTarget)) fail(ErrInvalidSortOption);
}

export function checkPutRequest(r: PutRequest): void {
  if (r.key.length === 0) fail(ErrEmptyKey);
  if (r.ignoreValue === true && r.value !== undefined && r.value.length !== 0) fail(ErrValueProvided);
  if (r.ignoreLease === true && r.lease !== undefined && r.lease !== 0n) fail(ErrLeaseProvided);
}

export function checkDeleteRequest(r: DeleteRangeRequest): void {
  if (r.key.length === 0) fail(ErrEmptyKey);
}

/**
 * checkTxnRequest: the widest of compare/success/failure may not exceed maxTxnOps; compares need keys;
 * each op is checked, a nested txn against what its parent left of the budget; an op with nothing set is
 * etcd's "key not found".
 */
export function checkTxnRequest(r: TxnRequest, maxTxnOps: number, sortOrderChecked = true): void {
  const compare = r.compare ?? [];
  const success = r.success ?? [];
  const failure = r.failure ?? [];
  const opc = Math.max(compare.length, success.length, failure.length);
  if (opc > maxTxnOps) fail(ErrTooManyOps);
  for (const c of compare) if (c.key.length === 0) fail(ErrEmptyKey);
  for (const op of success) checkRequestOp(op, maxTxnOps - opc, sortOrderChecked);
  for (const op of failure) checkRequestOp(op, maxTxnOps - opc, sortOrderChecked);
}

function checkRequestOp(op: RequestOp, maxTxnOps: number, sortOrderChecked: boolean): void {
  if (op.requestRange !== undefined) return checkRangeRequest(op.requestRange, sortOrderChecked);
  if (op.requestPut !== undefined) return checkPutRequest(op.requestPut);
  if (op.requestDeleteRange !== undefined) return checkDeleteRequest(op.requestDeleteRange);
  if (op.requestTxn !== undefined) return checkTxnRequest(op.requestTxn, maxTxnOps, sortOrderChecked);
  fail(ErrKeyNotFound);
}

/** A half-open interval of keys; a point is [k, k+"\0"). An `end` of '' is etcd's "\0": see intersects. */
interface Interval {
  readonly begin: KeyString;
  readonly end: KeyString;
}

/**
 * etcd's interval test for a delete range against a put key. A delete with range_end "\0" is stored
 * as [key, "\0"), an interval that contains nothing, so etcd lets a txn put a key that the same branch
 * deletes "from key" — a quirk we keep.
 */
function containsPoint(dels: readonly Interval[], k: KeyString): boolean {
  const pointEnd = k + '\0';
  for (const d of dels) if (d.begin < pointEnd && k < d.end) return true;
  return false;
}

/**
 * checkIntervals: within one branch no key may be put twice, nor put inside a range the branch deletes;
 * nested txns count with their parents, but a nested txn's then and else may put the same key since only
 * one of them runs. Returns the branch's puts and deletes for the parent's check.
 */
export function checkIntervals(reqs: readonly RequestOp[]): { puts: Set<KeyString>; dels: Interval[] } {
  const dels: Interval[] = [];
  for (const op of reqs) {
    const d = op.requestDeleteRange;
    if (d === undefined) continue;
    const begin = keyString(d.key);
    const end = d.rangeEnd !== undefined && d.rangeEnd.length > 0 ? keyString(d.rangeEnd) : begin + '\0';
    dels.push({ begin, end });
  }
  const puts = new Set<KeyString>();
  for (const op of reqs) {
    const t = op.requestTxn;
    if (t === undefined) continue;
    const then = checkIntervals(t.success ?? []);
    const otherwise = checkIntervals(t.failure ?? []);
    for (const k of then.puts) {
      if (puts.has(k) || containsPoint(dels, k)) fail(ErrDuplicateKey);
      puts.add(k);
    }
    for (const k of otherwise.puts) {
      if ((puts.has(k) && !then.puts.has(k)) || containsPoint(dels, k)) fail(ErrDuplicateKey);
      puts.add(k);
    }
    dels.push(...then.dels, ...otherwise.dels);
  }
  for (const op of reqs) {
    const p = op.requestPut;
    if (p === undefined) continue;
    const k = keyString(p.key);
    if (puts.has(k) || containsPoint(dels, k)) fail(ErrDuplicateKey);
    puts.add(k);
  }
  return { puts, dels };
}

/**
 * checkIntervals on one top-level branch of a txn. A branch with at most one put, no delete and no nested
 * txn holds nothing that could collide, so it is not walked (a compare-and-swap's branches: a put and a
 * get) — the walk would build a set and an interval list per branch only to find nothing.
 */
export function checkBranchIntervals(reqs: readonly RequestOp[]): void {
  let puts = 0;
  for (const op of reqs) {
    if (op.requestDeleteRange !== undefined || op.requestTxn !== undefined || (op.requestPut !== undefined && ++puts > 1)) {
      checkIntervals(reqs);
      return;
    }
  }
}

/** --max-request-bytes: the proposal etcd would marshal for this request must fit. */
export function checkRequestSize(innerSize: number, maxRequestBytes: number): void {
  if (!requestFits(innerSize, maxRequestBytes)) fail(ErrRequestTooLarge);
}

/** Whether the proposal of a request of `innerSize` bytes fits --max-request-bytes. */
export function requestFits(innerSize: number, maxRequestBytes: number): boolean {
  return raftRequestSize(innerSize) <= maxRequestBytes;
}
