/**
 * Property: random grant / put-with-lease / keep-alive / revoke / advance-clock / put / delete / demote /
 * promote sequences against a naive reference lessor (maps and full scans, no heap); a demoted lessor
 * expires nothing and refuses renewals, a promoted one restarts every lease's TTL after the extension
 * (with fewer leases than the revoke rate, so that promote does not spread expiries). After every step the live keys (with
 * their leases), the lease IDs, each lease's keys, TTLs and the store revision agree; every expiry
 * revoke happens no earlier than TTL after the last renewal and — while the revoke budget is not the
 * limit — before the next loop instant after that; no key outlives the revoke of its lease.
 *
 * Runs, seed and replay come from the environment via ./harness.ts (ETCDSIM_NUM_RUNS, default 300;
 * ETCDSIM_SEED / ETCDSIM_PATH); a failure prints the exact replay command.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';

import { checkProperty, recordFailure } from './harness.js';

import { createLeasedStore } from '../../src/lease/index.js';
import { ErrKeyNotFound, ErrLeaseNotFound, isEtcdError, text, utf8 } from '../../src/mvcc/index.js';
import { SimRandom, VirtualClock } from '../../src/sim/index.js';
import { ErrLeaseExist } from '../../src/lease/errors.js';
import { ErrNotPrimary } from '../../src/lease/index.js';

type Op =
  | { readonly op: 'grant'; readonly slot: number; readonly ttl: number }
  | { readonly op: 'put'; readonly key: number; readonly slot: number | null }
  | { readonly op: 'putKeep'; readonly key: number }
  | { readonly op: 'keepAlive'; readonly slot: number }
  | { readonly op: 'revoke'; readonly slot: number }
  | { readonly op: 'delete'; readonly key: number }
  | { readonly op: 'advance'; readonly ms: number }
  /** Leadership moves away (expiry stops, renewals refused) or comes back (expiries restart after `extendMs`). */
  | { readonly op: 'demote' }
  | { readonly op: 'promote'; readonly extendMs: number };

const slot = fc.nat({ max: 7 });
const keyArb = fc.nat({ max: 7 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant('grant' as const), slot: fc.nat({ max: 8 }), ttl: fc.integer({ min: -1, max: 6 }) }), weight: 3 },
  { arbitrary: fc.record({ op: fc.constant('put' as const), key: keyArb, slot: fc.option(slot, { nil: null }) }), weight: 5 },
  { arbitrary: fc.record({ op: fc.constant('putKeep' as const), key: keyArb }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('keepAlive' as const), slot }), weight: 3 },
  { arbitrary: fc.record({ op: fc.constant('revoke' as const), slot }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('delete' as const), key: keyArb }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 2500 }) }), weight: 4 },
  { arbitrary: fc.constant({ op: 'demote' as const }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('promote' as const), extendMs: fc.constantFrom(0, 1, 999, 1500) }), weight: 1 },
);

interface Config {
  readonly loopMs: number;
  readonly revokeRate: number;
}
const configArb: fc.Arbitrary<Config> = fc.oneof(
  fc.constant({ loopMs: 500, revokeRate: 1000 }),
  fc.record({ loopMs: fc.constantFrom(100, 250, 500), revokeRate: fc.constantFrom(2, 4, 6) }),
);

/** The naive reference: what etcd's lessor does, written the obvious way. */
class RefLessor {
  now = 0;
  rev = 1;
  readonly leases = new Map<bigint, { ttl: number; expiry: number }>();
  readonly keys = new Map<string, bigint>();
  constructor(
    readonly loopMs: number,
    readonly limit: number,
  ) {}

  revoke(id: bigint): void {
    this.leases.delete(id);
    let deleted = 0;
    for (const [k, l] of this.keys) if (l === id) (this.keys.delete(k), deleted++);
    if (deleted > 0) this.rev++;
  }

  /** A secondary lessor never expires a lease (etcd: expiry "forever"). */
  primary = true;

