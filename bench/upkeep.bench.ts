/**
 * MVCC upkeep benchmarks (issue 19): what reads leave behind in the index, and what compaction costs.
 *
 * - Memory: heap in use after N puts of distinct keys and then a HashKV (or the other read-only walks:
 *   hash, snapshot, checkValid), against the heap after the puts alone. The index keeps a key with one
 *   revision in a compact form; a walk that turned every key into a keyIndex object and kept it grew the
 *   heap by ~90 bytes a key for good. Ratio ~1.00: the walks leave the index as they found it.
 * - Compaction of a small slice of history (a few hundred revisions past the last compaction point) on a big
 *   history, against the same slices on a history 20 times smaller. A compaction that copies the log or
 *   walks every key costs in proportion to the history (ratio ~20); one that costs what it removes does
 *   not (ratio near 1: only the index lookups grow, with the depth of the tree and its cache misses).
 */
import { MvccStore } from '../src/mvcc/index.js';
import { collectGarbage, consume, FastRandom, formatBytes, measurePair, row, type BenchContext, type BenchSection, type Case, type Row, type Sample } from './harness.js';

const SEED = 19;
const VALUE = new Uint8Array(64).fill(0x76);

interface Sizes {
  /** Distinct single-revision keys of the memory rows. */
  readonly memKeys: number;
  /** Rounds of the memory rows (each builds a store of memKeys keys). */
  readonly memRounds: number;
  /** Keys and revisions per key of the big history (the small one has 1/SMALLER of the keys). */
  readonly keys: number;
  readonly revisions: number;
  /** Revisions of the single hot key's history (the small one has 1/SMALLER of them). */
  readonly hotRevisions: number;
  /** Revisions each compaction removes, and compactions per timed round. */
  readonly slice: number;
  readonly compactionsPerRound: number;
  readonly rounds: number;
}

const FULL: Sizes = { memKeys: 300_000, memRounds: 3, keys: 200_000, revisions: 5, hotRevisions: 500_000, slice: 200, compactionsPerRound: 100, rounds: 5 };
const QUICK: Sizes = { memKeys: 50_000, memRounds: 3, keys: 50_000, revisions: 5, hotRevisions: 100_000, slice: 100, compactionsPerRound: 50, rounds: 3 };
/** How much smaller the baseline's history is than the subject's. */
const SMALLER = 20;

/** `n` distinct 24-byte keys in a seeded random order. */
function makeKeys(n: number, stream: string): Uint8Array[] {
  const rnd = new FastRandom(SEED, stream);
  const order = rnd.shuffle(Uint32Array.from({ length: n }, (_, i) => i));
  const enc = new TextEncoder();
  return Array.from(order, (i) => enc.encode(`/registry/pods/${String(i).padStart(9, '0')}`));
}

function sampleOf(xs: readonly number[]): Sample {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  const median = s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  return { nsPerOp: median, rounds: xs, ops: 1 };
}

function heapUsed(): number {
  collectGarbage();
  collectGarbage();
  return process.memoryUsage().heapUsed;
}

/**
 * Heap in use after `n` puts, and after the same puts plus `walk`, in rounds (a fresh store each round; the
 * walk's own result is dropped before measuring).
 */
function memoryRow(ctx: BenchContext, sz: Sizes, walkName: string, walk: (s: MvccStore) => number): Row {
  const keys = makeKeys(sz.memKeys, 'memory');
  const before: number[] = [];
  const after: number[] = [];
  for (let r = 0; r < sz.memRounds; r++) {
    ctx.log(`upkeep: heap after ${sz.memKeys} puts + ${walkName}, round ${r + 1}/${sz.memRounds}`);
    let store: MvccStore | undefined = new MvccStore();
    for (const key of keys) store.put({ key, value: VALUE });
    before.push(heapUsed());
    consume(walk(store));
    after.push(heapUsed());
    consume(store.currentRevision);
    store = undefined;
  }
  const subject = sampleOf(after);
  const baseline = sampleOf(before);
  return {
    name: `heap after ${label(sz.memKeys)} puts + ${walkName}`,
    unit: 'store',
    measure: 'bytes',
    subject,
    baselineName: `heap after the ${label(sz.memKeys)} puts alone`,
    baseline,
    ratio: subject.nsPerOp / baseline.nsPerOp,
    target: { maxRatio: 1.02 },
    note: `distinct keys, one revision each; heap in use after a full GC; the walk added ${formatBytes(subject.nsPerOp - baseline.nsPerOp)} (median)`,
  };
}

