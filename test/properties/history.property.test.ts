/**
 * Model-based property: the store's History (src/mvcc/history.ts, the columns etcd's backend key bucket is
 * to the simulator) against a naive table of records.
 *
 * The store's property (mvcc.property.test.ts) reaches History only with a few dozen short values, so the
 * columns never grow past their first 1024 records, no value gets a slab of its own (over 1 KiB) and no
 * small-value slab ever fills (64 KiB): a mutant in that bookkeeping — a record number handed out twice, a
 * slab freed or reused while a record still lies in it, a value written over another — survived every
 * property (issue #35). Here random adds (single ones and bursts of hundreds, values from empty to past a
 * slab), holds, releases, sub-revisions and supersedes run against a table that keeps each live record's
 * fields and its own copy of the value; after every step each live record must read back exactly, in both
 * of its forms (kv, and kvRead, which keeps the object of a key's newest revision), and a KeyValue a
 * reader took earlier must still hold its bytes (the store promises them never to be overwritten).
 *
 * Runs: ETCDSIM_NUM_RUNS (default 100). Replay: see harness.ts (ETCDSIM_SEED / _PATH).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';

import { ByteSlab, bytesEqual, handOver, prefixEnd } from '../../src/mvcc/bytes.js';
import { Column } from '../../src/mvcc/column.js';
import { History, type Rec } from '../../src/mvcc/history.js';
import type { KeyValue } from '../../src/mvcc/types.js';
import { checkProperty } from './harness.js';

const FILE = 'test/properties/history.property.test.ts';

/** Value lengths around the column's limits: empty, small, the one-slab copy limit (1 KiB), a slab (64 KiB). */
const LENGTHS = [0, 1, 7, 8, 9, 100, 1000, 1023, 1024, 1025, 4000, 65535, 65536, 70000];
/** A slab's size (history.ts, bytes.ts). */
const SLAB = 64 * 1024;

type Op =
  | { readonly t: 'add'; readonly n: number; readonly len: number; readonly tomb: boolean; readonly lease: bigint; readonly given: Given; readonly pad: number }
  | { readonly t: 'hold'; readonly pick: number }
  | { readonly t: 'release'; readonly pick: number; readonly all: boolean }
  /**
   * Small values added and let go one by one, `n` of them: the slab they are appended to fills while none of
   * its values lives, so it must be dropped when the next one starts (a store whose every key is put and
   * compacted in turn). Single releases in a random order never empty a full slab (64 or more values).
   */
  | { readonly t: 'churn'; readonly n: number; readonly len: number }
  | { readonly t: 'sub'; readonly pick: number; readonly sub: number }
  | { readonly t: 'superseded'; readonly pick: number }
  | { readonly t: 'read'; readonly pick: number; readonly kept: boolean };

/**
 * How the caller gives a value: its own bytes, which it changes right after (the history must copy them), or
 * bytes it handed over (bytes.ts's handOver) in a buffer that is the value and `pad` bytes before it
 * ('handed'), exactly twice the value ('half', the value in its second half) or more than that ('sparse').
 * Only a large value (over 1 KiB) that fills at least half of a handed-over buffer is kept as it is; any
 * other is copied, so a record keeps no more than twice its size alive.
 */
type Given = 'copy' | 'handed' | 'half' | 'sparse';

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .record({
        // Mostly one; some bursts that take the columns past 1024 and 2048 records.
        n: fc.oneof({ weight: 8, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.integer({ min: 2, max: 1300 }) }),
        len: fc.constantFrom(...LENGTHS),
        tomb: fc.boolean(),
        lease: fc.constantFrom(0n, 1n, -(2n ** 63n), 2n ** 63n - 1n, 2n ** 32n),
        given: fc.constantFrom<Given>('copy', 'copy', 'copy', 'handed', 'half', 'sparse'),
        pad: fc.constantFrom(0, 1, 8),
      })
      .map((o): Op => ({ t: 'add', ...o })),
  },
  { weight: 2, arbitrary: fc.nat().map((pick): Op => ({ t: 'hold', pick })) },
  { weight: 5, arbitrary: fc.record({ pick: fc.nat(), all: fc.boolean() }).map((o): Op => ({ t: 'release', ...o })) },
  { weight: 1, arbitrary: fc.record({ n: fc.integer({ min: 60, max: 200 }), len: fc.constantFrom(1000, 1024) }).map((o): Op => ({ t: 'churn', ...o })) },
  { weight: 2, arbitrary: fc.record({ pick: fc.nat(), sub: fc.integer({ min: 0, max: 5 }) }).map((o): Op => ({ t: 'sub', ...o })) },
  { weight: 2, arbitrary: fc.nat().map((pick): Op => ({ t: 'superseded', pick })) },
  { weight: 3, arbitrary: fc.record({ pick: fc.nat(), kept: fc.boolean() }).map((o): Op => ({ t: 'read', ...o })) },
);

