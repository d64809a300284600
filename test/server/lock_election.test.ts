/**
 * Lock and Election services (etcd's v3lock / v3election) on a virtual clock: ordering and blocking, the
 * watch sync step that serves a waiter, lease expiry, cancellation, every error (code and message as
 * etcd 3.4.23 answers them), and Observe's stream.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GrpcCode, type GrpcError } from '../../src/index.js';
import type { messages as M } from '../../src/index.js';
import { B, hdr, kv, newSim } from './helpers.js';
import { thrown } from '../cluster/helpers.js';

/** Lets pending promise callbacks run (one macrotask turn; no time passes on the virtual clock). */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A promise's state after one turn. */
async function state<T>(p: Promise<T>): Promise<{ done: true; value: T } | { done: false } | { done: true; error: GrpcError }> {
  let s: { done: true; value: T } | { done: false } | { done: true; error: GrpcError } = { done: false };
  p.then(
    (value) => (s = { done: true, value }),
    (error: GrpcError) => (s = { done: true, error }),
  );
  await turn();
  return s;
}

async function rejection(p: Promise<unknown>): Promise<{ code: number; details: string; message: string }> {
  try {
    await p;
  } catch (err) {
    const e = err as GrpcError;
    assert.equal(e.constructor, Error);
    return { code: e.code, details: e.details, message: e.message };
  }
  assert.fail('expected a rejection');
}

const hex = (id: string): string => BigInt(id).toString(16);

test('lock: the first holder gets name/<lease hex> bound to its lease at once; the same lease reuses its key', async () => {
  const sim = newSim();
  const s = sim.services;
  s.lease.leaseGrant({ ID: '3706922306391414024', TTL: '60' });
  s.kv.put({ key: B('x'), value: B('1') }); // rev 2
  const r = await s.lock.lock({ name: B('l'), lease: '3706922306391414024' });
  assert.deepStrictEqual(r, { header: hdr(3), key: B('l/3371a232926e9508') });
  assert.deepStrictEqual(s.kv.range({ key: B('l/3371a232926e9508') }).kvs, [kv('l/3371a232926e9508', 3, 3, 1, '', '3706922306391414024')]);
  // Again with the same lease: the key is not written again; the header is the current revision.
  assert.deepStrictEqual(await s.lock.lock({ name: B('l'), lease: '3706922306391414024' }), { header: hdr(3), key: B('l/3371a232926e9508') });
  assert.equal(sim.mvcc.currentRevision, 3);
  // Names are bytes: an empty name locks under "/", a trailing slash is kept.
  assert.deepStrictEqual((await s.lock.lock({ name: B(''), lease: '3706922306391414024' })).key, B('/3371a232926e9508'));
  assert.deepStrictEqual((await s.lock.lock({ name: B('q/'), lease: '3706922306391414024' })).key, B('q//3371a232926e9508'));
  sim.close();
});

test('lock: holders are served in create order; a waiter is answered at the watch sync step with the header of its last read', async () => {
  const sim = newSim();
  const s = sim.services;
  for (const id of ['10', '11', '12']) s.lease.leaseGrant({ ID: id, TTL: '60' });
  assert.deepStrictEqual(await s.lock.lock({ name: B('l'), lease: '10' }), { header: hdr(2), key: B('l/a') });
  const b = s.lock.lock({ name: B('l'), lease: '11' });
  const c = s.lock.lock({ name: B('l'), lease: '12' });
  assert.deepStrictEqual(await state(b), { done: false });
  assert.deepStrictEqual(await state(c), { done: false });
  // Both keys are in the store, each waiting on the key created just before it.
  assert.deepStrictEqual(
    s.kv.range({ key: B('l/'), range_end: B('l0') }).kvs.map((k) => [k.key.toString(), k.create_revision]),
    [['l/a', '2'], ['l/b', '3'], ['l/c', '4']],
  );
  s.kv.put({ key: B('y'), value: B('1') }); // rev 5
  assert.deepStrictEqual(s.lock.unlock({ key: B('l/a') }), { header: hdr(6) });
  // The waiters watch from a past revision: unsynced until the next sync step (100 ms), as in etcd.
  assert.deepStrictEqual(await state(b), { done: false });
  sim.server.advance(100);
  assert.deepStrictEqual(await state(b), { done: true, value: { header: hdr(6), key: B('l/b') } });
  assert.deepStrictEqual(await state(c), { done: false });
  // c's watcher is synced now: b's unlock reaches it at the next delivery point, no sync step needed.
  s.lock.unlock({ key: B('l/b') });
  sim.server.flush();
  assert.deepStrictEqual(await state(c), { done: true, value: { header: hdr(7), key: B('l/c') } });
  sim.close();
});

