/**
 * MVCC store benchmarks: MvccStore's Put, Range, Txn and Compact against the bare sorted-btree work they
 * cannot avoid, each pair measured in the same run.
 *
 * Data: 64-byte keys (56 seeded random bytes, then the key's number, so keys are distinct) inserted in
 * random order, 64-byte values. The subject gets keys as bytes, as every MvccStore caller does; the
 * baseline gets the same keys already as latin1 strings, so the subject's key conversion counts against it.
 */
import { Buffer } from 'node:buffer';
import { BTreeEx as BTree } from 'sorted-btree/extended/index.js';
import { MvccStore } from '../src/mvcc/index.js';
import type { PutRequest, TxnRequest } from '../src/mvcc/index.js';
import { consume, FastRandom, measurePair, row, type BenchContext, type BenchSection, type Case, type Row } from './harness.js';

const SEED = 20_250_101;
const KEY_SIZE = 64;
const VALUE_SIZE = 64;
/** etcd 3.4.23's figures for the same operations, as given in the issue. */
const ETCD_PUT = { label: 'etcd 3.4.23 ~9 µs/Put', nsPerOp: 9_000 };
const ETCD_RANGE = { label: 'etcd 3.4.23 ~20 µs/Range', nsPerOp: 20_000 };
const WITHIN_2X = { maxRatio: 2 };

interface Sizes {
  /** Keys of the large store (Put, single-key Range, 100-key range). */
  readonly big: number;
  /** Keys of the small store (single-key Range, Txn, Compact). */
  readonly small: number;
  /** Lookups per timed round of a single-key Range. */
  readonly lookups: number;
  /** Ranges per timed round of the 100-key range. */
  readonly ranges: number;
  /** Txns per timed round. */
  readonly txns: number;
  /** Revisions per key before Compact. */
  readonly revisions: number;
  /** Timed rounds of the 1M-key build (each one takes seconds). */
  readonly buildRounds: number;
  readonly rounds: number;
}

// Sized so the full run stays under ~2 minutes on an idle 2-core machine (the 1M-key fills dominate).
const FULL: Sizes = { big: 1_000_000, small: 100_000, lookups: 100_000, ranges: 4_000, txns: 2_000, revisions: 3, buildRounds: 3, rounds: 5 };
const QUICK: Sizes = { big: 100_000, small: 20_000, lookups: 30_000, ranges: 1_000, txns: 500, revisions: 3, buildRounds: 3, rounds: 3 };

/** A key set in insertion (random) order: bytes for MvccStore, latin1 strings for the bare tree. */
interface KeySet {
  readonly n: number;
  readonly bytes: readonly Uint8Array[];
  readonly strs: readonly string[];
  /**
   * The same keys as other string objects (what any caller looking a key up holds): looked up with the very
   * objects it stores, the tree would end each search's last comparison on identity, a shortcut worth
   * ~300 ns at 100k keys that no real lookup gets.
   */
  readonly lookupStrs: readonly string[];
  readonly values: readonly Uint8Array[];
}

function makeKeys(n: number, stream: string): KeySet {
  const rnd = new FastRandom(SEED, stream);
  const keyBuf = new Uint8Array(n * KEY_SIZE);
  const valBuf = new Uint8Array(n * VALUE_SIZE);
  rnd.fill(keyBuf);
  rnd.fill(valBuf);
  const bytes: Uint8Array[] = new Array<Uint8Array>(n);
  const strs: string[] = new Array<string>(n);
  const lookupStrs: string[] = new Array<string>(n);
  const values: Uint8Array[] = new Array<Uint8Array>(n);
  for (let i = 0; i < n; i++) {
    const k = keyBuf.subarray(i * KEY_SIZE, (i + 1) * KEY_SIZE);
    // The last 4 bytes number the key: distinct keys whatever the random prefix.
    k[KEY_SIZE - 4] = i >>> 24;
    k[KEY_SIZE - 3] = (i >>> 16) & 0xff;
    k[KEY_SIZE - 2] = (i >>> 8) & 0xff;
    k[KEY_SIZE - 1] = i & 0xff;
    bytes[i] = k;
    strs[i] = Buffer.from(k.buffer, k.byteOffset, k.byteLength).toString('latin1');
    lookupStrs[i] = Buffer.from(k.buffer, k.byteOffset, k.byteLength).toString('latin1');
    values[i] = valBuf.subarray(i * VALUE_SIZE, (i + 1) * VALUE_SIZE);
  }
  return { n, bytes, strs, lookupStrs, values };
}

