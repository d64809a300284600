/**
 * Writing a bbolt file (the format: bbolt.ts) as etcd's backend would hold the same buckets: pages
 * allocated in order, nodes packed into pages as bbolt splits them, small buckets inlined in their parent's
 * leaf, and huge key buckets streamed from a source so a snapshot never holds every entry at once.
 */
import { type BoltBucket, type BoltEntrySource, type BoltEntry, BOLT_MAGIC, BOLT_VERSION, DEFAULT_PAGE_SIZE, PAGE_HEADER, ELEMENT, BUCKET_HEADER, BRANCH, LEAF, META, FREELIST, BUCKET_LEAF, MAX_DEPTH, isBucketEntry, compareKeys, fnv1a64 } from './bbolt.js';

/** Options of writeBolt. */
export interface BoltWriteOptions {
  /** Page size (bbolt takes the OS page size; 4096 on the platforms etcd runs on). */
  readonly pageSize?: number | undefined;
  /** Transaction ID of the newer meta page (the older one gets txid - 1); default 1. */
  readonly txid?: bigint | undefined;
  /**
   * Bytes left zero after the database in the returned array (not part of it: the meta pages do not count
   * them), so a caller appending a trailer (etcd's SHA-256) needs no second copy of the file.
   */
  readonly reserveTail?: number | undefined;
}

/**
 * The leaves of the one bucket given by a source that are left out of the laid-out pages until the file is
 * produced (see BoltLayout): where each leaf's entries start, its size, and its page id. Planning them
 * first (sizes only) is what lets a snapshot stream while it writes, as etcd pipes its bbolt file.
 */
interface DeferredLeaves {
  readonly src: BoltEntrySource;
  /** The first page id of the deferred run; the leaves follow one another from there. */
  readonly firstPgid: number;
  readonly pages: number;
  /** Leaf r holds entries [starts[r], starts[r + 1]) (the last up to src.count) and `sizes[r]` bytes. */
  readonly starts: Int32Array;
  readonly sizes: Int32Array;
}

class PageAllocator {
  /** Pages 0 and 1 are the metas, 2 the freelist. */
  next = 3;
  /** The deferred leaves, if a source's leaves were planned rather than laid out (at most one source). */
  hole: DeferredLeaves | undefined;
  /**
   * The file's laid-out pages (all but the deferred ones, which take no room here), zeroed, grown when a node
   * does not fit (by half again, plus room asked for ahead with reserve). Nodes are laid out in it where they
   * go, so a snapshot makes no buffer per page and no second copy of its pages.
   */
  private file: Uint8Array;
  constructor(readonly pageSize: number) {
    this.file = new Uint8Array(64 * pageSize);
  }
  /** Pages of the file this allocator holds (those after a hole sit that much earlier). */
  private held(pgid: number): number {
    const h = this.hole;
    return h !== undefined && pgid >= h.firstPgid + h.pages ? pgid - h.pages : pgid;
  }
  /** Makes room for `pages` more pages (and some to spare), so that laying them out copies nothing. */
  reserve(pages: number): void {
    const need = (this.held(this.next) + pages) * this.pageSize;
    if (need <= this.file.length) return;
    const grown = new Uint8Array(Math.max(need + RESERVE_SLACK_PAGES * this.pageSize, Math.floor(this.file.length * 1.5)));
    grown.set(this.file.subarray(0, this.held(this.next) * this.pageSize));
    this.file = grown;
  }
  /**
   * The zeroed bytes of a node of `pages` pages at the next page id, its id already in its header (bbolt
   * reads a page's id from there, e.g. in tx.Check). They are the file's own bytes until the next take.
   */
  take(pages: number): { readonly pgid: number; readonly bytes: Uint8Array } {
    this.reserve(pages);
    const pgid = this.next;
    const at = this.held(pgid) * this.pageSize;
    this.next += pages;
    const bytes = this.file.subarray(at, at + pages * this.pageSize);
    new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).setBigUint64(0, BigInt(pgid), true);
    return { pgid, bytes };
  }
  /** Lays out a node built elsewhere (a whole number of pages); returns its page id. */
  place(node: Uint8Array): number {
    const { pgid, bytes } = this.take(node.length / this.pageSize);
    bytes.set(node.subarray(PAGE_ID_BYTES), PAGE_ID_BYTES);
    return pgid;
  }
  /** Leaves `pages` page ids to deferred leaves (no memory); false when another source already has the hole. */
  defer(plan: Omit<DeferredLeaves, 'firstPgid'>): number | undefined {
    if (this.hole !== undefined) return undefined;
    const firstPgid = this.next;
    this.hole = { ...plan, firstPgid };
    this.next += plan.pages;
    return firstPgid;
  }
  /** The laid-out pages: every page but the deferred ones, in order. */
  finish(): Uint8Array {
    return this.file.subarray(0, this.held(this.next) * this.pageSize);
  }
}

