/**
 * etcd numbers the changes of one write txn 0, 1, 2, … (the sub part of a revision {main, sub}); the
 * backend key of every stored revision carries it, so etcd's HashKV depends on it. Nearly every change is a
 * txn's only one (sub 0). The store keeps it in its history's columns (history.ts) and records it here on
 * each KeyValue it builds of such a change, so the fact travels with the KeyValues a snapshot hands out and
 * takes back; a weak map forgets them with their KeyValues.
 */
import type { KeyValue } from './types.js';

const subs = new WeakMap<KeyValue, number>();

/** Records that `kv` is change number `sub` (> 0) of its txn. */
export function setSubRevision(kv: KeyValue, sub: number): void {
  subs.set(kv, sub);
}

/** The sub-revision of a stored change: its position in its txn. */
export function subRevision(kv: KeyValue): number {
  return subs.get(kv) ?? 0;
}
