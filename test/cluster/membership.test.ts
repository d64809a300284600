/**
 * MemberAdd, MemberRemove and MemberPromote on the in-process cluster (src/cluster/membership.ts, with the
 * checks a process member shares: src/server/member_changes.ts), against what a 3-member etcd 3.4.23 on
 * loopback answered (observed): a fresh cluster refuses a change for 5 s (`unhealthy cluster`), an added
 * member is listed unstarted until it starts and joins, a learner is refused beyond one, promoted only once
 * in sync and refuses every RPC but Status and serializable Range; a removed member stops, the leader too.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterMemberView, EtcdCluster, type ClusterMemberServices, type SimulatedMember } from '../../src/cluster/index.js';
import { VirtualClock } from '../../src/sim/index.js';
import { caught, rejection, thrown } from './helpers.js';

function newCluster(): EtcdCluster {
  return new EtcdCluster({ clock: new VirtualClock(), seed: 11 });
}

async function raftIndexes(c: EtcdCluster): Promise<string[]> {
  return Promise.all(c.members.filter((m) => !m.crashed).map(async (m) => (await c.connect(m).maintenance.status()).raftIndex));
}

/** Each running member's list (a learner's but), as `etcdctl member list` prints it: ID, started or not, name, learner. */
async function lists(c: EtcdCluster, learner?: SimulatedMember): Promise<string[][]> {
  const out: string[][] = [];
  for (const m of c.members) {
    if (m.crashed || m === learner) continue;
    const r = await c.connect(m).cluster.memberList();
    out.push(r.members.map((x) => `${BigInt(x.ID).toString(16)} ${x.clientURLs.length > 0 ? 'started' : 'unstarted'} ${x.name} ${x.isLearner === true ? 'learner' : 'voter'}`));
  }
  return out;
}

const B = (s: string): Uint8Array => new TextEncoder().encode(s);
const unhealthy = { code: 14, details: 'etcdserver: unhealthy cluster' };
const notForLearner = { code: 14, details: 'etcdserver: rpc not supported for learner' };

test('MemberAdd: refused for 5 s after the start, then an unstarted voter; with it unstarted a learner is refused, and removing it takes one entry', async () => {
  const c = newCluster();
  const v = c.connect(0);
  assert.deepEqual(await rejection(v.cluster.memberAdd({ peerURLs: ['http://127.0.0.1:42380'] })), unhealthy);
  await c.advance(5001);
  assert.deepEqual(await raftIndexes(c), ['8', '8', '8']);
  // Asked at a follower: the answer is that follower's, with the new member's ID.
  const r = await c.connect(1).cluster.memberAdd({ peerURLs: ['http://127.0.0.1:42380'] });
  assert.equal(r.header!.member_id, String(c.members[1]!.id));
  assert.deepEqual(r.member, { ID: r.member!.ID, name: '', peerURLs: ['http://127.0.0.1:42380'], clientURLs: [], isLearner: false });
  assert.equal(r.members.length, 4);
  assert.deepEqual(await raftIndexes(c), ['9', '9', '9']);
  const id = BigInt(r.member!.ID).toString(16);
  for (const l of await lists(c)) assert.ok(l.includes(`${id} unstarted  voter`), l.join('\n'));
  // Three started voters of four still commit, but an unstarted voter is not connected.
  await v.kv.put({ key: B('k'), value: B('v') });
  assert.deepEqual(await rejection(v.cluster.memberAdd({ peerURLs: ['http://127.0.0.1:52380'], isLearner: true })), unhealthy);
  assert.deepEqual(await rejection(v.cluster.memberPromote({ ID: r.member!.ID })), { code: 9, details: 'etcdserver: can only promote a learner member which is in sync with leader' });
  assert.deepEqual(await rejection(v.cluster.memberPromote({ ID: String(c.members[0]!.id) })), { code: 9, details: 'etcdserver: can only promote a learner member' });
  assert.deepEqual(await raftIndexes(c), ['11', '11', '11'], 'the put and the refused promote took an index each');
  assert.deepEqual(await rejection(v.cluster.memberRemove({ ID: '4660' })), { code: 5, details: 'etcdserver: member not found' });
  const removed = await v.cluster.memberRemove({ ID: r.member!.ID });
  assert.equal(removed.members.length, 3);
  assert.deepEqual(await raftIndexes(c), ['13', '13', '13']);
  // Its ID is never taken again (etcd's members_removed).
  assert.throws(() => c.join(BigInt(r.member!.ID)), /lists no member/);
  assert.deepEqual(await rejection(c.connect(2).cluster.memberUpdate({ ID: r.member!.ID, peerURLs: ['http://127.0.0.1:42381'] })), { code: 5, details: 'etcdserver: member not found' });
  c.close();
});

