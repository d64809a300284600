/**
 * A deliberately naive reference model of etcd's KV semantics, for model-based property tests.
 *
 * State is just the list of every committed change (revision, sub-revision, key, put value or tombstone,
 * lease) plus the compacted revision. The key-value state at any revision is recomputed from scratch by
 * replaying that list, so there is no index, no generations and no compaction keep rule to get wrong: a
 * read at a revision >= the compact revision must see exactly what the full history says. Only what the
 * backend retains (retainedChanges()) needs the keep rule, as one filter over the history.
 *
 * Written from etcd's behaviour (server/etcdserver/txn, api/v3rpc/key.go, storage/mvcc; see
 * /work/shared/reference/etcd-semantics.md §1.4 and §1.8), independently of src/mvcc: only its types
 * and byte helpers are used (its errors are etcd's texts, written out below).
 */
import { keyBytes, keyString } from '../../../src/mvcc/bytes.js';
import { GrpcCode, errorKind, fail } from '../../../src/etcd/index.js';
import type {
  Compare,
  CompactResponse,
  DeleteRangeRequest,
  DeleteRangeResponse,
  Event,
  KeyValue,
  PutRequest,
  PutResponse,
  RangeRequest,
  RangeResponse,
  RequestOp,
  ResponseOp,
  SortTarget,
  TxnRequest,
  TxnResponse,
} from '../../../src/mvcc/types.js';

/** One committed change. Keys and values are latin1 strings (one char per byte: JS order = byte order). */
export interface Change {
  readonly rev: number;
  readonly sub: number;
  readonly key: string;
  /** undefined: a tombstone (delete). */
  readonly value: string | undefined;
  readonly lease: bigint;
}

/** What the model keeps per live key at some revision. */
interface Live {
  readonly create: number;
  readonly mod: number;
  readonly version: number;
  readonly value: string;
  readonly lease: bigint;
}

/**
 * etcd would not answer this request: the member panics ("unexpected error during txn with writes"),
 * e.g. a txn put with ignore_value whose key an earlier delete of the same txn removed — possible only
 * through the "\0" range-end quirk of checkIntervals. Property tests keep such requests out.
 */
export class EtcdWouldPanic extends Error {
  override readonly name = 'EtcdWouldPanic';
}

export interface ReferenceOptions {
  readonly maxTxnOps: number;
  /** Which lease IDs exist (the lessor is outside this model). */
  readonly leaseExists: (id: bigint) => boolean;
  /** Which release's rules, where releases differ (default: the newest's). */
  readonly rules?: ReleaseRules | undefined;
}

/**
 * What the releases the simulator models do differently here (docs/version-differences.md), written down
 * from etcd's changes, not taken from src/mvcc/compat.ts.
 */
export interface ReleaseRules {
  /**
   * Compaction keeps a tombstone exactly at the compaction revision (etcd PR #18274, 3.6; backported after
   * 3.4.23, which drops it: a watch from the compaction revision missed the delete).
   */
  readonly keepTombstoneAtCompactRev: boolean;
  /** A txn's pre-checks run every put check before any range check (before 3.6's txn package); else in op order. */
  readonly txnChecksPutsFirst: boolean;
  /**
   * An unknown sort_order passes validation (3.4 checked the key only) and then sorts nothing: key order,
   * read in full (no early limit).
   */
  readonly sortOrderUnchecked: boolean;
}

export const RELEASE_RULES: Readonly<Record<'3.4' | '3.5' | '3.6' | '3.7', ReleaseRules>> = {
  '3.4': { keepTombstoneAtCompactRev: false, txnChecksPutsFirst: true, sortOrderUnchecked: true },
  '3.5': { keepTombstoneAtCompactRev: true, txnChecksPutsFirst: true, sortOrderUnchecked: false },
  '3.6': { keepTombstoneAtCompactRev: true, txnChecksPutsFirst: false, sortOrderUnchecked: false },
  '3.7': { keepTombstoneAtCompactRev: true, txnChecksPutsFirst: false, sortOrderUnchecked: false },
};

