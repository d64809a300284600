/**
 * etcd's range permission check (server/auth/range_perm_cache.go over pkg/adt's interval tree with
 * "affine" byte bounds), modelled step by step so that its answers match etcd's also where they depend on
 * the tree's shape (empty and inverted requests, range_end ≤ key):
 *  - a permission is an interval [key, end): a single-key permission is [key, key+"\x00"), a range_end of
 *    "\x00" means "to the end of the keyspace" (+∞); an empty bound compares above every key (affine);
 *  - per user, etcd builds one READ and one WRITE tree by inserting the permissions of the user's roles
 *    (roles in name order, each role's permissions in its stored, key-sorted order) into a red-black
 *    interval tree ordered by `begin`, each node holding the largest `end` below it (`max`);
 *  - a single-key request asks `Intersects` on the point [key, key+"\x00"): one descent from the root;
 *  - a range request asks `Contains`: an in-order visit of the nodes the query overlaps — pruning a
 *    subtree with an asymmetric comparison of [node.begin, node.max) against the query — checking that
 *    the visited intervals are contiguous and reach from at or below the query's begin to at or beyond
 *    its end.
 * For proper queries (key < range_end) this is the plain "covered by a contiguous union" rule; for empty
 * or inverted ones etcd's answer depends on the pruning and therefore on the insertion order, which this
 * model reproduces (the tree code here is our own; only the algorithm follows etcd 3.4's pkg/adt).
 */
import { compareBytes } from '../mvcc/index.js';

/** A byte interval; `end` undefined (or empty) is +∞ (etcd's empty affine bound). */
export interface ByteInterval {
  readonly begin: Uint8Array;
  readonly end: Uint8Array | undefined;
}

/** @public */
export type PermissionType = 'READ' | 'WRITE' | 'READWRITE';

/** @public */
export interface KeyPermission {
  readonly permType: PermissionType;
  readonly key: Uint8Array;
  readonly rangeEnd: Uint8Array;
}

/** Affine comparison: an absent or empty bound is larger than every key (and equal to another such). */
function cmp(a: Uint8Array | undefined, b: Uint8Array | undefined): number {
  const ainf = a === undefined || a.length === 0;
  const binf = b === undefined || b.length === 0;
  if (ainf) return binf ? 0 : 1;
  if (binf) return -1;
  return compareBytes(a, b);
}

/**
 * adt Interval.Compare: -1 when `a` lies left of `b` (begins before it and ends at or before its begin),
 * 1 when `a` begins at or after `b`'s end, else 0 ("overlaps"). Asymmetric for empty/inverted intervals.
 */