test('a learner: one at most, listed unstarted until it joins, refusing all but Status and serializable Range, promoted once in sync', async () => {
  const c = newCluster();
  await c.advance(5001);
  const v = c.connect(0);
  const added = await v.cluster.memberAdd({ peerURLs: ['http://127.0.0.1:42380'], isLearner: true });
  assert.equal(added.member!.isLearner, true);
  assert.deepEqual(await rejection(v.cluster.memberAdd({ peerURLs: ['http://127.0.0.1:52380'], isLearner: true })), { code: 9, details: 'etcdserver: too many learner members in cluster' });
  assert.deepEqual(await raftIndexes(c), ['10', '10', '10'], 'the refused add took its index, as etcd 3.4.23 does');
  await v.kv.put({ key: B('before'), value: B('1') });
  const id = BigInt(added.member!.ID);
  assert.deepEqual(await rejection(v.cluster.memberPromote({ ID: added.member!.ID })), { code: 9, details: 'etcdserver: can only promote a learner member which is in sync with leader' });
  const l = c.join(id, { name: 'learner4' });
  assert.equal(l.index, 3);
  await c.advance(500);
  for (const list of await lists(c, l)) assert.ok(list.includes(`${id.toString(16)} started learner4 learner`), list.join('\n'));
  const lv: ClusterMemberServices = c.connect(l);
  assert.deepEqual((await lv.kv.range({ key: B('before'), serializable: true })).kvs.map((kv) => new TextDecoder().decode(kv.value)), ['1']);
  assert.equal((await lv.maintenance.status()).raftIndex, (await v.maintenance.status()).raftIndex);
  assert.deepEqual(await rejection(lv.kv.put({ key: B('k'), value: B('v') })), notForLearner);
  assert.deepEqual(await rejection(lv.kv.range({ key: B('before') })), notForLearner);
  assert.deepEqual(await rejection(lv.cluster.memberList()), notForLearner);
  assert.deepEqual(await rejection(lv.lease.leaseGrant({ TTL: 10 })), notForLearner);
  assert.deepEqual(await rejection(lv.maintenance.hashKV()), notForLearner);
  assert.deepEqual(thrown(() => lv.watch()), notForLearner);
  // Caught up: the promote goes through (asked at a follower, which reads its leader's progress).
  const p = await c.connect(2).cluster.memberPromote({ ID: added.member!.ID });
  assert.equal(p.members.find((x) => x.ID === added.member!.ID)!.isLearner, false);
  await c.advance(100);
  await lv.kv.put({ key: B('after'), value: B('2') });
  assert.equal(c.quorum, 3);
  // A voter of four: with two members down the cluster has no quorum; with one it has.
  c.crash(1);
  await lv.kv.put({ key: B('one down'), value: B('3') });
  c.crash(2);
  const stuck = caught(lv.kv.put({ key: B('two down'), value: B('4') }));
  await c.advance(c.requestTimeoutMs + 100);
  assert.equal((await rejection(stuck)).code, 14);
  c.close();
});

test('MemberRemove of the leader, asked at the leader: answered, the leader stops 1 s later and for good, the others elect', async () => {
  const c = newCluster();
  await c.advance(5001);
  const leader = c.leader!;
  const r = await c.connect(leader).cluster.memberRemove({ ID: String(leader.id) });
  assert.equal(r.header!.member_id, String(leader.id));
  assert.deepEqual(r.members.map((x) => x.name).sort(), ['infra2', 'infra3']);
  assert.equal(leader.removed, true);
  assert.equal(leader.crashed, false);
  await c.advance(1000);
  assert.equal(leader.crashed, true);
  c.restart(leader);
  assert.equal(leader.crashed, true, 'a removed member stays down');
  await c.advance(3000);
  const next = c.leader!;
  assert.notEqual(next, leader);
  assert.equal(c.quorum, 2);
  await c.connect(next).kv.put({ key: B('k'), value: B('v') });
  // Removing itself, asked at a follower: answered by it, then it stops too; the last voter may not go.
  const follower = c.members.find((m) => !m.crashed && m !== next)!;
  await c.advance(5001);
  const self = await c.connect(follower).cluster.memberRemove({ ID: String(follower.id) });
  assert.equal(self.header!.member_id, String(follower.id));
  assert.deepEqual(self.members.map((x) => x.name), [next.name]);
  await c.advance(1000);
  assert.equal(follower.crashed, true);
  assert.deepEqual(await rejection(c.connect(next).cluster.memberRemove({ ID: String(next.id) })), { code: 2, details: 'etcdserver: re-configuration failed due to not enough started members' });
  c.close();
});

