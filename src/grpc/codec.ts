/**
 * Wire encoders for the responses that carry key-values in bulk: Range, Put, DeleteRange, Txn and Watch.
 *
 * proto-loader's serializer first converts a message-form object into protobufjs message instances (every
 * int64 string parsed by Long.fromString into a Long object), then encodes it through a linked list of write
 * operations. For a 10k-key Range that is most of the server's time and most of its garbage. These encoders
 * write the same messages straight from the service layer's message form in two passes — measure, then write
 * into one buffer of the exact size — and leave every other message to proto-loader.
 *
 * Output follows proto3's canonical form, as etcd's Go encoder writes it: fields in field-number order,
 * scalar fields at their default value (0, false, empty) left out. Any protobuf decoder reads the same
 * message as from proto-loader's encoding (test/grpc/codec.test.ts checks that on random messages).
 */
import { Buffer } from 'node:buffer';
import type * as M from '../server/messages.js';
// The wire primitives are mvcc's, shared with HashKV's KeyValue encoding: one protobuf encoder.
import { bytesFieldSize, keyValueSize, LEN, tag, VARINT, varintSize, WireWriter as Out, writeBytesField, writeKeyValue } from '../mvcc/index.js';

/**
 * An int64/uint64 in message form (a decimal string) as the unsigned 64-bit value its varint encodes.
 * Revisions, versions and counts are short safe integers: a number. Large or negative values (random
 * 63-bit lease IDs, watch_id -1) take the exact BigInt path, two's complement for negatives as protobuf does.
 */
function u64(s: string): number | bigint {
  if (s.length < 16) {
    const n = +s;
    if (n >= 0) return n;
  }
  return BigInt.asUintN(64, BigInt(s));
}

// Each message has a size function and a write function; `write` is only called with the size just measured.

function int64FieldSize(field: number, s: string): number {
  if (s === '0') return 0;
  return varintSize(tag(field, VARINT)) + varintSize(u64(s));
}
function writeInt64Field(o: Out, field: number, s: string): void {
  if (s === '0') return;
  o.varint(tag(field, VARINT));
  o.varint(u64(s));
}
const boolFieldSize = (b: boolean): number => (b ? 2 : 0);
function writeBoolField(o: Out, field: number, b: boolean): void {
  if (!b) return;
  o.varint(tag(field, VARINT));
  o.varint(1);
}
const messageFieldSize = (field: number, size: number): number => varintSize(tag(field, LEN)) + varintSize(size) + size;
function writeMessageHead(o: Out, field: number, size: number): void {
  o.varint(tag(field, LEN));
  o.varint(size);
}

/**
 * Fields 1 and 2 of a ResponseHeader (cluster_id, member_id) as bytes, for the last pair seen: a member puts
 * the same two random 64-bit IDs in every response, and their decimal strings would otherwise take the
 * BigInt path twice (measure, write) per response.
 */
const headerIds: { cluster: string; member: string; bytes: Uint8Array } = { cluster: '', member: '', bytes: new Uint8Array(0) };
function headerIdBytes(h: M.ResponseHeader): Uint8Array {
  if (h.cluster_id !== headerIds.cluster || h.member_id !== headerIds.member) {
    const o = new Out(int64FieldSize(1, h.cluster_id) + int64FieldSize(2, h.member_id));
    writeInt64Field(o, 1, h.cluster_id);
    writeInt64Field(o, 2, h.member_id);
    headerIds.cluster = h.cluster_id;
    headerIds.member = h.member_id;
    headerIds.bytes = o.buf;
  }
  return headerIds.bytes;
}

function headerSize(h: M.ResponseHeader): number {
  return headerIdBytes(h).length + int64FieldSize(3, h.revision) + int64FieldSize(4, h.raft_term);
}
function writeHeader(o: Out, field: number, h: M.ResponseHeader): void {
  writeMessageHead(o, field, headerSize(h));
  const ids = headerIdBytes(h);
  o.buf.set(ids, o.pos);
  o.pos += ids.length;
  writeInt64Field(o, 3, h.revision);
  writeInt64Field(o, 4, h.raft_term);
}

