/**
 * Requests with text keys, for the raw client (EtcdClient): a request's bytes fields (`key`, `range_end`,
 * `value`, at any depth) may be strings, sent as UTF-8, and `prefix()` / `fromKey()` build the key ranges
 * clientv3's WithPrefix and WithFromKey build.
 */
import { Buffer } from '../sim/index.js';
import { prefixEnd } from '../mvcc/index.js';

/**
 * A request as EtcdClient accepts it: the message form, where each bytes field may also be a string
 * (sent as its UTF-8 bytes).
 * @public
 */
export type Req<T> = T extends Uint8Array
  ? T | string
  : T extends readonly (infer E)[]
    ? readonly Req<E>[]
    : T extends object
      ? { [K in keyof T]: Req<T[K]> }
      : T;

/** The bytes fields of etcd's request messages (Range, Put, DeleteRange, Compare, WatchCreate). */
const BYTES_FIELDS: ReadonlySet<string> = new Set(['key', 'range_end', 'value']);

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !ArrayBuffer.isView(v);
}

/** Turns the string bytes fields of a request (at any depth) into UTF-8; the caller's object is not changed. */
export function encode<T>(req: Req<T>): T {
  return encodeValue(req) as T;
}

function encodeValue(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(encodeValue);
  if (!isRecord(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    out[k] = typeof x === 'string' ? (BYTES_FIELDS.has(k) ? Buffer.from(x, 'utf8') : x) : encodeValue(x);
  }
  return out;
}

/** A fresh plain Uint8Array (Buffer.prototype.slice shares memory, so prefixEnd must not see a Buffer). */
function bytesOf(key: Uint8Array | string): Uint8Array {
  return typeof key === 'string' ? new Uint8Array(Buffer.from(key, 'utf8')) : Uint8Array.from(key);
}

const NUL = (): Uint8Array => new Uint8Array([0]);

/**
 * `{ key, range_end }` for every key starting with `key` (clientv3.WithPrefix); an empty prefix means
 * every key (key and range_end "\0").
 * @public
 */
export function prefix(key: Uint8Array | string): { key: Uint8Array; range_end: Uint8Array } {
  const k = bytesOf(key);
  if (k.byteLength === 0) return { key: NUL(), range_end: NUL() };
  return { key: k, range_end: prefixEnd(k) };
}

/** `{ key, range_end }` for every key >= `key` (clientv3.WithFromKey: range_end "\0"; empty key: "\0"). @public */
export function fromKey(key: Uint8Array | string): { key: Uint8Array; range_end: Uint8Array } {
  const k = bytesOf(key);
  return { key: k.byteLength === 0 ? NUL() : k, range_end: NUL() };
}
