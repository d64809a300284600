import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  createLeasedStore,
  ErrNotPrimary,
  Lessor,
  minLeaseTTLFor,
  type LeasedStoreOptions,
} from '../../src/lease/index.js';
import { ErrLeaseNotFound, keyString, MvccStore, text, utf8, type KeyValue } from '../../src/mvcc/index.js';
import { EtcdError, GrpcCode, isEtcdError } from '../../src/etcd/index.js';
import { SimRandom, Ticker, VirtualClock } from '../../src/sim/index.js';
import { ErrLeaseExist, ErrLeaseTTLTooLarge } from '../../src/lease/errors.js';

function setup(opts: Partial<LeasedStoreOptions> = {}) {
  const clock = new VirtualClock();
  const { store, lessor } = createLeasedStore({ clock, random: new SimRandom(42), ...opts });
  const put = (key: string, lease = 0n, value = 'v') => store.put({ key: utf8(key), value: utf8(value), lease });
  const get = (key: string): KeyValue | undefined => store.range({ key: utf8(key) }).kvs[0];
  const liveKeys = (): string[] => store.range({ key: utf8('\0'), rangeEnd: new Uint8Array([0]) }).kvs.map((kv) => text(kv.key));
  return { clock, store, lessor, put, get, liveKeys };
}

const throwsKind = (fn: () => unknown, kind: Parameters<typeof isEtcdError>[1]) =>
  assert.throws(fn, (err: unknown) => isEtcdError(err, kind));

// --- Grant ---------------------------------------------------------------------------------------

test('minimum TTL is derived like etcd: ceil(floor(3*electionTicks/2) * tickMs) seconds', () => {
  assert.equal(minLeaseTTLFor(100, 10), 2);
  assert.equal(minLeaseTTLFor(100, 20), 3);
  assert.equal(minLeaseTTLFor(50, 10), 1); // 750 ms → 1 s
  assert.equal(minLeaseTTLFor(100, 11), 2); // floor(33/2) = 16 ticks → 1.6 s → 2
  const { lessor } = setup();
  assert.equal(lessor.minLeaseTTL, 2);
  assert.equal(setup({ electionTicks: 50 }).lessor.minLeaseTTL, 8);
  assert.equal(setup({ minLeaseTTL: 0 }).lessor.minLeaseTTL, 0);
});

test('a lease granted with TTL 1 reports TTL 2; TTLs at or above the minimum are kept', () => {
  const { lessor } = setup();
  assert.deepEqual(lessor.grant(1n, 1), { id: 1n, ttl: 2 });
  assert.equal(lessor.timeToLive(1n).ttl, 2);
  assert.equal(lessor.timeToLive(1n).grantedTTL, 2);
  assert.deepEqual(lessor.grant(2n, 0), { id: 2n, ttl: 2 });
  assert.deepEqual(lessor.grant(3n, -5), { id: 3n, ttl: 2 });
  assert.deepEqual(lessor.grant(4n, 2), { id: 4n, ttl: 2 });
  assert.deepEqual(lessor.grant(5n, 60), { id: 5n, ttl: 60 });
});

test('TTL above 9,000,000,000 s is too large; exactly 9e9 is accepted', () => {
  const { lessor } = setup();
  throwsKind(() => lessor.grant(1n, 9_000_000_001), ErrLeaseTTLTooLarge);
  assert.equal(lessor.size, 0);
  assert.deepEqual(lessor.grant(1n, 9_000_000_000), { id: 1n, ttl: 9_000_000_000 });
  assert.equal(lessor.timeToLive(1n).ttl, 9_000_000_000);
});

test('granting an existing ID fails with "lease already exists" and leaves the lease alone', () => {
  const { lessor, clock } = setup();
  lessor.grant(7n, 10);
  clock.advance(3000);
  throwsKind(() => lessor.grant(7n, 100), ErrLeaseExist);
  assert.equal(lessor.timeToLive(7n).grantedTTL, 10);
  assert.equal(lessor.timeToLive(7n).ttl, 7);
});

