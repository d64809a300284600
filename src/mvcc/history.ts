/**
 * The stored revisions of a store, as columns (what etcd's backend keeps in its key bucket: one record per
 * revision, {main, sub} → KeyValue). etcd keeps every revision until a compaction, in pages its garbage
 * collector never sees; a store that kept each revision as a KeyValue object and a Uint8Array view of its
 * value paid for both on every scavenge that copied them and every mark of the old generation — a build
 * that kept no history put 38 % faster (docs/performance.md, "Third pass"). So a revision here is a record
 * number: its revisions and version in number columns (exact: a simulation stays far below 2^53), its sub-revision,
 * where its value's bytes lie in the store's value slabs, its key (the one Uint8Array its keyIndex shares) and
 * its lease. The KeyValue a reader gets is built when it reads: `kv(r)`, or `kvRead(r)`, which keeps the one
 * it built while the record is its key's newest revision.
 *
 * The keyIndex (key_index.ts) and the revision log (store.ts) hold record numbers. A record is referenced by
 * the keyIndex until compaction drops it there, and by the log until compaction passes it there; it is freed
 * when neither holds it, and its number reused. A value slab is dropped once no record's value lies in it
 * (a KeyValue a reader still holds keeps its bytes alive: they are never overwritten).
 */
import { EMPTY_BYTES, keepsAsGiven } from './bytes.js';
import { ChunkedList } from './column.js';
import { setSubRevision } from './sub_revision.js';
import type { KeyValue } from './types.js';

const SLAB_SIZE = 64 * 1024;
/** A value longer than this gets a slab of its own. */
const SLAB_MAX_COPY = 1024;
/** No slab: the value is empty. */
const NO_SLAB = -1;

/** A record number: one stored revision of one key. */
export type Rec = number;

/** No record: a key with no revision there, or a cleared entry of a list of records. */
export const NO_RECORD: Rec = -1;

export class History {
  private cap = 0;
  private size = 0;
  private modRev = new Float64Array(0);
  private createRev = new Float64Array(0);
  private ver = new Float64Array(0);
  private subRev = new Int32Array(0);
  private valSlab = new Int32Array(0);
  private valOff = new Int32Array(0);
  private valLen = new Int32Array(0);
  /** How many of the keyIndex and the log hold the record (0: free). */
  private refs = new Uint8Array(0);
  private keys = new ChunkedList<Uint8Array | undefined>(undefined);
  private leases = new ChunkedList<bigint>(0n);
  /**
   * The KeyValue a read made of a record, kept for the next read while the record is its key's newest: a
   * key read again and again (a get, a list) costs no new object, and no more are kept than keys.
   */
  private read = new ChunkedList<KeyValue | undefined>(undefined);
  /** 1 once a newer revision of the record's key exists: reads of it keep nothing. */
  private old = new Uint8Array(0);
  /** Freed record numbers, reused first. */
  private free: Rec[] = [];

  /** Slab 0 is made with the history: the slab small values are appended to always exists. */
  private slabs: (Uint8Array | undefined)[] = [new Uint8Array(SLAB_SIZE)];
  /** How many live records have their value in each slab. */
  private slabLive: number[] = [0];
  private freeSlabs: number[] = [];
  /** The slab small values are appended to, and how much of it is used. */
  private slab = 0;
  private used = 0;

  /**
   * A new record (held by one holder: the keyIndex it is appended to) with a private copy of `value` (or
   * `value` itself, when its owner handed it over: bytes.ts); `key` is kept as given (the keyIndex's own
   * copy). A tombstone has createRevision 0 and version 0.
   */
  add(key: Uint8Array, createRevision: number, modRevision: number, version: number, value: Uint8Array, lease: bigint): Rec {
    const r = this.free.length > 0 ? this.free.pop()! : this.grow();
    this.modRev[r] = modRevision;
    this.createRev[r] = createRevision;
    this.ver[r] = version;
    this.subRev[r] = 0;
    this.old[r] = 0;
    this.refs[r] = 1;
    this.keys.set(r, key);
    this.leases.set(r, lease);
    this.storeValue(r, value);
    return r;
  }

  /** Another holder takes the record (the log, once its txn commits). */
  hold(r: Rec): void {
    this.refs[r]!++;
  }