/** What the table keeps of a live record. */
interface Row {
  readonly key: Uint8Array;
  readonly create: number;
  readonly mod: number;
  readonly version: number;
  readonly value: Uint8Array;
  readonly lease: bigint;
  sub: number;
  refs: number;
  /** superseded: a newer revision of the key exists, so reads of this one keep no object. */
  old: boolean;
}

/** A value that differs from every other one the run made: its bytes count from a seed. */
function valueOf(seed: number, len: number): Uint8Array {
  const v = new Uint8Array(len);
  for (let i = 0; i < len; i++) v[i] = (seed * 31 + i * 7) & 0xff;
  return v;
}

/** `bytes` as the caller gives them (see Given). */
function given(how: Given, pad: number, bytes: Uint8Array): Uint8Array {
  if (how === 'copy') return bytes;
  const n = bytes.byteLength;
  const at = how === 'half' ? n : pad;
  const buf = new Uint8Array(how === 'handed' ? pad + n : how === 'half' ? 2 * n : pad + 2 * n + 1);
  const value = buf.subarray(at, at + n);
  value.set(bytes);
  handOver(value);
  return value;
}

const KEYS = [Uint8Array.of(0x61), Uint8Array.of(0x62, 0x00), Uint8Array.of(0xff, 0xff, 0xff)];

