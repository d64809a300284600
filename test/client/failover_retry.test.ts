/**
 * clientv3 3.4's retry rule (src/client/retry_policy.ts), the one the failover raw client and a scenario's
 * etcdctl share, and the failover client's token refresh: a call refused with `invalid auth token` is sent
 * again after a new Authenticate, as retry_interceptor.go's shouldRefreshToken / refreshToken do; a failed
 * Authenticate (a wrong password) ends the call. Virtual time, no sleeps.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createEtcdSim, type EtcdClusterSim, type messages as M } from '../../src/index.js';
import { isRepeatable, isSafeRetry, retryBackoffMs, retryPolicyOf, shouldRefreshToken } from '../../src/client/retry_policy.js';
import { grpcError } from '../../src/server/errors.js';
import { GrpcCode } from '../../src/etcd/index.js';
import { SimRandom } from '../../src/sim/index.js';

const dec = new TextDecoder();

/** The index of the member a response header names. */
function servedBy(sim: EtcdClusterSim, header: { member_id: string | number } | null | undefined): number {
  const i = sim.cluster.members.findIndex((m) => String(m.id) === String(header?.member_id));
  assert.ok(i >= 0, `no member ${String(header?.member_id)}`);
  return i;
}

/** Settles a promise into what it gave or the error's message, so a test can advance time meanwhile. */
function outcome<T>(p: Promise<T>): Promise<{ ok: T } | { err: string }> {
  return p.then(
    (ok) => ({ ok }),
    (e: Error) => ({ err: e.message }),
  );
}

/** A cluster with auth on: user root (password pw) with the root role. */
async function withAuth(seed: number): Promise<{ sim: EtcdClusterSim; admin: ReturnType<EtcdClusterSim['client']> }> {
  const sim = createEtcdSim({ members: 3, time: 'virtual', seed });
  const admin = sim.client({ member: 2, client: 'admin' });
  await admin.auth.userAdd({ name: 'root', password: 'pw' });
  await admin.auth.userGrantRole({ user: 'root', role: 'root' });
  await admin.auth.authEnable();
  await admin.authenticate('root', 'pw');
  return { sim, admin };
}

test('retry.go\'s table and isSafeRetry: repeatable calls go again on Unavailable, others only unsent; never after a deadline', () => {
  for (const [svc, m] of [['kv', 'range'], ['lease', 'leaseGrant'], ['lease', 'leaseRevoke'], ['maintenance', 'status'], ['cluster', 'memberList'], ['auth', 'userGet']] as const) {
    assert.ok(isRepeatable(svc, m), `${svc}.${m}`);
  }
  for (const [svc, m] of [['kv', 'put'], ['kv', 'txn'], ['kv', 'deleteRange'], ['kv', 'compact'], ['auth', 'authenticate'], ['auth', 'userAdd'], ['lock', 'lock']] as const) {
    assert.ok(!isRepeatable(svc, m), `${svc}.${m}`);
  }
  const leaderChanged = grpcError(GrpcCode.UNAVAILABLE, 'etcdserver: leader changed');
  assert.equal(isSafeRetry(retryPolicyOf('kv', 'range'), leaderChanged), true);
  assert.equal(isSafeRetry(retryPolicyOf('kv', 'txn'), leaderChanged), false);
  assert.equal(isSafeRetry('nonRepeatable', grpcError(GrpcCode.UNAVAILABLE, 'there is no address available')), true);
  assert.equal(isSafeRetry('repeatable', grpcError(GrpcCode.DEADLINE_EXCEEDED, 'context deadline exceeded')), false);
  assert.equal(isSafeRetry('repeatable', grpcError(GrpcCode.INVALID_ARGUMENT, 'etcdserver: key is not provided')), false);
  // shouldRefreshToken: an invalid token always; an empty user name only with credentials.
  assert.equal(shouldRefreshToken(grpcError(GrpcCode.UNAUTHENTICATED, 'etcdserver: invalid auth token'), false), true);
  assert.equal(shouldRefreshToken(grpcError(GrpcCode.INVALID_ARGUMENT, 'etcdserver: user name is empty'), false), false);
  assert.equal(shouldRefreshToken(grpcError(GrpcCode.INVALID_ARGUMENT, 'etcdserver: user name is empty'), true), true);
  assert.equal(shouldRefreshToken(grpcError(GrpcCode.INVALID_ARGUMENT, 'etcdserver: authentication failed, invalid user ID or password'), true), false);
});

