/**
 * Cluster.MemberAdd / MemberRemove / MemberUpdate / MemberPromote and Maintenance.Hash / MoveLeader in
 * message form, against values a real single-member etcd 3.4.23 answered (IDs, hashes, errors, raft index).
 * A member's ID depends on its peer URLs, and an added member's on the clock (Unix seconds): the members
 * here start their virtual clock at the second the observed etcd's request carried.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EtcdServer } from '../../src/server/etcd_server.js';
import { VirtualClock, DEFAULT_CLUSTER_ID, DEFAULT_MEMBER_ID, createEtcdSim } from '../../src/index.js';
import { statusName } from '../../src/server/errors.js';
import { B, assertGrpcError } from './helpers.js';

/** The call fails with this code and etcd's text (`what` says which case, for the reader). */
function fails(fn: () => unknown, code: number, details: string, what: string): void {
  assert.ok(what.length > 0);
  assertGrpcError(fn, code, details, statusName(code));
}

const UNKNOWN = 2;
const INVALID_ARGUMENT = 3;
const DEADLINE_EXCEEDED = 4;
const NOT_FOUND = 5;
const FAILED_PRECONDITION = 9;
const UNAVAILABLE = 14;

/** A 3.4 member advertising the observed etcd's URLs, its clock at `unixSeconds`. */
function member(peer: string, client: string, unixSeconds = 0, etcdVersion: '3.4' | '3.5' | '3.6' | '3.7' = '3.4'): EtcdServer {
  return new EtcdServer({ etcdVersion, clock: new VirtualClock(unixSeconds * 1000), peerUrls: [peer], clientUrls: [client] });
}

const hdr0 = (s: EtcdServer) => ({ cluster_id: s.identity.clusterId, member_id: s.identity.memberId, revision: '0', raft_term: '2' });

test('member and cluster IDs derive from the peer URLs and the cluster token, as etcd derives them', () => {
  const s = member('http://127.0.0.1:41874', 'http://127.0.0.1:41873');
  assert.equal(s.identity.memberId, '11269829027734364181');
  assert.equal(s.identity.clusterId, '4199326240501665831');
  // etcd with no flags: the default IDs, with or without the default peer URL spelled out.
  const plain = new EtcdServer({ peerUrls: ['http://localhost:2380'] });
  assert.equal(plain.member.memberId, DEFAULT_MEMBER_ID);
  assert.equal(plain.member.clusterId, DEFAULT_CLUSTER_ID);
  assert.notEqual(new EtcdServer({ initialClusterToken: 'other' }).member.memberId, DEFAULT_MEMBER_ID);
  // The same options in process (createEtcdSim passes them to its member).
  const sim = createEtcdSim({ time: 'virtual', memberName: 'n1', peerUrls: ['http://127.0.0.1:41874'], clientUrls: ['http://127.0.0.1:41873'] });
  assert.equal(sim.services.maintenance.status().leader, '11269829027734364181');
  assert.equal(sim.services.cluster.memberList().members[0]?.name, 'n1');
  // Explicit IDs win.
  assert.equal(new EtcdServer({ memberId: 5n, peerUrls: ['http://127.0.0.1:1'] }).identity.memberId, '5');
  assert.deepStrictEqual(s.services.cluster.memberList(), {
    header: hdr0(s),
    members: [{ ID: '11269829027734364181', name: 'default', peerURLs: ['http://127.0.0.1:41874'], clientURLs: ['http://127.0.0.1:41873'], isLearner: false }],
  });
});

test('Hash: CRC-32C over every backend bucket, as etcd 3.4.23 (fresh; keys, a lease, a compaction, a role)', () => {
  const fresh = member('http://127.0.0.1:41874', 'http://127.0.0.1:41873');
  assert.deepStrictEqual(fresh.services.maintenance.hash(), {
    header: { cluster_id: '4199326240501665831', member_id: '11269829027734364181', revision: '1', raft_term: '2' },
    hash: 3715207867,
  });
  const s = member('http://127.0.0.1:41904', 'http://127.0.0.1:41903');
  const v = s.services;
  v.lease.leaseGrant({ ID: '4660', TTL: '100' });
  v.kv.put({ key: B('a'), value: B('1') });
  v.kv.put({ key: B('b'), value: B('2'), lease: '4660' });
  v.kv.deleteRange({ key: B('a') });
  v.kv.compact({ revision: '3' });
  v.auth.roleAdd({ name: 'r' });
  v.auth.roleGrantPermission({ name: 'r', perm: { permType: 'READWRITE', key: B('a'), range_end: B('b') } });
  const h = v.maintenance.hash();
  assert.equal(h.hash, 1506289996);
  assert.equal(h.header.revision, '4');
  // The hash covers every bucket: a new key changes it, a read does not.
  v.kv.range({ key: B('b') });
  assert.equal(v.maintenance.hash().hash, 1506289996);
  v.kv.put({ key: B('z') });
  assert.notEqual(v.maintenance.hash().hash, 1506289996);
});