// etcd's errors with the codes and texts its server sends (observed; /work/shared/reference/etcd-semantics.md),
// kept here rather than taken from src/mvcc/errors.ts: a text changed there must show as a disagreement.
const ErrCompacted = errorKind(GrpcCode.OUT_OF_RANGE, 'etcdserver: mvcc: required revision has been compacted');
const ErrFutureRev = errorKind(GrpcCode.OUT_OF_RANGE, 'etcdserver: mvcc: required revision is a future revision');
const ErrEmptyKey = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: key is not provided');
const ErrKeyNotFound = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: key not found');
const ErrValueProvided = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: value is provided');
const ErrLeaseProvided = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: lease is provided');
const ErrTooManyOps = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: too many operations in txn request');
const ErrDuplicateKey = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: duplicate key given in txn request');
const ErrInvalidSortOption = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: invalid sort option');
const ErrLeaseNotFound = errorKind(GrpcCode.NOT_FOUND, 'etcdserver: requested lease not found');

const NO_BYTES = new Uint8Array(0);

function toKv(key: string, l: Live): KeyValue {
  return { key: keyBytes(key), createRevision: l.create, modRevision: l.mod, version: l.version, value: keyBytes(l.value), lease: l.lease };
}

/** Where a request's key/range_end select keys: a predicate over latin1 keys. */
function selector(key: Uint8Array, rangeEnd: Uint8Array | undefined): (k: string) => boolean {
  const from = keyString(key);
  if (rangeEnd === undefined || rangeEnd.length === 0) return (k) => k === from;
  if (rangeEnd.length === 1 && rangeEnd[0] === 0) return (k) => k >= from;
  const to = keyString(rangeEnd);
  return (k) => k >= from && k < to;
}

/** Replays `log` up to revision `rev` (inclusive) into a fresh map. */
function replay(log: readonly Change[], rev: number): Map<string, Live> {
  const state = new Map<string, Live>();
  for (const c of log) {
    if (c.rev > rev) break;
    if (c.value === undefined) {
      state.delete(c.key);
      continue;
    }
    const prev = state.get(c.key);
    state.set(c.key, {
      create: prev === undefined ? c.rev : prev.create,
      mod: c.rev,
      version: prev === undefined ? 1 : prev.version + 1,
      value: c.value,
      lease: c.lease,
    });
  }
  return state;
}

function selectSorted(state: Map<string, Live>, pick: (k: string) => boolean): [string, Live][] {
  const out: [string, Live][] = [];
  for (const e of state) if (pick(e[0])) out.push(e);
  out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return out;
}

