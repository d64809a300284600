/**
 * The KV linearizability checker (src/diff/linearizability.ts): hand-made histories whose verdict is known,
 * and a property that compares it with a brute-force checker (every order of every subset of the
 * unknown-outcome writes) on small random histories, and checks that each reported sub-history is a
 * genuine witness: no history between it and the whole one is linearizable.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { checkLinearizable, type KvOperation } from '../../src/diff/linearizability.js';

const put = (client: number, invoke: number, ret: number | 'unknown', value: string, key = 'k'): KvOperation => ({ type: 'put', client, key, invoke, ret, value });
const get = (client: number, invoke: number, ret: number, value: string | null, key = 'k'): KvOperation => ({ type: 'get', client, key, invoke, ret, value });
const del = (client: number, invoke: number, ret: number | 'unknown', deleted?: number, key = 'k'): KvOperation => ({ type: 'delete', client, key, invoke, ret, deleted });
const cas = (client: number, invoke: number, ret: number | 'unknown', expect: string | null, value: string, succeeded?: boolean, key = 'k'): KvOperation => ({
  type: 'cas', client, key, invoke, ret, expect, value, succeeded,
});

function verdict(h: KvOperation[]): string {
  return checkLinearizable(h).verdict;
}

test('sequential and overlapping histories that have a linearization are accepted', () => {
  assert.equal(verdict([]), 'linearizable');
  assert.equal(verdict([get(0, 0, 1, null), put(0, 2, 3, 'a'), get(0, 4, 5, 'a'), del(0, 6, 7, 1), get(0, 8, 9, null), del(0, 10, 11, 0)]), 'linearizable');
  // A read overlapping a put may see the old or the new value; two overlapping reads may see them in either order.
  assert.equal(verdict([put(0, 0, 1, 'a'), put(1, 2, 10, 'b'), get(2, 3, 4, 'b'), get(3, 5, 6, 'b')]), 'linearizable');
  assert.equal(verdict([put(0, 0, 1, 'a'), put(1, 2, 10, 'b'), get(2, 3, 4, 'a'), get(3, 5, 6, 'b')]), 'linearizable');
  // Compare-and-swap chains, create-if-absent.
  assert.equal(verdict([cas(0, 0, 1, null, 'a', true), cas(1, 2, 5, 'a', 'b', true), cas(2, 3, 6, 'a', 'c', false), get(0, 7, 8, 'b')]), 'linearizable');
  // Independent keys are checked on their own.
  assert.equal(verdict([put(0, 0, 10, 'a', 'x'), put(1, 0, 10, 'b', 'y'), get(2, 11, 12, 'a', 'x'), get(2, 13, 14, 'b', 'y')]), 'linearizable');
});

test('a stale read after a completed write is rejected, with a minimal sub-history', () => {
  const r = checkLinearizable([put(0, 0, 1, 'a'), get(1, 1.5, 1.7, 'a'), put(0, 2, 3, 'b'), put(2, 2.1, 2.2, 'z', 'other'), get(1, 4, 5, 'a'), get(2, 6, 7, 'b')]);
  assert.equal(r.verdict, 'not-linearizable');
  assert.ok(r.verdict === 'not-linearizable');
  assert.equal(r.key, 'k');
  // The witness: the write of "b" completed, then a read still saw "a" (its write is needed to explain it).
  assert.deepEqual(r.minimal.map((o) => `${o.type}:${'value' in o ? String(o.value) : ''}`).sort(), ['get:a', 'put:a', 'put:b']);
  assert.match(r.text, /not linearizable: key "k"; no order of these 3 operations/);
  assert.match(r.text, /put "k" "b" -> ok/);
  assert.match(r.text, /get "k" -> "a"/);
});

test('a lost update (two compare-and-swaps from the same value both succeed) is rejected', () => {
  const h = [put(0, 0, 1, '0'), cas(1, 2, 5, '0', '1', true), cas(2, 3, 6, '0', '2', true), get(0, 7, 8, '2')];
  const r = checkLinearizable(h);
  assert.equal(r.verdict, 'not-linearizable');
  assert.ok(r.verdict === 'not-linearizable');
  assert.equal(r.minimal.filter((o) => o.type === 'cas').length, 2);
  // Either one alone is fine.
  assert.equal(verdict([h[0]!, h[1]!]), 'linearizable');
});

test('an unknown-outcome write may apply at any time after its call, or never', () => {
  // Seen later: accepted, even long after the client gave up on it.
  assert.equal(verdict([put(0, 0, 1, 'a'), put(1, 2, 'unknown', 'b'), get(2, 3, 4, 'a'), get(2, 50, 51, 'b'), get(2, 52, 53, 'b')]), 'linearizable');
  // Never seen: accepted.
  assert.equal(verdict([put(0, 0, 1, 'a'), put(1, 2, 'unknown', 'b'), get(2, 50, 51, 'a')]), 'linearizable');
  // But only once: flipping back to the old value after it was seen is not linearizable.
  assert.equal(verdict([put(0, 0, 1, 'a'), put(1, 2, 'unknown', 'b'), get(2, 3, 4, 'b'), get(2, 5, 6, 'a')]), 'not-linearizable');
  // Never before its call.
  assert.equal(verdict([put(0, 0, 1, 'a'), get(2, 2, 3, 'b'), put(1, 4, 'unknown', 'b')]), 'not-linearizable');
  // An unknown delete and an unknown compare-and-swap.
  assert.equal(verdict([put(0, 0, 1, 'a'), del(1, 2, 'unknown'), get(2, 3, 4, null)]), 'linearizable');
  assert.equal(verdict([put(0, 0, 1, 'a'), cas(1, 2, 'unknown', 'a', 'b'), get(2, 3, 4, 'b')]), 'linearizable');
  assert.equal(verdict([put(0, 0, 1, 'a'), cas(1, 2, 'unknown', 'x', 'b'), get(2, 3, 4, 'b')]), 'not-linearizable');
  // A read that got no answer says nothing.
  assert.equal(verdict([put(0, 0, 1, 'a'), { type: 'get', client: 1, key: 'k', invoke: 2, ret: 'unknown', value: 'zzz' }]), 'linearizable');
});

test('a delete must report what it found; a txn on an absent key with a value compare fails', () => {
  assert.equal(verdict([put(0, 0, 1, 'a'), del(0, 2, 3, 0)]), 'not-linearizable');
  assert.equal(verdict([cas(0, 0, 1, '', 'x', true)]), 'not-linearizable');
  assert.equal(verdict([cas(0, 0, 1, '', 'x', false), cas(0, 2, 3, null, 'x', true), get(0, 4, 5, 'x')]), 'linearizable');
});

// ---------------------------------------------------------------------------------------------------
// A brute-force oracle: every subset of the unknown-outcome writes, every order that respects real time.

function legal(s: string | null, o: KvOperation): string | null | undefined {
  const u = o.ret === 'unknown';
  if (o.type === 'put') return o.value;
  if (o.type === 'get') return o.value === s ? s : undefined;
  if (o.type === 'delete') return u ? null : o.deleted === (s === null ? 0 : 1) ? null : undefined;
  const holds = o.expect === s;
  if (!u && o.succeeded !== holds) return undefined;
  return holds ? o.value : s;
}

function bruteForce(h: readonly KvOperation[]): boolean {
  const ops = h.filter((o) => !(o.type === 'get' && o.ret === 'unknown'));
  const keys = new Set(ops.map((o) => o.key));
  const end = (o: KvOperation): number => (o.ret === 'unknown' ? Infinity : o.ret);
  for (const key of keys) {
    const part = ops.filter((o) => o.key === key);
    const must = part.filter((o) => o.ret !== 'unknown');
    const maybe = part.filter((o) => o.ret === 'unknown');
    let found = false;
    for (let mask = 0; mask < 1 << maybe.length && !found; mask++) {
      const chosen = [...must, ...maybe.filter((_, i) => (mask & (1 << i)) !== 0)];
      const used = new Array<boolean>(chosen.length).fill(false);
      const go = (placed: number, s: string | null): boolean => {
        if (placed === chosen.length) return true;
        for (let i = 0; i < chosen.length; i++) {
          if (used[i]) continue;
          // i may go next only if no unplaced op finished before i was called.
          if (chosen.some((o, j) => !used[j] && j !== i && end(o) < chosen[i]!.invoke)) continue;
          const next = legal(s, chosen[i]!);
          if (next === undefined) continue;
          used[i] = true;
          if (go(placed + 1, next)) return true;
          used[i] = false;
        }
        return false;
      };
      found = go(0, null);
    }
    if (!found) return false;
  }
  return true;
}

const opArb: fc.Arbitrary<KvOperation> = fc
  .record({
    kind: fc.constantFrom('put', 'get', 'delete', 'cas'),
    client: fc.nat(3),
    key: fc.constantFrom('k', 'k', 'j'),
    invoke: fc.nat(20),
    len: fc.nat(8),
    unknown: fc.boolean(),
    value: fc.constantFrom('a', 'b'),
    seen: fc.constantFrom<string | null>('a', 'b', null),
    deleted: fc.nat(1),
    flag: fc.boolean(),
  })
  .map((r): KvOperation => {
    const ret = r.unknown && r.kind !== 'get' && r.len % 3 === 0 ? ('unknown' as const) : r.invoke + r.len;
    const base = { client: r.client, key: r.key, invoke: r.invoke, ret };
    switch (r.kind) {
      case 'put':
        return { ...base, type: 'put', value: r.value };
      case 'get':
        return { ...base, type: 'get', value: r.seen };
      case 'delete':
        return { ...base, type: 'delete', deleted: ret === 'unknown' ? undefined : r.deleted };
      default:
        return { ...base, type: 'cas', expect: r.seen, value: r.value, succeeded: ret === 'unknown' ? undefined : r.flag };
    }
  });

test('property: the checker agrees with a brute-force search on small random histories; a reported sub-history is a genuine witness', () => {
  let rejected = 0;
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 7 }), (h) => {
      const r = checkLinearizable(h);
      const expected = bruteForce(h);
      assert.equal(r.verdict, expected ? 'linearizable' : 'not-linearizable', JSON.stringify(h));
      if (r.verdict === 'not-linearizable') {
        rejected++;
        assert.equal(bruteForce(r.minimal), false, `the minimal sub-history is linearizable: ${r.text}`);
        assert.ok(r.minimal.length <= h.length);
        // A genuine witness: adding back any of the key's operations it left out explains nothing.
        const left = h.filter((o) => o.key === r.key && !r.minimal.includes(o) && !(o.type === 'get' && o.ret === 'unknown'));
        for (let mask = 1; mask < 1 << left.length; mask++) {
          const t: KvOperation[] = [...r.minimal, ...left.filter((_, i) => (mask & (1 << i)) !== 0)];
          assert.equal(bruteForce(t), false, `adding back ${JSON.stringify(left.filter((_, i) => (mask & (1 << i)) !== 0))} makes it linearizable:\n${r.text}`);
        }
      }
    }),
    { numRuns: Number(process.env['ETCDSIM_NUM_RUNS'] ?? 1000), seed: 4242 },
  );
  assert.ok(rejected > 50, `too few non-linearizable histories generated (${rejected})`);
});

test('a long concurrent history from a correct register is accepted quickly', () => {
  // Five clients, 600 operations on two keys, every operation overlapping its neighbours: a sequential
  // register applies each at its midpoint.
  const h: KvOperation[] = [];
  const state = new Map<string, string | null>();
  let n = 0;
  for (let t = 0; t < 600; t++) {
    const key = t % 7 === 0 ? 'j' : 'k';
    const s = state.get(key) ?? null;
    const invoke = t - 2.5;
    const ret = t + 2.5;
    const client = t % 5;
    const kind = t % 4;
    if (kind === 0) {
      h.push(get(client, invoke, ret, s, key));
    } else if (kind === 1) {
      const v = `v${n++}`;
      state.set(key, v);
      h.push(put(client, invoke, ret, v, key));
    } else if (kind === 2) {
      const v = `v${n++}`;
      const ok = s !== null;
      if (ok) state.set(key, v);
      h.push(cas(client, invoke, ret, s ?? 'nope', v, ok, key));
    } else {
      state.set(key, null);
      h.push(del(client, invoke, t % 8 === 3 ? 'unknown' : ret, s === null ? 0 : 1, key));
    }
  }
  const r = checkLinearizable(h);
  assert.equal(r.verdict, 'linearizable', r.verdict === 'not-linearizable' ? r.text : '');
});
