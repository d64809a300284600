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
