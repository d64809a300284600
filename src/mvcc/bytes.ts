/**
 * Keys are bytes and etcd orders them with bytes.Compare. Inside the index a key is held as a latin1
 * string (one char per byte): JavaScript's string comparison then gives exactly byte order, and
 * sorted-btree compares such strings much faster than it compares byte arrays.
 */
import { Buffer } from 'node:buffer';
import type { KeyValue } from './types.js';

/** A key as the index holds it: one latin1 character per byte. */
export type KeyString = string;

export const EMPTY_BYTES: Uint8Array = new Uint8Array(0);

/**
 * Node's native latin1 decoder, called on the bytes directly: going through Buffer.from(...).toString
 * would allocate a Buffer view per key, and keyString runs on every put and read.
 */
const latin1Slice = (Buffer.prototype as unknown as { latin1Slice(this: Uint8Array, start: number, end: number): string }).latin1Slice;

/** Bytes → index key. */
export function keyString(bytes: Uint8Array): KeyString {
  return latin1Slice.call(bytes, 0, bytes.byteLength);
}

const SLAB_SIZE = 64 * 1024;
const SLAB_MAX_COPY = 1024;
let slab = new Uint8Array(SLAB_SIZE);
let slabUsed = 0;

/**
 * A private copy of caller-owned bytes (keys and values must not change when the caller reuses its
 * buffer). Small copies share 64 KiB slabs, as Node's Buffer pool does: one ArrayBuffer per copy would
 * dominate the cost of a put through garbage collection. The price: a slab stays alive while any copy in
 * it does.
 */
export function copyBytes(src: Uint8Array): Uint8Array {
  const n = src.byteLength;
  if (n === 0) return EMPTY_BYTES;
  // Uint8Array's slice copies; a Buffer's slice would be a view of the caller's memory.
  if (n > SLAB_MAX_COPY) return Uint8Array.prototype.slice.call(src);
  if (slabUsed + n > SLAB_SIZE) {
    slab = new Uint8Array(SLAB_SIZE);
    slabUsed = 0;
  }
  const start = slabUsed;
  slab.set(src, start);
  slabUsed = (start + n + 7) & ~7; // keep copies 8-byte aligned
  // The constructor skips subarray's species lookup: measurably cheaper, and this runs on every put.
  return new Uint8Array(slab.buffer, start, n);
}

/**
 * A new key's first KeyValue (version 1, created at `rev`), with private copies of its key and value: what
 * two copyBytes calls would make, in one pass over the slab when both fit.
 */
export function firstKeyValue(key: Uint8Array, value: Uint8Array, rev: number, lease: bigint): KeyValue {
  const nk = key.byteLength;
  const nv = value.byteLength;
  if (nk === 0 || nv === 0 || nk > SLAB_MAX_COPY || nv > SLAB_MAX_COPY) {
    return { key: copyBytes(key), createRevision: rev, modRevision: rev, version: 1, value: copyBytes(value), lease };
  }
  const vAt = (nk + 7) & ~7;
  const need = vAt + nv;
  if (slabUsed + need > SLAB_SIZE) {
    slab = new Uint8Array(SLAB_SIZE);
    slabUsed = 0;
  }
  const start = slabUsed;
  slab.set(key, start);
  slab.set(value, start + vAt);
  slabUsed = (start + need + 7) & ~7;
  const buf = slab.buffer;
  return { key: new Uint8Array(buf, start, nk), createRevision: rev, modRevision: rev, version: 1, value: new Uint8Array(buf, start + vAt, nv), lease };
}

/** Index key → bytes (a fresh copy the caller may keep). */
export function keyBytes(key: KeyString): Uint8Array {
  return new Uint8Array(Buffer.from(key, 'latin1'));
}

/** Text → bytes (UTF-8), for tests and examples. */
export function utf8(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, 'utf8'));
}

/** Bytes → text (UTF-8), for tests and examples. */
export function text(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

/** bytes.Compare. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  return Buffer.compare(a, b);
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.compare(a, b) === 0;
}

/**
 * The range_end that turns `key` into a prefix query (clientv3.GetPrefixRangeEnd): increment the last
 * byte below 0xff and drop what follows; a key of only 0xff bytes (or empty) has no end, which etcd
 * spells as "\0" (all keys >= key).
 */
export function prefixEnd(key: Uint8Array): Uint8Array {
  for (let i = key.length - 1; i >= 0; i--) {
    const b = key[i]!;
    if (b < 0xff) {
      const end = Uint8Array.prototype.slice.call(key, 0, i + 1); // a copy, even for a Buffer
      end[i] = b + 1;
      return end;
    }
  }
  return new Uint8Array([0]);
}