test('roundRobinQuorumBackoff: 25 ms ±10 % after each round over a quorum, none in between; seeded', () => {
  const r = new SimRandom(3);
  // Three endpoints: a quorum of two, so attempts 2, 4, 6, ... wait; 1, 3, 5 do not.
  const waits = Array.from({ length: 40 }, (_, i) => retryBackoffMs(i + 1, 3, r));
  waits.forEach((w, i) => assert.equal(w === 0, (i + 1) % 2 !== 0, `attempt ${i + 1}: ${w}`));
  const nonZero = waits.filter((w) => w > 0);
  for (const w of nonZero) assert.ok(w >= 23 && w <= 28, `jitterUp(25 ms, 0.1) rounded: ${w}`);
  assert.ok(new Set(nonZero).size > 1, `the jitter varies: ${nonZero.join(',')}`);
  // One endpoint (etcdctl): a wait before every retry, never before the first attempt.
  assert.equal(retryBackoffMs(0, 1, r), 0);
  assert.ok(retryBackoffMs(1, 1, r) > 0);
  // The same seed, the same waits.
  const again = new SimRandom(3);
  assert.deepEqual(Array.from({ length: 40 }, (_, i) => retryBackoffMs(i + 1, 3, again)), waits);
});

test('raw client over endpoints: after failing over to a member that forgot its simple token, the next call re-authenticates and goes through', async () => {
  const { sim, admin } = await withAuth(21);
  const c = sim.client({ endpoints: [0, 1] });
  const token = await c.authenticate('root', 'pw');
  await c.kv.put({ key: 'k', value: 'v' });
  // Member 1 restarts: etcd's simple tokens live in a member's memory only, so it no longer knows c's.
  sim.cluster.crash(1);
  sim.cluster.restart(1);
  await sim.advance(500);
  await assert.rejects(sim.services({ member: 1, client: 'probe' }).kv.range({ key: new TextEncoder().encode('k') }, { token }), /invalid auth token/);
  // Member 0 goes down (and members 1 and 2 elect a leader): c fails over to member 1, which refuses the
  // token; c authenticates there again and sends the call again — a Put too, whatever its retry policy.
  sim.cluster.crash(0);
  await sim.advance(3000);
  assert.ok(sim.cluster.leader !== undefined && sim.cluster.leader.index !== 0);
  const put = outcome(c.kv.put({ key: 'k', value: 'w' }));
  await sim.advance(100);
  const p = await put;
  assert.ok('ok' in p, `the put went through: ${JSON.stringify(p)}`);
  assert.equal(servedBy(sim, p.ok.header), 1);
  // The new token serves the next calls: no further Authenticate (a proposal would raise the raft index).
  const index = sim.cluster.status(1).raftIndex;
  const r = await c.kv.range({ key: 'k' });
  assert.equal(dec.decode(r.kvs[0]!.value), 'w');
  assert.equal(servedBy(sim, r.header), 1);
  assert.equal(sim.cluster.status(1).raftIndex, index);
  // A client that never logged in sends no token and has no credentials to refresh: etcd's refusal ends its call.
  const other = sim.client({ endpoints: [1], client: 'other' });
  const stale = outcome(other.kv.range({ key: 'k' }));
  await sim.advance(3000);
  assert.deepEqual(await stale, { err: '3 INVALID_ARGUMENT: etcdserver: user name is empty' });
  c.close();
  other.close();
  admin.close();
  sim.close();
});

test('raw client over endpoints: a refresh with a password that no longer holds is not retried forever; Authenticate\'s error ends the call', async () => {
  const { sim, admin } = await withAuth(22);
  const c = sim.client({ endpoints: [0, 1, 2] });
  await c.authenticate('root', 'pw');
  await c.kv.put({ key: 'k', value: 'v' });
  // The password changes: every member drops root's tokens; c's credentials still hold the old password.
  await admin.auth.userChangePassword({ name: 'root', password: 'pw2' });
  // The refused token, one Authenticate per endpoint, then its error: no backoff, no further attempt, so the
  // call ends without any time passing.
  let settled = false;
  const got = outcome(c.kv.range({ key: 'k' })).then((x) => {
    settled = true;
    return x;
  });
  await sim.settle();
  assert.ok(settled, 'answered at once, not after clientv3\'s 100 attempts');
  assert.deepEqual(await got, { err: '3 INVALID_ARGUMENT: etcdserver: authentication failed, invalid user ID or password' });
  // With the new password the client logs in again and goes on.
  await c.authenticate('root', 'pw2');
  assert.equal((await c.kv.range({ key: 'k' })).count, '1');
  c.close();
  admin.close();
  sim.close();
});

