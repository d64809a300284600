/**
 * Indexed binary min-heap used as the simulator's timer queue.
 *
 * Every lease TTL, keepalive renewal and periodic watch/lease step is one entry, and lease-heavy
 * tests cancel and re-arm timers constantly; each item therefore records its own position so that
 * removal is O(log n) instead of leaving dead entries behind to be skipped later.
 */

/** An item that can live in an {@link IndexedHeap}: the heap keeps `heapIndex` up to date (-1 = not queued). */
export interface HeapItem {
  heapIndex: number;
}

/** Min-heap over items ordered by `less`; `push`, `pop` and `remove` are O(log n), `peek` O(1). */
export class IndexedHeap<T extends HeapItem> {
  private readonly items: T[] = [];

  constructor(private readonly less: (a: T, b: T) => boolean) {}

  /** Number of queued items. */
  get size(): number {
    return this.items.length;
  }

  /** The smallest item, without removing it. */
  peek(): T | undefined {
    return this.items[0];
  }

  /** The queued items in heap (not sorted) order; do not mutate. */
  values(): readonly T[] {
    return this.items;
  }

  /** Queues `item`; it must not already be queued. */
  push(item: T): void {
    if (item.heapIndex >= 0) throw new Error('IndexedHeap.push: item is already queued');
    item.heapIndex = this.items.length;
    this.items.push(item);
    this.up(item.heapIndex);
  }

  /** Removes and returns the smallest item. */
  pop(): T | undefined {
    const top = this.items[0];
    if (top !== undefined) this.removeAt(0);
    return top;
  }

  /** Removes `item` if it is queued here; returns whether it was. */
  remove(item: T): boolean {
    const i = item.heapIndex;
    if (i < 0 || this.items[i] !== item) return false;
    this.removeAt(i);
    return true;
  }

  /** Removes every item. */
  clear(): void {
    for (const item of this.items) item.heapIndex = -1;
    this.items.length = 0;
  }

  private removeAt(i: number): void {
    const items = this.items;
    const removed = items[i]!;
    const last = items.pop()!;
    removed.heapIndex = -1;
    if (i < items.length) {
      items[i] = last;
      last.heapIndex = i;
      this.down(i);
      this.up(last.heapIndex);
    }
  }

  private up(i: number): void {
    const items = this.items;
    const item = items[i]!;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = items[p]!;
      if (!this.less(item, parent)) break;
      items[i] = parent;
      parent.heapIndex = i;
      i = p;
    }
    items[i] = item;
    item.heapIndex = i;
  }

  private down(i: number): void {
    const items = this.items;
    const n = items.length;
    const item = items[i]!;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      let c = l;
      if (r < n && this.less(items[r]!, items[l]!)) c = r;
      const child = items[c]!;
      if (!this.less(child, item)) break;
      items[i] = child;
      child.heapIndex = i;
      i = c;
    }
    items[i] = item;
    item.heapIndex = i;
  }
}
