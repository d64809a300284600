/**
 * The shape of a request, as protobuf guarantees it on etcd's wire and a JavaScript caller may not: bytes
 * fields are bytes, revisions are integers, lease IDs are exact int64 bigints, flags are booleans. A field
 * of the wrong type is refused with INVALID_ARGUMENT naming it, before anything else looks at the request —
 * so it can neither reach the store's bytes nor half-apply a txn. etcd has no text for this (its decoder
 * never produces such a request), so the message is ours and says which field and what it got.
 */
import { EtcdError, GrpcCode } from './errors.js';
import type { Compare, DeleteRangeRequest, PutRequest, RangeRequest, RequestOp, TxnRequest } from './types.js';

/** Refuses a request whose `field` is not `want`. */
export function invalidField(field: string, want: string, got: unknown): never {
  throw new EtcdError({ code: GrpcCode.INVALID_ARGUMENT, message: `etcdsim: ${field} must be ${want}, got ${describe(got)}` });
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return `a string (${JSON.stringify(v.length > 20 ? `${v.slice(0, 20)}…` : v)})`;
  if (typeof v === 'object') return `an object (${Object.getPrototypeOf(v)?.constructor?.name ?? 'null prototype'})`;
  return `${typeof v} ${String(v)}`;
}

function object(field: string, v: unknown): void {
  if (typeof v !== 'object' || v === null || Array.isArray(v) || ArrayBuffer.isView(v)) invalidField(field, 'an object', v);
}

/** A bytes field: a Uint8Array (a Node Buffer is one). */
export function checkBytes(field: string, v: unknown, optional: boolean): void {
  if (v instanceof Uint8Array) return;
  if (optional && v === undefined) return;
  invalidField(field, 'a Uint8Array', v);
}

function integer(field: string, v: unknown): void {
  if (v !== undefined && !Number.isSafeInteger(v)) invalidField(field, 'a safe integer', v);
}

function int64(field: string, v: unknown): void {
  if (v !== undefined && (typeof v !== 'bigint' || BigInt.asIntN(64, v) !== v)) invalidField(field, 'an int64 bigint', v);
}

function bool(field: string, v: unknown): void {
  if (v !== undefined && typeof v !== 'boolean') invalidField(field, 'a boolean', v);
}

function list(field: string, v: unknown): readonly unknown[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) invalidField(field, 'an array', v);
  return v;
}

export function checkRangeShape(r: RangeRequest, at = 'RangeRequest'): void {
  object(at, r);
  checkBytes(`${at}.key`, r.key, false);
  checkBytes(`${at}.rangeEnd`, r.rangeEnd, true);
  for (const f of ['limit', 'revision', 'minModRevision', 'maxModRevision', 'minCreateRevision', 'maxCreateRevision'] as const) integer(`${at}.${f}`, r[f]);
  for (const f of ['serializable', 'keysOnly', 'countOnly'] as const) bool(`${at}.${f}`, r[f]);
}

export function checkPutShape(r: PutRequest, at = 'PutRequest'): void {
  object(at, r);
  checkBytes(`${at}.key`, r.key, false);
  checkBytes(`${at}.value`, r.value, true);
  int64(`${at}.lease`, r.lease);
  for (const f of ['prevKv', 'ignoreValue', 'ignoreLease'] as const) bool(`${at}.${f}`, r[f]);
}

export function checkDeleteShape(r: DeleteRangeRequest, at = 'DeleteRangeRequest'): void {
  object(at, r);
  checkBytes(`${at}.key`, r.key, false);
  checkBytes(`${at}.rangeEnd`, r.rangeEnd, true);
  bool(`${at}.prevKv`, r.prevKv);
}

function checkCompareShape(c: Compare, at: string): void {
  object(at, c);
  checkBytes(`${at}.key`, c.key, false);
  checkBytes(`${at}.rangeEnd`, c.rangeEnd, true);
  for (const f of ['version', 'createRevision', 'modRevision'] as const) integer(`${at}.${f}`, c[f]);
  checkBytes(`${at}.value`, c.value, true);
  int64(`${at}.lease`, c.lease);
}

function checkOpShape(op: RequestOp, at: string): void {
  object(at, op);
  if (op.requestRange !== undefined) checkRangeShape(op.requestRange, `${at}.requestRange`);
  if (op.requestPut !== undefined) checkPutShape(op.requestPut, `${at}.requestPut`);
  if (op.requestDeleteRange !== undefined) checkDeleteShape(op.requestDeleteRange, `${at}.requestDeleteRange`);
  if (op.requestTxn !== undefined) checkTxnShape(op.requestTxn, `${at}.requestTxn`);
}

/** A txn, nested txns and every op and compare in it. */
export function checkTxnShape(r: TxnRequest, at = 'TxnRequest'): void {
  object(at, r);
  list(`${at}.compare`, r.compare).forEach((c, i) => checkCompareShape(c as Compare, `${at}.compare[${i}]`));
  list(`${at}.success`, r.success).forEach((op, i) => checkOpShape(op as RequestOp, `${at}.success[${i}]`));
  list(`${at}.failure`, r.failure).forEach((op, i) => checkOpShape(op as RequestOp, `${at}.failure[${i}]`));
}

/** A revision argument (Compact, HashKV). */
export function checkRevisionShape(field: string, v: unknown): void {
  if (!Number.isSafeInteger(v)) invalidField(field, 'a safe integer', v);
}