test('a member cut off while it is removed stops once a member that removed it refuses its messages', async () => {
  const c = newCluster();
  await c.advance(5001);
  const gone = c.members[2]!;
  c.isolate(gone);
  // Its stream is down: a downed member is safe to remove (etcd's mayRemoveMember).
  await c.connect(0).cluster.memberRemove({ ID: String(gone.id) });
  assert.equal(gone.removed, false);
  c.heal();
  await c.advance(3000);
  assert.equal(gone.removed, true);
  assert.equal(gone.crashed, true);
  assert.ok(c.trace().some((e) => e.event === 'infra3 removed from the cluster'));
  c.close();
});

test('the gRPC door serves the membership changes', async () => {
  const c = newCluster();
  await c.advance(5001);
  const door = new ClusterMemberView(c.connect(1)).services.cluster;
  const r = await door.memberAdd({ peerURLs: ['http://127.0.0.1:42380'], isLearner: true });
  assert.equal(r.members.length, 4);
  await door.memberRemove({ ID: r.member!.ID });
  assert.equal((await door.memberList()).members.length, 3);
  c.close();
});

test('each member\'s members bucket follows its list (what Maintenance.Hash and a snapshot hold): an update, an add, a publish, a remove', async () => {
  const c = newCluster();
  await c.advance(5001);
  /** What each running member's backend lists: ID and peer URLs, started or not; and its removed IDs. */
  const stored = (): string[][] =>
    c.members.filter((m) => !m.crashed).map((m) => {
      const b = m.server.etcdBackend();
      return [...b.members.map((x) => `${x.id.toString(16)} ${x.peerURLs.join(',')} ${x.name || '-'} ${x.clientURLs.length > 0 ? 'started' : 'unstarted'}`), ...b.removedMembers.map((id) => `removed ${id.toString(16)}`)];
    });
  const hashes = async (): Promise<Set<number>> => new Set(await Promise.all(c.members.filter((m) => !m.crashed).map(async (m) => (await c.connect(m).maintenance.hash()).hash)));
  const [m0, m1, m2] = c.members;
  const first = stored();
  assert.equal(first[0]!.length, 3, 'every member, not only itself');
  assert.deepEqual(first[1], first[0]);
  const before = await hashes();
  assert.equal(before.size, 1);
  await c.connect(m0!).cluster.memberUpdate({ ID: String(m1!.id), peerURLs: ['http://127.0.0.1:40001'] });
  await c.advance(100);
  for (const s of stored()) assert.ok(s.includes(`${m1!.id.toString(16)} http://127.0.0.1:40001 infra2 started`), s.join('\n'));
  const after = await hashes();
  assert.equal(after.size, 1, 'every member hashes the same backend');
  assert.notDeepEqual(after, before);
  const added = await c.connect(m0!).cluster.memberAdd({ peerURLs: ['http://127.0.0.1:42380'], isLearner: true });
  const id = BigInt(added.member!.ID);
  await c.advance(100);
  for (const s of stored()) assert.ok(s.includes(`${id.toString(16)} http://127.0.0.1:42380 - unstarted`), s.join('\n'));
  c.join(id);
  await c.advance(500);
  for (const s of stored()) assert.ok(s.includes(`${id.toString(16)} http://127.0.0.1:42380 infra4 started`), s.join('\n'));
  await c.connect(m2!).cluster.memberRemove({ ID: added.member!.ID });
  await c.advance(1100);
  for (const s of stored()) assert.ok(s.includes(`removed ${id.toString(16)}`) && s.length === 4, s.join('\n'));
  assert.equal((await hashes()).size, 1);
  // A restart rebuilds the server from its backend: the bucket stays the member's list.
  c.crash(m2!);
  c.restart(m2!);
  await c.advance(500);
  assert.deepEqual(stored()[2], stored()[0]);
  c.close();
});

test('a member that joins cut off publishes itself once it reaches the leader: etcd\'s publish is made again after its timeout', async () => {
  const c = newCluster();
  await c.advance(5001);
  const r = await c.connect(0).cluster.memberAdd({ peerURLs: ['http://127.0.0.1:42380'], isLearner: true });
  const id = BigInt(r.member!.ID).toString(16);
  const l = c.join(BigInt(r.member!.ID), { name: 'late' });
  c.isolate(l);
  // Longer than the request timeout: the first publish failed without a leader.
  await c.advance(c.requestTimeoutMs + 1000);
  for (const list of await lists(c, l)) assert.ok(list.includes(`${id} unstarted  learner`), list.join('\n'));
  c.heal();
  await c.advance(500);
  for (const list of await lists(c, l)) assert.ok(list.includes(`${id} started late learner`), list.join('\n'));
  assert.equal(c.trace().filter((e) => e.event.startsWith('propose publish late')).length, 1, 'the one that reached a leader');
  c.close();
});
