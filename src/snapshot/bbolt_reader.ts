/**
 * Reading a bbolt file (the format: bbolt.ts) as bbolt opens one: the newer valid meta page, then every
 * bucket, every page reference and length checked against the file, so a bad file fails whole with what is
 * wrong.
 */
import { type BoltBucket, type BoltEntry, type BoltDatabase, BoltFormatError, BOLT_MAGIC, BOLT_VERSION, DEFAULT_PAGE_SIZE, PAGE_HEADER, ELEMENT, META_SIZE, BUCKET_HEADER, BRANCH, LEAF, META, FREELIST, BUCKET_LEAF, NO_FREELIST, MAX_DEPTH, isBucketEntry, compareKeys, fnv1a64 } from './bbolt.js';

interface Meta {
  readonly pageSize: number;
  readonly root: bigint;
  readonly sequence: bigint;
  readonly freelist: bigint;
  readonly pgid: bigint;
  readonly txid: bigint;
}

/**
 * Reads a whole bbolt file: picks the valid meta page with the higher txid (as bbolt does), then walks
 * every bucket. Every page reference, element and length is checked against the file, so a bad or
 * truncated file fails with a BoltFormatError saying what is wrong, never with a partial result. Keys and
 * values are views into `file` (copy them to outlive it).
 */
export function readBolt(file: Uint8Array): BoltDatabase {
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  if (file.length < PAGE_HEADER + META_SIZE) throw new BoltFormatError(`file too small (${file.length} bytes) to hold a meta page`);
  const m0 = readMeta(file, view, 0, undefined);
  const m1 = m0.meta !== undefined ? readMeta(file, view, m0.meta.pageSize, 1) : readMetaAnySize(file, view);
  const metas = [m0.meta, m1.meta].filter((m): m is Meta => m !== undefined);
  if (metas.length === 0) throw new BoltFormatError(`invalid database: ${m0.error ?? '?'}; ${m1.error ?? '?'}`);
  const meta = metas.reduce((a, b) => (b.txid > a.txid ? b : a));
  const pageSize = meta.pageSize;
  const pageCount = Number(meta.pgid);
  if (meta.pgid < 3n || BigInt(pageCount) * BigInt(pageSize) > BigInt(file.length)) {
    throw new BoltFormatError(`truncated: the meta page says ${meta.pgid} pages of ${pageSize} bytes, the file has ${file.length} bytes`);
  }
  const reader = new PageReader(file, view, pageSize, pageCount);
  if (meta.freelist !== NO_FREELIST) reader.checkFreelist(meta.freelist);
  const root = reader.bucketAt(meta.root, meta.sequence, 0, 'root');
  for (const e of root.entries) if (!isBucketEntry(e)) throw new BoltFormatError('the root bucket holds a plain value');
  return { root, pageSize, txid: meta.txid, pageCount };
}

function readMetaAnySize(file: Uint8Array, view: DataView): { meta?: Meta; error?: string } {
  // Meta 0 is unreadable, so its page size is not to be trusted: try the size it states, then bbolt's
  // default, then the others (bbolt falls back to the OS page size the same way). The first try's error
  // is the one reported.
  const stated = file.length >= PAGE_HEADER + 12 ? view.getUint32(PAGE_HEADER + 8, true) : 0;
  const sizes = [stated, DEFAULT_PAGE_SIZE, 1024, 2048, 8192, 16384, 32768, 65536].filter((ps, i, all) => ps >= 1024 && ps <= 65536 && (ps & (ps - 1)) === 0 && all.indexOf(ps) === i);
  let first: { meta?: Meta; error?: string } | undefined;
  for (const ps of sizes) {
    const r = readMeta(file, view, ps, 1);
    if (r.meta !== undefined) return r;
    first ??= r;
  }
  return first ?? { error: 'meta page 1: not found' };
}

function readMeta(file: Uint8Array, view: DataView, pageSize: number, which: 0 | 1 | undefined): { meta?: Meta; error?: string } {
  const id = which ?? 0;
  const at = id * pageSize;
  const name = `meta page ${id}`;
  if (at + PAGE_HEADER + META_SIZE > file.length) return { error: `${name}: beyond the end of the file` };
  const flags = view.getUint16(at + 8, true);
  if ((flags & META) === 0) return { error: `${name}: not a meta page (flags 0x${flags.toString(16)})` };
  const m = at + PAGE_HEADER;
  if (view.getUint32(m, true) !== BOLT_MAGIC) return { error: `${name}: wrong magic (not a bbolt file)` };
  const version = view.getUint32(m + 4, true);
  if (version !== BOLT_VERSION) return { error: `${name}: unsupported version ${version}` };
  const checksum = view.getBigUint64(m + 56, true);
  if (checksum !== fnv1a64(file.subarray(m, m + 56))) return { error: `${name}: checksum mismatch` };
  const ps = view.getUint32(m + 8, true);
  if (ps < 512 || ps > 65536 || (ps & (ps - 1)) !== 0) return { error: `${name}: bad page size ${ps}` };
  if (which === 1 && ps !== pageSize) return { error: `${name}: page size ${ps} differs from meta page 0's ${pageSize}` };
  return {
    meta: {
      pageSize: ps,
      root: view.getBigUint64(m + 16, true),
      sequence: view.getBigUint64(m + 24, true),
      freelist: view.getBigUint64(m + 32, true),
      pgid: view.getBigUint64(m + 40, true),
      txid: view.getBigUint64(m + 48, true),
    },
  };
}

