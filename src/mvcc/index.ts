/** The MVCC store: etcd's revisioned key-value engine (server/storage/mvcc). */
export { MvccStore, type HashKVResult, type MvccOptions } from './kv.js';
export { compatFor, type Compat } from './compat.js';
export * from './errors.js';
export * from './types.js';
export { keyString, keyBytes, utf8, text, compareBytes, bytesEqual, prefixEnd, type KeyString } from './bytes.js';
export type { CommitListener, StoreSnapshot } from './store.js';
export { DEFAULT_MAX_REQUEST_BYTES, DEFAULT_MAX_TXN_OPS } from './validate.js';