test('ID 0 makes the lessor pick a positive 63-bit ID, exact beyond 2^53, deterministic per seed', () => {
  const a = setup().lessor;
  const ids = Array.from({ length: 20 }, () => a.grant(0n, 5).id);
  for (const id of ids) assert.ok(id > 0n && id < 1n << 63n);
  assert.ok(ids.some((id) => id > 2n ** 53n), 'some generated IDs exceed 2^53');
  assert.equal(new Set(ids).size, ids.length);
  const b = setup().lessor;
  assert.deepEqual(Array.from({ length: 20 }, () => b.grant(0n, 5).id), ids);
  // A different seed gives different IDs; the generator is the lessor's own fork of the root stream.
  const c = setup({ random: new SimRandom(43) }).lessor;
  assert.notDeepEqual(Array.from({ length: 20 }, () => c.grant(0n, 5).id), ids);
  // An exact big ID round-trips as a bigint.
  assert.equal(a.timeToLive(ids[0]!).id, ids[0]);
});

test('a generated ID that collides with an existing lease is redrawn', () => {
  const probe = setup().lessor;
  const first = probe.grant(0n, 5).id;
  const second = probe.grant(0n, 5).id;
  const { lessor } = setup();
  lessor.grant(first, 5); // the ID the generator will draw first is already taken by a client
  assert.equal(lessor.grant(0n, 5).id, second);
});

test('negative and maximal int64 IDs are accepted like any other; non-int64 is rejected', () => {
  const { lessor, put, get } = setup();
  lessor.grant(-5n, 10);
  lessor.grant((1n << 63n) - 1n, 10);
  put('k', -5n);
  assert.equal(get('k')?.lease, -5n);
  assert.deepEqual(lessor.leases(), [-5n, (1n << 63n) - 1n]);
  const invalid = (field: string) => (err: unknown) => err instanceof EtcdError && err.code === GrpcCode.INVALID_ARGUMENT && err.message.includes(field);
  assert.throws(() => lessor.grant(1n << 63n, 10), invalid('lease ID'));
  assert.throws(() => lessor.grant(1n, 1.5), invalid('lease TTL'));
  assert.throws(() => lessor.grant(7 as never, 10), invalid('lease ID'));
  assert.throws(() => lessor.revoke(-5 as never), invalid('lease ID'));
  assert.throws(() => lessor.keepAlive('1' as never), invalid('lease ID'));
  assert.throws(() => lessor.timeToLive(null as never), invalid('lease ID'));
  assert.deepEqual(lessor.leases(), [-5n, (1n << 63n) - 1n]);
});

// --- Attach / detach through the store -----------------------------------------------------------

test('a put with an unknown lease fails "requested lease not found" and writes nothing', () => {
  const { store, put } = setup();
  throwsKind(() => put('a', 99n), ErrLeaseNotFound);
  assert.equal(store.currentRevision, 1);
});

test('put with lease attaches; plain put detaches; ignoreLease keeps; delete detaches', () => {
  const { lessor, store, put } = setup();
  lessor.grant(1n, 10);
  lessor.grant(2n, 10);
  put('a', 1n);
  put('b', 1n);
  put('c', 1n);
  assert.deepEqual(lessor.keyStringsOf(1n), ['a', 'b', 'c']);
  put('a'); // plain put: detached
  store.put({ key: utf8('b'), value: utf8('x'), ignoreLease: true }); // keeps lease 1
  put('c', 2n); // moves to lease 2
  assert.deepEqual(lessor.keyStringsOf(1n), ['b']);
  assert.deepEqual(lessor.keyStringsOf(2n), ['c']);
  store.deleteRange({ key: utf8('c') });
  assert.deepEqual(lessor.keyStringsOf(2n), []);
  assert.deepEqual(
    lessor.timeToLive(1n, true).keys.map((k) => text(k)),
    ['b'],
  );
});