test('raw client over endpoints: a lease grant in flight on a member that crashes is sent again on another (repeatable); a put is not', async () => {
  const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 11 });
  const c = sim.client({ endpoints: [0, 1, 2] });
  await c.kv.put({ key: 'k', value: 'v' });
  await sim.settle();
  sim.cluster.pause(2);
  const grants = [0, 1, 2].map(() => outcome(c.lease.leaseGrant({ TTL: 30 })));
  const writes = [0, 1, 2].map((i) => outcome(c.kv.put({ key: `w${i}`, value: 'x' })));
  await sim.advance(100);
  // One grant and one write went to the paused member and are held there; crashing it breaks both.
  sim.cluster.crash(2);
  await sim.advance(100);
  for (const g of await Promise.all(grants)) {
    assert.ok('ok' in g, `every grant answered: ${JSON.stringify(g)}`);
    assert.notEqual(servedBy(sim, g.ok.header), 2);
  }
  const failed = (await Promise.all(writes)).filter((x) => 'err' in x);
  assert.equal(failed.length, 1);
  assert.match((failed[0] as { err: string }).err, /^14 UNAVAILABLE: transport is closing/);
  c.close();
  sim.close();
});

/** Authenticate proposals so far (the cluster's trace notes each proposal). */
function authenticates(sim: EtcdClusterSim): number {
  return sim.cluster.trace().filter((e) => e.event.startsWith('propose authenticate')).length;
}

test('raw client over endpoints with credentials: each watch stream open, first and on another member, authenticates first (clientv3 3.4.23\'s stream interceptor)', async () => {
  const { sim, admin } = await withAuth(23);
  const c = sim.client({ endpoints: [0, 1, 2] });
  await c.authenticate('root', 'pw');
  let n = authenticates(sim);
  const w = c.watch();
  const got: M.WatchResponse[] = [];
  w.on('data', (r) => got.push(r));
  w.create({ key: 'k' });
  await sim.settle();
  assert.equal(authenticates(sim), n + 1, 'one Authenticate before the stream opened');
  assert.equal(got.length, 1);
  assert.ok(got[0]!.created, 'the create waited for the stream and went out on it');
  const on = servedBy(sim, got.splice(0)[0]!.header);
  if (sim.cluster.leader?.index === on) sim.cluster.moveLeader((on + 1) % 3);
  const writerMember = [0, 1, 2].find((i) => i !== on)!;
  const writer = sim.client({ member: writerMember, client: 'writer' });
  await writer.authenticate('root', 'pw');
  n = authenticates(sim);
  // The watch's member goes down: the stream reopens elsewhere, after a new Authenticate.
  sim.cluster.crash(on);
  await sim.advance(200);
  assert.equal(authenticates(sim), n + 1, 'one Authenticate before the stream reopened');
  await writer.kv.put({ key: 'k', value: 'v' });
  await sim.settle();
  assert.deepEqual(got.flatMap((r) => r.events.map((e) => dec.decode(e.kv!.value))), ['v']);
  assert.notEqual(servedBy(sim, got[0]!.header), on);
  assert.equal(w.ended, false);
  c.close();
  writer.close();
  admin.close();
  sim.close();
});

test('raw client over endpoints with credentials: a keep-alive written before its stream opened (the stream authenticates first) is sent once it has', async () => {
  const { sim, admin } = await withAuth(24);
  const c = sim.client({ endpoints: [0, 1, 2] });
  await c.authenticate('root', 'pw');
  const { ID } = await c.lease.leaseGrant({ TTL: 5 });
  const ka = c.lease.leaseKeepAlive();
  const got: M.LeaseKeepAliveResponse[] = [];
  ka.on('data', (r) => got.push(r));
  ka.send({ ID });
  await sim.settle();
  assert.equal(got.length, 1);
  assert.equal(got[0]!.TTL, '5');
  c.close();
  admin.close();
  sim.close();
});
