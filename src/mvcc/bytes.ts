/**
 * Keys are bytes and etcd orders them with bytes.Compare. Inside the index a key is held as a latin1
 * string (one char per byte): JavaScript's string comparison then gives exactly byte order, and
 * sorted-btree compares such strings much faster than it compares byte arrays.
 */
import { Buffer } from '../sim/bytes_platform.js';

/** A key as the index holds it: one latin1 character per byte. @public */
export type KeyString = string;

export const EMPTY_BYTES: Uint8Array = new Uint8Array(0);

/**
 * Node's native latin1 decoder, called on the bytes directly: going through Buffer.from(...).toString
 * would allocate a Buffer view per key, and keyString runs on every range, delete and new key (a put or a
 * get of one key looks it up by its bytes: key_slots.ts).
 */
const latin1Slice = (Buffer.prototype as unknown as { latin1Slice(this: Uint8Array, start: number, end: number): string }).latin1Slice;

/** Bytes → index key. */
export function keyString(bytes: Uint8Array): KeyString {
  return latin1Slice.call(bytes, 0, bytes.byteLength);
}

const SLAB_SIZE = 64 * 1024;
const SLAB_MAX_COPY = 1024;

/**
 * Private copies of caller-owned bytes (keys must not change when the caller reuses its buffer; a
 * store's values are kept by history.ts). Small copies share 64 KiB slabs, as Node's Buffer pool does: one ArrayBuffer per copy would
 * dominate the cost of a put through garbage collection. The price: a slab stays alive while any copy in
 * it does. Each store has its own slabs, and a copy's length is the source's own byteLength, so nothing a
 * caller passes can make one copy overlap another — in this store or any other.
 */
export class ByteSlab {
  private slab = new Uint8Array(SLAB_SIZE);
  private used = 0;

  /**
   * A private copy of `src`. An empty one is not singled out: no key is empty (an empty key is refused before
   * anything is stored), and a zero-byte reservation gives an empty view all the same.
   */
  copy(src: Uint8Array): Uint8Array {
    const n = src.byteLength;
    // Uint8Array's slice copies; a Buffer's slice would be a view of the caller's memory.
    if (n > SLAB_MAX_COPY) return Uint8Array.prototype.slice.call(src);
    const start = this.reserve(n);
    this.slab.set(src, start);
    // The constructor skips subarray's species lookup: measurably cheaper, and this runs on every put.
    return new Uint8Array(this.slab.buffer, start, n);
  }

  /** Room for `n` bytes (n <= SLAB_MAX_COPY), 8-byte aligned; a fresh slab when the current one cannot take them. */
  private reserve(n: number): number {
    if (this.used + n > SLAB_SIZE) {
      this.slab = new Uint8Array(SLAB_SIZE);
      this.used = 0;
    }
    const start = this.used;
    this.used = (start + n + 7) & ~7;
    return start;
  }
}

/**
 * Buffers whose owner handed them to the store: it never changes their bytes again, so a value that fills
 * most of one is kept as it is rather than copied (history.ts). The gRPC door hands over each request message
 * it assembles from several DATA frames: a 64 KiB put then allocates no second 64 KiB and copies nothing. In a
 * Node process the ArrayBuffer bytes allocated per put set how often the collector marks the whole heap (V8
 * counts them against the old generation's limit): under a flood of 64 KiB puts, two 64 KiB a put instead of
 * three (issue 32, docs/security.md). Any other caller's bytes are copied.
 */
const handedOver = new WeakSet<ArrayBufferLike>();

/** The caller will never change the bytes of `bytes`' buffer again: a store may keep views of it. */
export function handOver(bytes: Uint8Array): void {
  handedOver.add(bytes.buffer);
}

/**
 * Whether a store may keep `value` as it is: its buffer was handed over and the value is at least half of it
 * (a small value in a large buffer is copied, so what a record keeps alive stays under twice its size).
 */
export function keepsAsGiven(value: Uint8Array): boolean {
  return value.byteLength * 2 >= value.buffer.byteLength && handedOver.has(value.buffer);
}

/** Index key → bytes (a fresh copy the caller may keep). */
export function keyBytes(key: KeyString): Uint8Array {
  return new Uint8Array(Buffer.from(key, 'latin1'));
}

/** Text → bytes (UTF-8), for tests and examples. @public */
export function utf8(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, 'utf8'));
}

/** Bytes → text (UTF-8), for tests and examples. @public */
export function text(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

/** bytes.Compare. @public */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  return Buffer.compare(a, b);
}

/** Whether `a` and `b` hold the same bytes (bytes.Equal; arrays of different lengths never compare as 0). @public */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.compare(a, b) === 0;
}

/**
 * The range_end that turns `key` into a prefix query (clientv3.GetPrefixRangeEnd): increment the last
 * byte below 0xff and drop what follows; a key of only 0xff bytes (or empty) has no end, which etcd
 * spells as "\0" (all keys >= key).
 * @public
 */
export function prefixEnd(key: Uint8Array): Uint8Array {
  // The key without its trailing 0xff bytes (reading before the first byte gives undefined, which ends the loop).
  let n = key.length;
  while (key[n - 1] === 0xff) n--;
  if (n === 0) return new Uint8Array([0]);
  const end = Uint8Array.prototype.slice.call(key, 0, n); // a copy, even for a Buffer
  end[n - 1] = key[n - 1]! + 1;
  return end;
}