function latin1Bytes(s: string): Uint8Array {
  return new Uint8Array(Buffer.from(s, 'latin1'));
}

function fillStore(store: MvccStore, ks: KeySet, n: number): MvccStore {
  for (let i = 0; i < n; i++) store.put({ key: ks.bytes[i]!, value: ks.values[i]! });
  return store;
}

function fillTree(ks: KeySet, n: number): BTree<string, number> {
  const tree = new BTree<string, number>();
  for (let i = 0; i < n; i++) tree.set(ks.strs[i]!, i);
  return tree;
}

function expectEqual(what: string, actual: number, expected: number): void {
  if (actual !== expected) throw new Error(`bench self-check failed: ${what}: got ${actual}, expected ${expected}`);
}

/** Random lookup order: `count` key numbers below n. */
function lookupOrder(n: number, count: number, stream: string): Uint32Array {
  const rnd = new FastRandom(SEED, stream);
  const idx = new Uint32Array(count);
  for (let i = 0; i < count; i++) idx[i] = rnd.below(n);
  return idx;
}

/** (a) Put of n distinct keys into an empty store, vs bare btree set. Leaves the last stores built. */
function putRow(ks: KeySet, sz: Sizes, ctx: BenchContext, keep: { store?: MvccStore; tree?: BTree<string, number> }): Row {
  const n = ks.n;
  const warmN = Math.max(1, Math.floor(n / 10));
  const subject: Case<{ store: MvccStore; n: number }> = {
    setup: (warmup) => {
      delete keep.store;
      return { store: new MvccStore(), n: warmup ? warmN : n };
    },
    run: ({ store, n: count }) => {
      const bytes = ks.bytes;
      const values = ks.values;
      for (let i = 0; i < count; i++) store.put({ key: bytes[i]!, value: values[i]! });
      if (count === n) keep.store = store;
      return count;
    },
  };
  const baseline: Case<{ tree: BTree<string, number>; n: number }> = {
    setup: (warmup) => {
      delete keep.tree;
      return { tree: new BTree<string, number>(), n: warmup ? warmN : n };
    },
    run: ({ tree, n: count }) => {
      const strs = ks.strs;
      for (let i = 0; i < count; i++) tree.set(strs[i]!, i);
      if (count === n) keep.tree = tree;
      return count;
    },
  };
  ctx.log(`mvcc: Put ${n} keys (${sz.buildRounds} rounds)`);
  const m = measurePair(subject, baseline, { rounds: sz.buildRounds, warmup: 1 });
  expectEqual('store size after Put', keep.store?.storage.index.size ?? -1, n);
  expectEqual('tree size after set', keep.tree?.size ?? -1, n);
  return row(
    {
      name: `Put, ${label(n)} distinct keys, random order`,
      unit: 'put',
      baselineName: 'btree set',
      target: WITHIN_2X,
      reference: ETCD_PUT,
      note: `${KEY_SIZE}-byte keys, ${VALUE_SIZE}-byte values, into an empty store; ns/op averaged over the whole fill`,
    },
    m,
  );
}

/** (b) Single-key Range of random existing keys vs bare btree get. */
function rangeOneRow(ks: KeySet, store: MvccStore, tree: BTree<string, number>, sz: Sizes, ctx: BenchContext): Row {
  const order = lookupOrder(ks.n, sz.lookups, `lookups-${ks.n}`);
  const warmCount = Math.max(1, Math.floor(sz.lookups / 4));
  const subject: Case<number> = {
    setup: (warmup) => (warmup ? warmCount : sz.lookups),
    run: (count) => {
      const bytes = ks.bytes;
      let found = 0;
      for (let q = 0; q < count; q++) found += store.range({ key: bytes[order[q]!]! }).kvs.length;
      expectEqual('single-key Range hits', found, count);
      consume(found);
      return count;
    },
  };
  const baseline: Case<number> = {
    setup: (warmup) => (warmup ? warmCount : sz.lookups),
    run: (count) => {
      const strs = ks.lookupStrs;
      let found = 0;
      for (let q = 0; q < count; q++) if (tree.get(strs[order[q]!]!) !== undefined) found++;
      expectEqual('btree get hits', found, count);
      consume(found);
      return count;
    },
  };
  ctx.log(`mvcc: single-key Range at ${ks.n} keys`);
  const m = measurePair(subject, baseline, { rounds: sz.rounds, warmup: 1, gc: false });
  return row(
    {
      name: `Range, single key, ${label(ks.n)} keys`,
      unit: 'range',
      baselineName: 'btree get',
      target: WITHIN_2X,
      reference: ETCD_RANGE,
      note: 'the bare get looks keys up with strings equal to, not identical with, the ones it stored (as any caller does)',
    },
    m,
  );
}