test('MemberAdd of a learner, its errors, MemberUpdate and MemberRemove: answers, raft entries and Hash as etcd 3.4.23', () => {
  const s = member('http://127.0.0.1:41894', 'http://127.0.0.1:41893', 1796147966);
  const c = s.services.cluster;
  const self = { ID: '7324032800052628145', name: 'default', peerURLs: ['http://127.0.0.1:41894'], clientURLs: ['http://127.0.0.1:41893'], isLearner: false };
  const learner = { ID: '6759833577531995828', name: '', peerURLs: ['http://127.0.0.1:41997'], clientURLs: [], isLearner: true };
  assert.deepStrictEqual(c.memberAdd({ peerURLs: ['http://127.0.0.1:41997'], isLearner: true }), { header: hdr0(s), member: learner, members: [learner, self] });
  assert.equal(s.services.maintenance.hash().hash, 1711284257);
  assert.equal(s.services.maintenance.status().raftIndex, '5');
  // Refused before Raft: bad URLs, an unready learner, the only started voter.
  fails(() => c.memberAdd({ peerURLs: [] }), INVALID_ARGUMENT, 'etcdserver: given member URLs are invalid', 'no URL');
  fails(() => c.memberAdd({ peerURLs: ['bad'] }), INVALID_ARGUMENT, 'etcdserver: given member URLs are invalid', 'bad URL');
  fails(() => c.memberPromote({ ID: learner.ID }), FAILED_PRECONDITION, 'etcdserver: can only promote a learner member which is in sync with leader', 'promote learner');
  fails(() => c.memberRemove({ ID: self.ID }), UNKNOWN, 'etcdserver: re-configuration failed due to not enough started members', 'remove self');
  assert.equal(s.services.maintenance.status().raftIndex, '5');
  // Refused when applied: one Raft entry each.
  fails(() => c.memberAdd({ peerURLs: ['http://127.0.0.1:41996'], isLearner: true }), FAILED_PRECONDITION, 'etcdserver: too many learner members in cluster', 'second learner');
  fails(() => c.memberAdd({ peerURLs: ['http://127.0.0.1:41997'] }), FAILED_PRECONDITION, 'etcdserver: member ID already exist', 'same URL, same second');
  fails(() => c.memberAdd({ peerURLs: ['http://127.0.0.1:41894'] }), FAILED_PRECONDITION, 'etcdserver: Peer URLs already exists', 'peer URL of self');
  fails(() => c.memberUpdate({ ID: '5', peerURLs: ['http://127.0.0.1:9'] }), NOT_FOUND, 'etcdserver: member not found', 'update unknown');
  fails(() => c.memberRemove({ ID: '5' }), NOT_FOUND, 'etcdserver: member not found', 'remove unknown');
  fails(() => c.memberPromote({ ID: '5' }), NOT_FOUND, 'etcdserver: member not found', 'promote unknown');
  fails(() => c.memberPromote({ ID: self.ID }), FAILED_PRECONDITION, 'etcdserver: can only promote a learner member', 'promote a voter');
  assert.equal(s.services.maintenance.status().raftIndex, '12');
  assert.equal(s.services.maintenance.hash().hash, 1711284257);

  const updated = { ...self, peerURLs: ['http://127.0.0.1:41894', 'http://localhost:41894'] };
  assert.deepStrictEqual(c.memberUpdate({ ID: self.ID, peerURLs: updated.peerURLs }), { header: hdr0(s), members: [learner, updated] });
  assert.deepStrictEqual(c.memberRemove({ ID: learner.ID }), { header: hdr0(s), members: [updated] });
  fails(() => c.memberRemove({ ID: learner.ID }), NOT_FOUND, 'etcdserver: member not found', 'removed twice');
  assert.deepStrictEqual(c.memberList().members, [updated]);
  assert.equal(s.services.maintenance.hash().hash, 2229986241);
  assert.equal(s.services.maintenance.status().leader, self.ID);
});