/** Pages a reservation adds beyond what was asked (the small buckets laid out after a big one). */
const RESERVE_SLACK_PAGES = 256;
/** The page id at the start of every page header. */
const PAGE_ID_BYTES = 8;

/** A leaf element to lay out: flags, key, value bytes (a bucket's value is its header, maybe inline page). */
interface LeafItem {
  readonly flags: number;
  readonly key: Uint8Array;
  readonly value: Uint8Array;
}

/**
 * Writes a bbolt database holding `root`'s entries (top-level entries must be buckets, as bbolt allows only
 * buckets at the root) — every node packed as full as a page allows, small leaf-only buckets inline as
 * bbolt stores them, meta pages 0 and 1 both valid. Returns the whole file.
 */
export function writeBolt(root: BoltBucket, opts: BoltWriteOptions = {}): Uint8Array {
  const layout = layoutBolt(root, opts);
  const file = new Uint8Array(layout.size + (opts.reserveTail ?? 0));
  layout.writeTo(file);
  return file;
}

/**
 * A bbolt database laid out but not yet all written: every page is placed and every node but the leaves of
 * a bucket given by a source (etcd's key bucket) is written; those leaves are planned (which entries, which
 * page ids) and written when the file's bytes are asked for — all at once into one buffer (writeTo), or in
 * order, a batch at a time (pieces), so that a snapshot can be sent while it is written and needs no
 * file-sized buffer. Both give the same bytes.
 */
export interface BoltLayout {
  /** Bytes of the database (its pages times the page size). */
  readonly size: number;
  /** Writes the database at the start of `dst` (zeroed, at least `size` bytes). */
  writeTo(dst: Uint8Array): void;
  /**
   * The database's bytes in file order, as consecutive pieces (about `batch` bytes each where the deferred
   * leaves are). Each piece is its own memory, so a piece can be handed to a socket as it is — unless
   * `reuse` is given: then the deferred leaves are written into `reuse` buffers taken in turn, so a piece's
   * bytes stay valid only until `reuse` more pieces were asked for (a consumer that holds little, such as the
   * Snapshot stream, saves the fresh memory and the garbage collection of a file's worth of pieces).
   */
  pieces(batch?: number, reuse?: number): Iterable<Uint8Array>;
}

