/**
 * Message form ⇄ domain form. The wire carries int64 as decimal strings and bytes as Buffers; the engine
 * takes numbers for revisions (far below 2^53 in any simulation) and bigint for lease IDs.
 *
 * Numbers from the wire can be any int64. A revision, limit or TTL beyond ±2^53 is clamped to
 * ±Number.MAX_SAFE_INTEGER, which keeps every rule that depends on it exact: a revision that large is
 * still a future revision, a negative one still "below the compaction point", a TTL that large still too
 * large. Lease IDs are converted exactly (bigint) and checked to fit int64.
 *
 * Bytes in requests are not copied: the store copies the keys and values it keeps, and lookups only read
 * them. Bytes in responses are fresh Buffers, so a client can never reach the store's own copies — but for
 * eventView's, which only a reader that encodes them at once gets (the gRPC door's Watch).
 */
import { Buffer } from '../sim/index.js';
import type * as D from '../mvcc/index.js';
import type { WatchCreateRequest as DWatchCreate, WatchEvent as DWatchEvent, WatchFilter, WatchResponse as DWatchResponse } from '../watch/index.js';
import { invalidArgument } from './errors.js';
import type * as M from './messages.js';

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;
const EMPTY: Uint8Array = new Uint8Array(0);
const INT_RE = /^[-+]?\d+$/;

// ---------------------------------------------------------------------------------------------------
// Scalars

/** int64 → number, clamped to ±2^53-1 (see the module comment). Absent is 0. */
export function int64ToNumber(v: M.Int64Input | undefined, field: string): number {
  if (v === undefined) return 0;
  if (typeof v === 'string') {
    // Fast path: up to 15 digits is always a safe integer.
    if (v.length > 0 && v.length <= 15 && INT_RE.test(v)) return Number(v);
    if (v === '') return 0;
    if (!INT_RE.test(v)) throw invalidArgument(`invalid int64 value ${JSON.stringify(v)} for field ${field}`);
    return clampBig(BigInt(v));
  }
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) throw invalidArgument(`invalid int64 value ${String(v)} for field ${field}`);
    return v > MAX_SAFE ? MAX_SAFE : v < -MAX_SAFE ? -MAX_SAFE : v;
  }
  if (typeof v === 'bigint') return clampBig(v);
  throw invalidArgument(`invalid int64 value for field ${field}`);
}

function clampBig(b: bigint): number {
  if (b > BigInt(MAX_SAFE)) return MAX_SAFE;
  if (b < -BigInt(MAX_SAFE)) return -MAX_SAFE;
  return Number(b);
}

/** int64 → bigint, exact; out of int64 range is a malformed request. Absent is 0n. */
export function int64ToBigInt(v: M.Int64Input | undefined, field: string): bigint {
  const b = toBig(v, field);
  if (b < INT64_MIN || b > INT64_MAX) throw invalidArgument(`int64 value ${b} out of range for field ${field}`);
  return b;
}

/** uint64 → bigint, exact. */
export function uint64ToBigInt(v: M.Int64Input | undefined, field: string): bigint {
  const b = toBig(v, field);
  if (b < 0n || b > UINT64_MAX) throw invalidArgument(`uint64 value ${b} out of range for field ${field}`);
  return b;
}

function toBig(v: M.Int64Input | undefined, field: string): bigint {
  if (v === undefined || v === '') return 0n;
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) throw invalidArgument(`invalid int64 value ${String(v)} for field ${field}`);
    return BigInt(v);
  }
  if (typeof v === 'string' && INT_RE.test(v)) return BigInt(v);
  throw invalidArgument(`invalid int64 value ${JSON.stringify(v)} for field ${field}`);
}

/**
 * int64 → number when it is exactly representable, else undefined (watch IDs: the caller keeps an
 * exact mapping for the rest).
 */
export function int64ToExactNumber(v: M.Int64Input | undefined, field: string): number | undefined {
  const b = int64ToBigInt(v, field);
  return b >= -BigInt(MAX_SAFE) && b <= BigInt(MAX_SAFE) ? Number(b) : undefined;
}