test('lock: a waiter whose predecessor is not the holder waits for every older key, one at a time', async () => {
  const sim = newSim();
  const s = sim.services;
  for (const id of ['10', '11', '12']) s.lease.leaseGrant({ ID: id, TTL: '60' });
  await s.lock.lock({ name: B('l'), lease: '10' });
  const b = s.lock.lock({ name: B('l'), lease: '11' });
  const c = s.lock.lock({ name: B('l'), lease: '12' });
  sim.server.advance(100);
  // The middle waiter goes away first: c still waits for a.
  s.kv.deleteRange({ key: B('l/b') });
  sim.server.advance(100);
  assert.deepStrictEqual(await state(c), { done: false });
  s.lock.unlock({ key: B('l/a') });
  sim.server.flush();
  assert.deepStrictEqual(await state(c), { done: true, value: { header: hdr(6), key: B('l/c') } });
  // b's own key was deleted while it waited: etcd's Mutex does not look at it again and answers all the same.
  assert.deepStrictEqual(await state(b), { done: true, value: { header: hdr(6), key: B('l/b') } });
  sim.close();
});

test('lock: an expiring lease releases the lock to the next waiter', async () => {
  const sim = newSim();
  const s = sim.services;
  s.lease.leaseGrant({ ID: '1', TTL: '5' });
  s.lease.leaseGrant({ ID: '2', TTL: '60' });
  await s.lock.lock({ name: B('job'), lease: '1' });
  const next = s.lock.lock({ name: B('job'), lease: '2' });
  sim.server.advance(4_900);
  assert.deepStrictEqual(await state(next), { done: false });
  sim.server.advance(1_000); // the lessor's expiry check deletes job/1 (rev 4)
  assert.deepStrictEqual(await state(next), { done: true, value: { header: hdr(4), key: B('job/2') } });
  sim.close();
});

test('lock: a canceled wait deletes its key (a reused one too) and rejects CANCELLED, or with the signal\'s gRPC error', async () => {
  const sim = newSim();
  const s = sim.services;
  s.lease.leaseGrant({ ID: '1', TTL: '60' });
  s.lease.leaseGrant({ ID: '2', TTL: '60' });
  await s.lock.lock({ name: B('l'), lease: '1' });
  const ac = new AbortController();
  const waiting = s.lock.lock({ name: B('l'), lease: '2' }, { signal: ac.signal });
  assert.equal(s.kv.range({ key: B('l/2') }).count, '1');
  ac.abort();
  assert.deepStrictEqual(await rejection(waiting), { code: GrpcCode.CANCELLED, details: 'Cancelled on client', message: '1 CANCELLED: Cancelled on client' });
  assert.equal(s.kv.range({ key: B('l/2') }).count, '0');
  // The watcher is gone with it.
  assert.equal(sim.watchable.synced.size + sim.watchable.unsynced.size, 0);
  // A second Lock by the same lease reuses l/2 (created now, waits); its deadline deletes it as well.
  s.kv.put({ key: B('l/2'), value: B(''), lease: '2' });
  const ac2 = new AbortController();
  const again = s.lock.lock({ name: B('l'), lease: '2' }, { signal: ac2.signal });
  const deadline = Object.assign(new Error('4 DEADLINE_EXCEEDED: context deadline exceeded'), { code: 4, details: 'context deadline exceeded', metadata: { get: () => [], getMap: () => ({}) } });
  ac2.abort(deadline);
  assert.deepStrictEqual(await rejection(again), { code: 4, details: 'context deadline exceeded', message: '4 DEADLINE_EXCEEDED: context deadline exceeded' });
  assert.equal(s.kv.range({ key: B('l/2') }).count, '0');
  // Already aborted: nothing is written.
  const rev = sim.mvcc.currentRevision;
  assert.equal((await rejection(s.lock.lock({ name: B('l'), lease: '2' }, { signal: ac.signal }))).code, GrpcCode.CANCELLED);
  assert.equal(sim.mvcc.currentRevision, rev);
  sim.close();
});

