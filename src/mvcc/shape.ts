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

// The checks below run on every request, so a well-formed one builds no strings: a field's name is joined
// only to refuse it, and a txn's ops and compares are first checked without their paths (`at` undefined):
// only when that pass finds something does a second pass, which names the paths, find it again and refuse it
// by name. The first pass's own refusal (its path unknown, so its text says "undefined") is never seen: its
// callers catch it and run the named pass. Fields are read by name, not through a list of names: a keyed read
// of every field was a visible part of a get's cost.

/** Where the checked message is: its path, or undefined in a txn's first, unnamed pass. */
type At = string | undefined;

/** Refuses `field` of the message at `at` (the unnamed pass passes no field name: nobody reads its text). */
function refuse(at: At, field: string | undefined, want: string, got: unknown): never {
  invalidField(`${at}.${field}`, want, got);
}

function object(at: At, v: unknown): void {
  if (typeof v !== 'object' || v === null || Array.isArray(v) || ArrayBuffer.isView(v)) invalidField(String(at), 'an object', v);
}

/** A bytes field: a Uint8Array (a Node Buffer is one). */
function bytes(at: At, field: string, v: unknown, optional: boolean): void {
  if (v instanceof Uint8Array) return;
  if (optional && v === undefined) return;
  refuse(at, field, 'a Uint8Array', v);
}

function integer(at: At, field: string, v: unknown): void {
  if (v !== undefined && !Number.isSafeInteger(v)) refuse(at, field, 'a safe integer', v);
}

function int64(at: At, field: string, v: unknown): void {
  if (v !== undefined && (typeof v !== 'bigint' || BigInt.asIntN(64, v) !== v)) refuse(at, field, 'an int64 bigint', v);
}

function bool(at: At, field: string, v: unknown): void {
  if (v !== undefined && typeof v !== 'boolean') refuse(at, field, 'a boolean', v);
}

function list(at: At, field: string | undefined, v: unknown): readonly unknown[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) refuse(at, field, 'an array', v);
  return v;
}

function rangeShape(r: RangeRequest, at: At): void {
  object(at, r);
  bytes(at, 'key', r.key, false);
  bytes(at, 'rangeEnd', r.rangeEnd, true);
  integer(at, 'limit', r.limit);
  integer(at, 'revision', r.revision);
  integer(at, 'minModRevision', r.minModRevision);
  integer(at, 'maxModRevision', r.maxModRevision);
  integer(at, 'minCreateRevision', r.minCreateRevision);
  integer(at, 'maxCreateRevision', r.maxCreateRevision);
  bool(at, 'serializable', r.serializable);
  bool(at, 'keysOnly', r.keysOnly);
  bool(at, 'countOnly', r.countOnly);
}

function putShape(r: PutRequest, at: At): void {
  object(at, r);
  bytes(at, 'key', r.key, false);
  bytes(at, 'value', r.value, true);
  int64(at, 'lease', r.lease);
  bool(at, 'prevKv', r.prevKv);
  bool(at, 'ignoreValue', r.ignoreValue);
  bool(at, 'ignoreLease', r.ignoreLease);
}

function deleteShape(r: DeleteRangeRequest, at: At): void {
  object(at, r);
  bytes(at, 'key', r.key, false);
  bytes(at, 'rangeEnd', r.rangeEnd, true);
  bool(at, 'prevKv', r.prevKv);
}

function compareShape(c: Compare, at: At): void {
  object(at, c);
  bytes(at, 'key', c.key, false);
  bytes(at, 'rangeEnd', c.rangeEnd, true);
  integer(at, 'version', c.version);
  integer(at, 'createRevision', c.createRevision);
  integer(at, 'modRevision', c.modRevision);
  bytes(at, 'value', c.value, true);
  int64(at, 'lease', c.lease);
}

/** `at` joined with a field of it, or still undefined in the unnamed pass. */
function inner(at: At, field: string): At {
  return at === undefined ? undefined : `${at}.${field}`;
}

/** An op and the request it carries, but not a nested txn's own ops and compares. */
function opOwnShape(op: RequestOp, at: At): void {
  object(at, op);
  if (op.requestRange !== undefined) rangeShape(op.requestRange, inner(at, 'requestRange'));
  if (op.requestPut !== undefined) putShape(op.requestPut, inner(at, 'requestPut'));
  if (op.requestDeleteRange !== undefined) deleteShape(op.requestDeleteRange, inner(at, 'requestDeleteRange'));
}

function opShape(op: RequestOp, at: At): void {
  opOwnShape(op, at);
  if (op.requestTxn !== undefined) txnShape(op.requestTxn, inner(at, 'requestTxn'));
}

function txnShape(r: TxnRequest, at: At): void {
  object(at, r);
  const compare = list(at, 'compare', r.compare);
  for (let i = 0; i < compare.length; i++) compareShape(compare[i] as Compare, inner(at, `compare[${i}]`));
  const success = list(at, 'success', r.success);
  for (let i = 0; i < success.length; i++) opShape(success[i] as RequestOp, inner(at, `success[${i}]`));
  const failure = list(at, 'failure', r.failure);
  for (let i = 0; i < failure.length; i++) opShape(failure[i] as RequestOp, inner(at, `failure[${i}]`));
}

export function checkRangeShape(r: RangeRequest, at = 'RangeRequest'): void {
  rangeShape(r, at);
}

export function checkPutShape(r: PutRequest, at = 'PutRequest'): void {
  putShape(r, at);
}

export function checkDeleteShape(r: DeleteRangeRequest, at = 'DeleteRangeRequest'): void {
  deleteShape(r, at);
}

/** A txn, nested txns and every op and compare in it: unnamed first, named only to refuse. */
export function checkTxnShape(r: TxnRequest, at = 'TxnRequest'): void {
  try {
    txnShape(r, undefined);
  } catch {
    // The unnamed pass's refusal, or what a field threw when read (then the named pass throws it again): the
    // named pass finds the same first refused field, and refuses it by name.
    txnShape(r, at);
  }
}

// The unnamed pass one message at a time, for the walk that checks a txn's shape as it goes over it for etcd's
// checks (validate.ts, checkTxnOnce): each throws at the first refused field; checkTxnShape, run then, names it.

/** A txn object and its lists (not their contents); unnamed, so no field names either. */
export function txnOwnShapeUnnamed(r: TxnRequest): void {
  object(undefined, r);
  list(undefined, undefined, r.compare);
  list(undefined, undefined, r.success);
  list(undefined, undefined, r.failure);
}

export function compareShapeUnnamed(c: Compare): void {
  compareShape(c, undefined);
}

/** A whole txn, nested ones included. */
export function txnShapeUnnamed(r: TxnRequest): void {
  txnShape(r, undefined);
}

/** An op and its range, put or delete (a nested txn is walked by the caller). */
export function opOwnShapeUnnamed(op: RequestOp): void {
  opOwnShape(op, undefined);
}

/** A revision argument (Compact, HashKV). */
export function checkRevisionShape(field: string, v: unknown): void {
  if (!Number.isSafeInteger(v)) invalidField(field, 'a safe integer', v);
}