function run(ops: readonly Op[]): void {
  const h = new History();
  const rows = new Map<Rec, Row>();
  /** KeyValues handed out earlier, with the value they must still hold. */
  const taken: { kv: KeyValue; value: Uint8Array }[] = [];
  let seq = 0;
  /** Record numbers freed (reused before any new one is made), and the next new one. */
  const freed: Rec[] = [];
  let fresh = 0;
  let step = 0;
  const live = (): Rec[] => [...rows.keys()];
  const pickOf = (pick: number): Rec | undefined => {
    const all = live();
    return all.length === 0 ? undefined : all[pick % all.length];
  };
  const expectKv = (r: Rec, kv: KeyValue, what: string): void => {
    const row = rows.get(r)!;
    assert.equal(kv.key, row.key, `${what}: the key is the one given (shared, not copied)`);
    assert.deepStrictEqual([kv.createRevision, kv.modRevision, kv.version, kv.lease], [row.create, row.mod, row.version, row.lease], `${what}: record ${r}`);
    assert.ok(sameBytes(kv.value, row.value), `${what}: record ${r}'s value reads back`);
  };
  const placed = slabPlacement('value');
  const check = (r: Rec): void => {
    const row = rows.get(r)!;
    expectKv(r, h.kv(r), 'kv');
    const read = h.kvRead(r);
    expectKv(r, read, 'kvRead');
    // A key's newest revision read again is the object read before (no new one per read); a superseded one
    // is read into a fresh object each time, and none is kept for it.
    assert.equal(h.kvRead(r) === read, !row.old, `kvRead of record ${r} (${row.old ? 'superseded' : 'its key\'s newest'}) read twice`);
    assert.equal(h.modRevision(r), row.mod);
    assert.equal(h.createRevision(r), row.create);
    assert.equal(h.version(r), row.version);
    assert.equal(h.lease(r), row.lease);
    assert.equal(h.key(r), row.key);
    assert.equal(h.isTombstone(r), row.create === 0);
    assert.equal(h.bytes(r), row.key.byteLength + row.value.byteLength, `bytes of record ${r}`);
    assert.equal(h.sub(r), row.sub);
  };
  for (const op of ops) {
    switch (op.t) {
      case 'add':
        for (let i = 0; i < op.n; i++) {
          const s = seq++;
          const key = KEYS[s % KEYS.length]!;
          const len: number = op.tomb ? 0 : op.len;
          const value = given(op.given, op.pad, valueOf(s, len));
          const row: Row = { key, create: op.tomb ? 0 : s + 1, mod: s + 2, version: op.tomb ? 0 : (s % 9) + 1, value: value.slice(), lease: op.lease, sub: 0, refs: 1, old: false };
          const r = h.add(key, row.create, row.mod, row.version, value, row.lease);
          assert.ok(!rows.has(r), `record ${r} handed out while still held`);
          // A freed record number is reused before a new one is made (in any order); else the next new one.
          if (freed.length > 0) assert.ok(freed.includes(r), `record ${r} is new while ${freed.length} freed ones wait`);
          else assert.equal(r, fresh++, 'the next new record number');
          if (freed.includes(r)) freed.splice(freed.indexOf(r), 1);
          const kept: boolean = op.given !== 'copy' && len > 1024 && len * 2 >= value.buffer.byteLength;
          assert.equal(h.value(r).buffer === value.buffer, kept, `a ${op.given} value of ${len} bytes in a buffer of ${value.buffer.byteLength} is ${kept ? 'kept as given' : 'copied'}`);
          if (!kept) placed(h.value(r), len);
          if (op.given === 'copy') value.fill(0xee); // the history keeps a copy of its own
          rows.set(r, row);
        }
        break;
      case 'hold': {
        const r = pickOf(op.pick);
        if (r === undefined) break;
        h.hold(r);
        rows.get(r)!.refs++;
        break;
      }
      case 'release': {
        const r = pickOf(op.pick);
        if (r === undefined) break;
        const row = rows.get(r)!;
        for (let n = op.all ? row.refs : 1; n > 0; n--) {
          h.release(r);
          row.refs--;
        }
        if (row.refs === 0) {
          rows.delete(r);
          freed.push(r);
        }
        break;
      }
      case 'churn':
        for (let i = 0; i < op.n; i++) {
          const s = seq++;
          const value = valueOf(s, op.len);
          const r = h.add(KEYS[0]!, s + 1, s + 2, 1, value, 0n);
          if (freed.length > 0) assert.ok(freed.includes(r), `record ${r} is new while ${freed.length} freed ones wait`);
          else assert.equal(r, fresh++, 'the next new record number');
          if (freed.includes(r)) freed.splice(freed.indexOf(r), 1);
          assert.ok(sameBytes(h.value(r), value), `churned record ${r}'s value reads back`);
          placed(h.value(r), op.len);
          h.release(r);
          freed.push(r);
          assert.equal(h.checkSlabs(), undefined, 'the history\'s slabs while values come and go');
        }
        break;
      case 'sub': {
        const r = pickOf(op.pick);
        if (r === undefined) break;
        h.setSub(r, op.sub);
        rows.get(r)!.sub = op.sub;
        break;
      }
      case 'superseded': {
        const r = pickOf(op.pick);
        if (r === undefined) break;
        h.superseded(r);
        rows.get(r)!.old = true;
        break;
      }
      case 'read': {
        const r = pickOf(op.pick);
        if (r === undefined) break;
        const kv = h.kvRead(r);
        if (op.kept) taken.push({ kv, value: rows.get(r)!.value });
        break;
      }
    }
    assert.equal(h.heldRecords(), rows.size, 'records held');
    // What is let go: free record numbers, each slab's live count, and slabs dropped once nothing lies in them.
    assert.equal(h.checkSlabs(), undefined, 'the history\'s free records and slabs');
    // After every step the newest records (the ones a bug in reuse would hit first) and a window that moves
    // over the rest; at the end all of them.
    const all = live();
    for (let i = Math.max(0, all.length - 8); i < all.length; i++) check(all[i]!);
    for (let i = 0; i < Math.min(24, all.length); i++) check(all[(step * 24 + i) % all.length]!);
    for (const { kv, value } of taken) assert.ok(sameBytes(kv.value, value), `a KeyValue read at revision ${kv.modRevision} keeps its bytes`);
    step++;
  }
  for (const r of rows.keys()) check(r);
}