/** The layout of writeBolt's file (see BoltLayout). */
export function layoutBolt(root: BoltBucket, opts: BoltWriteOptions = {}): BoltLayout {
  const pageSize = opts.pageSize ?? DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(pageSize) || pageSize < 1024 || pageSize > 65536 || (pageSize & (pageSize - 1)) !== 0) {
    throw new RangeError(`bbolt: page size must be a power of two in 1024..65536, got ${pageSize}`);
  }
  const txid = opts.txid ?? 1n;
  if (txid < 1n) throw new RangeError('bbolt: txid must be >= 1');
  for (const e of root.entries) if (!isBucketEntry(e)) throw new RangeError('bbolt: the root holds only buckets');
  const alloc = new PageAllocator(pageSize);
  const rootPgid = writeBucketTree(alloc, root, 0, false);
  const pageCount = alloc.next;
  const held = alloc.finish();
  const view = new DataView(held.buffer, held.byteOffset, held.byteLength);
  // Freelist: nothing is free in a freshly packed file.
  writePageHeader(view, 2 * pageSize, 2, FREELIST, 0, 0);
  for (const id of [0, 1]) {
    const at = id * pageSize;
    writePageHeader(view, at, id, META, 0, 0);
    const m = at + PAGE_HEADER;
    view.setUint32(m, BOLT_MAGIC, true);
    view.setUint32(m + 4, BOLT_VERSION, true);
    view.setUint32(m + 8, pageSize, true);
    view.setUint32(m + 12, 0, true);
    view.setBigUint64(m + 16, BigInt(rootPgid), true);
    view.setBigUint64(m + 24, root.sequence ?? 0n, true);
    view.setBigUint64(m + 32, 2n, true);
    view.setBigUint64(m + 40, BigInt(pageCount), true);
    view.setBigUint64(m + 48, id === 1 ? txid : txid - 1n, true);
    view.setBigUint64(m + 56, fnv1a64(held.subarray(m, m + 56)), true);
  }
  const hole = alloc.hole;
  const size = pageCount * pageSize;
  // The laid-out pages before the deferred leaves, and after them.
  const cut = hole === undefined ? held.length : hole.firstPgid * pageSize;
  const before = held.subarray(0, cut);
  const after = held.subarray(cut);
  return {
    size,
    writeTo(dst: Uint8Array): void {
      if (dst.length < size) throw new RangeError(`bbolt: ${dst.length} bytes cannot hold a database of ${size}`);
      dst.set(before, 0);
      if (hole !== undefined) writeDeferredLeaves(hole, pageSize, hole.firstPgid, 0, hole.starts.length, dst, cut);
      dst.set(after, cut + (hole === undefined ? 0 : hole.pages * pageSize));
    },
    *pieces(batch = DEFAULT_PIECE_BYTES, reuse = 0): Iterable<Uint8Array> {
      if (before.length > 0) yield before.slice();
      if (hole !== undefined) {
        const runs = hole.starts.length;
        const ring: Uint8Array[] = [];
        let turn = 0;
        let pgid = hole.firstPgid;
        for (let r = 0; r < runs; ) {
          // Whole leaves, about `batch` bytes of them (a leaf larger than that goes alone).
          let bytes = 0;
          let to = r;
          while (to < runs && (to === r || bytes + leafBytes(hole.sizes[to]!, pageSize) <= batch)) bytes += leafBytes(hole.sizes[to++]!, pageSize);
          let out: Uint8Array;
          if (reuse > 0) {
            // A buffer of the ring, zeroed again (a leaf's unused tail must read as zeros), grown if needed.
            const slot = turn++ % reuse;
            let buf = ring[slot];
            if (buf === undefined || buf.length < bytes) ring[slot] = buf = new Uint8Array(Math.max(bytes, batch));
            else buf.fill(0, 0, bytes);
            out = buf.subarray(0, bytes);
          } else out = new Uint8Array(bytes);
          writeDeferredLeaves(hole, pageSize, pgid, r, to, out, 0);
          pgid += bytes / pageSize;
          yield out;
          r = to;
        }
      }
      if (after.length > 0) yield after.slice();
    },
  };
}

/** Where the deferred leaves are produced in pieces of (whole leaves, about this many bytes). */
const DEFAULT_PIECE_BYTES = 1 << 20;

/** Bytes of a leaf node of `size` bytes of header, elements and data: whole pages. */
const leafBytes = (size: number, pageSize: number): number => Math.ceil(size / pageSize) * pageSize;

/** Writes deferred leaves [from, to) at `at` in `dst` (zeroed), one after the other, leaf `from` as page `pgid`. */
function writeDeferredLeaves(hole: DeferredLeaves, pageSize: number, pgid: number, from: number, to: number, dst: Uint8Array, at: number): void {
  const count = hole.src.count;
  for (let r = from; r < to; r++) {
    const bytes = leafBytes(hole.sizes[r]!, pageSize);
    sourceLeafNode(dst.subarray(at, at + bytes), pgid, hole.src, hole.starts[r]!, r + 1 < hole.starts.length ? hole.starts[r + 1]! : count, pageSize);
    at += bytes;
    pgid += bytes / pageSize;
  }
}

function writePageHeader(view: DataView, at: number, id: number, flags: number, count: number, overflow: number): void {
  view.setBigUint64(at, BigInt(id), true);
  view.setUint16(at + 8, flags, true);
  view.setUint16(at + 10, count, true);
  view.setUint32(at + 12, overflow, true);
}