test('lock errors and lease 0: UNKNOWN with etcd\'s message; lease 0 is granted a 60 s lease nobody keeps alive', async () => {
  const sim = newSim();
  const s = sim.services;
  assert.deepStrictEqual(await rejection(s.lock.lock({ name: B('l'), lease: '12345' })), {
    code: GrpcCode.UNKNOWN,
    details: 'etcdserver: requested lease not found',
    message: '2 UNKNOWN: etcdserver: requested lease not found',
  });
  assert.equal((await rejection(s.lock.lock({ name: B('l'), lease: '-1' }))).details, 'etcdserver: requested lease not found');
  assert.deepStrictEqual(thrown(() => s.lock.unlock({ key: B('') })), { code: GrpcCode.UNKNOWN, details: 'etcdserver: key is not provided' });
  assert.deepStrictEqual(s.lock.unlock({ key: B('nope') }), { header: hdr(1) }); // nothing to delete: no new revision
  const r = await s.lock.lock({ name: B('z'), lease: '0' });
  const [lease] = s.lease.leaseLeases().leases;
  assert.ok(lease !== undefined);
  assert.deepStrictEqual(r, { header: hdr(2), key: B(`z/${hex(lease.ID)}`) });
  assert.deepStrictEqual(s.lease.leaseTimeToLive({ ID: lease.ID }).grantedTTL, '60');
  sim.server.advance(60_500);
  assert.equal(s.kv.range({ key: B('z/'), range_end: B('z0') }).count, '0');
  // A request no protobuf decoder would produce is refused as the other services refuse it.
  assert.equal((await rejection(s.lock.lock({ name: B('l'), lease: 'abc' }))).code, GrpcCode.INVALID_ARGUMENT);
  sim.close();
});