/**
 * Where each copied value of up to 1 KiB must lie (the memory the slabs promise, which no byte read back shows):
 * at the next 8-byte boundary of the 64 KiB slab small values are appended to, a fresh one exactly when that one
 * cannot take it; a longer copy alone in an array of its size. One checker per history or ByteSlab, given each
 * copy in the order they were made.
 */
function slabPlacement(what: string): (v: Uint8Array, len: number) => void {
  let appendTo: ArrayBufferLike | undefined;
  let used = 0;
  return (v, len) => {
    if (len > 1024) {
      assert.deepStrictEqual([v.buffer.byteLength, v.byteOffset], [len, 0], `a ${what} of ${len} bytes has an array of its own`);
      return;
    }
    if (len === 0) return;
    if (used + len > SLAB) {
      assert.notEqual(v.buffer, appendTo, `a ${what} of ${len} bytes with ${used} of the slab used starts a fresh slab`);
      used = 0;
    } else if (appendTo !== undefined) assert.equal(v.buffer, appendTo, `a ${what} of ${len} bytes with ${used} of the slab used shares it`);
    appendTo = v.buffer;
    assert.deepStrictEqual([v.buffer.byteLength, v.byteOffset], [SLAB, used], `a ${what} of ${len} bytes lies at the slab's next free 8-byte boundary`);
    used = (used + len + 7) & ~7;
  };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.compare(a, b) === 0;
}

test('History agrees with a naive table of records across column growth and slabs', () => {
  // Values that fill a slab to its last byte (64 of 1 KiB), then one more: the one that fits exactly stays.
  run([{ t: 'add', n: 65, len: 1024, tomb: false, lease: 0n, given: 'copy', pad: 0 }]);
  checkProperty(
    fc.property(fc.array(opArb, { maxLength: 40, size: 'max' }), (ops) => run(ops)),
    { file: FILE, numRuns: 100 },
  );
});

/**
 * The key copies (bytes.ts's ByteSlab, what a keyIndex holds its key in): copies of every length around the
 * slab's limits, each source changed right after, must all read back — the store's keys are a few bytes,
 * so no other property fills a 64 KiB slab or copies a key over 1 KiB (issue #35: every mutant of the slab
 * rollover survived).
 */
test('ByteSlab copies agree with their sources across slabs', () => {
  const copyAll = (lengths: readonly number[]): void => {
    const slab = new ByteSlab();
    const copies: { copy: Uint8Array; want: Uint8Array }[] = [];
    const placed = slabPlacement('copy');
    lengths.forEach((len, i) => {
      const src = valueOf(i, len);
      const want = src.slice();
      const copy = slab.copy(src);
      copies.push({ copy, want });
      src.fill(0xee);
      placed(copy, len);
    });
    for (const c of copies) assert.ok(sameBytes(c.copy, c.want), `copy of ${c.want.byteLength} bytes reads back`);
  };
  // Copies that fill a slab to its last byte (64 of 1 KiB), then one more: the one that fits exactly stays.
  copyAll([...new Array<number>(64).fill(1024), 1]);
  checkProperty(
    // Mostly copies of about 1 KiB, so that a run fills a slab or two (64 KiB).
    fc.property(fc.array(fc.oneof(fc.constantFrom(1000, 1023, 1024), fc.constantFrom(...LENGTHS)), { minLength: 100, maxLength: 200, size: 'max' }), (lengths) => copyAll(lengths)),
    { file: FILE, numRuns: 100 },
  );
});

/**
 * The byte helpers clients and the server build requests and checks with (bytes.ts: prefixEnd, clientv3's
 * GetPrefixRangeEnd; bytesEqual, bytes.Equal), against what they mean in byte order: [key, prefixEnd(key))
 * holds exactly the keys that start with `key` ("\0", no end, when no key is past them all), probed with the
 * key itself, longer and shorter ones, and the keys one byte either side of the end. The store never calls
 * them, and the mvcc property builds its prefix requests with prefixEnd, so only here is a wrong one seen.
 */