/**
 * Lays out a bucket's nodes and returns its root page — or, when `mayInline` and the bucket is small and has
 * no nested bucket, -1 after nothing was placed (the caller stores it inline; see bucketValue).
 */
function writeBucketTree(alloc: PageAllocator, b: BoltBucket, depth: number, mayInline: boolean): number {
  if (depth > MAX_DEPTH) throw new RangeError('bbolt: buckets nested too deep');
  if (b.source !== undefined) {
    if (b.entries.length > 0) throw new RangeError('bbolt: a bucket has either entries or a source');
    if (!mayInline || !sourceInlinable(b.source, alloc.pageSize)) return writeSourceTree(alloc, b.source);
    b = { sequence: b.sequence, entries: materialize(b.source) };
  }
  const items = leafItems(alloc, b, depth);
  if (mayInline && inlinable(items, alloc.pageSize)) return -1;
  // Leaves, then branch levels above them until one node remains.
  let level: { key: Uint8Array; pgid: number }[] = [];
  for (const run of packRuns(items, leafDataSize, alloc.pageSize)) {
    level.push({ key: run.length > 0 ? run[0]!.key : new Uint8Array(0), pgid: alloc.place(leafNode(run, alloc.pageSize, LEAF_PAGE)) });
  }
  while (level.length > 1) {
    const next: { key: Uint8Array; pgid: number }[] = [];
    for (const run of packRuns(level, branchDataSize, alloc.pageSize)) {
      next.push({ key: run[0]!.key, pgid: alloc.place(branchNode(run, alloc.pageSize)) });
    }
    level = next;
  }
  return level[0]!.pgid;
}

/**
 * A source's leaves and the branch levels above them; returns the root page. The leaves are planned first
 * (where each starts, its size, its page id) and, when no other source has done so, left to be written when
 * the file is produced (PageAllocator.defer, BoltLayout); otherwise written in place now. Either way the
 * branch levels above them are laid out here, from each leaf's first key.
 */
function writeSourceTree(alloc: PageAllocator, src: BoltEntrySource): number {
  const ps = alloc.pageSize;
  // Pack entries into pages exactly as packRuns does, by index: where each leaf starts and its size.
  const count = src.count;
  let starts = new Int32Array(Math.max(16, Math.ceil(count / 16)));
  let sizes = new Int32Array(starts.length);
  let runs = 0;
  let leafPages = 0;
  const push = (from: number, size: number): void => {
    if (runs === starts.length) {
      const s2 = new Int32Array(runs * 2);
      s2.set(starts);
      starts = s2;
      const z2 = new Int32Array(runs * 2);
      z2.set(sizes);
      sizes = z2;
    }
    starts[runs] = from;
    sizes[runs++] = size;
    leafPages += Math.ceil(size / ps);
  };
  let from = 0;
  let size = PAGE_HEADER;
  for (let i = 0; i < count; i++) {
    const add = ELEMENT + src.keySize(i) + src.valueSize(i);
    if (i > from && (size + add > ps || i - from === 0xffff)) {
      push(from, size);
      from = i;
      size = PAGE_HEADER;
    }
    size += add;
  }
  push(from, size);
  starts = starts.slice(0, runs);
  sizes = sizes.slice(0, runs);
  // Each leaf's first key (a branch element's key), its order checked against the leaf before.
  const level: { key: Uint8Array; pgid: number }[] = new Array<{ key: Uint8Array; pgid: number }>(runs);
  let prevFirst: Uint8Array | undefined;
  for (let r = 0; r < runs; r++) {
    const f = starts[r]!;
    const first = new Uint8Array(f < count ? src.keySize(f) : 0);
    if (f < count) src.writeKey(f, first, 0);
    if (prevFirst !== undefined && compareKeys(prevFirst, first) >= 0) throw new RangeError("bbolt: a bucket's entries must be in strictly ascending key order");
    prevFirst = first;
    level[r] = { key: first, pgid: 0 };
  }
  const deferred = alloc.defer({ src, pages: leafPages, starts, sizes });
  if (deferred !== undefined) {
    let pgid = deferred;
    for (let r = 0; r < runs; r++) {
      level[r]!.pgid = pgid;
      pgid += Math.ceil(sizes[r]! / ps);
    }
  } else {
    // The branch levels above: far fewer pages than the leaves (a branch element is 16 bytes and a key).
    alloc.reserve(leafPages + Math.ceil(leafPages / 64) + 2);
    for (let r = 0; r < runs; r++) {
      const { pgid, bytes } = alloc.take(Math.ceil(sizes[r]! / ps));
      sourceLeafNode(bytes, pgid, src, starts[r]!, r + 1 < runs ? starts[r + 1]! : count, ps);
      level[r]!.pgid = pgid;
    }
  }
  let nodes = level;
  while (nodes.length > 1) {
    const next: { key: Uint8Array; pgid: number }[] = [];
    for (const run of packRuns(nodes, branchDataSize, ps)) next.push({ key: run[0]!.key, pgid: alloc.place(branchNode(run, ps)) });
    nodes = next;
  }
  return nodes[0]!.pgid;
}