  /** A holder lets the record go; the last one frees it. */
  release(r: Rec): void {
    if (--this.refs[r]! > 0) return;
    const s = this.valSlab[r]!;
    if (s !== NO_SLAB && --this.slabLive[s]! === 0 && s !== this.slab) {
      this.slabs[s] = undefined;
      this.freeSlabs.push(s);
    }
    this.keys.set(r, undefined);
    this.leases.set(r, 0n);
    this.read.set(r, undefined);
    this.free.push(r);
  }

  modRevision(r: Rec): number {
    return this.modRev[r]!;
  }

  createRevision(r: Rec): number {
    return this.createRev[r]!;
  }

  version(r: Rec): number {
    return this.ver[r]!;
  }

  lease(r: Rec): bigint {
    return this.leases.get(r);
  }

  key(r: Rec): Uint8Array {
    return this.keys.get(r)!;
  }

  /** Whether the record is a delete's tombstone. */
  isTombstone(r: Rec): boolean {
    return this.createRev[r] === 0;
  }

  /** Key and value bytes of the record: what etcd's backend spends on it. */
  bytes(r: Rec): number {
    return this.keys.get(r)!.byteLength + this.valLen[r]!;
  }

  sub(r: Rec): number {
    return this.subRev[r]!;
  }

  /** Records that `r` is change number `sub` of its txn (sub_revision.ts). */
  setSub(r: Rec, sub: number): void {
    this.subRev[r] = sub;
  }

  /** The record as a KeyValue: a fresh object whose value is a view of the stored bytes. */
  /** The record's value (a view of its slab: not to be changed). */
  value(r: Rec): Uint8Array {
    const s = this.valSlab[r]!;
    return s === NO_SLAB ? EMPTY_BYTES : new Uint8Array(this.slabs[s]!.buffer, this.valOff[r]!, this.valLen[r]!);
  }

  kv(r: Rec): KeyValue {
    const kv: KeyValue = {
      key: this.keys.get(r)!,
      createRevision: this.createRev[r]!,
      modRevision: this.modRev[r]!,
      version: this.ver[r]!,
      value: this.value(r),
      lease: this.leases.get(r),
    };
    const sub = this.subRev[r]!;
    if (sub > 0) setSubRevision(kv, sub);
    return kv;
  }

  /**
   * The record as a KeyValue for a read of its key's newest revision: the one an earlier read made, until
   * `superseded(r)`. The caller must not change it (a server copies what it answers).
   */
  kvRead(r: Rec): KeyValue {
    const kept = this.read.get(r);
    if (kept !== undefined) return kept;
    const kv = this.kv(r);
    if (this.old[r] === 0) this.read.set(r, kv);
    return kv;
  }

  /** A newer revision of the record's key was appended: reads of `r` (historical, rare) keep nothing from now on. */
  superseded(r: Rec): void {
    this.read.set(r, undefined);
    this.old[r] = 1;
  }

  /** Copies `value` into the slabs for record `r` (or keeps it as it is, when its owner handed it over). */
  private storeValue(r: Rec, value: Uint8Array): void {
    const n = value.byteLength;
    if (n === 0) {
      this.valSlab[r] = NO_SLAB;
      this.valLen[r] = 0;
      return;
    }
    let s: number;
    let at = 0;
    // Bytes their owner handed over (bytes.ts) are kept where they are: their buffer is the record's slab.
    if (n > SLAB_MAX_COPY && keepsAsGiven(value)) {
      s = this.newSlab(new Uint8Array(value.buffer));
      at = value.byteOffset;
    } else if (n > SLAB_MAX_COPY) {
      s = this.newSlab(new Uint8Array(n));
      this.slabs[s]!.set(value);
    } else {
      if (this.used + n > SLAB_SIZE) {
        const old = this.slab;
        this.slab = this.newSlab(new Uint8Array(SLAB_SIZE));
        this.used = 0;
        if (this.slabLive[old] === 0) {
          this.slabs[old] = undefined;
          this.freeSlabs.push(old);
        }
      }
      s = this.slab;
      at = this.used;
      this.used = (at + n + 7) & ~7;
      this.slabs[s]!.set(value, at);
    }
    this.slabLive[s]!++;
    this.valSlab[r] = s;
    this.valOff[r] = at;
    this.valLen[r] = n;
  }

  private newSlab(bytes: Uint8Array): number {
    const s = this.freeSlabs.length > 0 ? this.freeSlabs.pop()! : this.slabs.length;
    this.slabs[s] = bytes;
    this.slabLive[s] = 0;
    return s;
  }