/** (c) Range [k_i, k_{i+100}) — 100 keys — vs bare btree forRange collecting the same 100 values. */
function range100Row(ks: KeySet, store: MvccStore, tree: BTree<string, number>, sz: Sizes, ctx: BenchContext): Row {
  const span = 100;
  const sorted = tree.keysArray();
  const rnd = new FastRandom(SEED, `ranges-${ks.n}`);
  const loStr: string[] = [];
  const hiStr: string[] = [];
  const loBytes: Uint8Array[] = [];
  const hiBytes: Uint8Array[] = [];
  for (let q = 0; q < sz.ranges; q++) {
    const s = rnd.below(sorted.length - span);
    loStr.push(sorted[s]!);
    hiStr.push(sorted[s + span]!);
    loBytes.push(latin1Bytes(sorted[s]!));
    hiBytes.push(latin1Bytes(sorted[s + span]!));
  }
  const warmCount = Math.max(1, Math.floor(sz.ranges / 4));
  const subject: Case<number> = {
    setup: (warmup) => (warmup ? warmCount : sz.ranges),
    run: (count) => {
      let got = 0;
      for (let q = 0; q < count; q++) got += store.range({ key: loBytes[q]!, rangeEnd: hiBytes[q]! }).kvs.length;
      expectEqual('100-key Range results', got, count * span);
      consume(got);
      return count;
    },
  };
  const baseline: Case<number> = {
    setup: (warmup) => (warmup ? warmCount : sz.ranges),
    run: (count) => {
      let got = 0;
      for (let q = 0; q < count; q++) {
        const out: number[] = [];
        tree.forRange(loStr[q]!, hiStr[q]!, false, (_k, v) => {
          out.push(v);
        });
        got += out.length;
      }
      expectEqual('btree forRange results', got, count * span);
      consume(got);
      return count;
    },
  };
  ctx.log(`mvcc: 100-key Range at ${ks.n} keys`);
  const m = measurePair(subject, baseline, { rounds: sz.rounds, warmup: 1, gc: false });
  return row(
    {
      name: `Range, 100 keys (rangeEnd), ${label(ks.n)} keys`,
      unit: 'range',
      baselineName: 'btree forRange 100',
      note: 'per request of 100 keys; divide by 100 for per-key cost',
    },
    m,
  );
}

/** (d) A Txn of 1 compare + 10 puts vs the same 10 puts as single Put requests. */
function txnRow(ks: KeySet, store: MvccStore, sz: Sizes, ctx: BenchContext): Row {
  const width = 10;
  const perm = new FastRandom(SEED, 'txn-keys').shuffle(Uint32Array.from({ length: ks.n }, (_, i) => i));
  const groups: PutRequest[][] = [];
  const txns: TxnRequest[] = [];
  for (let g = 0; g < sz.txns; g++) {
    const puts: PutRequest[] = [];
    for (let j = 0; j < width; j++) {
      const k = perm[(g * width + j) % ks.n]!;
      // Another key's value, so each put changes the value.
      puts.push({ key: ks.bytes[k]!, value: ks.values[(k + 1) % ks.n]! });
    }
    groups.push(puts);
    txns.push({
      compare: [{ key: puts[0]!.key, target: 'VERSION', result: 'GREATER', version: 0 }],
      success: puts.map((p) => ({ requestPut: p })),
    });
  }
  const warmCount = Math.max(1, Math.floor(sz.txns / 4));
  const subject: Case<number> = {
    setup: (warmup) => (warmup ? warmCount : sz.txns),
    run: (count) => {
      let ok = 0;
      for (let g = 0; g < count; g++) if (store.txn(txns[g]!).succeeded) ok++;
      expectEqual('txns that took the success branch', ok, count);
      consume(ok);
      return count;
    },
  };
  const baseline: Case<number> = {
    setup: (warmup) => (warmup ? warmCount : sz.txns),
    run: (count) => {
      let rev = 0;
      for (let g = 0; g < count; g++) {
        const puts = groups[g]!;
        for (let j = 0; j < width; j++) rev = store.put(puts[j]!).revision;
      }
      consume(rev);
      return count;
    },
  };
  ctx.log(`mvcc: 10-op Txn at ${ks.n} keys`);
  const m = measurePair(subject, baseline, { rounds: sz.rounds, warmup: 1, gc: false });
  return row(
    {
      name: `Txn, 1 compare + 10 puts, ${label(ks.n)} keys`,
      unit: 'txn',
      baselineName: '10 × MvccStore.put',
      note: 'per txn (= per 10 puts); puts overwrite existing keys',
    },
    m,
  );
}