test('bind refuses a store that does not use this lessor', () => {
  const clock = new VirtualClock();
  const lessor = new Lessor({ clock });
  assert.throws(() => lessor.bind(new MvccStore()), /not constructed with this lessor/);
  const store = new MvccStore({ lessor });
  lessor.bind(store);
  lessor.grant(1n, 5);
  store.put({ key: utf8('k'), lease: 1n });
  assert.equal(lessor.revoke(1n).deleted, 1);
});

// --- Revoke --------------------------------------------------------------------------------------

test('revoke deletes every attached key at one revision, DELETE events in byte order', () => {
  const { lessor, store, put, liveKeys } = setup();
  lessor.grant(1n, 10);
  // Inserted out of order, with a multi-byte key that sorts after ASCII in byte order.
  for (const k of ['zeta', 'é', 'alpha', 'mid', 'Alpha']) put(k, 1n);
  put('other');
  const before = store.currentRevision;
  const res = lessor.revoke(1n);
  assert.equal(res.revision, before + 1);
  assert.equal(res.deleted, 5);
  assert.equal(store.currentRevision, before + 1);
  const evs = store.eventsAt(before + 1);
  assert.deepEqual(evs.map((e) => e.type), ['DELETE', 'DELETE', 'DELETE', 'DELETE', 'DELETE']);
  assert.deepEqual(evs.map((e) => text(e.kv.key)), ['Alpha', 'alpha', 'mid', 'zeta', 'é']);
  for (const e of evs) assert.equal(e.kv.modRevision, before + 1);
  assert.deepEqual(liveKeys(), ['other']);
  assert.deepEqual(lessor.leases(), []);
  throwsKind(() => lessor.revoke(1n), ErrLeaseNotFound);
});

test('revoking a lease with more keys than --max-txn-ops still takes one revision', () => {
  const { lessor, store, put, liveKeys } = setup({ store: { maxTxnOps: 4 } });
  lessor.grant(1n, 10);
  for (let i = 0; i < 300; i++) put(`k${String(i).padStart(3, '0')}`, 1n);
  const before = store.currentRevision;
  lessor.revoke(1n);
  assert.equal(store.currentRevision, before + 1);
  assert.equal(store.eventsAt(before + 1).length, 300);
  assert.deepEqual(liveKeys(), []);
});

test('revoking a lease with no keys does not bump the revision; unknown lease is not found', () => {
  const { lessor, store, put } = setup();
  put('x');
  lessor.grant(1n, 10);
  const rev = store.currentRevision;
  assert.deepEqual(lessor.revoke(1n), { revision: rev, deleted: 0 });
  assert.equal(store.currentRevision, rev);
  throwsKind(() => lessor.revoke(2n), ErrLeaseNotFound);
  // A lease whose only key was deleted also has no keys left.
  lessor.grant(3n, 10);
  put('y', 3n);
  store.deleteRange({ key: utf8('y') });
  const rev2 = store.currentRevision;
  lessor.revoke(3n);
  assert.equal(store.currentRevision, rev2);
});

test('a key re-put without lease survives its old lease being revoked', () => {
  const { lessor, put, get, liveKeys } = setup();
  lessor.grant(1n, 10);
  put('keep', 1n);
  put('drop', 1n);
  put('keep', 0n, 'mine now');
  lessor.revoke(1n);
  assert.deepEqual(liveKeys(), ['keep']);
  assert.equal(text(get('keep')!.value), 'mine now');
  assert.equal(get('keep')!.lease, 0n);
});

test('a key moved to another lease survives the old lease and dies with the new one', () => {
  const { lessor, put, liveKeys } = setup();
  lessor.grant(1n, 10);
  lessor.grant(2n, 10);
  put('k', 1n);
  put('k', 2n);
  lessor.revoke(1n);
  assert.deepEqual(liveKeys(), ['k']);
  lessor.revoke(2n);
  assert.deepEqual(liveKeys(), []);
});