/**
 * Request bytes: no copy. A string is base64, as protobufjs's fromObject reads it. Absent is empty.
 * Anything else (a number, a plain object) is refused as protobufjs refuses it, naming the field.
 */
export function bytesIn(v: M.BytesInput | string | undefined, field = 'bytes'): Uint8Array {
  if (v == null) return EMPTY;
  if (typeof v === 'string') return Buffer.from(v, 'base64');
  if (!(v instanceof Uint8Array)) throw invalidArgument(`invalid bytes value for field ${field}: ${typeof v}`);
  return v;
}

/**
 * Response bytes: a fresh Buffer from Node's pool. allocUnsafe + set copies a short key or value in about
 * two thirds of Buffer.from's time (which goes through its generic array-like path), and every kv of every
 * answer takes two.
 */
export function bytesOut(v: Uint8Array): Buffer {
  const n = v.byteLength;
  if (n === 0) return Buffer.alloc(0);
  const out = Buffer.allocUnsafe(n);
  out.set(v);
  return out;
}

/** An int64 field's decimal string; most kvs have no lease, and String(0n) is not free. */
export function leaseOut(lease: bigint): string {
  return lease === 0n ? '0' : String(lease);
}

// ---------------------------------------------------------------------------------------------------
// Enums: upstream names pass through; numbers map by value; an unknown value is passed on as is, so the
// engine's validation (or its etcd-compatible default) decides, exactly once.

const SORT_ORDERS: readonly D.SortOrder[] = ['NONE', 'ASCEND', 'DESCEND'];
const SORT_TARGETS: readonly D.SortTarget[] = ['KEY', 'VERSION', 'CREATE', 'MOD', 'VALUE'];
const COMPARE_RESULTS: readonly D.CompareResult[] = ['EQUAL', 'GREATER', 'LESS', 'NOT_EQUAL'];
const COMPARE_TARGETS: readonly D.CompareTarget[] = ['VERSION', 'CREATE', 'MOD', 'VALUE', 'LEASE'];
const FILTERS: readonly WatchFilter[] = ['NOPUT', 'NODELETE'];

function enumIn<T extends string>(v: T | number | string | undefined, names: readonly T[]): T | undefined {
  if (v === undefined) return undefined;
  if (typeof v === 'number') return names[v] ?? (String(v) as T);
  return v as T;
}

// ---------------------------------------------------------------------------------------------------
// KV requests

/** A message field that may be absent: protobuf decodes a missing message as an empty one. */
function msg<T extends object>(v: T | null | undefined): Partial<T> {
  return v ?? {};
}

/** A repeated field: absent is empty; anything but an array is a malformed request. */
function listIn<T>(v: readonly T[] | null | undefined, field: string): readonly T[] {
  if (v == null) return [];
  if (!Array.isArray(v)) throw invalidArgument(`invalid repeated value for field ${field}: ${typeof v}`);
  return v;
}

export function rangeIn(req: M.RangeRequest): D.RangeRequest {
  const r = msg(req);
  return {
    key: bytesIn(r.key, 'key'),
    rangeEnd: r.range_end === undefined ? undefined : bytesIn(r.range_end, 'range_end'),
    limit: int64ToNumber(r.limit, 'limit'),
    revision: int64ToNumber(r.revision, 'revision'),
    sortOrder: enumIn(r.sort_order, SORT_ORDERS),
    sortTarget: enumIn(r.sort_target, SORT_TARGETS),
    serializable: r.serializable ?? undefined,
    keysOnly: r.keys_only ?? undefined,
    countOnly: r.count_only ?? undefined,
    minModRevision: int64ToNumber(r.min_mod_revision, 'min_mod_revision'),
    maxModRevision: int64ToNumber(r.max_mod_revision, 'max_mod_revision'),
    minCreateRevision: int64ToNumber(r.min_create_revision, 'min_create_revision'),
    maxCreateRevision: int64ToNumber(r.max_create_revision, 'max_create_revision'),
  };
}