  /**
   * A fresh record number at the end, growing the columns when full: the typed ones by doubling, as a typed
   * array must, the object ones by chunks, never copied (column.ts) — a push onto a JS array of a million
   * entries costs several times an indexed store into room made in advance (issue 28: three pushes were a fifth
   * of a put), and a JS array that doubles copies every reference it holds.
   */
  private grow(): Rec {
    if (this.size === this.cap) {
      const cap = Math.max(1024, this.cap * 2);
      this.modRev = widen(this.modRev, new Float64Array(cap));
      this.createRev = widen(this.createRev, new Float64Array(cap));
      this.ver = widen(this.ver, new Float64Array(cap));
      this.subRev = widen(this.subRev, new Int32Array(cap));
      this.valSlab = widen(this.valSlab, new Int32Array(cap));
      this.valOff = widen(this.valOff, new Int32Array(cap));
      this.valLen = widen(this.valLen, new Int32Array(cap));
      this.refs = widen(this.refs, new Uint8Array(cap));
      this.old = widen(this.old, new Uint8Array(cap));
      this.keys.reserve(cap);
      this.leases.reserve(cap);
      this.read.reserve(cap);
      this.cap = cap;
    }
    return this.size++;
  }

  // Stryker disable all: an invariant checker is the properties' oracle (docs/mutation.md)
  /** How many records are held (for the store's invariant check: every one must be reachable). */
  heldRecords(): number {
    return this.size - this.free.length;
  }

  /**
   * The bookkeeping that decides what memory is let go, or undefined when it holds: the free record numbers
   * are exactly the records no holder has, each once; each slab's live count is the number of held records
   * whose value lies in it, and an empty value lies in none; a slab is kept exactly while such a record exists or small values are appended
   * to it, and every other slab number is free, once. A mutant here changes no byte a reader sees, only
   * what is kept alive.
   */
  checkSlabs(): string | undefined {
    const free = new Set(this.free);
    if (free.size !== this.free.length) return 'a record number is free twice';
    for (let r = 0; r < this.size; r++) {
      if (free.has(r) !== (this.refs[r] === 0)) return `record ${r} has ${this.refs[r]} holders and is ${free.has(r) ? '' : 'not '}free`;
    }
    const live = new Array<number>(this.slabs.length).fill(0);
    for (let r = 0; r < this.size; r++) if (!free.has(r) && this.valSlab[r] !== NO_SLAB) live[this.valSlab[r]!]!++;
    // Where values lie: a value up to SLAB_MAX_COPY bytes in a shared 64 KiB slab, a longer one alone in its own.
    for (let r = 0; r < this.size; r++) {
      const s = this.valSlab[r]!;
      if (free.has(r)) continue;
      // An empty value is no slab's: it would keep one alive (a 64 KiB one) for nothing.
      if ((s === NO_SLAB) !== (this.valLen[r] === 0)) return `record ${r}'s value of ${this.valLen[r]} bytes lies in slab ${s}`;
      if (s === NO_SLAB) continue;
      const alone = this.valLen[r]! > SLAB_MAX_COPY;
      if (alone ? live[s] !== 1 : this.slabs[s]?.byteLength !== SLAB_SIZE) return `record ${r}'s value of ${this.valLen[r]} bytes lies in slab ${s} of ${this.slabs[s]?.byteLength} bytes with ${live[s]} live values`;
    }
    const freeSlabs = new Set(this.freeSlabs);
    if (freeSlabs.size !== this.freeSlabs.length) return 'a slab number is free twice';
    for (let s = 0; s < this.slabs.length; s++) {
      const kept = live[s]! > 0 || s === this.slab;
      if (kept && this.slabLive[s] !== live[s]) return `slab ${s} counts ${this.slabLive[s]} live values; ${live[s]} lie in it`;
      if (kept !== (this.slabs[s] !== undefined)) return `slab ${s} holds ${live[s]} live values and is ${kept ? 'dropped' : 'kept'}`;
      if (freeSlabs.has(s) === kept) return `slab ${s} is ${kept ? '' : 'not '}free`;
    }
    return undefined;
  }
  // Stryker restore all
}

function widen<T extends Float64Array | Int32Array | Uint8Array>(from: T, to: T): T {
  to.set(from);
  return to;
}