  advance(ms: number): void {
    const target = this.now + ms;
    for (let t = (Math.floor(this.now / this.loopMs) + 1) * this.loopMs; t <= target; t += this.loopMs) {
      this.now = t;
      const expired = [...this.leases]
        .filter(([, l]) => l.expiry <= t)
        .sort(([ia, a], [ib, b]) => a.expiry - b.expiry || (ia < ib ? -1 : ia > ib ? 1 : 0))
        .slice(0, this.limit);
      for (const [id] of expired) this.revoke(id);
    }
    this.now = target;
  }
}

const FILE = 'test/properties/lease.property.test.ts';

test('lessor matches a naive reference under random op sequences', () => {
  checkProperty(
    fc.property(configArb, fc.integer(), fc.array(opArb, { minLength: 10, maxLength: 100, size: 'max' }), (cfg, idSeed, ops) => {
      try {
        runScenario(cfg, idSeed, ops);
      } catch (e) {
        recordFailure(fc.stringify([cfg, idSeed, ops]));
        throw e;
      }
    }),
    { file: FILE, numRuns: 300 },
  );
});

function runScenario(cfg: Config, idSeed: number, ops: readonly Op[]): void {
  const clock = new VirtualClock();
  const { store, lessor } = createLeasedStore({
    clock,
    random: new SimRandom(idSeed),
    loopIntervalMs: cfg.loopMs,
    leaseRevokeRate: cfg.revokeRate,
  });
  const ref = new RefLessor(cfg.loopMs, Math.floor(cfg.revokeRate / 2));
  // Lease slots: fixed IDs (one negative, one beyond 2^53) then every generated ID.
  const ids: bigint[] = [1n, 2n, -3n, (1n << 60n) + 1n];
  const idAt = (i: number): bigint => ids[i % ids.length]!;
  /** Last renewal (or grant) instant of each live lease, to check the expiry window. */
  const renewedAt = new Map<bigint, number>();
  const unbounded = cfg.revokeRate === 1000;
  lessor.subscribe((ev) => {
    if (ev.type !== 'revoke' || ev.reason !== 'expire') return;
    const l = ref.leases.get(ev.id);
    assert.ok(l !== undefined, `expired lease ${ev.id} exists in the reference`);
    const deadline = renewedAt.get(ev.id)! + l.ttl * 1000;
    assert.ok(ev.at >= deadline, `lease ${ev.id} revoked at ${ev.at}, before TTL ended at ${deadline}`);
    if (unbounded) assert.ok(ev.at <= deadline + cfg.loopMs, `lease ${ev.id} revoked at ${ev.at}, later than ${deadline} + ${cfg.loopMs}`);
    // No key outlives its lease's revoke: after this revoke's commit none names the lease.
    for (const kv of store.range({ key: utf8('\0'), rangeEnd: new Uint8Array([0]) }).kvs) {
      assert.notEqual(kv.lease, ev.id, `key ${text(kv.key)} outlived lease ${ev.id}`);
    }
  });

  const check = (step: number): void => {
    const at = `step ${step}`;
    const live = store.range({ key: utf8('\0'), rangeEnd: new Uint8Array([0]) }).kvs.map((kv) => [text(kv.key), kv.lease] as const);
    const want = [...ref.keys].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    assert.deepEqual(live, want, `${at}: live keys`);
    const leaseIds = [...ref.leases.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    assert.deepEqual(lessor.leases(), leaseIds, `${at}: leases`);
    for (const id of leaseIds) {
      const l = ref.leases.get(id)!;
      const attached = want.filter(([, lid]) => lid === id).map(([k]) => k);
      assert.deepEqual(lessor.keyStringsOf(id), attached, `${at}: keys of lease ${id}`);
      const ttl = lessor.timeToLive(id, true);
      // A demoted lessor reports the full TTL (no checkpoint was taken).
      assert.equal(ttl.ttl, l.expiry === Infinity ? l.ttl : Math.trunc((l.expiry - ref.now) / 1000) + 0, `${at}: TTL of ${id}`);
      assert.equal(ttl.grantedTTL, l.ttl);
      assert.deepEqual(ttl.keys.map(text), attached);
    }
    for (const [, lid] of live) assert.ok(lid === 0n || ref.leases.has(lid), `${at}: key on dead lease ${lid}`);
    assert.equal(store.currentRevision, ref.rev, `${at}: revision`);
    assert.equal(clock.now(), ref.now);
  };

  ops.forEach((o, step) => {
    switch (o.op) {
      case 'grant': {
        const want = o.slot === 8 ? 0n : idAt(o.slot);
        if (want !== 0n && ref.leases.has(want)) {
          assert.throws(() => lessor.grant(want, o.ttl), (e: unknown) => isEtcdError(e, ErrLeaseExist));
          break;
        }
        const g = lessor.grant(want, o.ttl);
        const ttl = Math.max(o.ttl, 2);
        assert.equal(g.ttl, ttl);
        if (want === 0n) {
          assert.ok(g.id > 0n && g.id < 1n << 63n && !ref.leases.has(g.id));
          ids.push(g.id);
        } else assert.equal(g.id, want);
        ref.leases.set(g.id, { ttl, expiry: ref.primary ? ref.now + ttl * 1000 : Infinity });
        renewedAt.set(g.id, ref.now);
        break;
      }
      case 'put': {
        const lease = o.slot === null ? 0n : idAt(o.slot);
        const key = `k${o.key}`;
        if (lease !== 0n && !ref.leases.has(lease)) {
          assert.throws(() => store.put({ key: utf8(key), lease }), (e: unknown) => isEtcdError(e, ErrLeaseNotFound));
          break;
        }
        store.put({ key: utf8(key), value: utf8(String(step)), lease });
        ref.keys.set(key, lease);
        ref.rev++;
        break;
      }
      case 'putKeep': {
        const key = `k${o.key}`;
        if (!ref.keys.has(key)) {
          assert.throws(() => store.put({ key: utf8(key), ignoreLease: true }), (e: unknown) => isEtcdError(e, ErrKeyNotFound));
          break;
        }
        store.put({ key: utf8(key), value: utf8('kept'), ignoreLease: true });
        ref.rev++;
        break;
      }
      case 'keepAlive': {
        const id = idAt(o.slot);
        const l = ref.leases.get(id);
        if (!ref.primary) {
          assert.throws(() => lessor.keepAlive(id), (e: unknown) => isEtcdError(e, ErrNotPrimary), `step ${step}: keepAlive on a demoted lessor`);
          break;
        }
        const alive = l !== undefined && l.expiry > ref.now;
        assert.equal(lessor.keepAlive(id), alive ? l.ttl : 0, `step ${step}: keepAlive ${id}`);
        if (alive) {
          l.expiry = ref.now + l.ttl * 1000;
          renewedAt.set(id, ref.now);
        }
        break;
      }
      case 'revoke': {
        const id = idAt(o.slot);
        if (!ref.leases.has(id)) {
          assert.throws(() => lessor.revoke(id), (e: unknown) => isEtcdError(e, ErrLeaseNotFound));
          break;
        }
        const before = store.currentRevision;
        const hadKeys = [...ref.keys.values()].includes(id);
        lessor.revoke(id);
        if (hadKeys) {
          const evs = store.eventsAt(before + 1);
          const names = evs.map((e) => text(e.kv.key));
          assert.ok(evs.every((e) => e.type === 'DELETE'));
          assert.deepEqual(names, [...names].sort(), 'deletes in key order');
        }
        ref.revoke(id);
        break;
      }
      case 'delete': {
        const key = `k${o.key}`;
        store.deleteRange({ key: utf8(key) });
        if (ref.keys.delete(key)) ref.rev++;
        break;
      }
      case 'advance':
        // The lessor moves first, so its expiry listener still sees each lease in the reference.
        clock.advance(o.ms);
        ref.advance(o.ms);
        break;
      case 'demote':
        lessor.demote();
        ref.primary = false;
        for (const l of ref.leases.values()) l.expiry = Infinity;
        break;
      case 'promote':
        // With leaseRevokeRate leases or more, promote also spreads the expiries (not modelled here).
        if (ref.leases.size >= cfg.revokeRate) break;
        lessor.promote(o.extendMs);
        ref.primary = true;
        for (const [id, l] of ref.leases) {
          l.expiry = ref.now + o.extendMs + l.ttl * 1000;
          renewedAt.set(id, ref.now + o.extendMs);
        }
        break;
    }
    check(step);
    assert.equal(lessor.checkValid(), undefined, `${step}: Lessor.checkValid()`);
  });
}