function kvSize(kv: M.KeyValue): number {
  return keyValueSize(kv.key, u64(kv.create_revision), u64(kv.mod_revision), u64(kv.version), kv.value, u64(kv.lease));
}
function writeKv(o: Out, field: number, kv: M.KeyValue): void {
  writeMessageHead(o, field, kvSize(kv));
  writeKeyValue(o, kv.key, u64(kv.create_revision), u64(kv.mod_revision), u64(kv.version), kv.value, u64(kv.lease));
}
function kvsSize(field: number, kvs: readonly M.KeyValue[]): number {
  let n = 0;
  for (const kv of kvs) n += messageFieldSize(field, kvSize(kv));
  return n;
}

function rangeSize(r: M.RangeResponse): number {
  return messageFieldSize(1, headerSize(r.header)) + kvsSize(2, r.kvs) + boolFieldSize(r.more) + int64FieldSize(4, r.count);
}
function writeRange(o: Out, r: M.RangeResponse): void {
  writeHeader(o, 1, r.header);
  for (const kv of r.kvs) writeKv(o, 2, kv);
  writeBoolField(o, 3, r.more);
  writeInt64Field(o, 4, r.count);
}

function putSize(r: M.PutResponse): number {
  return messageFieldSize(1, headerSize(r.header)) + (r.prev_kv === null ? 0 : messageFieldSize(2, kvSize(r.prev_kv)));
}
function writePut(o: Out, r: M.PutResponse): void {
  writeHeader(o, 1, r.header);
  if (r.prev_kv !== null) writeKv(o, 2, r.prev_kv);
}

function deleteRangeSize(r: M.DeleteRangeResponse): number {
  return messageFieldSize(1, headerSize(r.header)) + int64FieldSize(2, r.deleted) + kvsSize(3, r.prev_kvs);
}
function writeDeleteRange(o: Out, r: M.DeleteRangeResponse): void {
  writeHeader(o, 1, r.header);
  writeInt64Field(o, 2, r.deleted);
  for (const kv of r.prev_kvs) writeKv(o, 3, kv);
}

function responseOpSize(op: M.ResponseOp): number {
  switch (op.response) {
    case 'response_range':
      return messageFieldSize(1, rangeSize(op.response_range));
    case 'response_put':
      return messageFieldSize(2, putSize(op.response_put));
    case 'response_delete_range':
      return messageFieldSize(3, deleteRangeSize(op.response_delete_range));
    case 'response_txn':
      return messageFieldSize(4, txnSize(op.response_txn));
  }
}
function writeResponseOp(o: Out, op: M.ResponseOp): void {
  switch (op.response) {
    case 'response_range':
      writeMessageHead(o, 1, rangeSize(op.response_range));
      writeRange(o, op.response_range);
      return;
    case 'response_put':
      writeMessageHead(o, 2, putSize(op.response_put));
      writePut(o, op.response_put);
      return;
    case 'response_delete_range':
      writeMessageHead(o, 3, deleteRangeSize(op.response_delete_range));
      writeDeleteRange(o, op.response_delete_range);
      return;
    case 'response_txn':
      writeMessageHead(o, 4, txnSize(op.response_txn));
      writeTxn(o, op.response_txn);
      return;
  }
}

function txnSize(r: M.TxnResponse): number {
  let n = messageFieldSize(1, headerSize(r.header)) + boolFieldSize(r.succeeded);
  for (const op of r.responses) n += messageFieldSize(3, responseOpSize(op));
  return n;
}
function writeTxn(o: Out, r: M.TxnResponse): void {
  writeHeader(o, 1, r.header);
  writeBoolField(o, 2, r.succeeded);
  for (const op of r.responses) {
    writeMessageHead(o, 3, responseOpSize(op));
    writeResponseOp(o, op);
  }
}

/** mvccpb.Event.EventType numbers. */
const EVENT_TYPE: Readonly<Record<M.EventType, number>> = { PUT: 0, DELETE: 1 };