test('a watcher (store subscriber) sees a revoke as one commit', () => {
  const { lessor, store, put } = setup();
  const commits: Array<[number, string[]]> = [];
  lessor.grant(1n, 10);
  put('b', 1n);
  put('a', 1n);
  store.subscribe((rev, evs) => commits.push([rev, evs.map((e) => `${e.type} ${text(e.kv.key)}`)]));
  lessor.revoke(1n);
  assert.deepEqual(commits, [[4, ['DELETE a', 'DELETE b']]]);
});

// --- Renew / KeepAlive -----------------------------------------------------------------------------

test('keep-alive renews to the full TTL; unknown lease answers 0, renew throws not found', () => {
  const { lessor, clock } = setup();
  lessor.grant(1n, 10);
  clock.advance(7_000);
  assert.equal(lessor.timeToLive(1n).ttl, 3);
  assert.equal(lessor.keepAlive(1n), 10);
  assert.equal(lessor.expiryOf(1n), 17_000);
  assert.equal(lessor.timeToLive(1n).ttl, 10);
  assert.equal(lessor.keepAlive(99n), 0);
  throwsKind(() => lessor.renew(99n), ErrLeaseNotFound);
});

test('keep-alive just before expiry keeps the lease and its keys', () => {
  const { lessor, clock, put, liveKeys } = setup();
  lessor.grant(1n, 5);
  put('k', 1n);
  clock.advanceTo(4_999);
  assert.equal(lessor.keepAlive(1n), 5);
  clock.advanceTo(9_998);
  assert.deepEqual(liveKeys(), ['k']);
  assert.equal(lessor.keepAlive(1n), 5);
  clock.advanceTo(14_000);
  assert.deepEqual(liveKeys(), ['k']);
  clock.advanceTo(15_500);
  assert.deepEqual(liveKeys(), []);
});

test('an expired lease not yet revoked: keep-alive answers 0 and does not resurrect it', () => {
  const { lessor, clock, put, liveKeys } = setup();
  lessor.grant(1n, 2);
  put('k', 1n);
  clock.advanceTo(2_200); // expired at 2000; the loop ran at 2000 and revoked it already
  assert.deepEqual(lessor.leases(), []);
  // Now with an expiry between loop runs: grant at 2200 with TTL 2 → expires 4200, loop at 4500.
  lessor.grant(2n, 2);
  put('j', 2n);
  clock.advanceTo(4_300);
  assert.deepEqual(lessor.leases(), [2n], 'not yet revoked');
  assert.equal(lessor.timeToLive(2n).ttl, 0);
  assert.equal(lessor.keepAlive(2n), 0);
  throwsKind(() => lessor.renew(2n), ErrLeaseNotFound);
  clock.advanceTo(4_500);
  assert.deepEqual(lessor.leases(), []);
  assert.deepEqual(liveKeys(), []);
});

// --- TimeToLive / Leases ---------------------------------------------------------------------------

test('TimeToLive truncates remaining seconds, reports granted TTL and sorted keys; unknown is -1', () => {
  const { lessor, clock, put } = setup();
  lessor.grant(1n, 10);
  put('b', 1n);
  put('a', 1n);
  clock.advance(1);
  assert.equal(lessor.timeToLive(1n).ttl, 9); // 9.999 s → 9
  clock.advance(999);
  assert.equal(lessor.timeToLive(1n).ttl, 9); // exactly 9 s
  clock.advance(1);
  assert.equal(lessor.timeToLive(1n).ttl, 8);
  const ttl = lessor.timeToLive(1n, true);
  assert.equal(ttl.grantedTTL, 10);
  assert.deepEqual(ttl.keys.map(text), ['a', 'b']);
  assert.deepEqual(lessor.timeToLive(1n).keys, []);
  assert.deepEqual(lessor.timeToLive(5n, true), { id: 5n, ttl: -1, grantedTTL: 0, keys: [] });
});