/** (e) Compact at the current revision of a store whose keys have a few revisions each, per key. */
function compactRow(ks: KeySet, tree: BTree<string, number>, sz: Sizes, ctx: BenchContext): Row {
  const n = ks.n;
  const build = (count: number): MvccStore => {
    const store = new MvccStore();
    for (let r = 0; r < sz.revisions; r++) {
      for (let i = 0; i < count; i++) store.put({ key: ks.bytes[i]!, value: ks.values[(i + r) % n]! });
    }
    return store;
  };
  // Self-check once, outside the clock: compaction leaves exactly the newest revision of every key.
  {
    const check = build(Math.min(n, 1000));
    check.compact(check.currentRevision);
    const problem = check.checkValid();
    if (problem !== undefined) throw new Error(`bench self-check failed: after Compact: ${problem}`);
    let revisions = 0;
    check.storage.index.forEachPair((_key, ki) => (revisions += ki.revs.length));
    expectEqual('revisions left after Compact', revisions, Math.min(n, 1000));
  }
  const warmN = Math.max(1, Math.floor(n / 10));
  const subject: Case<{ store: MvccStore; keys: number }> = {
    setup: (warmup) => {
      const keys = warmup ? warmN : n;
      return { store: build(keys), keys };
    },
    run: ({ store, keys }) => {
      store.compact(store.currentRevision);
      return keys;
    },
  };
  const baseline: Case<number> = {
    setup: () => tree.size,
    run: (count) => {
      let acc = 0;
      tree.forEach((v) => {
        acc += v;
      });
      consume(acc);
      return count;
    },
  };
  ctx.log(`mvcc: Compact of ${n} keys x ${sz.revisions} revisions`);
  const m = measurePair(subject, baseline, { rounds: sz.buildRounds, warmup: 1 });
  return row(
    {
      name: `Compact, ${label(n)} keys × ${sz.revisions} revisions`,
      unit: 'key',
      baselineName: 'btree forEach',
      note: 'at the current revision: drops all but the newest revision of every key',
    },
    m,
  );
}

function label(n: number): string {
  return n >= 1_000_000 && n % 1_000_000 === 0 ? `${n / 1_000_000}M` : n >= 1_000 && n % 1_000 === 0 ? `${n / 1_000}k` : String(n);
}

export const mvccSection: BenchSection = {
  name: 'mvcc',
  title: 'MVCC store (src/mvcc) vs bare sorted-btree',
  run(ctx: BenchContext): Row[] {
    const sz = ctx.quick ? QUICK : FULL;
    let put: Row;
    let rangeBig: Row;
    let range100: Row;
    // Large store: Put, then reads against the store the last timed Put round built.
    {
      const ks = makeKeys(sz.big, `keys-${sz.big}`);
      const keep: { store?: MvccStore; tree?: BTree<string, number> } = {};
      put = putRow(ks, sz, ctx, keep);
      const store = keep.store!;
      const tree = keep.tree!;
      rangeBig = rangeOneRow(ks, store, tree, sz, ctx);
      range100 = range100Row(ks, store, tree, sz, ctx);
    }
    // Small store: single-key Range, then Txn (which adds revisions), then Compact on fresh stores.
    let rangeSmall: Row;
    let txn: Row;
    let compact: Row;
    {
      const ks = makeKeys(sz.small, `keys-${sz.small}`);
      const store = fillStore(new MvccStore(), ks, ks.n);
      const tree = fillTree(ks, ks.n);
      rangeSmall = rangeOneRow(ks, store, tree, sz, ctx);
      txn = txnRow(ks, store, sz, ctx);
      compact = compactRow(ks, tree, sz, ctx);
    }
    const rows = [put, rangeSmall, rangeBig, range100, txn, compact];
    return rows;
  },
};
