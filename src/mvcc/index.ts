/** The MVCC store: etcd's revisioned key-value engine (server/storage/mvcc). */
export { MvccStore, type HashKVResult, type MvccOptions } from './kv.js';
export { compatFor, type Compat } from './compat.js';
export * from './errors.js';
export * from './types.js';
export { keyString, keyBytes, utf8, text, compareBytes, bytesEqual, prefixEnd, handOver, type KeyString } from './bytes.js';
export type { CommitListener, StoreSnapshot } from './store.js';
export { DEFAULT_MAX_REQUEST_BYTES, DEFAULT_MAX_TXN_OPS, isTxnReadOnly } from './validate.js';

// For the floors above, which import this folder only through this index (test/layout/index_imports.test.ts).
export { invalidField } from './shape.js';
export { bytesField, intField, messageField } from './request_size.js';
export { rangeEndOf } from './store.js';
export type { RangeEnd } from './store.js';
export {
  bytesFieldSize,
  int64FieldSize,
  keyValueSize,
  LEN,
  marshalKeyValue,
  tag,
  VARINT,
  varintSize,
  WireWriter,
  writeBytesField,
  writeInt64Field,
  writeKeyValue,
} from './wire.js';
export { isTombstone } from './key_index.js';
export { setSubRevision, subRevision } from './sub_revision.js';
