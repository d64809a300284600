/**
 * A reader and writer for the subset of bbolt's file format (go.etcd.io/bbolt, format version 2) that
 * etcd's backend uses: two meta pages with their FNV-1a checksum, a freelist page, branch and leaf pages
 * (overflowing onto following pages when a node is larger than one page), buckets nested in buckets, and
 * inline buckets (a small bucket stored inside its parent's leaf value). etcd's snapshot is such a file.
 *
 * Layout facts this module relies on (all integers little-endian, as bbolt writes them on amd64/arm64):
 *   page header  16 B: id u64, flags u16 (branch 0x01, leaf 0x02, meta 0x04, freelist 0x10), count u16,
 *                      overflow u32 (how many further pages the node spills onto)
 *   meta         64 B after the header: magic u32 0xED0CDAED, version u32 2, pageSize u32, flags u32,
 *                      root bucket {root pgid u64, sequence u64}, freelist pgid u64, pgid u64 (high-water
 *                      mark: pages in use), txid u64, checksum u64 = FNV-1a 64 of the 56 bytes before it
 *   leaf element 16 B: flags u32 (0x01: the value is a bucket), pos u32 (from the element to its key),
 *                      ksize u32, vsize u32; the value follows the key
 *   branch elem  16 B: pos u32, ksize u32, child pgid u64; the key is the child's first key
 *   bucket value 16 B: root pgid u64 (0: inline), sequence u64; an inline bucket's leaf page follows
 *   freelist     count u16 in the header (0xFFFF: the real count is the first u64), then u64 pgids
 *
 * This file holds the format's shapes and constants; bbolt_writer.ts writes a file, bbolt_reader.ts reads one.
 */

/** A bucket's contents: its entries in key order (bbolt's byte order), each a value or a nested bucket. */
export interface BoltBucket {
  /** The bucket's sequence counter (bbolt NextSequence); 0 unless someone used it. */
  readonly sequence?: bigint | undefined;
  readonly entries: readonly BoltEntry[];
  /**
   * Writing only: the bucket's plain values given by index instead of as `entries` (which must then be
   * empty), so that a bucket of millions of entries (etcd's key bucket) is laid out without an object per
   * entry. readBolt never returns one.
   */
  readonly source?: BoltEntrySource | undefined;
}

/**
 * A bucket's plain entries, by index, in strictly ascending key order (the writer checks the order of
 * the keys it places first on a page, the source vouches for the rest): each entry's key and value sizes,
 * and writers of its bytes into a page being laid out.
 */
export interface BoltEntrySource {
  readonly count: number;
  keySize(i: number): number;
  valueSize(i: number): number;
  writeKey(i: number, dst: Uint8Array, at: number): void;
  /** Writes entry i's value at `at` in `dst` — the file itself, or the piece of it being produced (see BoltLayout). */
  writeValue(i: number, dst: Uint8Array, at: number): void;
}

/** One key of a bucket: a plain value, or a nested bucket. */
export type BoltEntry = { readonly key: Uint8Array; readonly value: Uint8Array } | { readonly key: Uint8Array; readonly bucket: BoltBucket };

/** A database as read back: its root bucket (whose entries are the top-level buckets) and meta facts. */
export interface BoltDatabase {
  readonly root: BoltBucket;
  readonly pageSize: number;
  readonly txid: bigint;
  /** Pages the database spans (meta pgid): tx.Size() is this times pageSize. */
  readonly pageCount: number;
}

/** A file that is not a bbolt database bbolt itself would open, with what is wrong. */
export class BoltFormatError extends Error {
  constructor(message: string) {
    super(`bbolt: ${message}`);
    this.name = 'BoltFormatError';
  }
}

export const BOLT_MAGIC = 0xed0cdaed;
export const BOLT_VERSION = 2;
export const DEFAULT_PAGE_SIZE = 4096;
export const PAGE_HEADER = 16;
export const ELEMENT = 16;
export const META_SIZE = 64;
export const BUCKET_HEADER = 16;
export const BRANCH = 0x01;
export const LEAF = 0x02;
export const META = 0x04;
export const FREELIST = 0x10;
export const BUCKET_LEAF = 0x01;
/** bbolt's pgidNoFreelist: the meta names no freelist page (etcd 3.4 runs bbolt with NoFreelistSync). */
export const NO_FREELIST = 0xffffffffffffffffn;
/** Nesting deeper than this is a cycle or garbage, not anything etcd writes. */
export const MAX_DEPTH = 64;

const textEncoder = new TextEncoder();
/** Bytes of a bucket name or key given as text. */
export const boltKey = (s: string): Uint8Array => textEncoder.encode(s);

/** Whether an entry is a nested bucket. */
export function isBucketEntry(e: BoltEntry): e is Extract<BoltEntry, { bucket: BoltBucket }> {
  return 'bucket' in e;
}

/** Byte order of keys, as bbolt sorts them (bytes.Compare). */
export function compareKeys(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/** FNV-1a, 64-bit: bbolt's meta checksum. */
export function fnv1a64(b: Uint8Array): bigint {
  // Two 32-bit halves avoid a BigInt multiply per byte: prime 0x100000001b3 = 2^40 + 0x1b3.
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  for (let i = 0; i < b.length; i++) {
    lo = (lo ^ b[i]!) >>> 0;
    const loMul = lo * 0x1b3;
    const carry = Math.floor(loMul / 0x100000000);
    const newLo = loMul >>> 0;
    // hi * 0x1b3 + lo << 8 (the 2^40 term lands in the high half shifted by 8) + carry
    hi = (hi * 0x1b3 + ((lo << 8) >>> 0) + carry) >>> 0;
    lo = newLo;
  }
  return (BigInt(hi) << 32n) | BigInt(lo);
}

/** The nested bucket named `name` among `b`'s entries, or undefined. */
export function childBucket(b: BoltBucket, name: string | Uint8Array): BoltBucket | undefined {
  const k = typeof name === 'string' ? boltKey(name) : name;
  for (const e of b.entries) if (isBucketEntry(e) && compareKeys(e.key, k) === 0) return e.bucket;
  return undefined;
}