export function putIn(req: M.PutRequest): D.PutRequest {
  const r = msg(req);
  return {
    key: bytesIn(r.key, 'key'),
    value: bytesIn(r.value, 'value'),
    lease: r.lease === undefined ? 0n : int64ToBigInt(r.lease, 'lease'),
    prevKv: r.prev_kv ?? undefined,
    ignoreValue: r.ignore_value ?? undefined,
    ignoreLease: r.ignore_lease ?? undefined,
  };
}

/**
 * The key of a Range that asks for one key's current revision and nothing that could change the answer —
 * no range end, revision, sort, filter, keys_only or count_only; any limit, which one key's answer never
 * reaches; a gRPC decoder's defaults count as unset — or undefined for any other request (which rangeIn
 * converts and the store's checks judge). The KV service serves such a get in one pass (kv_service.ts).
 */
export function plainRangeIn(req: M.RangeRequest | null | undefined): Uint8Array | undefined {
  if (req == null) return undefined;
  const { key, range_end: end, limit } = req;
  if (!(key instanceof Uint8Array) || !(end == null || (end instanceof Uint8Array && end.length === 0))) return undefined;
  if (!(unsetInt(limit) || limit === 1 || limit === '1' || (typeof limit === 'number' && Number.isSafeInteger(limit)))) return undefined;
  if (!unsetInt(req.revision) || !unsetInt(req.min_mod_revision) || !unsetInt(req.max_mod_revision)) return undefined;
  if (!unsetInt(req.min_create_revision) || !unsetInt(req.max_create_revision)) return undefined;
  if (!(req.sort_order == null || req.sort_order === 'NONE' || req.sort_order === 0)) return undefined;
  if (!(req.sort_target == null || req.sort_target === 'KEY' || req.sort_target === 0)) return undefined;
  if (!unset(req.keys_only) || !unset(req.count_only) || !(unset(req.serializable) || req.serializable === true)) return undefined;
  return key;
}

/** A bool field left at its default. */
function unset(v: boolean | null | undefined): boolean {
  return v == null || v === false;
}

/** An int64 field left at its default. */
function unsetInt(v: M.Int64Input | null | undefined): boolean {
  return v == null || v === '0' || v === 0 || v === 0n;
}

export function deleteRangeIn(req: M.DeleteRangeRequest): D.DeleteRangeRequest {
  const r = msg(req);
  return {
    key: bytesIn(r.key, 'key'),
    rangeEnd: r.range_end === undefined ? undefined : bytesIn(r.range_end, 'range_end'),
    prevKv: r.prev_kv ?? undefined,
  };
}

/**
 * Whether a compare's target field `m`, whose value is `v`, is set: the oneof's name `u` when the message says it,
 * else the field present. The value is passed in, read by name at the call: reading it here by the name (`c[m]`)
 * was most of a compare's conversion, a visible part of a CAS (issue 28).
 */
function targetSet(u: M.Compare['target_union'], m: NonNullable<M.Compare['target_union']>, v: unknown): boolean {
  return u === undefined ? v !== undefined : u === m;
}

export function compareIn(cmp: M.Compare): D.Compare {
  const c = msg(cmp);
  const u = c.target_union;
  return {
    key: bytesIn(c.key, 'key'),
    rangeEnd: c.range_end === undefined ? undefined : bytesIn(c.range_end, 'range_end'),
    target: enumIn(c.target, COMPARE_TARGETS) ?? 'VERSION',
    result: enumIn(c.result, COMPARE_RESULTS) ?? 'EQUAL',
    version: targetSet(u, 'version', c.version) ? int64ToNumber(c.version, 'version') : undefined,
    createRevision: targetSet(u, 'create_revision', c.create_revision) ? int64ToNumber(c.create_revision, 'create_revision') : undefined,
    modRevision: targetSet(u, 'mod_revision', c.mod_revision) ? int64ToNumber(c.mod_revision, 'mod_revision') : undefined,
    value: targetSet(u, 'value', c.value) ? bytesIn(c.value, 'value') : undefined,
    lease: targetSet(u, 'lease', c.lease) ? int64ToBigInt(c.lease, 'lease') : undefined,
  };
}

