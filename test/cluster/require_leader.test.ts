/**
 * Calls that require a leader (clientv3's WithRequireLeader, `CallContext.requireLeader`) and a ReadIndex
 * across a leader change, on a simulated 3-member cluster, as etcd 3.4.23 treats them (v3rpc's
 * interceptors and monitorLeader; etcdserver's linearizable read loop). Virtual time, no sleeps.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createEtcdSim, GrpcCode, type GrpcError } from '../../src/index.js';
import { caught, rejection, thrown } from './helpers.js';

const B = (s: string): Uint8Array => new TextEncoder().encode(s);

/** How a stream ended so far: 'open', or its error (undefined for a clean end). */
function ending(call: { onEnd(fn: (err: GrpcError | undefined) => void): void }): { end: GrpcError | undefined | 'open' } {
  const s = { end: 'open' as GrpcError | undefined | 'open' };
  call.onEnd((err) => (s.end = err));
  return s;
}

const errOf = (e: GrpcError | undefined | 'open'): { code: number; details: string } | string =>
  typeof e === 'object' ? { code: e.code, details: e.details } : String(e);

const NO_LEADER = { code: GrpcCode.UNAVAILABLE, details: 'etcdserver: no leader' };

/** Moves time in heartbeat steps until `check` holds; returns the instant. */
async function advanceUntil(sim: { advance(ms: number): Promise<void>; clock: { now(): number } }, check: () => boolean, limitMs = 20_000): Promise<number> {
  for (let waited = 0; !check(); waited += 100) {
    assert.ok(waited < limitMs, 'condition not reached');
    await sim.advance(100);
  }
  return sim.clock.now();
}

test('a watch that requires a leader is canceled after 3 election timeouts without one; a plain watch stays; new ones are refused', async () => {
  const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 11 });
  const m2 = sim.services({ member: 2 });
  const observe = ending(m2.election.observe({ name: B('e') }, { requireLeader: true }));
  const required = m2.watch({ requireLeader: true });
  const plain = m2.watch();
  const requiredEnd = ending(required);
  const plainEnd = ending(plain);
  required.write({ create_request: { key: B('k') } });
  plain.write({ create_request: { key: B('k') } });

  // With a leader, a call that requires one goes through (its own requests are not checked again).
  const held = caught(m2.lock.lock({ name: B('l0'), lease: '0' }, { requireLeader: true }));
  await sim.advance(0);
  assert.ok((await held).key.length > 0);

  sim.cluster.isolate(2); // without pre-vote (3.4's default) it campaigns alone: no leader
  const lost = await advanceUntil(sim, () => sim.cluster.status(2).leader === 0n);
  // Refused at once now: a new stream, a keep-alive stream, a unary call.
  assert.deepEqual(thrown(() => m2.watch({ requireLeader: true })), NO_LEADER);
  assert.deepEqual(thrown(() => m2.lease.leaseKeepAlive({ requireLeader: true })), NO_LEADER);
  assert.deepEqual(thrown(() => m2.election.observe({ name: B('e') }, { requireLeader: true })), NO_LEADER);
  const put = caught(m2.kv.put({ key: B('x'), value: B('1') }, { requireLeader: true }));
  const lock = caught(m2.lock.lock({ name: B('l'), lease: '0' }, { requireLeader: true }));
  await sim.advance(0);
  assert.deepEqual(await rejection(put), NO_LEADER);
  assert.deepEqual(await rejection(lock), NO_LEADER, "Lock's unary call too (etcd's unary interceptor runs before v3lock)");
  // The open stream lasts until the third look in a row (one per election timeout) finds no leader.
  const T = sim.cluster.electionTimeoutMs;
  await sim.advance(2 * T - 100 - (lost % T));
  assert.equal(requiredEnd.end, 'open');
  const canceledAt = await advanceUntil(sim, () => requiredEnd.end !== 'open');
  assert.ok(canceledAt - lost > 2 * T && canceledAt - lost <= 3 * T, `canceled ${canceledAt - lost} ms after the leader was lost`);
  assert.deepEqual(errOf(requiredEnd.end), NO_LEADER);
  assert.equal(plainEnd.end, 'open', 'a watch that did not require a leader stays');
  assert.deepEqual(errOf(observe.end), NO_LEADER, 'an Observe stream that required a leader ends the same way');

  sim.cluster.heal();
  await advanceUntil(sim, () => sim.cluster.status(2).leader !== 0n);
  const again = m2.watch({ requireLeader: true });
  assert.equal(again.ended, false);
  again.cancel();
  plain.cancel();
  sim.close();
});

test('a leader found again before the third look keeps the stream; a keep-alive stream that requires a leader is canceled the same way', async () => {
  const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 12 });
  const m1 = sim.services({ member: 1 });
  const w = m1.watch({ requireLeader: true });
  const wEnd = ending(w);
  sim.cluster.isolate(1);
  await advanceUntil(sim, () => sim.cluster.status(1).leader === 0n);
  sim.cluster.heal();
  await advanceUntil(sim, () => sim.cluster.status(1).leader !== 0n);
  await sim.advance(5000);
  assert.equal(wEnd.end, 'open');

  const ka = m1.lease.leaseKeepAlive({ requireLeader: true });
  const kaEnd = ending(ka);
  sim.cluster.isolate(1);
  await advanceUntil(sim, () => kaEnd.end !== 'open');
  assert.deepEqual(errOf(kaEnd.end), NO_LEADER);
  await advanceUntil(sim, () => wEnd.end !== 'open');
  sim.close();
});

test("a linearizable read waiting for its read index when the leader changes fails with etcd 3.4's `leader changed`", async () => {
  const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 13 });
  const m2 = sim.services({ member: 2 });
  const p = m2.kv.put({ key: B('k'), value: B('v') });
  await sim.advance(0);
  await p;
  const leader = sim.cluster.leader!;
  sim.cluster.pause(leader);
  const read = caught(m2.kv.range({ key: B('k') }));
  const start = sim.clock.now();
  await advanceUntil(sim, () => sim.cluster.leader !== undefined && sim.cluster.leader !== leader && sim.cluster.status(2).leader !== 0n);
  assert.deepEqual(await rejection(read), { code: GrpcCode.UNAVAILABLE, details: 'etcdserver: leader changed' });
  assert.ok(sim.clock.now() - start < sim.cluster.requestTimeoutMs, 'before the request timeout');
  // A read made after the change is served.
  const after = m2.kv.range({ key: B('k') });
  await sim.advance(0);
  assert.equal((await after).count, '1');
  sim.cluster.resume(leader);
  sim.close();
});

test('with pre-vote (3.5 and later) an isolated follower is a pre-candidate: no leader, so its require-leader streams are canceled too; the term stays', async () => {
  const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 14, preVote: true });
  const m2 = sim.services({ member: 2 });
  const w = ending(m2.watch({ requireLeader: true }));
  sim.cluster.isolate(2);
  await advanceUntil(sim, () => sim.cluster.status(2).leader === 0n);
  await advanceUntil(sim, () => w.end !== 'open');
  assert.deepEqual(errOf(w.end), NO_LEADER);
  assert.equal(sim.cluster.status(2).term, 2n, 'pre-vote: no term raised');
  sim.cluster.heal();
  await advanceUntil(sim, () => sim.cluster.status(2).leader !== 0n);
  assert.equal(sim.cluster.status(2).leader, sim.cluster.members[0]!.id, 'the leader kept leading');
  sim.close();
});