/**
 * A leaf node of entries [from, to) of a source, written into `out` (its whole pages, zeroed) as page
 * `pgid`.
 */
function sourceLeafNode(out: Uint8Array, pgid: number, src: BoltEntrySource, from: number, to: number, pageSize: number): void {
  const pages = out.length / pageSize;
  const dv = new DataView(out.buffer, out.byteOffset, out.byteLength);
  const count = to - from;
  writePageHeader(dv, 0, pgid, LEAF, count, pages - 1);
  let data = PAGE_HEADER + count * ELEMENT;
  for (let i = 0; i < count; i++) {
    const ks = src.keySize(from + i);
    const vs = src.valueSize(from + i);
    const el = PAGE_HEADER + i * ELEMENT;
    dv.setUint32(el, 0, true);
    dv.setUint32(el + 4, data - el, true);
    dv.setUint32(el + 8, ks, true);
    dv.setUint32(el + 12, vs, true);
    src.writeKey(from + i, out, data);
    src.writeValue(from + i, out, data + ks);
    data += ks + vs;
  }
}

function sourceInlinable(src: BoltEntrySource, pageSize: number): boolean {
  let size = PAGE_HEADER;
  for (let i = 0; i < src.count; i++) {
    size += ELEMENT + src.keySize(i) + src.valueSize(i);
    if (size > pageSize / 4) return false;
  }
  return true;
}

function materialize(src: BoltEntrySource): BoltEntry[] {
  const out: BoltEntry[] = [];
  for (let i = 0; i < src.count; i++) {
    const key = new Uint8Array(src.keySize(i));
    const value = new Uint8Array(src.valueSize(i));
    src.writeKey(i, key, 0);
    src.writeValue(i, value, 0);
    out.push({ key, value });
  }
  return out;
}

const leafDataSize = (it: LeafItem): number => it.key.length + it.value.length;
const branchDataSize = (c: { key: Uint8Array }): number => c.key.length;

/** The leaf items of a bucket, its nested buckets written first (their values are their headers). */
function leafItems(alloc: PageAllocator, b: BoltBucket, depth: number): LeafItem[] {
  const items: LeafItem[] = [];
  let prev: Uint8Array | undefined;
  for (const e of b.entries) {
    if (e.key.length === 0) throw new RangeError('bbolt: keys must not be empty');
    if (prev !== undefined && compareKeys(prev, e.key) >= 0) throw new RangeError('bbolt: a bucket\'s entries must be in strictly ascending key order');
    prev = e.key;
    if (isBucketEntry(e)) items.push({ flags: BUCKET_LEAF, key: e.key, value: bucketValue(alloc, e.bucket, depth + 1) });
    else items.push({ flags: 0, key: e.key, value: e.value });
  }
  return items;
}

/** A nested bucket's value: its 16-byte header, followed by its leaf page when stored inline. */
function bucketValue(alloc: PageAllocator, b: BoltBucket, depth: number): Uint8Array {
  const rootPgid = writeBucketTree(alloc, b, depth, true);
  const seq = b.sequence ?? 0n;
  if (rootPgid >= 0) {
    const v = new Uint8Array(BUCKET_HEADER);
    const dv = new DataView(v.buffer);
    dv.setBigUint64(0, BigInt(rootPgid), true);
    dv.setBigUint64(8, seq, true);
    return v;
  }
  const inline = b.source === undefined ? b : { sequence: b.sequence, entries: materialize(b.source) };
  const items = leafItems(alloc, inline, depth); // leaf-only: nothing is placed
  const page = leafNode(items, alloc.pageSize, INLINE_PAGE);
  const v = new Uint8Array(BUCKET_HEADER + page.length);
  new DataView(v.buffer).setBigUint64(8, seq, true);
  v.set(page, BUCKET_HEADER);
  return v;
}

