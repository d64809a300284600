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
import { compareSize, deleteRangeSize, messageField, putSize, raftRequestSize, rangeSize } from './request_size.js';
import { checkTxnShape, compareShapeUnnamed, opOwnShapeUnnamed, txnOwnShapeUnnamed, txnShapeUnnamed } from './shape.js';
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
export function checkRangeRequest(r: RangeRequest, sortOrderChecked: boolean): void {
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
 * What checkTxnOnce learned of a txn, for the steps after it (MvccStore keeps one and reuses it): the request it
 * checked, whether it only reads (etcd's isTxnReadonly) and the size of its proposal (txnSize).
 */
export interface TxnFacts {
  request: TxnRequest | undefined;
  readOnly: boolean;
  size: number;
}

/**
 * v3rpc's checks of a Txn in one walk over its compares and ops, nested txns included, as etcd's
 * checkTxnRequest walks it: the widest of compare/success/failure may not exceed maxTxnOps (a nested txn's
 * budget is what its parent left); compares need keys; each op is checked as its request would be, and an op
 * with nothing set is etcd's "key not found". Then checkIntervals on each top-level branch that holds anything
 * that could collide. The same walk checks every message's shape (shape.ts) and notes what the later steps
 * need (TxnFacts): a txn was walked once for each of these before, which cost a compare-and-swap more than
 * etcd's checks themselves (issue 28).
 *
 * The errors are the steps' own, in their order: a refused shape anywhere comes first (checkTxnShape runs on
 * any error, names the first and throws it), then etcd's errors in checkTxnRequest's order (the walk meets them
 * in that order and throws the first), then the intervals' ErrDuplicateKey.
 */
export function checkTxnOnce(r: TxnRequest, maxTxnOps: number, sortOrderChecked: boolean, facts: TxnFacts): void {
  facts.request = undefined;
  facts.readOnly = true;
  try {
    facts.size = walkTxn(r, maxTxnOps, sortOrderChecked, facts);
  } catch (err) {
    checkTxnShape(r); // a shape refused anywhere outranks what the walk met first
    throw err;
  }
  if (mayCollide(r.success)) checkIntervals(r.success!);
  if (mayCollide(r.failure)) checkIntervals(r.failure!);
  facts.request = r;
}

/** One txn of the walk (checkTxnOnce): throws the first error it meets; returns the txn's encoded size. */
function walkTxn(t: TxnRequest, maxTxnOps: number, sortOrderChecked: boolean, facts: TxnFacts): number {
  txnOwnShapeUnnamed(t);
  const compare = t.compare ?? [];
  const success = t.success ?? [];
  const failure = t.failure ?? [];
  const opc = Math.max(compare.length, success.length, failure.length);
  if (opc > maxTxnOps) fail(ErrTooManyOps);
  let size = 0;
  for (const c of compare) {
    compareShapeUnnamed(c);
    if (c.key.length === 0) fail(ErrEmptyKey);
    size += messageField(compareSize(c));
  }
  for (const op of success) size += messageField(walkOp(op, maxTxnOps - opc, sortOrderChecked, facts));
  for (const op of failure) size += messageField(walkOp(op, maxTxnOps - opc, sortOrderChecked, facts));
  return size;
}

/** One op of the walk: its shape, etcd's check of the request it carries; returns its encoded size (requestOpSize). */
function walkOp(op: RequestOp, maxTxnOps: number, sortOrderChecked: boolean, facts: TxnFacts): number {
  opOwnShapeUnnamed(op);
  const txn = op.requestTxn;
  if (txn !== undefined && (op.requestRange !== undefined || op.requestPut !== undefined || op.requestDeleteRange !== undefined)) {
    // Two requests in one op (protobuf's oneof holds one; a JavaScript caller can set more): etcd's checks and the
    // size take the first below, as checkRequestOp does, while the shape looks at the txn too.
    txnShapeUnnamed(txn);
  }
  // isTxnReadonly: every op of the txn's own branches is a range. A nested txn's ops need not be told apart
  // from its parent's: the walk reaches them only through an op that is no range, which made the txn a write.
  if (op.requestRange === undefined) facts.readOnly = false;
  if (op.requestRange !== undefined) {
    checkRangeRequest(op.requestRange, sortOrderChecked);
    return messageField(rangeSize(op.requestRange));
  }
  if (op.requestPut !== undefined) {
    checkPutRequest(op.requestPut);
    return messageField(putSize(op.requestPut));
  }
  if (op.requestDeleteRange !== undefined) {
    checkDeleteRequest(op.requestDeleteRange);
    return messageField(deleteRangeSize(op.requestDeleteRange));
  }
  if (txn !== undefined) return messageField(walkTxn(txn, maxTxnOps, sortOrderChecked, facts));
  return fail(ErrKeyNotFound);
}

/**
 * Whether checkIntervals could find anything in one top-level branch: not in a branch with at most one put, no
 * delete and no nested txn (a compare-and-swap's branches: a put and a get), whose walk would build a set and an
 * interval list only to find nothing.
 */
function mayCollide(reqs: readonly RequestOp[] | undefined): boolean {
  let puts = 0;
  for (const op of reqs ?? []) {
    if (op.requestDeleteRange !== undefined || op.requestTxn !== undefined || (op.requestPut !== undefined && ++puts > 1)) return true;
  }
  return false;
}

/** A half-open interval of keys [begin, end); a delete's range_end "\0" is kept as [key, "\0"), which holds nothing (containsPoint). */
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

/** --max-request-bytes: the proposal etcd would marshal for this request must fit. */
export function checkRequestSize(innerSize: number, maxRequestBytes: number): void {
  if (!requestFits(innerSize, maxRequestBytes)) fail(ErrRequestTooLarge);
}

/** Whether the proposal of a request of `innerSize` bytes fits --max-request-bytes. */
export function requestFits(innerSize: number, maxRequestBytes: number): boolean {
  return raftRequestSize(innerSize) <= maxRequestBytes;
}