function compareIntervals(aBegin: Uint8Array, aEnd: Uint8Array | undefined, bBegin: Uint8Array, bEnd: Uint8Array | undefined): number {
  if (cmp(aBegin, bBegin) < 0 && cmp(aEnd, bBegin) <= 0) return -1;
  if (cmp(aBegin, bEnd) >= 0) return 1;
  return 0;
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

// -------------------------------------------------------------------------------------------------
// The red-black interval tree (CLRS ch. 13 and 14.3, with pkg/adt's max maintenance and visit order).

interface TreeNode {
  begin: Uint8Array;
  end: Uint8Array | undefined;
  /** The largest end in this subtree (affine). */
  max: Uint8Array | undefined;
  left: TreeNode;
  right: TreeNode;
  parent: TreeNode;
  red: boolean;
}

/** An interval tree that only grows (etcd rebuilds a user's trees whenever the auth store changes). */
export class PermissionTree {
  /** The shared leaf / root-parent node (black). Its links are scratch space, as in adt. */
  private readonly nil: TreeNode;
  private root: TreeNode;
  private count = 0;

  constructor() {
    const nil = { begin: new Uint8Array(0), end: undefined, max: undefined, red: false } as unknown as TreeNode;
    nil.left = nil;
    nil.right = nil;
    nil.parent = nil;
    this.nil = nil;
    this.root = nil;
  }

  get size(): number {
    return this.count;
  }

  /** Levels from the root to the deepest leaf (0 for an empty tree). */
  height(): number {
    const depth = (n: TreeNode): number => (n === this.nil ? 0 : 1 + Math.max(depth(n.left), depth(n.right)));
    return depth(this.root);
  }

  /** Nodes in level order as [begin, end] strings (latin1) with colour — for tests of the shape. */
  shape(): string[] {
    const out: string[] = [];
    const s = (b: Uint8Array | undefined): string => (b === undefined || b.length === 0 ? '∞' : String.fromCharCode(...b));
    const queue: TreeNode[] = this.root === this.nil ? [] : [this.root];
    for (let n = queue.shift(); n !== undefined; n = queue.shift()) {
      out.push(`${n.red ? 'R' : 'B'}[${s(n.begin)},${s(n.end)})max=${s(n.max)}`);
      if (n.left !== this.nil) queue.push(n.left);
      if (n.right !== this.nil) queue.push(n.right);
    }
    return out;
  }

  insert(ivl: ByteInterval): void {
    const nil = this.nil;
    const z: TreeNode = { begin: ivl.begin, end: ivl.end, max: ivl.end, left: nil, right: nil, parent: nil, red: true };
    let y = nil;
    let x = this.root;
    while (x !== nil) {
      y = x;
      x = cmp(z.begin, x.begin) < 0 ? x.left : x.right;
    }
    z.parent = y;
    if (y === nil) this.root = z;
    else {
      if (cmp(z.begin, y.begin) < 0) y.left = z;
      else y.right = z;
      this.updateMax(y);
    }
    this.insertFixup(z);
    this.count++;
  }

  /**
   * Recomputes `max` from `x` upwards, stopping at the first node whose max does not change (adt's
   * updateMax; called at the same points as adt calls it, so transiently stale maxima stay as stale).
   */
  private updateMax(start: TreeNode): void {
    const nil = this.nil;
    for (let x = start; x !== nil; x = x.parent) {
      let max = x.end;
      if (x.left !== nil && cmp(x.left.max, max) > 0) max = x.left.max;
      if (x.right !== nil && cmp(x.right.max, max) > 0) max = x.right.max;
      if (cmp(x.max, max) === 0) break;
      x.max = max;
    }
  }

  private insertFixup(start: TreeNode): void {
    let z = start;
    while (z.parent.red) {
      const p = z.parent;
      const g = p.parent;
      if (p === g.left) {
        const uncle = g.right;
        if (uncle.red) {
          uncle.red = false;
          p.red = false;
          g.red = true;
          z = g;
        } else {
          if (z === p.right) {
            z = p;
            this.rotateLeft(z);
          }
          z.parent.red = false;
          z.parent.parent.red = true;
          this.rotateRight(z.parent.parent);
        }
      } else {
        const uncle = g.left;
        if (uncle.red) {
          uncle.red = false;
          p.red = false;
          g.red = true;
          z = g;
        } else {
          if (z === p.left) {
            z = p;
            this.rotateRight(z);
          }
          z.parent.red = false;
          z.parent.parent.red = true;
          this.rotateLeft(z.parent.parent);
        }
      }
    }
    this.root.red = false;
  }

  private rotateLeft(x: TreeNode): void {
    if (x.right === this.nil) return;
    const y = x.right;
    x.right = y.left;
    y.left.parent = x; // also on the shared leaf, as adt does
    this.updateMax(x);
    this.replaceParent(x, y);
    y.left = x;
    this.updateMax(y);
  }

  private rotateRight(x: TreeNode): void {
    if (x.left === this.nil) return;
    const y = x.left;
    x.left = y.right;
    y.right.parent = x;
    this.updateMax(x);
    this.replaceParent(x, y);
    y.right = x;
    this.updateMax(y);
  }

  /** Puts `y` where `x` hangs, then makes `y` x's parent (updating the old parent's max first, as adt). */
  private replaceParent(x: TreeNode, y: TreeNode): void {
    y.parent = x.parent;
    if (x.parent === this.nil) this.root = y;
    else {
      if (x === x.parent.left) x.parent.left = y;
      else x.parent.right = y;
      this.updateMax(x.parent);
    }
    x.parent = y;
  }

  /** adt visit: calls `f` on the nodes overlapping `q` in begin order; `f` returning false stops it. */
  private visit(x: TreeNode, q: ByteInterval, f: (n: TreeNode) => boolean): boolean {
    if (x === this.nil) return true;
    const v = compareIntervals(q.begin, q.end, x.begin, x.end);
    if (v < 0) return this.visit(x.left, q, f);
    if (v > 0) {
      // the subtree is searched only if [x.begin, x.max) "overlaps" the query (compared that way round)
      if (compareIntervals(x.begin, x.max, q.begin, q.end) !== 0) return true;
      return this.visit(x.left, q, f) && this.visit(x.right, q, f);
    }
    return this.visit(x.left, q, f) && f(x) && this.visit(x.right, q, f);
  }

  /** adt Intersects: one descent, left when the left subtree's max is above the query's begin. */
  intersects(q: ByteInterval): boolean {
    const nil = this.nil;
    let x = this.root;
    while (x !== nil && compareIntervals(q.begin, q.end, x.begin, x.end) !== 0) {
      x = x.left !== nil && cmp(x.left.max, q.begin) > 0 ? x.left : x.right;
    }
    return x !== nil;
  }

  /** adt Contains: the visited intervals are contiguous and span the query. */
  contains(q: ByteInterval): boolean {
    let minBegin: Uint8Array | undefined;
    let maxEnd: Uint8Array | undefined;
    let seen = false;
    let contiguous = true;
    this.visit(this.root, q, (n) => {
      if (!seen) {
        seen = true;
        minBegin = n.begin;
        maxEnd = n.end;
        return true;
      }
      if (cmp(maxEnd, n.begin) < 0) {
        contiguous = false;
        return false;
      }
      if (cmp(n.end, maxEnd) > 0) maxEnd = n.end;
      return true;
    });
    return contiguous && seen && cmp(maxEnd, q.end) >= 0 && cmp(minBegin, q.begin) <= 0;
  }
}

/** A user's merged permissions: the read and the write trees of all its roles (getMergedPerms). */
export class RangePermissions {
  readonly read = new PermissionTree();
  readonly write = new PermissionTree();

  /** Adds a permission (in etcd's order: roles by name, each role's permissions as stored). */
  add(p: KeyPermission): void {
    const ivl = permissionInterval(p);
    if (p.permType !== 'WRITE') this.read.insert(ivl);
    if (p.permType !== 'READ') this.write.insert(ivl);
  }

  /** isRangeOpPermitted: READ or WRITE on `key` (no or empty rangeEnd: a point) or over [key, rangeEnd). */
  permits(kind: 'READ' | 'WRITE', key: Uint8Array, rangeEnd: Uint8Array | undefined): boolean {
    const tree = kind === 'READ' ? this.read : this.write;
    if (rangeEnd === undefined || rangeEnd.length === 0) return tree.intersects({ begin: key, end: pointEnd(key) });
    return tree.contains({ begin: key, end: isOpenEnded(rangeEnd) ? undefined : rangeEnd });
  }
}

/** adt Contains over a tree built from `ivls` inserted in the given order. */
export function covers(ivls: readonly ByteInterval[], q: ByteInterval): boolean {
  const t = new PermissionTree();
  for (const i of ivls) t.insert(i);
  return t.contains(q);
}