function num3(a: number | bigint, b: number | bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
function str3(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

const SORT_KEY: Record<SortTarget, (a: [string, Live], b: [string, Live]) => number> = {
  KEY: (a, b) => str3(a[0], b[0]),
  VERSION: (a, b) => num3(a[1].version, b[1].version),
  CREATE: (a, b) => num3(a[1].create, b[1].create),
  MOD: (a, b) => num3(a[1].mod, b[1].mod),
  VALUE: (a, b) => str3(a[1].value, b[1].value),
};

/** A read view: the committed log plus a txn's own uncommitted changes. */
interface View {
  readonly log: readonly Change[];
  /** Header revision and the revision "0" reads at. */
  readonly rev: number;
  readonly compactRev: number;
}

export class ReferenceKV {
  /** Every committed change, in (rev, sub) order. Never shrinks: compaction only moves compactRev. */
  readonly log: Change[] = [];
  currentRev = 1;
  compactRev = -1;
  readonly opts: ReferenceOptions;
  readonly rules: ReleaseRules;

  constructor(opts: ReferenceOptions) {
    this.opts = opts;
    this.rules = opts.rules ?? RELEASE_RULES['3.7'];
  }

  /** Live keys at `rev` (no compaction check), as KeyValues in key order. */
  stateAt(rev: number): KeyValue[] {
    return selectSorted(replay(this.log, rev), () => true).map(([k, l]) => toKv(k, l));
  }

  /** The KeyValue of one key at `rev`, or undefined (no compaction check). */
  kvAt(key: Uint8Array, rev: number): KeyValue | undefined {
    const k = keyString(key);
    const l = replay(this.log, rev).get(k);
    return l === undefined ? undefined : toKv(k, l);
  }

  /**
   * The watch events of revision `rev` (DELETE events carry a tombstone KeyValue) as the store still has
   * them: at the compaction revision, a release that drops tombstones there has lost its DELETEs.
   */
  eventsAt(rev: number): Event[] {
    const events = this.allEventsAt(rev);
    return rev === this.compactRev && !this.rules.keepTombstoneAtCompactRev ? events.filter((e) => e.type === 'PUT') : events;
  }

  /** Every event revision `rev` made (what the store's commit listeners are told). */
  allEventsAt(rev: number): Event[] {
    const before = replay(this.log, rev - 1);
    const out: Event[] = [];
    for (const c of this.log) {
      if (c.rev !== rev) continue;
      if (c.value === undefined) {
        out.push({ type: 'DELETE', kv: { key: keyBytes(c.key), createRevision: 0, modRevision: rev, version: 0, value: NO_BYTES, lease: 0n } });
        before.delete(c.key);
      } else {
        const prev = before.get(c.key);
        const l: Live = {
          create: prev === undefined ? rev : prev.create,
          mod: rev,
          version: prev === undefined ? 1 : prev.version + 1,
          value: c.value,
          lease: c.lease,
        };
        before.set(c.key, l);
        out.push({ type: 'PUT', kv: toKv(c.key, l) });
      }
    }
    return out;
  }

  /** lease ID → keys attached to it now (latin1), from the live keys. */
  leaseMap(): Map<bigint, Set<string>> {
    const m = new Map<bigint, Set<string>>();
    for (const [k, l] of replay(this.log, this.currentRev)) {
      if (l.lease === 0n) continue;
      let s = m.get(l.lease);
      if (s === undefined) m.set(l.lease, (s = new Set()));
      s.add(k);
    }
    return m;
  }

  private view(): View {
    return { log: this.log, rev: this.currentRev, compactRev: this.compactRev };
  }

  // ---------------------------------------------------------------------------------------------
  // Range

  range(r: RangeRequest): RangeResponse {
    validateRange(r, this.rules);
    return doRange(this.view(), r);
  }

  // ---------------------------------------------------------------------------------------------
  // Put / DeleteRange

  put(r: PutRequest): PutResponse {
    validatePut(r);
    const lease = r.lease ?? 0n;
    if (lease !== 0n && !this.opts.leaseExists(lease)) fail(ErrLeaseNotFound);
    const w = new TxnWriter(this);
    const resp = w.put(r);
    w.commit();
    return resp;
  }

  deleteRange(r: DeleteRangeRequest): DeleteRangeResponse {
    if (r.key.length === 0) fail(ErrEmptyKey);
    const w = new TxnWriter(this);
    const resp = w.deleteRange(r);
    w.commit();
    return resp;
  }

  // ---------------------------------------------------------------------------------------------
  // Txn

  txn(t: TxnRequest): TxnResponse {
    const w = this.prepareTxn(t);
    const resp = w.runTxn(t, true);
    w.commit();
    return resp;
  }

  /** True when etcd would crash applying this txn (see EtcdWouldPanic); changes nothing. */
  txnWouldPanic(t: TxnRequest): boolean {
    try {
      this.prepareTxn(t).runTxn(t, true);
      return false;
    } catch (e) {
      return e instanceof EtcdWouldPanic;
    }
  }

  /** Validation, compares and pre-checks: everything etcd does before the first write. */
  private prepareTxn(t: TxnRequest): TxnWriter {
    validateTxn(t, this.opts.maxTxnOps, this.rules);
    overlapCheck(t.success ?? []);
    overlapCheck(t.failure ?? []);
    const w = new TxnWriter(this);
    w.decide(t);
    w.precheck(t);
    return w;
  }

  // ---------------------------------------------------------------------------------------------
  // Compact

  /**
   * What etcd's backend still holds after the compactions (its db size, the simulator's retained tally):
   * every change after the compact revision and, of each key's changes up to it, only the last one, if it
   * is a put or a tombstone exactly at the compact revision (etcd 3.6+ keeps that one, so a watch from the
   * compact revision still sees the delete; keepTombstoneAtCompactRev), in log order. Reads cannot tell a
   * tombstone kept from one dropped, so this is (with the hashes and the compaction revision's events) where
   * the keep rule shows; written as a filter over the whole history, with no generations.
   */
  retainedChanges(): Change[] {
    const at = this.compactRev;
    const lastUpTo = new Map<string, Change>();
    for (const c of this.log) if (c.rev <= at) lastUpTo.set(c.key, c);
    const keepAt = this.rules.keepTombstoneAtCompactRev;
    return this.log.filter((c) => c.rev > at || (lastUpTo.get(c.key) === c && (c.value !== undefined || (keepAt && c.rev === at))));
  }

  /** How many revisions retainedChanges() are, and their key and value bytes. */
  retained(): { revisions: number; bytes: number } {
    let bytes = 0;
    const kept = this.retainedChanges();
    for (const c of kept) bytes += c.key.length + (c.value?.length ?? 0);
    return { revisions: kept.length, bytes };
  }

  compact(rev: number): CompactResponse {
    if (rev <= this.compactRev) fail(ErrCompacted);
    if (rev > this.currentRev) fail(ErrFutureRev);
    this.compactRev = rev;
    return { revision: this.currentRev };
  }
}

// -----------------------------------------------------------------------------------------------
// Request validation (v3rpc/key.go)

const ORDERS = ['NONE', 'ASCEND', 'DESCEND'];
const TARGETS = ['KEY', 'VERSION', 'CREATE', 'MOD', 'VALUE'];

function validateRange(r: RangeRequest, rules: ReleaseRules): void {
  if (r.key.length === 0) fail(ErrEmptyKey);
  if (!rules.sortOrderUnchecked && r.sortOrder !== undefined && !ORDERS.includes(r.sortOrder)) fail(ErrInvalidSortOption);
  if (r.sortTarget !== undefined && !TARGETS.includes(r.sortTarget)) fail(ErrInvalidSortOption);
}

function validatePut(r: PutRequest): void {
  if (r.key.length === 0) fail(ErrEmptyKey);
  if (r.ignoreValue === true && (r.value?.length ?? 0) > 0) fail(ErrValueProvided);
  if (r.ignoreLease === true && (r.lease ?? 0n) !== 0n) fail(ErrLeaseProvided);
}

function validateOp(op: RequestOp, budget: number, rules: ReleaseRules): void {
  if (op.requestRange !== undefined) validateRange(op.requestRange, rules);
  else if (op.requestPut !== undefined) validatePut(op.requestPut);
  else if (op.requestDeleteRange !== undefined) {
    if (op.requestDeleteRange.key.length === 0) fail(ErrEmptyKey);
  } else if (op.requestTxn !== undefined) validateTxn(op.requestTxn, budget, rules);
  else fail(ErrKeyNotFound);
}

/** v3rpc's checkTxnRequest, naively (test/mvcc/txn_once.test.ts holds the engine's one-walk checks to it too). */
export function validateTxn(t: TxnRequest, maxOps: number, rules: ReleaseRules): void {
  const cmps = t.compare ?? [];
  const succ = t.success ?? [];
  const fails = t.failure ?? [];
  const widest = Math.max(cmps.length, succ.length, fails.length);
  if (widest > maxOps) fail(ErrTooManyOps);
  if (cmps.some((c) => c.key.length === 0)) fail(ErrEmptyKey);
  for (const op of succ) validateOp(op, maxOps - widest, rules);
  for (const op of fails) validateOp(op, maxOps - widest, rules);
}

/**
 * etcd's checkIntervals, naively: a delete covers the point k when begin <= k < end (a missing end means
 * the single key; an end of "\0" or any end <= begin covers nothing, which is etcd's interval-tree
 * behaviour). Puts of nested txns are checked against this level's deletes and earlier nested txns'
 * deletes; a nested txn's then/else may put the same key. Returns [puts, deletes] of this level.
 */
function overlapCheck(ops: readonly RequestOp[]): [Set<string>, [string, string][]] {
  const dels: [string, string][] = [];
  for (const op of ops) {
    const d = op.requestDeleteRange;
    if (d === undefined) continue;
    const b = keyString(d.key);
    dels.push([b, d.rangeEnd !== undefined && d.rangeEnd.length > 0 ? keyString(d.rangeEnd) : b + '\x00']);
  }
  const covered = (k: string): boolean => dels.some(([b, e]) => b <= k && k < e);
  const puts = new Set<string>();
  for (const op of ops) {
    if (op.requestTxn === undefined) continue;
    const [thenPuts, thenDels] = overlapCheck(op.requestTxn.success ?? []);
    const [elsePuts, elseDels] = overlapCheck(op.requestTxn.failure ?? []);
    for (const k of thenPuts) {
      if (puts.has(k) || covered(k)) fail(ErrDuplicateKey);
      puts.add(k);
    }
    for (const k of elsePuts) {
      if ((puts.has(k) && !thenPuts.has(k)) || covered(k)) fail(ErrDuplicateKey);
      puts.add(k);
    }
    dels.push(...thenDels, ...elseDels);
  }
  for (const op of ops) {
    if (op.requestPut === undefined) continue;
    const k = keyString(op.requestPut.key);
    if (puts.has(k) || covered(k)) fail(ErrDuplicateKey);
    puts.add(k);
  }
  return [puts, dels];
}

// -----------------------------------------------------------------------------------------------
// Range semantics (txn/range.go executeRange + mvcc rangeKeys)

function doRange(v: View, r: RangeRequest): RangeResponse {
  const asked = r.revision ?? 0;
  if (asked > v.rev) fail(ErrFutureRev);
  const at = asked <= 0 ? v.rev : asked;
  if (at < v.compactRev) fail(ErrCompacted);

  const all = selectSorted(replay(v.log, at), selector(r.key, r.rangeEnd));
  const count = all.length;
  if (r.countOnly === true) return { revision: v.rev, kvs: [], more: false, count };

  const limit = r.limit ?? 0;
  const order = r.sortOrder ?? 'NONE';
  const target = r.sortTarget ?? 'KEY';
  const minMod = r.minModRevision ?? 0;
  const maxMod = r.maxModRevision ?? 0;
  const minCreate = r.minCreateRevision ?? 0;
  const maxCreate = r.maxCreateRevision ?? 0;
  const hasFilter = minMod !== 0 || maxMod !== 0 || minCreate !== 0 || maxCreate !== 0;
  const keyOrderAsked = order === 'NONE' || (target === 'KEY' && order === 'ASCEND');

  // Without a requested order and without filters, etcd reads only limit+1 keys (in key order) from the
  // index; everything after works on those.
  let kvs = keyOrderAsked && !hasFilter && limit > 0 ? all.slice(0, limit + 1) : all;
  kvs = kvs.filter(
    ([, l]) =>
      (maxMod === 0 || l.mod <= maxMod) &&
      (minMod === 0 || l.mod >= minMod) &&
      (maxCreate === 0 || l.create <= maxCreate) &&
      (minCreate === 0 || l.create >= minCreate),
  );
  const effective = target !== 'KEY' && order === 'NONE' ? 'ASCEND' : order;
  // An order no release knows (only 3.4 lets one through) sorts nothing: key order.
  if ((effective === 'ASCEND' && target !== 'KEY') || effective === 'DESCEND') {
    const by = SORT_KEY[target];
    // Stable: ties keep key order in both directions.
    const indexed = kvs.map((e, i) => [e, i] as const);
    indexed.sort((a, b) => (effective === 'DESCEND' ? by(b[0], a[0]) : by(a[0], b[0])) || a[1] - b[1]);
    kvs = indexed.map(([e]) => e);
  }
  let more = false;
  if (limit > 0 && kvs.length > limit) {
    kvs = kvs.slice(0, limit);
    more = true;
  }
  const out = kvs.map(([k, l]) => (r.keysOnly === true ? toKv(k, { ...l, value: '' }) : toKv(k, l)));
  return { revision: v.rev, kvs: out, more, count };
}

// -----------------------------------------------------------------------------------------------
// Write transactions

/** Applies ops of one write txn: all changes take revision begin+1; reads see earlier changes. */
class TxnWriter {
  readonly begin: number;
  readonly pending: Change[] = [];
  /** Branch decisions for this txn and its nested txns, depth first (etcd's txn path). */
  private path: boolean[] = [];
  private pathAt = 0;
  /** Set once ops run inside a txn (where an apply-time put failure would crash etcd). */
  private inTxn = false;

  constructor(private readonly ref: ReferenceKV) {
    this.begin = ref.currentRev;
  }

  private view(): View {
    return {
      log: this.pending.length === 0 ? this.ref.log : [...this.ref.log, ...this.pending],
      rev: this.pending.length === 0 ? this.begin : this.begin + 1,
      compactRev: this.ref.compactRev,
    };
  }

  private liveNow(key: string): Live | undefined {
    return replay(this.view().log, Number.MAX_SAFE_INTEGER).get(key);
  }

  put(p: PutRequest): PutResponse {
    const key = keyString(p.key);
    const prev = this.liveNow(key);
    if ((p.ignoreValue === true || p.ignoreLease === true) && prev === undefined) {
      // A plain Put fails here with ErrKeyNotFound; inside a txn the pre-check ran against the state
      // before the txn, so reaching this point means etcd's apply would panic.
      if (this.inTxn) throw new EtcdWouldPanic('txn put with ignore_* on a key deleted earlier in the txn');
      fail(ErrKeyNotFound);
    }
    const value = p.ignoreValue === true ? prev!.value : keyString(p.value ?? NO_BYTES);
    const lease = p.ignoreLease === true ? prev!.lease : (p.lease ?? 0n);
    const rev = this.begin + 1;
    this.pending.push({ rev, sub: this.pending.length, key, value, lease });
    if (p.prevKv === true && prev !== undefined) return { revision: rev, prevKv: toKv(key, prev) };
    return { revision: rev };
  }

  deleteRange(d: DeleteRangeRequest): DeleteRangeResponse {
    const doomed = selectSorted(replay(this.view().log, Number.MAX_SAFE_INTEGER), selector(d.key, d.rangeEnd));
    const rev = this.begin + 1;
    for (const [k] of doomed) this.pending.push({ rev, sub: this.pending.length, key: k, value: undefined, lease: 0n });
    return {
      revision: this.pending.length > 0 ? rev : this.begin,
      deleted: doomed.length,
      prevKvs: d.prevKv === true ? doomed.map(([k, l]) => toKv(k, l)) : [],
    };
  }

  /** compareToPath: every compare (nested ones on the chosen branches too) against the pre-txn state. */
  decide(t: TxnRequest): void {
    const before = replay(this.ref.log, this.begin);
    const walk = (tx: TxnRequest): void => {
      const ok = (tx.compare ?? []).every((c) => holds(before, c));
      this.path.push(ok);
      for (const op of (ok ? tx.success : tx.failure) ?? []) if (op.requestTxn !== undefined) walk(op.requestTxn);
    };
    walk(t);
  }

  /**
   * checkTxn: range revisions and put preconditions on the chosen path, against the pre-txn state; in op
   * order, or every put's before any range's (txnChecksPutsFirst).
   */
  precheck(t: TxnRequest): void {
    if (!this.ref.rules.txnChecksPutsFirst) return this.precheckOps(t, 'all');
    this.precheckOps(t, 'puts');
    this.precheckOps(t, 'ranges');
  }

  private precheckOps(t: TxnRequest, which: 'all' | 'puts' | 'ranges'): void {
    const before = replay(this.ref.log, this.begin);
    let i = 0;
    const walk = (tx: TxnRequest): void => {
      const ok = this.path[i++]!;
      for (const op of (ok ? tx.success : tx.failure) ?? []) {
        if (op.requestRange !== undefined) {
          if (which === 'puts') continue;
          const rev = op.requestRange.revision ?? 0;
          if (rev === 0) continue;
          if (rev > this.begin) fail(ErrFutureRev);
          if (rev < this.ref.compactRev) fail(ErrCompacted);
        } else if (op.requestPut !== undefined) {
          if (which === 'ranges') continue;
          const p = op.requestPut;
          if ((p.ignoreValue === true || p.ignoreLease === true) && !before.has(keyString(p.key))) fail(ErrKeyNotFound);
          const lease = p.lease ?? 0n;
          if (lease !== 0n && !this.ref.opts.leaseExists(lease)) fail(ErrLeaseNotFound);
        } else if (op.requestTxn !== undefined) {
          walk(op.requestTxn);
        }
      }
    };
    walk(t);
  }

  runTxn(t: TxnRequest, top: boolean): TxnResponse {
    this.inTxn = true;
    const ok = this.path[this.pathAt++]!;
    const responses: ResponseOp[] = [];
    for (const op of (ok ? t.success : t.failure) ?? []) {
      if (op.requestRange !== undefined) responses.push({ responseRange: doRange(this.view(), op.requestRange) });
      else if (op.requestPut !== undefined) responses.push({ responsePut: this.put(op.requestPut) });
      else if (op.requestDeleteRange !== undefined) responses.push({ responseDeleteRange: this.deleteRange(op.requestDeleteRange) });
      else if (op.requestTxn !== undefined) responses.push({ responseTxn: this.runTxn(op.requestTxn, false) });
    }
    return { revision: top ? this.view().rev : 0, succeeded: ok, responses };
  }

  commit(): void {
    if (this.pending.length === 0) return;
    this.ref.log.push(...this.pending);
    this.ref.currentRev = this.begin + 1;
  }
}

/** applyCompare: all keys in the range must pass; no key at all: VALUE fails, others see zero values. */
function holds(state: Map<string, Live>, c: Compare): boolean {
  const hits = selectSorted(state, selector(c.key, c.rangeEnd));
  if (hits.length === 0) {
    if (c.target === 'VALUE') return false;
    return judge(c, { create: 0, mod: 0, version: 0, value: '', lease: 0n });
  }
  return hits.every(([, l]) => judge(c, l));
}

function judge(c: Compare, l: Live): boolean {
  let d: number;
  switch (c.target) {
    case 'VERSION':
      d = num3(l.version, c.version ?? 0);
      break;
    case 'CREATE':
      d = num3(l.create, c.createRevision ?? 0);
      break;
    case 'MOD':
      d = num3(l.mod, c.modRevision ?? 0);
      break;
    case 'VALUE':
      d = str3(l.value, keyString(c.value ?? NO_BYTES));
      break;
    case 'LEASE':
      d = num3(l.lease, c.lease ?? 0n);
      break;
    default:
      // A target no release knows (an enum number passed on from the wire): etcd's compareKV compares nothing.
      d = 0;
  }
  switch (c.result) {
    case 'EQUAL':
      return d === 0;
    case 'NOT_EQUAL':
      return d !== 0;
    case 'GREATER':
      return d > 0;
    case 'LESS':
      return d < 0;
    default:
      // A result no release knows: etcd's compareKV falls through to true.
      return true;
  }
}