test('Leases lists every ID', () => {
  const { lessor } = setup();
  assert.deepEqual(lessor.leases(), []);
  lessor.grant(30n, 5);
  lessor.grant(10n, 5);
  lessor.grant(20n, 5);
  assert.deepEqual(lessor.leases(), [10n, 20n, 30n]);
  lessor.revoke(20n);
  assert.deepEqual(lessor.leases(), [10n, 30n]);
});

// --- Expiry loop -------------------------------------------------------------------------------------

test('lease expiry deletes its keys at one revision, in key order, within [TTL, TTL + 500 ms]', () => {
  const { lessor, clock, store, put, liveKeys } = setup();
  const revokes: Array<{ id: bigint; at: number; reason: string }> = [];
  lessor.subscribe((ev) => {
    if (ev.type === 'revoke') revokes.push({ id: ev.id, at: ev.at, reason: ev.reason });
  });
  clock.advanceTo(123);
  lessor.grant(1n, 3);
  put('c', 1n);
  put('a', 1n);
  put('b', 1n);
  put('free');
  const rev = store.currentRevision;
  clock.advanceTo(3_122);
  assert.deepEqual(liveKeys(), ['a', 'b', 'c', 'free'], 'not before TTL');
  clock.advanceTo(3_623);
  assert.deepEqual(liveKeys(), ['free']);
  assert.deepEqual(revokes, [{ id: 1n, at: 3_500, reason: 'expire' }]);
  assert.ok(revokes[0]!.at >= 123 + 3_000 && revokes[0]!.at <= 123 + 3_000 + 500);
  assert.equal(store.currentRevision, rev + 1);
  assert.deepEqual(store.eventsAt(rev + 1).map((e) => `${e.type} ${text(e.kv.key)}`), ['DELETE a', 'DELETE b', 'DELETE c']);
});

test('a lease expiring exactly on a loop instant is revoked at that instant', () => {
  const { lessor, clock } = setup();
  lessor.grant(1n, 2);
  clock.advanceTo(1_999);
  assert.deepEqual(lessor.leases(), [1n]);
  clock.advanceTo(2_000);
  assert.deepEqual(lessor.leases(), []);
});

test('at most leaseRevokeRate/2 = 500 leases are revoked per run, earliest expiry then smallest ID first', () => {
  const { lessor, clock, store, put } = setup();
  // 600 leases expiring at 10.1 s, 10 more at 9.1 s (granted later with a shorter TTL).
  clock.advanceTo(100);
  for (let i = 0; i < 600; i++) lessor.grant(BigInt(1000 + i), 10);
  clock.advanceTo(1_100);
  for (let i = 0; i < 10; i++) lessor.grant(BigInt(5000 + i), 8); // expires 9_100, before the others
  for (let i = 0; i < 610; i++) {
    const id = i < 600 ? BigInt(1000 + i) : BigInt(5000 + i - 600);
    put(`k${id}`, id);
  }
  const order: Array<[bigint, number]> = [];
  lessor.subscribe((ev) => {
    if (ev.type === 'revoke') order.push([ev.id, ev.at]);
  });
  const rev = store.currentRevision;
  clock.advanceTo(9_500);
  assert.equal(order.length, 10);
  clock.advanceTo(10_100);
  assert.equal(order.length, 10, '600 expired at 10_100 but the next run is at 10_500');
  clock.advanceTo(10_500);
  assert.equal(order.length, 510);
  assert.equal(lessor.size, 100);
  assert.deepEqual(order.slice(10).map(([id]) => id), Array.from({ length: 500 }, (_, i) => BigInt(1000 + i)));
  clock.advanceTo(11_000);
  assert.equal(order.length, 610);
  assert.equal(lessor.size, 0);
  assert.deepEqual(order.slice(510).map(([, at]) => at), Array(100).fill(11_000));
  // Each revoke is one revision with its own key.
  assert.equal(store.currentRevision, rev + 610);
});

