/**
 * Txn semantics (etcd server/etcdserver/txn/txn.go). The order matters and is etcd's:
 *  1. every compare on the chosen path, nested ones included, is evaluated against the state *before*
 *     the txn (compareToPath), so a nested txn's guards never see the outer txn's writes;
 *  2. the ops on that path are checked (put: ignore_* needs the key, the lease must exist; range: its
 *     revision must be readable) — a failing check rejects the whole txn with nothing written;
 *  3. the ops run in one write txn: one revision for all changes, later ops reading earlier ones.
 */
import { compareBytes, EMPTY_BYTES, keyString } from './bytes.js';
import { ErrCompacted, ErrFutureRev, ErrKeyNotFound, ErrLeaseNotFound } from './errors.js';
import { fail } from '../etcd/index.js';
import { executeRange } from './range.js';
import { NO_RECORD, type History, type Rec } from './history.js';
import { spanHigh } from './read_view.js';
import { rangeEndOf, type Storage, type WriteTxn } from './store.js';
import type {
  Compare,
  DeleteRangeRequest,
  DeleteRangeResponse,
  KeyValue,
  PutRequest,
  PutResponse,
  ResponseOp,
  TxnRequest,
  TxnResponse,
} from './types.js';

function cmp(a: number | bigint, b: number | bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * compareRecord (etcd's compareKV): the compared field of stored revision `r` against the compare's operand (absent operand = zero
 * value); NO_RECORD, no key, compares as zero values (never asked of a VALUE compare: see applyCompare). The
 * record's columns are read directly: a CAS compares one field, and building the KeyValue a read gets cost
 * a tenth of one (issue 28).
 */
function compareRecord(c: Compare, h: History, r: Rec): boolean {
  const none = r === NO_RECORD;
  let result: number;
  switch (c.target) {
    case 'VALUE': {
      result = compareBytes(h.value(r), c.value ?? EMPTY_BYTES);
      break;
    }
    case 'CREATE':
      result = cmp(none ? 0 : h.createRevision(r), c.createRevision ?? 0);
      break;
    case 'MOD':
      result = cmp(none ? 0 : h.modRevision(r), c.modRevision ?? 0);
      break;
    case 'VERSION':
      result = cmp(none ? 0 : h.version(r), c.version ?? 0);
      break;
    case 'LEASE':
      result = cmp(none ? 0n : h.lease(r), c.lease ?? 0n);
      break;
    default:
      result = 0;
  }
  switch (c.result) {
    case 'EQUAL':
      return result === 0;
    case 'NOT_EQUAL':
      return result !== 0;
    case 'GREATER':
      return result > 0;
    case 'LESS':
      return result < 0;
    default:
      return true;
  }
}

/**
 * applyCompare: every key in the compare's range must satisfy it, at the store's revision before the txn; with
 * no key at all, a VALUE compare fails and the others compare against zero values (so CREATE == 0 means
 * "absent").
 */
export function applyCompare(s: Storage, c: Compare): boolean {
  const h = s.history;
  if (c.rangeEnd === undefined || c.rangeEnd.length === 0) {
    // One key, the compare a CAS makes: looked up by its bytes.
    const r = s.index.recordAtBytes(c.key, s.currentRev);
    return r === NO_RECORD && c.target === 'VALUE' ? false : compareRecord(c, h, r);
  }
  const key = keyString(c.key);
  const end = rangeEndOf(c.rangeEnd)!;
  const high = spanHigh(s, key, end);
  // Whether the keys seen so far all hold (undefined while none is seen); the walk stops at the first that fails.
  let holds: boolean | undefined;
  if (high !== undefined) {
    s.index.forRangeRecordsAt(key, high, end === '', s.currentRev, (r) => {
      holds = compareRecord(c, h, r);
      return !holds;
    });
  }
  return holds ?? (c.target !== 'VALUE' && compareRecord(c, h, NO_RECORD));
}

/** compareToPath: the branch taken by the txn and by each nested txn on that branch, depth first. */
export function compareToPath(s: Storage, t: TxnRequest, path: boolean[] = []): boolean[] {
  let ok = true;
  for (const c of t.compare ?? []) {
    if (!applyCompare(s, c)) {
      ok = false;
      break;
    }
  }
  path.push(ok);
  const ops = ok ? t.success : t.failure;
  if (ops !== undefined) {
    for (const op of ops) if (op.requestTxn !== undefined) compareToPath(s, op.requestTxn, path);
  }
  return path;
}

/**
 * Pre-checks of the ops on the chosen path, nested txns included, against the state before the txn: a put's
 * ignore_* flags need the key and its lease must exist; a range's revision must be readable. etcd 3.6+
 * (txn.go checkTxn) checks them in op order; etcd 3.4/3.5 (apply.go) ran all put checks, then all range
 * checks — which error a txn with both problems returns differs (found by the differential tests). `putsOnly`:
 * the first pass of 3.4/3.5; their second is the pass over all, whose put checks then find nothing new.
 */
export function checkTxn(s: Storage, t: TxnRequest, path: readonly boolean[], at: { i: number }, putsOnly = false): void {
  const ops = path[at.i++] ? t.success : t.failure;
  if (ops === undefined) return;
  for (const op of ops) {
    if (op.requestRange !== undefined) {
      if (putsOnly) continue;
      const rev = op.requestRange.revision ?? 0;
      if (rev === 0) continue;
      // Unlike a plain Range, a negative revision is not "current" here: it is below FirstRev (etcd #13871).
      if (rev > s.currentRev) fail(ErrFutureRev);
      if (rev < s.compactRev) fail(ErrCompacted);
    } else if (op.requestPut !== undefined) {
      checkPut(s, op.requestPut, true);
    } else if (op.requestTxn !== undefined) {
      checkTxn(s, op.requestTxn, path, at, putsOnly);
    }
  }
}

/**
 * The apply-time checks of a put. A plain Put looks up the lease first; inside a txn etcd checks the
 * ignore_* flags first (txn.go checkPut). Only the order of two errors differs.
 */
export function checkPut(s: Storage, p: PutRequest, inTxn: boolean): void {
  const lease = p.lease ?? 0n;
  const leaseMissing = lease !== 0n && (s.lessor === undefined || !s.lessor.exists(lease));
  if (!inTxn && leaseMissing) fail(ErrLeaseNotFound);
  if (p.ignoreValue === true || p.ignoreLease === true) {
    if (s.index.get(keyString(p.key))?.current() === undefined) fail(ErrKeyNotFound);
  }
  if (leaseMissing) fail(ErrLeaseNotFound);
}

/** put (txn.go): reads the previous KeyValue when a flag needs it, then writes. Checks ran before. */
export function executePut(tw: WriteTxn, p: PutRequest): PutResponse {
  let prev: KeyValue | undefined;
  if (p.ignoreValue === true || p.ignoreLease === true || p.prevKv === true) {
    prev = tw.getCurrent(p.key);
    if ((p.ignoreValue === true || p.ignoreLease === true) && prev === undefined) fail(ErrKeyNotFound);
  }
  const value = p.ignoreValue === true ? prev!.value : (p.value ?? EMPTY_BYTES);
  const lease = p.ignoreLease === true ? prev!.lease : (p.lease ?? 0n);
  const revision = tw.put(p.key, value, lease);
  return p.prevKv === true && prev !== undefined ? { revision, prevKv: prev } : { revision };
}

/** deleteRange (txn.go): prev_kv reads the range first, then every live key gets a tombstone. */
export function executeDeleteRange(tw: WriteTxn, d: DeleteRangeRequest): DeleteRangeResponse {
  const key = keyString(d.key);
  const end = rangeEndOf(d.rangeEnd);
  const prevKvs = d.prevKv === true ? tw.range(key, end, 0, 0, false).kvs : [];
  const { deleted, rev } = tw.deleteRange(key, end);
  return { revision: rev, deleted, prevKvs };
}

/**
 * A txn whose branch taken is one put that reads nothing first (no prev_kv, no ignore_*), as a compare-and-swap's
 * is, runs as a lone put (Storage.putOne: the same change, revision, events and answer as a write txn of that one
 * put, without the txn's bookkeeping, which cost a CAS as much as the put itself — issue 28). Undefined for any
 * other txn: executeTxn runs it. The checks ran before (checkTxn).
 */
export function executeLonePut(s: Storage, t: TxnRequest, path: readonly boolean[]): TxnResponse | undefined {
  const succeeded = path[0]!;
  const ops = succeeded ? t.success : t.failure;
  if (ops === undefined || ops.length !== 1) return undefined;
  const op = ops[0]!;
  const p = op.requestPut;
  if (p === undefined || op.requestRange !== undefined || p.prevKv === true || p.ignoreValue === true || p.ignoreLease === true) return undefined;
  const revision = s.putOne(p.key, p.value ?? EMPTY_BYTES, p.lease ?? 0n);
  return { revision, succeeded, responses: [{ responsePut: { revision } }] };
}

/** executeTxn: runs the ops of the chosen branch; nested txn responses carry revision 0, as in etcd. */
export function executeTxn(tw: WriteTxn, t: TxnRequest, path: readonly boolean[], at: { i: number }, nested: boolean): TxnResponse {
  const succeeded = path[at.i++]!;
  const ops = succeeded ? t.success : t.failure;
  const responses: ResponseOp[] = [];
  if (ops !== undefined) {
    for (const op of ops) {
      if (op.requestRange !== undefined) responses.push({ responseRange: executeRange(tw, op.requestRange) });
      else if (op.requestPut !== undefined) responses.push({ responsePut: executePut(tw, op.requestPut) });
      else if (op.requestDeleteRange !== undefined) responses.push({ responseDeleteRange: executeDeleteRange(tw, op.requestDeleteRange) });
      else if (op.requestTxn !== undefined) responses.push({ responseTxn: executeTxn(tw, op.requestTxn, path, at, true) });
    }
  }
  return { revision: nested ? 0 : tw.rev, succeeded, responses };
}
