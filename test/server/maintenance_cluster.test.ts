import { createHash } from 'node:crypto';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createEtcdSim, DEFAULT_CLUSTER_ID, DEFAULT_MEMBER_ID } from '../../src/index.js';
import { B, hdr, newSim, assertGrpcError } from './helpers.js';

test('Status: version, leader, raft index/term, db size, header', () => {
  const sim = newSim({ version: '3.4.23' });
  const m = sim.services.maintenance;
  assert.deepStrictEqual(m.status(), {
    header: hdr(1),
    version: '3.4.23',
    dbSize: '20480',
    leader: '22',
    raftIndex: '4',
    raftTerm: '3',
    raftAppliedIndex: '4',
    errors: [],
    dbSizeInUse: '16384',
    isLearner: false,
    // 3.6+'s fields (this sim follows 3.7 under an older version string).
    storageVersion: '3.7.0',
    dbSizeQuota: '2147483648',
    downgradeInfo: { enabled: false, targetVersion: '' },
  });
  // One Raft entry per write, lease grant, compaction and alarm request (as counted on etcd 3.4.23).
  sim.services.kv.put({ key: B('a'), value: B('x') });
  sim.services.lease.leaseGrant({ TTL: '100' });
  sim.services.kv.compact({ revision: '2' });
  m.alarm({});
  sim.services.kv.range({ key: B('a') });
  const st = m.status();
  assert.equal(st.raftIndex, '8');
  assert.equal(st.raftAppliedIndex, '8');
  assert.equal(st.header.revision, '2');
  assert.ok(Number(st.dbSize) > 20480);
  assert.equal(createEtcdSim().services.maintenance.status().version, '3.7.0');
  assert.equal(createEtcdSim({ etcdVersion: '3.4' }).services.maintenance.status().version, '3.4.23');
});

test('default identity is etcd\'s default single member; MemberList has no header revision', () => {
  const sim = createEtcdSim({ time: 'virtual' });
  sim.services.kv.put({ key: B('a') });
  assert.deepStrictEqual(sim.services.cluster.memberList(), {
    header: { cluster_id: String(DEFAULT_CLUSTER_ID), member_id: String(DEFAULT_MEMBER_ID), revision: '0', raft_term: '2' },
    members: [{ ID: '10276657743932975437', name: 'default', peerURLs: ['http://localhost:2380'], clientURLs: ['http://localhost:2379'], isLearner: false }],
  });
  const custom = newSim({ memberName: 'n1', clientUrls: ['http://127.0.0.1:1'], peerUrls: ['http://127.0.0.1:2', 'http://127.0.0.1:3'] });
  assert.deepStrictEqual(custom.services.cluster.memberList(), {
    header: hdr(0),
    members: [{ ID: '22', name: 'n1', peerURLs: ['http://127.0.0.1:2', 'http://127.0.0.1:3'], clientURLs: ['http://127.0.0.1:1'], isLearner: false }],
  });
  assert.throws(() => createEtcdSim({ memberId: -1n }), RangeError);
  assert.deepStrictEqual(newSim({ clusterId: 2n ** 64n - 1n }).services.kv.range({ key: B('a') }).header.cluster_id, '18446744073709551615');
});

test('HashKV: compact_revision -1 before any compaction; revision errors as etcd HashByRev', () => {
  const sim = newSim();
  const m = sim.services.maintenance;
  const k = sim.services.kv;
  // etcd's own values (etcd 3.4.23 printed the same hashes for the same puts).
  assert.deepStrictEqual(m.hashKV({}), { header: hdr(1), hash: 1084519789, compact_revision: '-1', hash_revision: '1' });
  k.put({ key: B('a'), value: B('1') });
  k.put({ key: B('b'), value: B('2') });
  const at2 = m.hashKV({ revision: '2' });
  // The header carries the current revision, not the hashed one (observed on 3.4.23).
  assert.deepStrictEqual(at2, { header: hdr(3), hash: 2587454935, compact_revision: '-1', hash_revision: '2' });
  assert.notEqual(m.hashKV({}).hash, at2.hash);
  assert.equal(m.hashKV({ revision: '2' }).hash, at2.hash);
  assertGrpcError(() => m.hashKV({ revision: '4' }), 11, 'etcdserver: mvcc: required revision is a future revision', 'OUT_OF_RANGE');
  k.compact({ revision: '2' });
  assertGrpcError(() => m.hashKV({ revision: '2' }), 11, 'etcdserver: mvcc: required revision has been compacted', 'OUT_OF_RANGE');
  assert.deepStrictEqual(m.hashKV({}).compact_revision, '2');
  assert.deepStrictEqual(m.hashKV({}).header, hdr(3));
});

test('Defragment answers as etcd 3.4.23 does (no header), Alarm with one from 3.5 on; Snapshot/restore round-trips the state', () => {
  const sim = newSim();
  const m = sim.services.maintenance;
  assert.deepStrictEqual(m.defragment({}), { header: null });
  assert.deepStrictEqual(m.alarm({ action: 'GET' }), { header: hdr(1), alarms: [] }); // 3.5+ fill a header (3.4.23: none)
  sim.services.kv.put({ key: B('a'), value: B('1') });
  const snap = m.snapshot({});
  assert.deepStrictEqual(snap[0]!.header, null); // etcd's Snapshot responses carry no header (observed on 3.4.23)
  // A bbolt file in chunks, then its SHA-256 (what etcdctl's `snapshot save` checks): see test/snapshot.
  const pages = Buffer.concat(snap.slice(0, -1).map((r) => r.blob));
  assert.equal(pages.length % 4096, 0);
  assert.deepStrictEqual(snap.map((r) => r.remaining_bytes).at(-1), '0');
  assert.deepStrictEqual(snap.at(-1)!.blob, createHash('sha256').update(pages).digest());
  const blob = Buffer.concat(snap.map((r) => r.blob));
  const h = sim.digest();
  sim.services.kv.put({ key: B('a'), value: B('2') });
  m.restore(blob);
  assert.equal(sim.digest(), h);
  assert.equal(sim.services.kv.range({ key: B('a') }).kvs[0]!.value.toString(), '1');
  assertGrpcError(() => m.restore(B('nope')), 3, 'etcdsim: snapshot: size 4 is neither whole pages nor pages plus a SHA-256 trailer (truncated?)', 'INVALID_ARGUMENT');
});

test('HashKV under etcd 3.4 rules has no hash_revision (the field came with 3.5.5), the same hash', () => {
  const old = createEtcdSim({ time: 'virtual', etcdVersion: '3.4' });
  const now = createEtcdSim({ time: 'virtual' });
  for (const sim of [old, now]) sim.services.kv.put({ key: B('a'), value: B('1') });
  const [a, b] = [old.services.maintenance.hashKV({}), now.services.maintenance.hashKV({})];
  assert.equal(a.hash_revision, '0');
  assert.equal(b.hash_revision, '2');
  assert.equal(a.hash, 2587454935);
  assert.equal(b.hash, a.hash);
});