function eventSize(ev: M.Event): number {
  return (
    (EVENT_TYPE[ev.type] === 0 ? 0 : 2) +
    messageFieldSize(2, kvSize(ev.kv)) +
    (ev.prev_kv === null ? 0 : messageFieldSize(3, kvSize(ev.prev_kv)))
  );
}
function writeEvent(o: Out, ev: M.Event): void {
  writeMessageHead(o, 11, eventSize(ev));
  const t = EVENT_TYPE[ev.type];
  if (t !== 0) {
    o.varint(tag(1, VARINT));
    o.varint(t);
  }
  writeKv(o, 2, ev.kv);
  if (ev.prev_kv !== null) writeKv(o, 3, ev.prev_kv);
}

const utf8 = new TextEncoder();
const EMPTY = new Uint8Array(0);
const reasonBytes = (r: M.WatchResponse): Uint8Array => (r.cancel_reason === '' ? EMPTY : utf8.encode(r.cancel_reason));

function watchSize(r: M.WatchResponse): number {
  let n =
    messageFieldSize(1, headerSize(r.header)) +
    int64FieldSize(2, r.watch_id) +
    boolFieldSize(r.created) +
    boolFieldSize(r.canceled) +
    int64FieldSize(5, r.compact_revision) +
    bytesFieldSize(6, reasonBytes(r)) +
    boolFieldSize(r.fragment);
  for (const ev of r.events) n += messageFieldSize(11, eventSize(ev));
  return n;
}
function writeWatch(o: Out, r: M.WatchResponse): void {
  writeHeader(o, 1, r.header);
  writeInt64Field(o, 2, r.watch_id);
  writeBoolField(o, 3, r.created);
  writeBoolField(o, 4, r.canceled);
  writeInt64Field(o, 5, r.compact_revision);
  writeBytesField(o, 6, reasonBytes(r));
  writeBoolField(o, 7, r.fragment);
  for (const ev of r.events) writeEvent(o, ev);
}

/**
 * Measures `r`, then writes it into a buffer of exactly that size — after gRPC's 5-byte message prefix
 * when `framed` (the gRPC door sends the buffer as it is: no second copy to put the prefix in front).
 */
function encode<T>(r: T, size: (r: T) => number, write: (o: Out, r: T) => void, framed = false): Buffer {
  const n = size(r);
  const at = framed ? 5 : 0;
  const o = new Out(at + n);
  if (framed) {
    o.buf[0] = 0;
    o.buf.writeUInt32BE(n, 1);
    o.pos = 5;
  }
  write(o, r);
  if (o.pos !== at + n) throw new Error(`etcdsim codec: wrote ${o.pos - at} bytes of a ${n}-byte message`);
  return o.buf;
}

/** etcdserverpb.RangeResponse on the wire. */
export const encodeRangeResponse = (r: M.RangeResponse): Buffer => encode(r, rangeSize, writeRange);
/** etcdserverpb.PutResponse on the wire. */
export const encodePutResponse = (r: M.PutResponse): Buffer => encode(r, putSize, writePut);
/** etcdserverpb.DeleteRangeResponse on the wire. */
export const encodeDeleteRangeResponse = (r: M.DeleteRangeResponse): Buffer => encode(r, deleteRangeSize, writeDeleteRange);
/** etcdserverpb.TxnResponse on the wire (nested txns included). */
export const encodeTxnResponse = (r: M.TxnResponse): Buffer => encode(r, txnSize, writeTxn);
/** etcdserverpb.WatchResponse on the wire. */
export const encodeWatchResponse = (r: M.WatchResponse): Buffer => encode(r, watchSize, writeWatch);

/** The same encoders, each message behind its gRPC prefix (flag 0, big-endian length): a whole gRPC frame. */
export const framedEncoders = {
  range: (r: M.RangeResponse): Buffer => encode(r, rangeSize, writeRange, true),
  put: (r: M.PutResponse): Buffer => encode(r, putSize, writePut, true),
  deleteRange: (r: M.DeleteRangeResponse): Buffer => encode(r, deleteRangeSize, writeDeleteRange, true),
  txn: (r: M.TxnResponse): Buffer => encode(r, txnSize, writeTxn, true),
  watch: (r: M.WatchResponse): Buffer => encode(r, watchSize, writeWatch, true),
} as const;