test('election: campaign, leader, proclaim, resign hand leadership over in create order', async () => {
  const sim = newSim();
  const s = sim.services;
  const A = '5190295433668864776';
  const Bl = '5190295433668864778';
  s.lease.leaseGrant({ ID: A, TTL: '60' });
  s.lease.leaseGrant({ ID: Bl, TTL: '60' });
  assert.deepStrictEqual(thrown(() => s.election.leader({ name: B('e') })), { code: GrpcCode.UNKNOWN, details: 'election: no leader' });
  const a = await s.election.campaign({ name: B('e'), lease: A, value: B('a1') });
  const aKey = `e/${hex(A)}`;
  assert.deepStrictEqual(a, { header: hdr(2), leader: { name: B('e'), key: B(aKey), rev: '2', lease: A } });
  // Campaigning again with the same lease resumes: same value, nothing written; a new value is proclaimed.
  assert.deepStrictEqual(await s.election.campaign({ name: B('e'), lease: A, value: B('a1') }), a);
  assert.deepStrictEqual(await s.election.campaign({ name: B('e'), lease: A, value: B('a2') }), a);
  assert.deepStrictEqual(s.election.leader({ name: B('e') }), { header: hdr(3), kv: kv(aKey, 2, 3, 2, 'a2', A) });
  const b = s.election.campaign({ name: B('e'), lease: Bl, value: B('b1') }); // rev 4, waits
  assert.deepStrictEqual(await state(b), { done: false });
  assert.deepStrictEqual(s.election.proclaim({ leader: a.leader, value: B('a3') }), { header: hdr(5) });
  assert.deepStrictEqual(thrown(() => s.election.proclaim({ leader: { ...a.leader, rev: '1' }, value: B('zz') })), {
    code: GrpcCode.UNKNOWN,
    details: 'election: not leader',
  });
  // Proclaim checks the key's create revision only, not that it leads: a waiting candidate may proclaim.
  const bKey = { name: B('e'), key: B(`e/${hex(Bl)}`), rev: '4', lease: Bl };
  assert.deepStrictEqual(s.election.proclaim({ leader: bKey, value: B('b2') }), { header: hdr(6) });
  // A stale Resign changes nothing and is no error.
  assert.deepStrictEqual(s.election.resign({ leader: { ...a.leader, rev: '1' } }), { header: hdr(6) });
  assert.deepStrictEqual(s.election.resign({ leader: a.leader }), { header: hdr(7) });
  sim.server.advance(100);
  // The campaign's answer carries its Txn's header, not the revision at which it won.
  assert.deepStrictEqual(await state(b), { done: true, value: { header: hdr(4), leader: bKey } });
  assert.deepStrictEqual(s.election.leader({ name: B('e') }), { header: hdr(7), kv: kv(`e/${hex(Bl)}`, 4, 6, 2, 'b2', Bl) });
  sim.close();
});

test('election errors: missing leader field, empty leader key, missing lease — all UNKNOWN with etcd\'s messages', async () => {
  const sim = newSim();
  const s = sim.services;
  const missing = { code: GrpcCode.UNKNOWN, details: '"leader" field must be provided' };
  assert.deepStrictEqual(thrown(() => s.election.proclaim({ value: B('v') })), missing);
  assert.deepStrictEqual(thrown(() => s.election.resign({})), missing);
  assert.deepStrictEqual(thrown(() => s.election.resign({ leader: null })), missing);
  s.lease.leaseGrant({ ID: '1', TTL: '60' });
  const notProvided = { code: GrpcCode.UNKNOWN, details: 'etcdserver: key is not provided' };
  assert.deepStrictEqual(thrown(() => s.election.resign({ leader: { lease: '1' } })), notProvided);
  assert.deepStrictEqual(thrown(() => s.election.proclaim({ leader: { lease: '1' }, value: B('x') })), notProvided);
  assert.deepStrictEqual(await rejection(s.election.campaign({ name: B('e'), lease: '777', value: B('v') })), {
    code: GrpcCode.UNKNOWN,
    details: 'etcdserver: requested lease not found',
    message: '2 UNKNOWN: etcdserver: requested lease not found',
  });
  // Lease 0 campaigns on a fresh 60 s lease.
  const r = await s.election.campaign({ name: B('e'), lease: '0', value: B('z') });
  const [lease] = s.lease.leaseLeases().leases.filter((l) => l.ID !== '1');
  assert.ok(lease !== undefined);
  assert.deepStrictEqual(r.leader, { name: B('e'), key: B(`e/${hex(lease.ID)}`), rev: String(sim.mvcc.currentRevision), lease: lease.ID });
  sim.close();
});

test('election: a canceled campaign resigns; the next candidate was never blocked by it', async () => {
  const sim = newSim();
  const s = sim.services;
  for (const id of ['1', '2', '3']) s.lease.leaseGrant({ ID: id, TTL: '60' });
  await s.election.campaign({ name: B('e'), lease: '1', value: B('one') });
  const ac = new AbortController();
  const two = s.election.campaign({ name: B('e'), lease: '2', value: B('two') }, { signal: ac.signal });
  const three = s.election.campaign({ name: B('e'), lease: '3', value: B('three') });
  sim.server.advance(100);
  ac.abort();
  assert.equal((await rejection(two)).code, GrpcCode.CANCELLED);
  assert.equal(s.kv.range({ key: B('e/2') }).count, '0');
  s.election.resign({ leader: { name: B('e'), key: B('e/1'), rev: '2', lease: '1' } });
  sim.server.flush();
  assert.deepStrictEqual(await state(three), {
    done: true,
    value: { header: hdr(4), leader: { name: B('e'), key: B('e/3'), rev: '4', lease: '3' } },
  });
  sim.close();
});