test('loop period and revoke rate are options', () => {
  const { lessor, clock } = setup({ loopIntervalMs: 100, leaseRevokeRate: 4 });
  assert.equal(lessor.revokeLimitPerRun, 2);
  for (let i = 1; i <= 5; i++) lessor.grant(BigInt(i), 2);
  clock.advanceTo(2_000);
  assert.deepEqual(lessor.leases(), [3n, 4n, 5n]);
  clock.advanceTo(2_100);
  assert.deepEqual(lessor.leases(), [5n]);
  clock.advanceTo(2_200);
  assert.deepEqual(lessor.leases(), []);
});

test('the expiry step sits on the shared ticker, before watch steps due at the same instant', () => {
  const clock = new VirtualClock();
  const ticker = new Ticker(clock);
  const log: string[] = [];
  ticker.add('watch.sync', 100, () => log.push(`sync ${lessorRef.leases().length}`));
  const { lessor } = createLeasedStore({ clock, ticker });
  const lessorRef = lessor;
  assert.ok(ticker.has('lease.expiry'));
  lessor.grant(1n, 2);
  clock.advanceTo(2_000);
  assert.equal(log.at(-1), 'sync 0', 'the lease was revoked before the watch step ran at 2000');
  lessor.close();
  assert.ok(!ticker.has('lease.expiry'));
  lessor.grant(2n, 2);
  clock.advanceTo(10_000);
  assert.deepEqual(lessor.leases(), [2n], 'closed lessor expires nothing');
});

// --- Leadership -----------------------------------------------------------------------------------------

test('demote stops expiry and renewals; promote extends every lease by extend + full TTL', () => {
  const { lessor, clock, put, liveKeys } = setup();
  lessor.grant(1n, 10);
  lessor.grant(2n, 4);
  put('k', 1n);
  clock.advanceTo(3_000);
  lessor.demote();
  assert.equal(lessor.primary, false);
  assert.equal(lessor.expiryOf(1n), Infinity);
  throwsKind(() => lessor.renew(1n), ErrNotPrimary);
  throwsKind(() => lessor.keepAlive(1n), ErrNotPrimary);
  assert.equal(lessor.timeToLive(2n).ttl, 4, 'demoted: reports the TTL a promote would start from');
  lessor.grant(3n, 5); // granted while secondary: no expiry
  assert.equal(lessor.expiryOf(3n), Infinity);
  clock.advanceTo(60_000);
  assert.deepEqual(lessor.leases(), [1n, 2n, 3n]);
  assert.deepEqual(liveKeys(), ['k']);
  lessor.promote(1_000);
  assert.equal(lessor.primary, true);
  assert.equal(lessor.expiryOf(1n), 60_000 + 1_000 + 10_000);
  assert.equal(lessor.expiryOf(2n), 60_000 + 1_000 + 4_000);
  assert.equal(lessor.expiryOf(3n), 60_000 + 1_000 + 5_000);
  clock.advanceTo(65_000);
  assert.deepEqual(lessor.leases(), [1n, 3n]);
  clock.advanceTo(71_000);
  assert.deepEqual(lessor.leases(), []);
  assert.deepEqual(liveKeys(), []);
});

test('a lessor may start as secondary', () => {
  const { lessor, clock } = setup({ primary: false });
  lessor.grant(1n, 2);
  clock.advanceTo(100_000);
  assert.deepEqual(lessor.leases(), [1n]);
  lessor.promote();
  clock.advanceTo(102_000);
  assert.deepEqual(lessor.leases(), []);
});

