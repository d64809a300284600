/**
 * The shadow's pairs of auth tokens (src/shadow/context.ts, TokenMap) and what they keep in the simulator's
 * token store, whose clock never moves: a pair goes, with the simulator's token, when etcd refuses its token,
 * once it went unused past etcd's --auth-token-ttl (and the keeper's second of slack) — a JWT's once past its
 * expiry instead, however long unused — and past the bound, the oldest first. Host time is a counter here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import jwt from 'jsonwebtoken';
import { TokenMap } from '../../src/shadow/context.js';

function rig(ttlMs: number, max?: number): { map: TokenMap; held: Set<string>; tick(ms: number): void } {
  let now = 0;
  const held = new Set<string>();
  const map = new TokenMap((t) => held.delete(t), ttlMs, () => now, max);
  return { map, held, tick: (ms) => (now += ms) };
}

test('a pair and its simulator token go when etcd refuses the token, and with a simulator token etcd never issued', () => {
  const { map, held } = rig(1000);
  held.add('sim-a');
  map.learn('etcd-a', 'sim-a');
  assert.equal(map.simToken('etcd-a'), 'sim-a');
  map.forget('etcd-a');
  assert.equal(map.simToken('etcd-a'), undefined);
  assert.deepEqual([...held], []);
  held.add('sim-b');
  map.unpaired('sim-b');
  assert.deepEqual([...held], []);
});

test("a token unused past etcd's TTL (and the keeper's slack) goes; each use renews it", () => {
  const { map, held, tick } = rig(1000);
  for (const t of ['a', 'b']) {
    held.add(`sim-${t}`);
    map.learn(`etcd-${t}`, `sim-${t}`);
  }
  // b is used every 2.5 s — past the TTL but within its slack of 2 s —, a not at all.
  for (let i = 0; i < 4; i++) {
    tick(2500);
    assert.equal(map.simToken('etcd-b'), 'sim-b', `use ${i}`);
  }
  assert.equal(map.size, 1);
  assert.deepEqual([...held], ['sim-b']);
  // Unused past TTL + slack, even between sweeps: no counterpart, and its token gone.
  tick(3001);
  assert.equal(map.simToken('etcd-b'), undefined);
  assert.deepEqual([...held], []);
});

test('many Authenticates: the pairs and the simulator tokens held stay within the bound, the oldest going first', () => {
  const { map, held } = rig(300_000, 100);
  for (let i = 0; i < 5000; i++) {
    held.add(`sim-${i}`);
    map.learn(`etcd-${i}`, `sim-${i}`);
    assert.ok(held.size <= 100, `after ${i + 1}: ${held.size}`);
  }
  assert.equal(map.size, 100);
  assert.equal(map.simToken('etcd-4899'), undefined);
  assert.equal(map.simToken('etcd-4900'), 'sim-4900');
});

test('learning a token etcd issued again drops the simulator token it replaced', () => {
  const { map, held } = rig(1000);
  held.add('sim-1').add('sim-2');
  map.learn('etcd-x', 'sim-1');
  map.learn('etcd-x', 'sim-2');
  assert.deepEqual([...held], ['sim-2']);
});

test("a JWT (etcd's --auth-token jwt): its pair is kept until the token's expiry however long it goes unused, then dropped", () => {
  const { map, held, tick } = rig(1000);
  // Host time starts at 0 here: exp 60 is 60 s on.
  const token = jwt.sign({ exp: 60, revision: 5, username: 'app' }, 'etcd key', { algorithm: 'HS256', noTimestamp: true });
  held.add('sim-j').add('sim-s');
  map.learn(token, 'sim-j');
  map.learn('etcd-simple', 'sim-s');
  // Unused for 30 s, far past the 1 s TTL of a simple token: the simple pair goes at the sweep, the JWT's stays.
  tick(30_000);
  assert.equal(map.simToken('etcd-simple'), undefined);
  assert.equal(map.simToken(token), 'sim-j');
  // Past its expiry, within the slack: etcd may still take it (its clock, whole seconds).
  tick(31_500);
  assert.equal(map.simToken(token), 'sim-j');
  assert.deepEqual([...held], ['sim-j']);
  // Past expiry and slack, though just used: gone, with its simulator token.
  tick(501);
  assert.equal(map.simToken(token), undefined);
  assert.deepEqual([...held], []);
});