test('MemberAdd of a voter: two members, one started — quorum lost (etcd 3.4.23 as observed)', () => {
  const s = member('http://127.0.0.1:41874', 'http://127.0.0.1:41873', 1796147891);
  const c = s.services.cluster;
  const m = s.services.maintenance;
  const added = { ID: '2527273994470725834', name: '', peerURLs: ['http://127.0.0.1:41999'], clientURLs: [], isLearner: false };
  const self = { ID: '11269829027734364181', name: 'default', peerURLs: ['http://127.0.0.1:41874'], clientURLs: ['http://127.0.0.1:41873'], isLearner: false };
  assert.deepStrictEqual(c.memberAdd({ peerURLs: ['http://127.0.0.1:41999'] }), { header: hdr0(s), member: added, members: [added, self] });
  assert.deepStrictEqual(c.memberList({ linearizable: true }).members, [added, self]);
  assert.equal(m.status().raftIndex, '5');
  assert.equal(m.hash().hash, 1727062337);
  fails(() => c.memberAdd({ peerURLs: ['http://127.0.0.1:41998'] }), UNKNOWN, 'etcdserver: re-configuration failed due to not enough started members', 'second voter');
  fails(() => c.memberAdd({ peerURLs: ['http://127.0.0.1:41997'], isLearner: true }), UNAVAILABLE, 'etcdserver: unhealthy cluster', 'learner');
  // Proposals never commit: etcd waits for the client's deadline.
  fails(() => c.memberRemove({ ID: added.ID }), DEADLINE_EXCEEDED, 'context deadline exceeded', 'remove the new member');
  fails(() => c.memberUpdate({ ID: added.ID, peerURLs: ['http://127.0.0.1:41990'] }), DEADLINE_EXCEEDED, 'context deadline exceeded', 'update');
  // Still the leader for up to two election timeouts, then not (etcd's CheckQuorum).
  assert.deepStrictEqual(m.moveLeader({ targetID: self.ID }), { header: null });
  assert.equal(m.status().leader, self.ID);
  (s.clock as VirtualClock).advance(1999);
  assert.deepStrictEqual(m.status().errors, []);
  (s.clock as VirtualClock).advance(1);
  const st = m.status();
  assert.equal(st.leader, '0');
  assert.deepStrictEqual(st.errors, ['etcdserver: no leader']);
  fails(() => m.moveLeader({ targetID: self.ID }), FAILED_PRECONDITION, 'etcdserver: not leader', 'move leader without leadership');
});

