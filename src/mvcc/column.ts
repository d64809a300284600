/**
 * A growable list of numbers in a typed array: the store's revision log (store.ts) appends an entry or two per
 * write and keeps them until a compaction, as etcd's backend keeps its revisions. A JS array of a million
 * numbers costs a put several times an indexed store per push, and the collector scans it; a typed array
 * that doubles when full costs neither (issue 28: the log's two pushes were a sixth of a put).
 */
export class Column {
  /** The entries, at [0, length); what lies beyond is room for later pushes. */
  data: Float64Array;
  length = 0;

  constructor(capacity = 1024) {
    this.data = new Float64Array(capacity);
  }

  /** A column holding `values`, in order. */
  static of(values: ArrayLike<number>): Column {
    const c = new Column(Math.max(1024, values.length));
    c.data.set(values);
    c.length = values.length;
    return c;
  }

  push(v: number): void {
    if (this.length === this.data.length) {
      const to = new Float64Array(this.data.length * 2);
      to.set(this.data);
      this.data = to;
    }
    this.data[this.length++] = v;
  }

  /** The entries from `start` on, as a new column (a trim of the front). */
  from(start: number): Column {
    return Column.of(this.data.subarray(start, this.length));
  }
}

const CHUNK_BITS = 10;
const CHUNK = 1 << CHUNK_BITS;
const CHUNK_MASK = CHUNK - 1;

/**
 * A list of object references by record number (history.ts: each record's key, lease and kept KeyValue), held
 * in chunks of 1024 that are added as records are, and never copied. A JS array grown by doubling copies every
 * reference it holds at each doubling, through the write barrier, and the collector rescans the new array: for
 * three such lists a store's growth cost 110-126 ns per record, against 18 ns in chunks (issue 28; pushes 78-82
 * ns). Entries not yet written read as `fill`.
 */
export class ChunkedList<T> {
  private readonly chunks: T[][] = [];

  constructor(private readonly fill: T) {}

  get(i: number): T {
    return this.chunks[i >> CHUNK_BITS]![i & CHUNK_MASK]!;
  }

  set(i: number, v: T): void {
    this.chunks[i >> CHUNK_BITS]![i & CHUNK_MASK] = v;
  }

  /** Makes room for the entries [0, n). */
  reserve(n: number): void {
    while (this.chunks.length * CHUNK < n) this.chunks.push(new Array<T>(CHUNK).fill(this.fill));
  }
}
