/**
 * watcherGroup (etcd watcher_group.go): watchers indexed for event fan-out — single-key watchers by key,
 * range watchers in a list (etcd uses an interval tree; a list keeps the model simple and is fast for
 * the handful of range watchers real clients open).
 */
import { keyString, type KeyString } from '../mvcc/index.js';
import type { Watcher } from './watcher.js';

export class WatcherGroup {
  private readonly byKey = new Map<KeyString, Set<Watcher>>();
  private readonly ranges = new Set<Watcher>();
  /** Every watcher of the group, in the order they joined (deterministic iteration). */
  readonly watchers = new Set<Watcher>();

  get size(): number {
    return this.watchers.size;
  }

  has(w: Watcher): boolean {
    return this.watchers.has(w);
  }

  /** Adding a watcher already in the group changes nothing (every index is a set). */
  add(w: Watcher): void {
    this.watchers.add(w);
    if (w.end !== undefined) {
      this.ranges.add(w);
      return;
    }
    let set = this.byKey.get(w.key);
    if (set === undefined) {
      set = new Set();
      this.byKey.set(w.key, set);
    }
    set.add(w);
  }

  delete(w: Watcher): void {
    if (!this.watchers.delete(w)) return;
    if (w.end !== undefined) {
      this.ranges.delete(w);
    } else {
      const set = this.byKey.get(w.key)!;
      set.delete(w);
      if (set.size === 0) this.byKey.delete(w.key);
    }
  }

  /**
   * Every watcher whose key or range holds the key whose bytes are `key`, single-key watchers first: what a
   * commit notifies and what a catch-up replays, looked up without making the key's string unless
   * single-key watchers wait.
   */
  matching(key: Uint8Array): Watcher[] {
    const out: Watcher[] = [];
    if (this.byKey.size > 0) {
      const set = this.byKey.get(keyString(key));
      if (set !== undefined) for (const w of set) out.push(w);
    }
    for (const w of this.ranges) if (w.containsBytes(key)) out.push(w);
    return out;
  }

  // Stryker disable all: an invariant checker is the properties' oracle (docs/mutation.md)
  /** The group's index agrees with its member list; returns the first disagreement, or undefined. */
  checkValid(): string | undefined {
    let indexed = this.ranges.size;
    for (const [key, set] of this.byKey) {
      if (set.size === 0) return `an empty key set is kept for ${JSON.stringify(key)}`;
      for (const w of set) if (w.key !== key || w.end !== undefined || !this.watchers.has(w)) return `watcher ${w.id} is filed under ${JSON.stringify(key)} wrongly`;
      indexed += set.size;
    }
    for (const w of this.ranges) if (w.end === undefined || !this.watchers.has(w)) return `watcher ${w.id} is filed as a range wrongly`;
    if (indexed !== this.watchers.size) return `${this.watchers.size} watchers, ${indexed} indexed`;
    return undefined;
  }
  // Stryker restore all
}
