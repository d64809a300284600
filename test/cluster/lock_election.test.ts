/**
 * etcd's Lock and Election services on a simulated 3-member cluster (virtual time, no sleeps): their
 * requests are the member's own, through Raft (writes proposed and applied on every member, reads through
 * ReadIndex), their waits watch the member's own store (late on a lagging follower), and their errors are
 * etcd's (a missing lease, no quorum, a crashed member, election errors).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createEtcdSim, GrpcCode } from '../../src/index.js';
import type { messages as M } from '../../src/index.js';
import { caught, rejection } from './helpers.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
const B = (s: string): Uint8Array => enc.encode(s);
const S = (b: Uint8Array | string | null | undefined): string => (typeof b === 'string' ? b : b == null ? '' : dec.decode(b));

/** A promise's state after the clients had a turn (no time passes). */
async function state<T>(p: Promise<T>, sim: { settle(): Promise<void> }): Promise<'pending' | 'resolved' | 'rejected'> {
  let s: 'pending' | 'resolved' | 'rejected' = 'pending';
  p.then(
    () => (s = 'resolved'),
    () => (s = 'rejected'),
  );
  await sim.settle();
  return s;
}

/** The keys under a prefix on member `i`'s own store (a serializable read: what that member applied). */
async function keysOn(sim: ReturnType<typeof newCluster>, i: number, prefix: string): Promise<string[]> {
  const end = B(prefix);
  end[end.length - 1]! += 1;
  const r = await sim.services({ member: i }).kv.range({ key: B(prefix), range_end: end, serializable: true });
  return r.kvs.map((kv) => S(kv.key));
}

function newCluster(applyLagMs: number[] = [0, 0, 0]) {
  return createEtcdSim({ members: 3, time: 'virtual', seed: 7, applyLagMs });
}

test('cluster lock: a second Lock on a lagging follower waits, and is answered once that member applied the release', async () => {
  const sim = newCluster([0, 0, 300]);
  const m0 = sim.services({ member: 0 });
  const m2 = sim.services({ member: 2 });
  const ids = sim.cluster.members.map((m) => String(m.id));
  const l1 = m0.lease.leaseGrant({ ID: '0', TTL: '60' });
  await sim.advance(0);
  const lease1 = (await l1).ID;
  const first = await m0.lock.lock({ name: B('job'), lease: lease1 });
  assert.equal(S(first.key), `job/${BigInt(lease1).toString(16)}`);
  assert.equal(first.header.member_id, ids[0]);
  // The lock key went through the log: every member holds it once it applied it.
  await sim.advance(300);
  for (const i of [0, 1, 2]) assert.deepEqual(await keysOn(sim, i, 'job/'), [S(first.key)], `member ${i}`);

  // Member 2's Lock (a session lease of its own: lease 0) waits behind the first holder.
  const second = caught(m2.lock.lock({ name: B('job'), lease: '0' }));
  await sim.advance(1000);
  assert.equal(await state(second, sim), 'pending');
  assert.equal((await keysOn(sim, 0, 'job/')).length, 2, 'its key is in the log');

  // The release commits at once; member 2 sees it 300 ms later, and only then answers.
  const unlocked = await m0.lock.unlock({ key: first.key });
  await sim.advance(250);
  assert.equal(await state(second, sim), 'pending', 'member 2 has not applied the release yet');
  await sim.advance(100);
  const won = await second;
  assert.equal(won.header.member_id, ids[2]);
  assert.ok(BigInt(won.header.revision) >= BigInt(unlocked.header.revision));
  assert.deepEqual(await keysOn(sim, 2, 'job/'), [S(won.key)]);
  sim.close();
});

test('cluster lock: a missing lease fails with etcd\'s error; Unlock of an empty key too', async () => {
  const sim = newCluster();
  const m1 = sim.services({ member: 1 });
  const p = caught(m1.lock.lock({ name: B('l'), lease: '12345' }));
  await sim.advance(0);
  assert.deepEqual(await rejection(p), { code: GrpcCode.UNKNOWN, details: 'etcdserver: requested lease not found' });
  const u = caught(m1.lock.unlock({ key: new Uint8Array(0) }));
  await sim.advance(0);
  assert.deepEqual(await rejection(u), { code: GrpcCode.UNKNOWN, details: 'etcdserver: key is not provided' });
  sim.close();
});

test('cluster lock: without a quorum the Lock fails as the member\'s other proposals do, code Unknown (v3lock\'s in-process client)', async () => {
  const sim = newCluster();
  const m2 = sim.services({ member: 2 });
  sim.cluster.isolate(2);
  const put = caught(m2.kv.put({ key: B('x'), value: B('1') }));
  const lock = caught(m2.lock.lock({ name: B('l'), lease: '0' }));
  await sim.advance(sim.cluster.requestTimeoutMs + 100);
  const putErr = await rejection(put);
  const lockErr = await rejection(lock);
  assert.equal(lockErr.code, GrpcCode.UNKNOWN);
  assert.equal(lockErr.details, putErr.details);
  sim.cluster.heal();
  await sim.advance(3000);
  assert.deepEqual(await keysOn(sim, 0, 'l/'), [], 'no lock key: the session lease grant itself failed');
  sim.close();
});