test('byte helpers agree with byte order', () => {
  const byte = fc.oneof(fc.constantFrom(0x00, 0x01, 0x7f, 0xfe, 0xff), fc.integer({ min: 0, max: 255 }));
  const bytes = (max: number): fc.Arbitrary<Uint8Array> => fc.array(byte, { maxLength: max }).map((b) => Uint8Array.from(b));
  const startsWith = (x: Uint8Array, k: Uint8Array): boolean => x.byteLength >= k.byteLength && k.every((b, i) => x[i] === b);
  const naiveEqual = (a: Uint8Array, b: Uint8Array): boolean => a.byteLength === b.byteLength && a.every((v, i) => b[i] === v);
  checkProperty(
    fc.property(bytes(5), fc.array(bytes(6), { maxLength: 8 }), fc.boolean(), (key, others, asBuffer) => {
      // A Buffer's slice shares memory: the end must be a copy however the key is given.
      const given = asBuffer ? Buffer.from(key) : key.slice();
      const end = prefixEnd(given);
      assert.ok(sameBytes(given, key), 'prefixEnd leaves its key alone');
      const noEnd = key.every((b) => b === 0xff);
      assert.equal(sameBytes(end, Uint8Array.of(0)), noEnd, `prefixEnd(${[...key]}) is "\\0" exactly when every byte is 0xff`);
      const around = (x: Uint8Array): Uint8Array[] => [x, Uint8Array.of(...x, 0), x.subarray(0, Math.max(0, x.byteLength - 1)), ...(x.byteLength > 0 ? [Uint8Array.of(...x.subarray(0, -1), (x[x.byteLength - 1]! + 255) & 0xff)] : [])];
      const probes = [...around(key), ...around(end), ...others, ...others.map((o) => Uint8Array.of(...key, ...o))];
      for (const x of probes) {
        const inRange = Buffer.compare(x, key) >= 0 && (noEnd || Buffer.compare(x, end) < 0);
        assert.equal(inRange, startsWith(x, key), `[${[...key]}, ${[...end]}) holds ${[...x]} exactly when it starts with the key`);
        for (const y of [key, end, ...others]) assert.equal(bytesEqual(x, y), naiveEqual(x, y), `bytesEqual(${[...x]}, ${[...y]})`);
      }
    }),
    { file: FILE, numRuns: 100 },
  );
});

/**
 * The revision log's column (column.ts): pushes in bursts past its first 1024 entries and past each
 * doubling, and trims of its front (`from`, what the log does after a compaction) down to nothing, against a
 * plain array. The store's property keeps its log far below 1024 changes, so only here does a column grow or
 * get trimmed to empty and grow again (issue #35).
 */
test('Column agrees with a plain array across growth and trims', () => {
  type ColumnOp = { readonly t: 'push'; readonly n: number } | { readonly t: 'from'; readonly cut: number };
  const columnOpArb: fc.Arbitrary<ColumnOp> = fc.oneof(
    { weight: 3, arbitrary: fc.oneof(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 500, max: 3000 })).map((n): ColumnOp => ({ t: 'push', n })) },
    // A cut as a fraction of the length (1: all of it).
    { weight: 1, arbitrary: fc.constantFrom(0, 0.25, 0.5, 0.9, 1).map((cut): ColumnOp => ({ t: 'from', cut })) },
  );
  checkProperty(
    fc.property(fc.array(columnOpArb, { minLength: 1, maxLength: 12 }), (ops) => {
      let c = new Column();
      let want: number[] = [];
      let next = 1;
      for (const op of ops) {
        if (op.t === 'push') {
          for (let i = 0; i < op.n; i++) {
            c.push(next);
            want.push(next++);
          }
        } else {
          const start = Math.floor(want.length * op.cut);
          c = c.from(start);
          want = want.slice(start);
        }
        assert.equal(c.length, want.length, 'length');
        assert.ok(c.data.length >= c.length, 'room for every entry');
        assert.deepStrictEqual(Array.from(c.data.subarray(0, c.length)), want, `entries after ${op.t}`);
      }
    }),
    { file: FILE, numRuns: 100 },
  );
});