test('promote with >= leaseRevokeRate leases spreads expiries to <= 3/4 of the rate per second', () => {
  const { lessor, clock } = setup({ leaseRevokeRate: 8, primary: false });
  for (let i = 1; i <= 20; i++) lessor.grant(BigInt(i), 10);
  clock.advanceTo(1_000);
  lessor.promote(0);
  const expiries = lessor.leases().map((id) => lessor.expiryOf(id)!);
  // Target 6 per second: the first 6 keep now + 10 s, the rest are pushed back.
  assert.deepEqual(expiries.slice(0, 6), Array(6).fill(11_000));
  for (let s = 0; s < 5; s++) {
    const inWindow = expiries.filter((e) => e >= 11_000 + s * 1000 && e < 11_000 + (s + 1) * 1000).length;
    assert.ok(inWindow <= 6, `window ${s}: ${inWindow} expiries`);
  }
  assert.ok(Math.max(...expiries) > 11_000);
  // Below the rate nothing is spread.
  const small = setup({ primary: false }).lessor;
  for (let i = 1; i <= 20; i++) small.grant(BigInt(i), 10);
  small.promote(0);
  assert.ok(small.leases().every((id) => small.expiryOf(id) === 10_000));
});

test('checkpointing is off by default: promote resets leases to the full TTL', () => {
  const { lessor, clock } = setup();
  lessor.grant(1n, 3600);
  clock.advanceTo(20 * 60_000);
  assert.equal(lessor.checkpointedTTLOf(1n), 0);
  lessor.demote();
  lessor.promote(0);
  assert.equal(lessor.timeToLive(1n).ttl, 3600);
});

test('checkpointing records remaining TTL every interval; promote then resumes from it, renew clears it', () => {
  const { lessor, clock } = setup({ checkpointing: true });
  const cps: Array<[bigint, number, number]> = [];
  lessor.subscribe((ev) => {
    if (ev.type === 'checkpoint') cps.push([ev.id, ev.remainingTTL, ev.at]);
  });
  lessor.grant(1n, 3600); // > 5 min: scheduled
  lessor.grant(2n, 60); // <= 5 min: never checkpointed
  clock.advanceTo(5 * 60_000);
  assert.deepEqual(cps, [[1n, 3300, 300_000]]);
  clock.advanceTo(10 * 60_000 + 250);
  assert.deepEqual(cps.at(-1), [1n, 3000, 600_000]);
  assert.equal(lessor.checkpointedTTLOf(1n), 3000);
  // Leader change at 10m00.25s: the new primary starts from the checkpoint, not from 3600.
  lessor.demote();
  clock.advanceTo(11 * 60_000);
  lessor.promote(1_000);
  assert.equal(lessor.expiryOf(1n), 660_000 + 1_000 + 3_000_000);
  assert.equal(lessor.timeToLive(1n).ttl, 3001);
  // A renew clears the checkpoint (a checkpoint with 0) and renews to the full TTL.
  assert.equal(lessor.renew(1n), 3600);
  assert.equal(lessor.checkpointedTTLOf(1n), 0);
  assert.deepEqual(cps.at(-1), [1n, 0, 660_000]);
  assert.equal(lessor.expiryOf(1n), 660_000 + 3_600_000);
  lessor.demote();
  lessor.promote(0);
  assert.equal(lessor.timeToLive(1n).ttl, 3600);
  assert.ok(cps.every(([id]) => id === 1n));
});

test('a due checkpoint is skipped when the lease was just renewed to its full TTL', () => {
  const { lessor, clock } = setup({ checkpointing: true, checkpointIntervalMs: 10_000 });
  lessor.grant(1n, 60);
  clock.advanceTo(9_999);
  lessor.renew(1n); // remaining = 60 s at 10_000 → ceil = 60 >= ttl: skipped
  clock.advanceTo(10_000);
  assert.equal(lessor.checkpointedTTLOf(1n), 0);
  lessor.checkpoint(1n, 42); // applying a checkpoint from the log
  assert.equal(lessor.checkpointedTTLOf(1n), 42);
  lessor.checkpoint(99n, 5); // unknown: ignored
  clock.advanceTo(20_000);
  assert.equal(lessor.checkpointedTTLOf(1n), 50); // ceil(59.999 s) at 20_000 → 50
});