test('cluster lock: a canceled wait releases its key through the log; a crash breaks the wait and leaves the key to its lease', async () => {
  const sim = newCluster();
  const m0 = sim.services({ member: 0 });
  const m1 = sim.services({ member: 1 });
  const held = await (async () => {
    const p = caught(m0.lock.lock({ name: B('l'), lease: '0' }));
    await sim.advance(0);
    return p;
  })();
  const ac = new AbortController();
  const waiting = caught(m1.lock.lock({ name: B('l'), lease: '0' }, { signal: ac.signal }));
  await sim.advance(100);
  assert.equal((await keysOn(sim, 2, 'l/')).length, 2);
  ac.abort();
  assert.equal((await rejection(waiting)).code, GrpcCode.CANCELLED);
  await sim.advance(100);
  for (const i of [0, 1, 2]) assert.deepEqual(await keysOn(sim, i, 'l/'), [S(held.key)], `member ${i}`);

  // A Lock waiting on member 1 when it crashes: the call breaks as its connection does; its key stays.
  const doomed = caught(m1.lock.lock({ name: B('l'), lease: '0' }));
  await sim.advance(100);
  sim.cluster.crash(1);
  assert.deepEqual(await rejection(doomed), { code: GrpcCode.UNAVAILABLE, details: 'transport is closing' });
  assert.equal((await keysOn(sim, 0, 'l/')).length, 2);
  sim.close();
});

test('cluster lock: a waiter on a follower is served across a leader change', async () => {
  const sim = newCluster();
  const m0 = sim.services({ member: 0 });
  const m2 = sim.services({ member: 2 });
  const p = caught(m0.lock.lock({ name: B('l'), lease: '0' }));
  await sim.advance(0);
  const first = await p;
  const second = caught(m2.lock.lock({ name: B('l'), lease: '0' }));
  await sim.advance(100);
  assert.ok(sim.cluster.moveLeader(1));
  await sim.advance(100);
  assert.equal(await state(second, sim), 'pending');
  const u = caught(sim.services({ member: 1 }).lock.unlock({ key: first.key }));
  await sim.advance(0);
  assert.equal((await u).header.raft_term, '3');
  // The waiter's watch (opened at a past revision) is served by member 2's watch sync step.
  await sim.advance(100);
  const won = await second;
  assert.equal(won.header.member_id, String(sim.cluster.members[2]!.id));
  assert.equal(won.header.raft_term, '3', 'the header of the read that saw no older key, after the leader changed');
  sim.close();
});

test('cluster election: campaign, leader, proclaim, observe and resign across members', async () => {
  const sim = newCluster([0, 0, 200]);
  const m1 = sim.services({ member: 1 });
  const m2 = sim.services({ member: 2 });
  const none = caught(m2.election.leader({ name: B('e') }));
  await sim.advance(0);
  assert.deepEqual(await rejection(none), { code: GrpcCode.UNKNOWN, details: 'election: no leader' });

  const c1 = caught(m1.election.campaign({ name: B('e'), value: B('a'), lease: '0' }));
  await sim.advance(0);
  const leader1 = (await c1).leader!;
  const obs = m2.election.observe({ name: B('e') });
  const seen: M.LeaderResponse[] = [];
  obs.onResponse((rs) => seen.push(...rs));
  const c2 = caught(m2.election.campaign({ name: B('e'), value: B('b'), lease: '0' }));
  await sim.advance(300);
  assert.equal(await state(c2, sim), 'pending');
  const l = caught(m2.election.leader({ name: B('e') }));
  await sim.advance(200);
  assert.equal(S((await l).kv!.value), 'a');
  assert.equal((await l).header.member_id, String(sim.cluster.members[2]!.id));

  const pr = caught(m1.election.proclaim({ leader: leader1, value: B('a2') }));
  await sim.advance(0);
  await pr;
  await sim.advance(300);
  assert.deepEqual(
    seen.map((r) => S(r.kv!.value)),
    ['a', 'a2'],
  );
  // Resign through member 1; member 2 (200 ms behind) becomes leader once it applied the delete.
  const rs = caught(m1.election.resign({ leader: leader1 }));
  await sim.advance(0);
  await rs;
  await sim.advance(150);
  assert.equal(await state(c2, sim), 'pending');
  await sim.advance(100);
  const leader2 = (await c2).leader!;
  await sim.advance(100);
  assert.deepEqual(
    seen.map((r) => S(r.kv!.value)),
    ['a', 'a2', 'b'],
  );
  // The former leader's key is gone: its proclaim fails.
  const stale = caught(m1.election.proclaim({ leader: leader1, value: B('x') }));
  await sim.advance(0);
  assert.deepEqual(await rejection(stale), { code: GrpcCode.UNKNOWN, details: 'election: not leader' });
  assert.notEqual(leader2.key, undefined);
  obs.cancel();
  sim.close();
});

test('cluster lock and election through the raw client pinned to a member', async () => {
  const sim = newCluster();
  const c2 = sim.client({ member: 2 });
  const p = caught(c2.lock.lock({ name: 'rl', lease: '0' }));
  await sim.advance(0);
  const r = await p;
  assert.equal(r.header.member_id, String(sim.cluster.members[2]!.id));
  const u = caught(c2.lock.unlock({ key: r.key }));
  await sim.advance(0);
  await u;
  const c = caught(c2.election.campaign({ name: 'el', value: 'v', lease: '0' }));
  await sim.advance(0);
  assert.equal(S((await c).leader!.name), 'el');
  sim.close();
});