test('observe: the first leader once one is put (header at its mod revision), its proclaims, the next leader, then nothing after cancel', async () => {
  const sim = newSim();
  const s = sim.services;
  for (const id of ['10', '11']) s.lease.leaseGrant({ ID: id, TTL: '60' });
  const obs = s.election.observe({ name: B('e') });
  assert.deepStrictEqual(obs.take(), []);
  const a = await s.election.campaign({ name: B('e'), lease: '10', value: B('a1') }); // rev 2
  s.kv.put({ key: B('unrelated'), value: B('x') }); // rev 3
  // Observe watches the prefix from the revision it read (1): a past revision, served at the sync step.
  assert.deepStrictEqual(obs.take(), []);
  sim.server.advance(100);
  assert.deepStrictEqual(obs.take(), [{ header: hdr(2), kv: kv('e/a', 2, 2, 1, 'a1', '10') }]);
  const b = s.election.campaign({ name: B('e'), lease: '11', value: B('b1') }); // rev 4
  s.election.proclaim({ leader: a.leader, value: B('a2') }); // rev 5
  sim.server.advance(100);
  assert.deepStrictEqual(obs.take(), [{ header: hdr(5), kv: kv('e/a', 2, 5, 2, 'a2', '10') }]);
  s.election.resign({ leader: a.leader }); // rev 6
  sim.server.advance(100);
  assert.deepStrictEqual(obs.take(), [{ header: hdr(6), kv: kv('e/b', 4, 4, 1, 'b1', '11') }]);
  assert.equal((await state(b)).done, true);
  // A second observer of a led election starts with the current leader at the current revision.
  const second = s.election.observe({ name: B('e') });
  assert.deepStrictEqual(second.take(), [{ header: hdr(6), kv: kv('e/b', 4, 4, 1, 'b1', '11') }]);
  // The leader's lease is revoked: no leader, nothing sent; the next PUT under the prefix is the new leader.
  s.lease.leaseRevoke({ ID: '11' }); // rev 7
  sim.server.advance(100);
  assert.deepStrictEqual(obs.take(), []);
  s.kv.put({ key: B('e/raw'), value: B('r') }); // rev 8
  sim.server.advance(100);
  assert.deepStrictEqual(obs.take(), [{ header: hdr(8), kv: kv('e/raw', 8, 8, 1, 'r') }]);
  assert.deepStrictEqual(second.take(), [{ header: hdr(8), kv: kv('e/raw', 8, 8, 1, 'r') }]);
  const ends: Array<GrpcError | undefined> = [];
  obs.onEnd((err) => ends.push(err));
  obs.cancel();
  assert.deepStrictEqual(ends.map((e) => e?.code), [GrpcCode.CANCELLED]);
  second.end();
  s.kv.put({ key: B('e/raw'), value: B('r2') });
  sim.server.advance(100);
  assert.deepStrictEqual(obs.take(), []);
  assert.equal(sim.watchable.synced.size + sim.watchable.unsynced.size, 0);
  assert.deepStrictEqual(s.election.calls(), []);
  sim.close();
});

test('observe: a watch canceled by compaction ends the stream without an error', async () => {
  const sim = newSim();
  const s = sim.services;
  const obs = s.election.observe({ name: B('e') }); // watches e/ from revision 1
  s.kv.put({ key: B('x'), value: B('1') });
  s.kv.put({ key: B('x'), value: B('2') });
  s.kv.compact({ revision: 3 });
  const ends: Array<GrpcError | undefined> = [];
  obs.onEnd((err) => ends.push(err));
  sim.server.advance(100);
  assert.deepStrictEqual(ends, [undefined]);
  assert.equal(obs.ended, true);
  sim.close();
});