// --- Recovery -----------------------------------------------------------------------------------------

test('recoverFromStore rebuilds key sets from the store after a restore', () => {
  const { lessor, store, put, liveKeys } = setup();
  lessor.grant(1n, 100);
  lessor.grant(2n, 100);
  put('a', 1n);
  put('b', 2n);
  put('c', 1n);
  const snap = store.snapshot();
  put('a'); // detach a
  store.deleteRange({ key: utf8('c') });
  put('d', 2n);
  assert.deepEqual(lessor.keyStringsOf(1n), []);
  store.restore(snap);
  assert.deepEqual(lessor.keyStringsOf(2n), ['b', 'd'], 'stale until recovered');
  lessor.grant(3n, 100);
  assert.deepEqual(lessor.recoverFromStore(), { attached: 3, orphaned: 0 });
  assert.deepEqual(lessor.keyStringsOf(1n), ['a', 'c']);
  assert.deepEqual(lessor.keyStringsOf(2n), ['b']);
  lessor.revoke(1n);
  assert.deepEqual(liveKeys(), ['b']);
  // A key naming a lease that no longer exists stays unattached.
  lessor.revoke(3n);
  const snap2 = store.snapshot();
  lessor.revoke(2n);
  store.restore(snap2);
  assert.deepEqual(lessor.recoverFromStore(), { attached: 0, orphaned: 1 });
  assert.equal(keyString(store.range({ key: utf8('b') }).kvs[0]!.key), 'b');
});

// --- Determinism ------------------------------------------------------------------------------------

function scenario(seed: number): string {
  const clock = new VirtualClock();
  const random = new SimRandom(seed);
  const { store, lessor } = createLeasedStore({ clock, random, leaseRevokeRate: 6 });
  const trace: unknown[] = [];
  store.subscribe((rev, evs) =>
    trace.push({ t: clock.now(), rev, evs: evs.map((e) => [e.type, text(e.kv.key), e.kv.lease.toString(), e.kv.modRevision]) }),
  );
  lessor.subscribe((ev) => trace.push({ t: clock.now(), ev: JSON.parse(JSON.stringify(ev, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))) }));
  const drive = random.fork('scenario');
  const ids: bigint[] = [];
  for (let step = 0; step < 400; step++) {
    const op = drive.nextInt(0, 9);
    const key = utf8(`k${drive.nextInt(0, 30)}`);
    if (op <= 1) ids.push(lessor.grant(0n, drive.nextInt(1, 8)).id);
    else if (op <= 4 && ids.length > 0) {
      const id = drive.pick(ids);
      if (lessor.exists(id)) store.put({ key, value: utf8(String(step)), lease: id });
    } else if (op === 5 && ids.length > 0) trace.push({ ka: lessor.keepAlive(drive.pick(ids)) });
    else if (op === 6 && ids.length > 0) {
      const id = drive.pick(ids);
      if (lessor.exists(id)) lessor.revoke(id);
    } else if (op === 7) store.put({ key, value: utf8('plain') });
    else if (op === 8) store.deleteRange({ key });
    else clock.advance(drive.nextInt(0, 1500));
  }
  clock.advance(20_000);
  return JSON.stringify(trace);
}

test('the same seeded scenario gives a byte-identical event trace; another seed differs', () => {
  const a = scenario(7);
  const b = scenario(7);
  assert.ok(a.length > 1000);
  assert.ok(a.includes('"reason":"expire"'), 'the scenario exercises expiry');
  assert.equal(a, b);
  assert.notEqual(scenario(8), a);
});