test('MemberUpdate of a learner: 3.4 lists it as a voter, Raft still holds it as a learner, so quorum stays (3.4.23 as observed); 3.5+ keep it listed a learner', () => {
  for (const version of ['3.4', '3.5', '3.6', '3.7'] as const) {
    const is34 = version === '3.4';
    const s = member('http://127.0.0.1:2380', 'http://127.0.0.1:2379', 100, version);
    const c = s.services.cluster;
    const m = s.services.maintenance;
    const self = { ID: s.identity.memberId, name: 'default', peerURLs: ['http://127.0.0.1:2380'], clientURLs: ['http://127.0.0.1:2379'], isLearner: false };
    const id = c.memberAdd({ peerURLs: ['http://127.0.0.1:1'], isLearner: true }).member!.ID;
    assert.equal(m.status().raftIndex, '5', version);
    const updated = { ID: id, name: '', peerURLs: ['http://127.0.0.1:3'], clientURLs: [], isLearner: !is34 };
    assert.deepStrictEqual(c.memberUpdate({ ID: id, peerURLs: ['http://127.0.0.1:3'] }).members.find((x) => x.ID === id), updated, version);
    assert.deepStrictEqual(c.memberList().members.find((x) => x.ID === id), updated, version);
    assert.equal(m.status().raftIndex, '6', version);
    // Raft's progress of the member lags: not ready, whatever its listed flag (no entry).
    fails(() => c.memberPromote({ ID: id }), FAILED_PRECONDITION, 'etcdserver: can only promote a learner member which is in sync with leader', `${version} promote`);
    if (is34) {
      // Listed as a voter that never started: the voting-member checks refuse before proposing.
      fails(() => c.memberAdd({ peerURLs: ['http://127.0.0.1:2'], isLearner: true }), UNAVAILABLE, 'etcdserver: unhealthy cluster', `${version} second learner`);
      fails(() => c.memberAdd({ peerURLs: ['http://127.0.0.1:4'] }), UNKNOWN, 'etcdserver: re-configuration failed due to not enough started members', `${version} voter`);
      assert.equal(m.status().raftIndex, '6', version);
    } else {
      fails(() => c.memberAdd({ peerURLs: ['http://127.0.0.1:2'], isLearner: true }), FAILED_PRECONDITION, 'etcdserver: too many learner members in cluster', `${version} second learner`);
      assert.equal(m.status().raftIndex, '7', version);
    }
    const base = is34 ? 6 : 7;
    // Proposals still commit: the only Raft voter is this member.
    fails(() => c.memberUpdate({ ID: id, peerURLs: ['http://127.0.0.1:2380'] }), FAILED_PRECONDITION, 'etcdserver: Peer URLs already exists', `${version} self's URL`);
    assert.deepStrictEqual(c.memberUpdate({ ID: id, peerURLs: ['http://127.0.0.1:3'] }).members, [self, updated].sort((x, y) => (BigInt(x.ID) < BigInt(y.ID) ? -1 : 1)), version);
    (s.clock as VirtualClock).advance(60_000);
    assert.equal(m.status().leader, self.ID, version);
    assert.deepStrictEqual(m.status().errors, [], version);
    assert.deepStrictEqual(c.memberRemove({ ID: id }).members, [self], version);
    fails(() => c.memberRemove({ ID: id }), NOT_FOUND, 'etcdserver: member not found', `${version} removed twice`);
    fails(() => c.memberUpdate({ ID: id, peerURLs: ['http://127.0.0.1:6'] }), NOT_FOUND, 'etcdserver: member not found', `${version} update removed`);
    fails(() => c.memberPromote({ ID: id }), NOT_FOUND, 'etcdserver: member not found', `${version} promote removed`);
    // The removed member's URL is free again.
    const again = c.memberAdd({ peerURLs: ['http://127.0.0.1:3'], isLearner: true }).member!;
    assert.equal(again.isLearner, true, version);
    assert.deepStrictEqual(c.memberRemove({ ID: again.ID }).members, [self], version);
    assert.deepStrictEqual(c.memberList().members, [self], version);
    assert.equal(m.status().raftIndex, String(base + 8), version);
    assert.equal(m.status().leader, self.ID, version);
  }
});

test('MemberPromote of an added voter that never started: not in sync while leader (3.4.23 as observed), then the deadline', () => {
  const s = member('http://127.0.0.1:2380', 'http://127.0.0.1:2379', 100);
  const c = s.services.cluster;
  const id = c.memberAdd({ peerURLs: ['http://127.0.0.1:1'] }).member!.ID;
  fails(() => c.memberPromote({ ID: id }), FAILED_PRECONDITION, 'etcdserver: can only promote a learner member which is in sync with leader', 'while leader');
  assert.equal(s.services.maintenance.status().raftIndex, '5');
  (s.clock as VirtualClock).advance(2 * s.electionTimeoutMs);
  fails(() => c.memberPromote({ ID: id }), DEADLINE_EXCEEDED, 'context deadline exceeded', 'no leader to forward to');
});