/** bbolt's Bucket.inlineable: leaf-only, and the whole inline page within a quarter of a page. */
function inlinable(items: readonly LeafItem[], pageSize: number): boolean {
  let size = PAGE_HEADER;
  for (const it of items) {
    if (it.flags & BUCKET_LEAF) return false;
    size += ELEMENT + it.key.length + it.value.length;
    if (size > pageSize / 4) return false;
  }
  return true;
}

/**
 * Splits elements into nodes that each fit one page (header + 16 B per element + their bytes), at least one
 * element per node; a lone element larger than a page makes an overflowing node. No elements: one empty node.
 */
function packRuns<T>(items: readonly T[], dataSize: (t: T) => number, pageSize: number): T[][] {
  const runs: T[][] = [];
  let run: T[] = [];
  let size = PAGE_HEADER;
  for (const it of items) {
    const add = ELEMENT + dataSize(it);
    if (run.length > 0 && (size + add > pageSize || run.length === 0xffff)) {
      runs.push(run);
      run = [];
      size = PAGE_HEADER;
    }
    run.push(it);
    size += add;
  }
  if (run.length > 0 || runs.length === 0) runs.push(run);
  return runs;
}

const LEAF_PAGE = 0;
const INLINE_PAGE = 1;

/** A leaf node's bytes: padded to whole pages with its overflow count, or exact when inline. */
function leafNode(items: readonly LeafItem[], pageSize: number, form: typeof LEAF_PAGE | typeof INLINE_PAGE): Uint8Array {
  let size = PAGE_HEADER + items.length * ELEMENT;
  for (const it of items) size += it.key.length + it.value.length;
  const pages = Math.ceil(size / pageSize);
  const out = new Uint8Array(form === INLINE_PAGE ? size : pages * pageSize);
  const dv = new DataView(out.buffer);
  writePageHeader(dv, 0, 0, LEAF, items.length, form === INLINE_PAGE ? 0 : pages - 1);
  let data = PAGE_HEADER + items.length * ELEMENT;
  for (let i = 0; i < items.length; i++) {
    const it = items[i]!;
    const el = PAGE_HEADER + i * ELEMENT;
    dv.setUint32(el, it.flags, true);
    dv.setUint32(el + 4, data - el, true);
    dv.setUint32(el + 8, it.key.length, true);
    dv.setUint32(el + 12, it.value.length, true);
    copyInto(out, it.key, data);
    copyInto(out, it.value, data + it.key.length);
    data += it.key.length + it.value.length;
  }
  return out;
}

/** dst.set(src, at), by hand for the short keys and values that make up most of a snapshot (set() costs more there). */
function copyInto(dst: Uint8Array, src: Uint8Array, at: number): void {
  const n = src.length;
  if (n > 64) {
    dst.set(src, at);
    return;
  }
  for (let i = 0; i < n; i++) dst[at + i] = src[i]!;
}

function branchNode(children: readonly { key: Uint8Array; pgid: number }[], pageSize: number): Uint8Array {
  let size = PAGE_HEADER + children.length * ELEMENT;
  for (const c of children) size += c.key.length;
  const pages = Math.ceil(size / pageSize);
  const out = new Uint8Array(pages * pageSize);
  const dv = new DataView(out.buffer);
  writePageHeader(dv, 0, 0, BRANCH, children.length, pages - 1);
  let data = PAGE_HEADER + children.length * ELEMENT;
  children.forEach((c, i) => {
    const el = PAGE_HEADER + i * ELEMENT;
    dv.setUint32(el, data - el, true);
    dv.setUint32(el + 4, c.key.length, true);
    dv.setBigUint64(el + 8, BigInt(c.pgid), true);
    out.set(c.key, data);
    data += c.key.length;
  });
  return out;
}
