/**
 * etcd's range permission check (server/auth/range_perm_cache.go over pkg/adt's "affine" byte intervals):
 * a permission is a half-open interval [key, end) where a single-key permission is [key, key+"\x00") and
 * a range_end of "\x00" means "to the end of the keyspace" (∞). A single-key request needs one interval
 * containing the key; a range request needs the union of the intervals overlapping it to be contiguous
 * and to reach from at or below its start to at or beyond its end (adt IntervalTree.Contains).
 */
import { compareBytes } from '../mvcc/index.js';

/** A byte interval; `end` undefined is +∞ (etcd's empty affine bound). */
export interface ByteInterval {
  readonly begin: Uint8Array;
  readonly end: Uint8Array | undefined;
}

export type PermissionType = 'READ' | 'WRITE' | 'READWRITE';

export interface KeyPermission {
  readonly permType: PermissionType;
  readonly key: Uint8Array;
  readonly rangeEnd: Uint8Array;
}

/** Affine comparison: an absent or empty bound is larger than every key. */
function cmp(a: Uint8Array | undefined, b: Uint8Array | undefined): number {
  const ainf = a === undefined || a.length === 0;
  const binf = b === undefined || b.length === 0;
  if (ainf) return binf ? 0 : 1;
  if (binf) return -1;
  return compareBytes(a, b);
}

function pointEnd(key: Uint8Array): Uint8Array {
  const e = new Uint8Array(key.length + 1);
  e.set(key);
  return e;
}

function isOpenEnded(rangeEnd: Uint8Array | undefined): boolean {
  return rangeEnd !== undefined && rangeEnd.length === 1 && rangeEnd[0] === 0;
}

/** The interval a granted permission covers (getMergedPerms). */
export function permissionInterval(p: KeyPermission): ByteInterval {
  if (p.rangeEnd.length === 0) return { begin: p.key, end: pointEnd(p.key) };
  return { begin: p.key, end: isOpenEnded(p.rangeEnd) ? undefined : p.rangeEnd };
}

/** A user's merged permissions: the read and the write intervals of all its roles. */
export class RangePermissions {
  readonly read: ByteInterval[] = [];
  readonly write: ByteInterval[] = [];

  add(p: KeyPermission): void {
    const ivl = permissionInterval(p);
    if (p.permType !== 'WRITE') this.read.push(ivl);
    if (p.permType !== 'READ') this.write.push(ivl);
  }

  /** isRangeOpPermitted: READ or WRITE over `key` (no rangeEnd) or [key, rangeEnd). */
  permits(kind: 'READ' | 'WRITE', key: Uint8Array, rangeEnd: Uint8Array | undefined): boolean {
    const ivls = kind === 'READ' ? this.read : this.write;
    if (rangeEnd === undefined || rangeEnd.length === 0) return ivls.some((i) => cmp(i.begin, key) <= 0 && cmp(key, i.end) < 0);
    return covers(ivls, { begin: key, end: isOpenEnded(rangeEnd) ? undefined : rangeEnd });
  }
}

/** adt IntervalTree.Contains: the overlapping intervals, in begin order, are contiguous and span `q`. */
export function covers(ivls: readonly ByteInterval[], q: ByteInterval): boolean {
  const hits = ivls.filter((i) => cmp(i.begin, q.end) < 0 && cmp(q.begin, i.end) < 0);
  if (hits.length === 0) return false;
  hits.sort((a, b) => cmp(a.begin, b.begin) || cmp(a.end, b.end));
  const first = hits[0]!;
  let maxEnd = first.end;
  for (const h of hits.slice(1)) {
    if (cmp(maxEnd, h.begin) < 0) return false;
    if (cmp(h.end, maxEnd) > 0) maxEnd = h.end;
  }
  return cmp(maxEnd, q.end) >= 0 && cmp(first.begin, q.begin) <= 0;
}
