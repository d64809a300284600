/**
 * The shape of a request, as protobuf guarantees it on etcd's wire and a JavaScript caller may not: bytes
 * fields are bytes, revisions are integers, lease IDs are exact int64 bigints, flags are booleans. A field
 * of the wrong type is refused with INVALID_ARGUMENT naming it, before anything else looks at the request —
 * so it can neither reach the store's bytes nor half-apply a txn. etcd has no text for this (its decoder
 * never produces such a request), so the message is ours and says which field and what it got.
 */
import { EtcdError, GrpcCode } from '../etcd/index.js';
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

function object(at: string, v: unknown): void {
  if (typeof v !== 'object' || v === null || Array.isArray(v) || ArrayBuffer.isView(v)) invalidField(at, 'an object', v);
}

// The checks below run on every request: each takes the request's path and the field's name apart and
// joins them only to name a refused field, so a well-formed request builds no strings.

/** A bytes field: a Uint8Array (a Node Buffer is one). */
function bytes(at: string, field: string, v: unknown, optional: boolean): void {
  if (v instanceof Uint8Array) return;
  if (optional && v === undefined) return;
  invalidField(fieldName(at, field), 'a Uint8Array', v);
}

function fieldName(at: string, field: string): string {
  return `${at}.${field}`;
}

function integers<K extends string>(at: string, r: { readonly [k in K]?: unknown }, fields: readonly K[]): void {
  for (let i = 0; i < fields.length; i++) {
    const v = r[fields[i]!];
    if (v !== undefined && !Number.isSafeInteger(v)) invalidField(fieldName(at, fields[i]!), 'a safe integer', v);
  }
}

function int64(at: string, field: string, v: unknown): void {
  if (v !== undefined && (typeof v !== 'bigint' || BigInt.asIntN(64, v) !== v)) invalidField(fieldName(at, field), 'an int64 bigint', v);
}

function bools<K extends string>(at: string, r: { readonly [k in K]?: unknown }, fields: readonly K[]): void {
  for (let i = 0; i < fields.length; i++) {
    const v = r[fields[i]!];
    if (v !== undefined && typeof v !== 'boolean') invalidField(fieldName(at, fields[i]!), 'a boolean', v);
  }
}

function list(field: string, v: unknown): readonly unknown[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) invalidField(field, 'an array', v);
  return v;
}

const RANGE_INTEGERS = ['limit', 'revision', 'minModRevision', 'maxModRevision', 'minCreateRevision', 'maxCreateRevision'] as const;
const RANGE_BOOLS = ['serializable', 'keysOnly', 'countOnly'] as const;
const PUT_BOOLS = ['prevKv', 'ignoreValue', 'ignoreLease'] as const;
const DELETE_BOOLS = ['prevKv'] as const;
const COMPARE_INTEGERS = ['version', 'createRevision', 'modRevision'] as const;

export function checkRangeShape(r: RangeRequest, at = 'RangeRequest'): void {
  object(at, r);
  bytes(at, 'key', r.key, false);
  bytes(at, 'rangeEnd', r.rangeEnd, true);
  integers(at, r, RANGE_INTEGERS);
  bools(at, r, RANGE_BOOLS);
}

export function checkPutShape(r: PutRequest, at = 'PutRequest'): void {
  object(at, r);
  bytes(at, 'key', r.key, false);
  bytes(at, 'value', r.value, true);
  int64(at, 'lease', r.lease);
  bools(at, r, PUT_BOOLS);
}

export function checkDeleteShape(r: DeleteRangeRequest, at = 'DeleteRangeRequest'): void {
  object(at, r);
  bytes(at, 'key', r.key, false);
  bytes(at, 'rangeEnd', r.rangeEnd, true);
  bools(at, r, DELETE_BOOLS);
}

function checkCompareShape(c: Compare, at: string): void {
  object(at, c);
  bytes(at, 'key', c.key, false);
  bytes(at, 'rangeEnd', c.rangeEnd, true);
  integers(at, c, COMPARE_INTEGERS);
  bytes(at, 'value', c.value, true);
  int64(at, 'lease', c.lease);
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
