/**
 * The lessor's invariants (etcd server/lease keeps them implicitly: a lease's item set is what its keys
 * name, and the revoke path deletes exactly those keys). Checked after every step of the property tests:
 * a key attached to the wrong lease outlives its lease's revoke, or is deleted by another's.
 */
import { keyString, type MvccStore } from '../mvcc/index.js';
import type { Lessor } from './lessor.js';

/** Returns the first violation found, or undefined. */
export function checkLessor(lessor: Lessor, store: MvccStore): string | undefined {
  const attached = new Map<string, bigint>();
  for (const id of lessor.leases()) {
    const expiry = lessor.expiryOf(id);
    if (lessor.primary ? !Number.isFinite(expiry) : expiry !== Infinity) {
      return `lease ${id} expires at ${expiry} on a ${lessor.primary ? 'primary' : 'secondary'} lessor`;
    }
    for (const key of lessor.keyStringsOf(id)) {
      const other = attached.get(key);
      if (other !== undefined) return `key ${JSON.stringify(key)} is attached to leases ${other} and ${id}`;
      attached.set(key, id);
    }
  }
  // Every live key names the lease it is attached to, and every attached key is live.
  const live = store.range({ key: new Uint8Array([0]), rangeEnd: new Uint8Array([0]) }).kvs;
  let withLease = 0;
  for (const kv of live) {
    if (kv.lease === 0n) continue;
    withLease++;
    const key = keyString(kv.key);
    const id = attached.get(key);
    if (id !== kv.lease) {
      return `key ${JSON.stringify(key)} names lease ${kv.lease} but is ${id === undefined ? 'attached to none' : `attached to lease ${id}`}`;
    }
  }
  if (withLease !== attached.size) {
    const gone = [...attached.keys()].find((k) => !live.some((kv) => keyString(kv.key) === k));
    return `${attached.size} keys attached to leases, ${withLease} live keys name one${gone === undefined ? '' : ` (${JSON.stringify(gone)} is not live)`}`;
  }
  return undefined;
}
