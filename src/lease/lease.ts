/**
 * One lease as the lessor holds it (etcd server/lease/lease.go): its ID, granted TTL, expiry instant on
 * the simulator's clock, the last checkpointed remaining TTL, and the keys attached to it.
 */
import type { KeyString } from '../mvcc/index.js';

/** etcd's MaxLeaseTTL, in seconds. @public */
export const MAX_LEASE_TTL = 9_000_000_000;

/** A lease record. Mutated only by the Lessor; read it through the Lessor's API. @public */
export class Lease {
  /**
   * Position in the lessor's expiry heap (-1: not queued, e.g. when demoted): a HeapItem, which the heap's
   * type checks (IndexedHeap<Lease>) rather than an `implements` that would publish sim's HeapItem.
   */
  heapIndex = -1;
  /** Expiry instant in clock ms; Infinity is etcd's `forever` (a secondary lessor never expires leases). */
  expiry: number;
  /** Last checkpointed remaining TTL in seconds; 0 = unset (then the full TTL is used on promote). */
  remainingTTL = 0;
  /** Attached keys: latin1 key string → the key's bytes. */
  readonly keys = new Map<KeyString, Uint8Array>();

  constructor(
    /** The lease ID (exact int64). */
    readonly id: bigint,
    /** Granted TTL in seconds (already raised to the lessor's minimum). */
    readonly ttl: number,
    expiry: number,
  ) {
    this.expiry = expiry;
  }

  /** etcd getRemainingTTL: the checkpointed remainder if set, else the full TTL (seconds). */
  remainingTTLOrFull(): number {
    return this.remainingTTL > 0 ? this.remainingTTL : this.ttl;
  }

  /** Remaining time in ms at `now` (Infinity when demoted); <= 0 means expired. */
  remainingMs(now: number): number {
    return this.expiry - now;
  }

  /** etcd expired(): Remaining() <= 0. */
  expired(now: number): boolean {
    return this.expiry - now <= 0;
  }

  /** @internal Attached key strings in byte order (latin1 strings compare as bytes). */
  sortedKeyStrings(): KeyString[] {
    return [...this.keys.keys()].sort();
  }
}

/** Expiry-heap order: earlier expiry first, then smaller ID (signed int64 order), so ties are deterministic. */
export function expiresBefore(a: Lease, b: Lease): boolean {
  return a.expiry < b.expiry || (a.expiry === b.expiry && a.id < b.id);
}