test('MemberUpdate checks no URL: on this member any is stored (3.4.23 as observed); on another, where etcd panics, refused', () => {
  const bad: readonly (readonly string[])[] = [['not a url'], ['http://'], ['ftp://x:1'], ['http://[::1'], [''], [], ['http://127.0.0.1:5/path'], ['http://127.0.0.1'], ['http://127.0.0.1:7', 'bad']];
  for (const version of ['3.4', '3.5', '3.7'] as const) {
    const s = member('http://127.0.0.1:2380', 'http://127.0.0.1:2379', 100, version);
    const c = s.services.cluster;
    const m = s.services.maintenance;
    const self = { ID: s.identity.memberId, name: 'default', peerURLs: ['http://127.0.0.1:2380'], clientURLs: ['http://127.0.0.1:2379'], isLearner: false };
    let index = 4;
    for (const urls of bad) {
      const what = `${version} self ${JSON.stringify(urls)}`;
      assert.deepStrictEqual(c.memberUpdate({ ID: self.ID, peerURLs: [...urls] }), { header: hdr0(s), members: [{ ...self, peerURLs: [...urls] }] }, what);
      assert.deepStrictEqual(c.memberList().members, [{ ...self, peerURLs: [...urls] }], what);
      assert.deepStrictEqual(c.memberUpdate({ ID: self.ID, peerURLs: self.peerURLs }).members, [self], what);
      index += 2;
      assert.equal(m.status().raftIndex, String(index), what);
    }
    const learner = c.memberAdd({ peerURLs: ['http://127.0.0.1:1'], isLearner: true }).member!;
    index += 1;
    for (const urls of bad) {
      const what = `${version} learner ${JSON.stringify(urls)}`;
      fails(() => c.memberUpdate({ ID: learner.ID, peerURLs: [...urls] }), INVALID_ARGUMENT, 'etcdserver: given member URLs are invalid', what);
      index += 1;
      assert.equal(m.status().raftIndex, String(index), what);
    }
    assert.deepStrictEqual(c.memberList().members.find((x) => x.ID === learner.ID)?.peerURLs, ['http://127.0.0.1:1'], version);
    // etcd's apply checks come before the transport sees the URLs (observed on 3.4.23).
    fails(() => c.memberUpdate({ ID: '5', peerURLs: ['not a url'] }), NOT_FOUND, 'etcdserver: member not found', `${version} unknown`);
    fails(() => c.memberUpdate({ ID: learner.ID, peerURLs: ['http://127.0.0.1:2380', 'not a url'] }), FAILED_PRECONDITION, 'etcdserver: Peer URLs already exists', `${version} taken`);
    assert.deepStrictEqual(c.memberRemove({ ID: learner.ID }).members, [self], version);
    fails(() => c.memberUpdate({ ID: learner.ID, peerURLs: ['not a url'] }), NOT_FOUND, 'etcdserver: member not found', `${version} removed`);
    assert.equal(m.status().raftIndex, String(index + 4), version);
  }
});

test('MoveLeader: to itself an empty response; to any other ID "bad leader transferee"', () => {
  const s = member('http://127.0.0.1:2380', 'http://127.0.0.1:2379');
  const m = s.services.maintenance;
  assert.deepStrictEqual(m.moveLeader({ targetID: s.identity.memberId }), { header: null });
  fails(() => m.moveLeader({ targetID: '5' }), FAILED_PRECONDITION, 'etcdserver: bad leader transferee', 'unknown');
  fails(() => m.moveLeader({}), FAILED_PRECONDITION, 'etcdserver: bad leader transferee', 'zero');
  const learner = s.services.cluster.memberAdd({ peerURLs: ['http://127.0.0.1:3380'], isLearner: true }).member!.ID;
  fails(() => m.moveLeader({ targetID: learner }), FAILED_PRECONDITION, 'etcdserver: bad leader transferee', 'learner');
  assert.equal(m.status().raftIndex, '5');
});

test('--strict-reconfig-check=false: a second voter is proposed anyway and cannot commit (etcd 3.4.23: context deadline exceeded); removing itself stays refused', () => {
  const s = new EtcdServer({ etcdVersion: '3.4', clock: new VirtualClock(1796147891 * 1000), peerUrls: ['http://127.0.0.1:41874'], clientUrls: ['http://127.0.0.1:41873'], strictReconfigCheck: false });
  const c = s.services.cluster;
  c.memberAdd({ peerURLs: ['http://127.0.0.1:41999'] });
  fails(() => c.memberAdd({ peerURLs: ['http://127.0.0.1:41998'] }), DEADLINE_EXCEEDED, 'context deadline exceeded', 'second voter, not strict');
  fails(() => c.memberAdd({ peerURLs: ['http://127.0.0.1:41997'], isLearner: true }), DEADLINE_EXCEEDED, 'context deadline exceeded', 'learner, not strict');
  fails(() => c.memberRemove({ ID: s.identity.memberId }), UNKNOWN, 'etcdserver: re-configuration failed due to not enough started members', 'remove self');
  assert.equal(c.memberList().members.length, 2);
});