class PageReader {
  /** Pages already reached from some bucket: a page reached twice is a cycle or a shared page. */
  private readonly seen = new Set<number>();
  constructor(
    private readonly file: Uint8Array,
    private readonly view: DataView,
    private readonly pageSize: number,
    private readonly pageCount: number,
  ) {}

  /** The page `id`'s header fields, checked to lie (with its overflow) inside the database. */
  private page(id: bigint, what: string): { at: number; flags: number; count: number; end: number } {
    if (id < 2n || id >= BigInt(this.pageCount)) throw new BoltFormatError(`${what}: page ${id} is outside the database (${this.pageCount} pages)`);
    const n = Number(id);
    const at = n * this.pageSize;
    const storedId = this.view.getBigUint64(at, true);
    if (storedId !== id) throw new BoltFormatError(`${what}: page ${id} says it is page ${storedId}`);
    const overflow = this.view.getUint32(at + 12, true);
    if (n + overflow >= this.pageCount) throw new BoltFormatError(`${what}: page ${id} overflows past the end of the database`);
    return { at, flags: this.view.getUint16(at + 8, true), count: this.view.getUint16(at + 10, true), end: at + (overflow + 1) * this.pageSize };
  }

  checkFreelist(id: bigint): void {
    const p = this.page(id, 'freelist');
    if ((p.flags & FREELIST) === 0) throw new BoltFormatError(`freelist: page ${id} is not a freelist page (flags 0x${p.flags.toString(16)})`);
    let count = p.count;
    let first = p.at + PAGE_HEADER;
    if (count === 0xffff) {
      count = Number(this.view.getBigUint64(first, true));
      first += 8;
    }
    if (first + count * 8 > p.end) throw new BoltFormatError(`freelist: ${count} page ids do not fit page ${id}`);
  }

  /** A bucket whose root is page `rootPgid`. */
  bucketAt(rootPgid: bigint, sequence: bigint, depth: number, name: string): BoltBucket {
    const entries: BoltEntry[] = [];
    this.walk(rootPgid, depth, name, entries);
    return { sequence, entries };
  }

  private walk(id: bigint, depth: number, name: string, out: BoltEntry[]): void {
    if (depth > MAX_DEPTH) throw new BoltFormatError(`bucket ${name}: nested too deep (a cycle?)`);
    const what = `bucket ${name}`;
    const p = this.page(id, what);
    const n = Number(id);
    if (this.seen.has(n)) throw new BoltFormatError(`${what}: page ${id} is reachable twice`);
    this.seen.add(n);
    if (p.flags & BRANCH) {
      for (let i = 0; i < p.count; i++) {
        const el = p.at + PAGE_HEADER + i * ELEMENT;
        if (el + ELEMENT > p.end) throw new BoltFormatError(`${what}: branch page ${id} has more elements than fit`);
        this.walk(this.view.getBigUint64(el + 8, true), depth + 1, name, out);
      }
      return;
    }
    if ((p.flags & LEAF) === 0) throw new BoltFormatError(`${what}: page ${id} is neither a branch nor a leaf (flags 0x${p.flags.toString(16)})`);
    this.leafEntries(p.at, p.end, p.count, depth, name, `page ${id}`, out);
  }

  /** The elements of a leaf page lying in file[at, end). */
  private leafEntries(at: number, end: number, count: number, depth: number, name: string, where: string, out: BoltEntry[]): void {
    const what = `bucket ${name}`;
    for (let i = 0; i < count; i++) {
      const el = at + PAGE_HEADER + i * ELEMENT;
      if (el + ELEMENT > end) throw new BoltFormatError(`${what}: leaf ${where} has more elements than fit`);
      const flags = this.view.getUint32(el, true);
      const pos = this.view.getUint32(el + 4, true);
      const ksize = this.view.getUint32(el + 8, true);
      const vsize = this.view.getUint32(el + 12, true);
      const k = el + pos;
      if (k + ksize + vsize > end) throw new BoltFormatError(`${what}: leaf ${where} element ${i} runs past its page`);
      // Views into the file, not copies: a snapshot holds millions of small keys and values.
      const key = this.file.subarray(k, k + ksize);
      const prev = out.length > 0 ? out[out.length - 1]!.key : undefined;
      if (prev !== undefined && compareKeys(prev, key) >= 0) throw new BoltFormatError(`${what}: keys out of order in leaf ${where}`);
      if ((flags & BUCKET_LEAF) === 0) {
        out.push({ key, value: this.file.subarray(k + ksize, k + ksize + vsize) });
        continue;
      }
      if (vsize < BUCKET_HEADER) throw new BoltFormatError(`${what}: nested bucket value of ${vsize} bytes is shorter than a bucket header`);
      const v = k + ksize;
      const child = new TextDecoder().decode(key);
      const rootPgid = this.view.getBigUint64(v, true);
      const sequence = this.view.getBigUint64(v + 8, true);
      if (rootPgid !== 0n) {
        out.push({ key, bucket: this.bucketAt(rootPgid, sequence, depth + 1, child) });
        continue;
      }
      // Inline: a leaf page inside the value.
      const pAt = v + BUCKET_HEADER;
      const pEnd = v + vsize;
      if (pAt + PAGE_HEADER > pEnd) throw new BoltFormatError(`bucket ${child}: inline bucket shorter than a page header`);
      const pFlags = this.view.getUint16(pAt + 8, true);
      if ((pFlags & LEAF) === 0) throw new BoltFormatError(`bucket ${child}: inline page is not a leaf`);
      const entries: BoltEntry[] = [];
      this.leafEntries(pAt, pEnd, this.view.getUint16(pAt + 10, true), depth + 1, child, '(inline)', entries);
      out.push({ key, bucket: { sequence, entries } });
    }
  }
}