test('raw client: client.lock and client.election, with strings for bytes and observe as an async iterable', async () => {
  const sim = newSim();
  const c = sim.client();
  await c.lease.leaseGrant({ ID: '1', TTL: '60' });
  await c.lease.leaseGrant({ ID: '2', TTL: '60' });
  const held = await c.lock.lock({ name: 'res', lease: '1' });
  assert.deepStrictEqual(held.key, B('res/1'));
  const ac = new AbortController();
  const waiting = c.lock.lock({ name: 'res', lease: '2' }, { signal: ac.signal });
  ac.abort();
  assert.equal((await rejection(waiting)).code, GrpcCode.CANCELLED);
  assert.deepStrictEqual(await c.lock.unlock({ key: 'res/1' }), { header: hdr(5) }); // res/2 was deleted at 4
  await assert.rejects(c.election.leader({ name: 'e' }), { code: GrpcCode.UNKNOWN, details: 'election: no leader' });
  const obs = c.election.observe({ name: 'e' });
  const won = await c.election.campaign({ name: 'e', lease: '2', value: 'v1' });
  await c.election.proclaim({ leader: won.leader, value: 'v2' });
  // Two sync steps: the prefix watch (from a past revision) finds v1; the leader key's watch then starts
  // at v1's revision + 1, a past revision again, and finds v2 (etcd's Observe re-reads it the same way).
  await sim.advance(200);
  const seen: M.LeaderResponse[] = [];
  for await (const r of obs) {
    seen.push(r);
    if (seen.length === 2) break;
  }
  assert.deepStrictEqual(
    seen.map((r) => r.kv.value.toString()),
    ['v1', 'v2'],
  );
  assert.deepStrictEqual(await c.election.resign({ leader: { ...won.leader, name: 'e' } }), { header: hdr(8) });
  c.close();
  sim.close();
});

test('auth: calls run as the caller; a release after a canceled wait runs without the caller\'s token, so it fails and the key stays (as on 3.4.23)', async () => {
  const sim = newSim({
    etcdVersion: '3.4',
    auth: {
      roles: [{ name: 'rw', permissions: [{ permType: 'READWRITE', key: 'l', rangeEnd: 'm' }] }],
      users: [
        { name: 'root', password: 'r', roles: ['root'] },
        { name: 'u', password: 'p', roles: ['rw'] },
      ],
      enable: true,
    },
  });
  const s = sim.services;
  const root = { token: s.auth.authenticate({ name: 'root', password: 'r' }).token };
  s.lease.leaseGrant({ ID: '1', TTL: '60' }, root);
  s.lease.leaseGrant({ ID: '2', TTL: '60' }, root);
  assert.deepStrictEqual(await rejection(s.lock.lock({ name: B('l'), lease: '1' })), {
    code: GrpcCode.UNKNOWN,
    details: 'etcdserver: user name is empty',
    message: '2 UNKNOWN: etcdserver: user name is empty',
  });
  const u = { token: s.auth.authenticate({ name: 'u', password: 'p' }).token };
  assert.deepStrictEqual((await s.lock.lock({ name: B('l'), lease: '1' }, u)).key, B('l/1'));
  assert.equal((await rejection(s.lock.lock({ name: B('x'), lease: '1' }, u))).details, 'etcdserver: permission denied');
  const ac = new AbortController();
  const waiting = s.lock.lock({ name: B('l'), lease: '2' }, { ...u, signal: ac.signal });
  ac.abort();
  assert.equal((await rejection(waiting)).code, GrpcCode.CANCELLED);
  assert.deepStrictEqual(
    s.kv.range({ key: B('l'), range_end: B('m'), keys_only: true }, root).kvs.map((k) => k.key.toString()),
    ['l/1', 'l/2'],
  );
  sim.close();
});