export function requestOpIn(req: M.RequestOp): D.RequestOp {
  const op = msg(req);
  const which =
    op.request ??
    (op.request_range !== undefined
      ? 'request_range'
      : op.request_put !== undefined
        ? 'request_put'
        : op.request_delete_range !== undefined
          ? 'request_delete_range'
          : op.request_txn !== undefined
            ? 'request_txn'
            : undefined);
  switch (which) {
    case 'request_range':
      return op.request_range == null ? {} : { requestRange: rangeIn(op.request_range) };
    case 'request_put':
      return op.request_put == null ? {} : { requestPut: putIn(op.request_put) };
    case 'request_delete_range':
      return op.request_delete_range == null ? {} : { requestDeleteRange: deleteRangeIn(op.request_delete_range) };
    case 'request_txn':
      return op.request_txn == null ? {} : { requestTxn: txnIn(op.request_txn) };
    default:
      return {}; // an empty union: the engine answers etcd's "key not found"
  }
}

export function txnIn(req: M.TxnRequest): D.TxnRequest {
  const t = msg(req);
  return {
    compare: listIn(t.compare, 'compare').map(compareIn),
    success: listIn(t.success, 'success').map(requestOpIn),
    failure: listIn(t.failure, 'failure').map(requestOpIn),
  };
}

// ---------------------------------------------------------------------------------------------------
// Watch requests

export function watchCreateIn(r: M.WatchCreateRequest, watchId: number): DWatchCreate {
  const filters: WatchFilter[] = [];
  for (const f of r.filters ?? []) {
    const name = typeof f === 'number' ? FILTERS[f] : f;
    // etcd ignores filter values it does not know (FiltersFromRequest has no default case).
    if (name === 'NOPUT' || name === 'NODELETE') filters.push(name);
  }
  return {
    key: bytesIn(r.key, 'key'),
    rangeEnd: r.range_end === undefined ? undefined : bytesIn(r.range_end, 'range_end'),
    startRevision: int64ToNumber(r.start_revision, 'start_revision'),
    progressNotify: r.progress_notify ?? undefined,
    filters,
    prevKv: r.prev_kv ?? undefined,
    watchId,
    fragment: r.fragment ?? undefined,
  };
}

// ---------------------------------------------------------------------------------------------------
// Responses

/** A header's fixed part: the member's identity. */
export interface HeaderIdentity {
  readonly clusterId: string;
  readonly memberId: string;
  readonly raftTerm: string;
}

export function header(id: HeaderIdentity, revision: number): M.ResponseHeader {
  return { cluster_id: id.clusterId, member_id: id.memberId, revision: String(revision), raft_term: id.raftTerm };
}

/** The header etcd leaves on a txn's inner responses: revision only (0 for a nested txn: empty). */
export function innerHeader(revision: number): M.ResponseHeader {
  return { cluster_id: '0', member_id: '0', revision: String(revision), raft_term: '0' };
}

export function kvOut(kv: D.KeyValue): M.KeyValue {
  return {
    key: bytesOut(kv.key),
    create_revision: String(kv.createRevision),
    mod_revision: String(kv.modRevision),
    version: String(kv.version),
    value: bytesOut(kv.value),
    lease: leaseOut(kv.lease),
  };
}

export function rangeOut(r: D.RangeResponse, h: M.ResponseHeader): M.RangeResponse {
  return { header: h, kvs: r.kvs.map(kvOut), more: r.more, count: String(r.count) };
}

export function putOut(r: D.PutResponse, h: M.ResponseHeader): M.PutResponse {
  return { header: h, prev_kv: r.prevKv === undefined ? null : kvOut(r.prevKv) };
}

