/**
 * Protobuf-encoded sizes of write requests, for etcd's "request is too large" rule: etcd rejects a
 * proposal whose marshaled InternalRaftRequest exceeds --max-request-bytes. Sizes follow proto3 encoding
 * (zero values omitted). The raft request header is sized so that the limit falls where etcd 3.4.23's
 * does: a put of a 1-byte key is rejected once key + value exceed 1,572,840 bytes (docs/observed-etcd-3.4.23.md).
 * The field-size helpers are shared with the watch layer's response sizing (fragments).
 */
import type { Compare, DeleteRangeRequest, PutRequest, RangeRequest, RequestOp, TxnRequest } from './types.js';

export function varintLen(v: number | bigint): number {
  if (typeof v === 'bigint') {
    if (v < 0n) return 10;
    let n = 1;
    while (v >= 0x80n) {
      v >>= 7n;
      n++;
    }
    return n;
  }
  if (v < 0) return 10;
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

/** Size of a length-delimited field with a 1-byte tag (or `tagLen`), omitted when empty. */
export function bytesField(len: number, tagLen = 1): number {
  return len === 0 ? 0 : tagLen + varintLen(len) + len;
}
export function messageField(len: number, tagLen = 1): number {
  return tagLen + varintLen(len) + len;
}
export function intField(v: number | bigint | undefined, tagLen = 1): number {
  return v === undefined || v === 0 || v === 0n ? 0 : tagLen + varintLen(v);
}
function boolField(v: boolean | undefined): number {
  return v === true ? 2 : 0;
}

const SORT_ORDER = { NONE: 0, ASCEND: 1, DESCEND: 2 } as const;
const SORT_TARGET = { KEY: 0, VERSION: 1, CREATE: 2, MOD: 3, VALUE: 4 } as const;
const CMP_RESULT = { EQUAL: 0, GREATER: 1, LESS: 2, NOT_EQUAL: 3 } as const;
const CMP_TARGET = { VERSION: 0, CREATE: 1, MOD: 2, VALUE: 3, LEASE: 4 } as const;

export function putSize(r: PutRequest): number {
  return (
    bytesField(r.key.length) +
    bytesField(r.value?.length ?? 0) +
    intField(r.lease) +
    boolField(r.prevKv) +
    boolField(r.ignoreValue) +
    boolField(r.ignoreLease)
  );
}

export function deleteRangeSize(r: DeleteRangeRequest): number {
  return bytesField(r.key.length) + bytesField(r.rangeEnd?.length ?? 0) + boolField(r.prevKv);
}

export function rangeSize(r: RangeRequest): number {
  return (
    bytesField(r.key.length) +
    bytesField(r.rangeEnd?.length ?? 0) +
    intField(r.limit) +
    intField(r.revision) +
    intField(SORT_ORDER[r.sortOrder ?? 'NONE'] ?? 0) +
    intField(SORT_TARGET[r.sortTarget ?? 'KEY'] ?? 0) +
    boolField(r.serializable) +
    boolField(r.keysOnly) +
    boolField(r.countOnly) +
    intField(r.minModRevision) +
    intField(r.maxModRevision) +
    intField(r.minCreateRevision) +
    intField(r.maxCreateRevision)
  );
}

/**
 * Compare's operand is a oneof member (`target_union`): Go marshals a set member whatever its value, so the
 * `version == 0` of a create-if-absent txn costs its two bytes like any other. The gRPC door keeps a member
 * absent from the wire undefined (server/convert.ts), so "defined" is "set".
 */
function operandField(v: number | bigint | undefined): number {
  return v === undefined ? 0 : 1 + varintLen(v);
}

export function compareSize(c: Compare): number {
  let target = 0;
  switch (c.target) {
    case 'VERSION':
      target = operandField(c.version);
      break;
    case 'CREATE':
      target = operandField(c.createRevision);
      break;
    case 'MOD':
      target = operandField(c.modRevision);
      break;
    case 'VALUE':
      target = c.value === undefined ? 0 : messageField(c.value.length);
      break;
    case 'LEASE':
      target = operandField(c.lease);
      break;
  }
  return (
    intField(CMP_RESULT[c.result] ?? 0) +
    intField(CMP_TARGET[c.target] ?? 0) +
    bytesField(c.key.length) +
    target +
    bytesField(c.rangeEnd?.length ?? 0, 2)
  );
}

function requestOpSize(op: RequestOp): number {
  if (op.requestRange !== undefined) return messageField(rangeSize(op.requestRange));
  if (op.requestPut !== undefined) return messageField(putSize(op.requestPut));
  if (op.requestDeleteRange !== undefined) return messageField(deleteRangeSize(op.requestDeleteRange));
  if (op.requestTxn !== undefined) return messageField(txnSize(op.requestTxn));
  return 0;
}

export function txnSize(r: TxnRequest): number {
  let n = 0;
  for (const c of r.compare ?? []) n += messageField(compareSize(c));
  for (const op of r.success ?? []) n += messageField(requestOpSize(op));
  for (const op of r.failure ?? []) n += messageField(requestOpSize(op));
  return n;
}

/** Size of the InternalRaftRequest etcd would propose for a request whose own encoding is `inner` bytes. */
export function raftRequestSize(inner: number): number {
  const header = 1 + 10; // RequestHeader.ID as a full-width varint
  return messageField(header, 2) + messageField(inner);
}