/**
 * Compactions of `slice` revisions each, from the start of a history built by `build`, `compactionsPerRound`
 * per timed round. A store serves round after round (each compacts the next slices) until too little of
 * its history is left for a round; then setup builds it anew.
 */
function sliceCase(build: () => MvccStore, sz: Sizes): Case<MvccStore> {
  let store: MvccStore | undefined;
  const perRound = sz.compactionsPerRound * sz.slice;
  return {
    setup: () => {
      if (store === undefined || store.currentRevision - Math.max(store.compactRevision, 1) < perRound) store = build();
      return store;
    },
    run: (s) => {
      for (let i = 0; i < sz.compactionsPerRound; i++) {
        const at = Math.max(s.compactRevision, 1) + sz.slice;
        if (at > s.currentRevision) throw new Error('bench: the history ran out; make it longer');
        s.compact(at);
      }
      return sz.compactionsPerRound;
    },
  };
}

/** A history of `keys` keys with `revisions` puts each, written key after key in rounds. */
function manyKeysHistory(keys: readonly Uint8Array[], revisions: number): MvccStore {
  const s = new MvccStore();
  for (let r = 0; r < revisions; r++) for (const key of keys) s.put({ key, value: VALUE });
  return s;
}

/** One key changed `revisions` times (every tenth change a delete), next to 1000 quiet keys. */
function hotKeyHistory(revisions: number): MvccStore {
  const s = new MvccStore();
  const enc = new TextEncoder();
  for (let i = 0; i < 1000; i++) s.put({ key: enc.encode(`/quiet/${i}`), value: VALUE });
  const hot = enc.encode('/hot');
  for (let r = 0; r < revisions; r++) {
    if (r % 10 === 9) s.deleteRange({ key: hot });
    else s.put({ key: hot, value: VALUE });
  }
  return s;
}

function compactionRows(ctx: BenchContext, sz: Sizes): Row[] {
  const smallKeys = sz.keys / SMALLER;
  const big = makeKeys(sz.keys, 'compact-big');
  const small = makeKeys(smallKeys, 'compact-small');
  ctx.log(`upkeep: compacting ${sz.slice}-revision slices of ${label(sz.keys * sz.revisions)} vs ${label(smallKeys * sz.revisions)} revisions`);
  const many = measurePair(sliceCase(() => manyKeysHistory(big, sz.revisions), sz), sliceCase(() => manyKeysHistory(small, sz.revisions), sz), {
    rounds: sz.rounds,
    warmup: 1,
  });
  ctx.log(`upkeep: compacting ${sz.slice}-revision slices of one key's ${label(sz.hotRevisions)} vs ${label(sz.hotRevisions / SMALLER)} revisions`);
  const hot = measurePair(sliceCase(() => hotKeyHistory(sz.hotRevisions), sz), sliceCase(() => hotKeyHistory(sz.hotRevisions / SMALLER), sz), {
    rounds: sz.rounds,
    warmup: 1,
  });
  return [
    row(
      {
        name: `Compact ${sz.slice} revisions, ${label(sz.keys)} keys × ${sz.revisions} revisions`,
        unit: 'compact',
        baselineName: `same on ${label(smallKeys)} keys × ${sz.revisions}`,
        target: { maxRatio: 3 },
        note: `each compaction moves the compaction point ${sz.slice} revisions on (one put each); the ratio is how much more the same compaction costs on a ${SMALLER}× bigger history`,
      },
      many,
    ),
    row(
      {
        name: `Compact ${sz.slice} revisions of one key's ${label(sz.hotRevisions)}`,
        unit: 'compact',
        baselineName: `same of ${label(sz.hotRevisions / SMALLER)}`,
        target: { maxRatio: 3 },
        note: 'one hot key (every tenth change a delete) next to 1000 quiet keys: the history is one keyIndex',
      },
      hot,
    ),
  ];
}

function label(n: number): string {
  return n >= 1_000_000 && n % 1_000_000 === 0 ? `${n / 1_000_000}M` : n >= 1_000 && n % 1_000 === 0 ? `${n / 1_000}k` : String(n);
}

export const upkeepSection: BenchSection = {
  name: 'upkeep',
  title: 'MVCC upkeep: heap left by read-only walks, cost of compacting a small slice of a big history',
  run(ctx: BenchContext): Row[] {
    const sz = ctx.quick ? QUICK : FULL;
    return [
      memoryRow(ctx, sz, 'HashKV', (s) => s.hashKV().hash),
      memoryRow(ctx, sz, 'hash, snapshot and checkValid', (s) => s.hash() + s.snapshot().keys.length + (s.checkValid() === undefined ? 0 : 1)),
      ...compactionRows(ctx, sz),
    ];
  },
};