export function deleteRangeOut(r: D.DeleteRangeResponse, h: M.ResponseHeader): M.DeleteRangeResponse {
  return { header: h, deleted: String(r.deleted), prev_kvs: r.prevKvs.map(kvOut) };
}

export function txnOut(r: D.TxnResponse, h: M.ResponseHeader): M.TxnResponse {
  return { header: h, succeeded: r.succeeded, responses: r.responses.map(responseOpOut) };
}

function responseOpOut(op: D.ResponseOp): M.ResponseOp {
  if ('responseRange' in op) {
    return { response: 'response_range', response_range: rangeOut(op.responseRange, innerHeader(op.responseRange.revision)) };
  }
  if ('responsePut' in op) {
    return { response: 'response_put', response_put: putOut(op.responsePut, innerHeader(op.responsePut.revision)) };
  }
  if ('responseDeleteRange' in op) {
    const d = op.responseDeleteRange;
    return { response: 'response_delete_range', response_delete_range: deleteRangeOut(d, innerHeader(d.revision)) };
  }
  const t = op.responseTxn;
  return { response: 'response_txn', response_txn: txnOut(t, innerHeader(t.revision)) };
}

export function eventOut(ev: DWatchEvent): M.Event {
  return { type: ev.type, kv: kvOut(ev.kv), prev_kv: ev.prevKv === undefined ? null : kvOut(ev.prevKv) };
}

/** A Buffer over `v`'s bytes, not a copy. */
const view = (v: Uint8Array): Buffer => Buffer.from(v.buffer, v.byteOffset, v.byteLength);

/**
 * eventOut whose keys and values are views of the store's bytes, not copies: for a reader that encodes the
 * event at once and keeps nothing of it (the gRPC door's Watch, whose encoding is the one copy an event
 * needs). The store never writes over the bytes of a record it holds (a slab is appended to, or dropped), so
 * a view stays the event's bytes as long as it is held; but one handed to a client that may change it would
 * change the store, hence eventOut's copies.
 */
export function eventView(ev: DWatchEvent): M.Event {
  return { type: ev.type, kv: kvView(ev.kv), prev_kv: ev.prevKv === undefined ? null : kvView(ev.prevKv) };
}

function kvView(kv: D.KeyValue): M.KeyValue {
  return {
    key: view(kv.key),
    create_revision: String(kv.createRevision),
    mod_revision: String(kv.modRevision),
    version: String(kv.version),
    value: view(kv.value),
    lease: leaseOut(kv.lease),
  };
}

/** A KeyValue in etcd's message form (from a client or a real etcd) in the engine's form: kvOut's inverse. */
export function kvIn(kv: M.KeyValue): D.KeyValue {
  return {
    key: new Uint8Array(kv.key),
    value: new Uint8Array(kv.value),
    createRevision: Number(kv.create_revision),
    modRevision: Number(kv.mod_revision),
    version: Number(kv.version),
    lease: BigInt(kv.lease),
  };
}

/**
 * A WatchResponse in etcd's message form in the engine's form, as the watch-guarantee checker reads it (a
 * stream's responses from the raw client, grpc-js or a real etcd). A numeric event type (1) is DELETE.
 */
export function watchResponseIn(r: M.WatchResponse): DWatchResponse {
  return {
    revision: Number(r.header.revision),
    watchId: Number(r.watch_id),
    created: r.created,
    canceled: r.canceled,
    compactRevision: Number(r.compact_revision),
    cancelReason: r.cancel_reason,
    fragment: r.fragment,
    events: r.events.map((e) => ({
      type: e.type === 'DELETE' || (e.type as unknown) === 1 ? 'DELETE' : 'PUT',
      kv: kvIn(e.kv),
      ...(e.prev_kv === null || e.prev_kv === undefined ? {} : { prevKv: kvIn(e.prev_kv) }),
    })),
  };
}
