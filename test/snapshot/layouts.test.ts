/**
 * etcd's backend layouts after 3.4 (server/storage/schema in etcd 3.5–3.7): meta/term and meta/confState
 * from 3.5, meta/storageVersion from 3.6, cluster/downgrade once a downgrade was started. The writer puts
 * in what each profile's release writes; the reader takes any of them, whatever the profile.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createEtcdSim, serverOf } from '../../src/client/create.js';
import type { EtcdVersion } from '../../src/etcd/index.js';
import { childBucket, isBucketEntry, readBolt, writeBolt, type BoltBucket, type BoltEntry } from '../../src/snapshot/index.js';
import { SnapshotFormatError, backendHash, decodeEtcdBackend, encodeEtcdBackend, readEtcdSnapshot, writeEtcdSnapshot, type EtcdBackend } from '../../src/snapshot/index.js';

const B = (s: string): Uint8Array => new TextEncoder().encode(s);
const T = (b: Uint8Array | undefined): string | undefined => (b === undefined ? undefined : new TextDecoder().decode(b));
const u64 = (v: bigint): Uint8Array => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, v);
  return b;
};

function metaOf(file: Uint8Array, bucket = 'meta'): Map<string, Uint8Array> {
  const b = childBucket(readBolt(file.subarray(0, file.length - 32)).root, bucket)!;
  return new Map(b.entries.map((e) => [T(e.key)!, isBucketEntry(e) ? new Uint8Array(0) : e.value]));
}

/** A member with some history: a txn of several puts, a delete, a compaction and a lease. */
function populated(version: EtcdVersion) {
  const sim = createEtcdSim({ time: 'virtual', seed: 16, etcdVersion: version });
  const kv = sim.services.kv;
  for (let i = 0; i < 5; i++) kv.put({ key: B(`/k/${i}`), value: B(`v${i}`) });
  kv.txn({ success: [0, 1, 2].map((i) => ({ request_put: { key: B(`/k/${i}`), value: B(`txn${i}`) } })) });
  kv.deleteRange({ key: B('/k/4') });
  kv.compact({ revision: 3 });
  const { id } = sim.lessor.grant(0n, 60);
  sim.mvcc.put({ key: B('/leased'), value: B('x'), lease: id });
  return sim;
}

for (const [version, want] of [
  ['3.4', { term: false, storageVersion: undefined, cluster: '3.4.0' }],
  ['3.5', { term: true, storageVersion: undefined, cluster: '3.5.0' }],
  ['3.6', { term: true, storageVersion: '3.6.0', cluster: '3.6.0' }],
  ['3.7', { term: true, storageVersion: '3.7.0', cluster: '3.7.0' }],
] as const) {
  test(`the ${version} profile writes ${version}'s meta keys, and its snapshot loads back with the same reads and HashKV`, () => {
    const sim = populated(version);
    const file = sim.server.etcdSnapshot();
    const meta = metaOf(file);
    const member = sim.server.member;
    if (want.term) {
      assert.deepEqual(meta.get('term'), u64(member.raftTerm));
      assert.equal(T(meta.get('confState')), `{"voters":[${member.memberId}],"auto_leave":false}`);
    } else {
      assert.equal(meta.has('term'), false);
      assert.equal(meta.has('confState'), false);
    }
    assert.equal(T(meta.get('storageVersion')), want.storageVersion);
    assert.equal(T(metaOf(file, 'cluster').get('clusterVersion')), want.cluster);

    const loaded = createEtcdSim({ time: 'virtual', etcdVersion: version, fromSnapshot: file });
    assert.deepEqual(loaded.services.maintenance.hashKV({}), { ...sim.services.maintenance.hashKV({}), header: loaded.services.maintenance.hashKV({}).header });
    assert.deepEqual(loaded.services.kv.range({ key: B('/'), range_end: B('0') }).kvs, sim.services.kv.range({ key: B('/'), range_end: B('0') }).kvs);
    assert.equal(loaded.services.maintenance.hash({}).hash, sim.services.maintenance.hash({}).hash, 'Hash: the same buckets (term and storageVersion are not hashed)');
    // Saved again, the same layout (term and confState come from the loading member, which is alike).
    assert.equal(T(metaOf(loaded.server.etcdSnapshot()).get('storageVersion')), want.storageVersion);
    sim.close();
    loaded.close();
  });
}

test('a newer layout loads into an older profile: a 3.7 snapshot into a 3.4 member', () => {
  const sim = populated('3.7');
  const loaded = createEtcdSim({ time: 'virtual', etcdVersion: '3.4', fromSnapshot: sim.server.etcdSnapshot() });
  assert.equal(loaded.services.maintenance.hashKV({}).hash, sim.services.maintenance.hashKV({}).hash);
  assert.deepEqual(loaded.services.kv.range({ key: B('/'), range_end: B('0') }).kvs, sim.services.kv.range({ key: B('/'), range_end: B('0') }).kvs);
  // Saved by the 3.4 profile: 3.4's layout again.
  assert.equal(metaOf(loaded.server.etcdSnapshot()).has('storageVersion'), false);
  sim.close();
  loaded.close();
});

/** A backend file put together by hand, bucket by bucket, with the keys the newer releases write. */
function handCrafted(meta: BoltEntry[], cluster: BoltEntry[]): Uint8Array {
  const base = serverOf(populated('3.4')).etcdBackend();
  const tree = encodeEtcdBackend(base);
  const entries = tree.entries.map((e): BoltEntry => {
    if (!isBucketEntry(e)) return e;
    const name = T(e.key);
    const extra = name === 'meta' ? meta : name === 'cluster' ? cluster : [];
    const all = [...e.bucket.entries, ...extra].sort((a, b) => Buffer.compare(a.key, b.key));
    return { key: e.key, bucket: { entries: all } };
  });
  return writeBolt({ entries } satisfies BoltBucket);
}

test('hand-crafted 3.5/3.6 keys are read exactly: term, confState with 64-bit IDs and learners, an empty storageVersion, downgrade', () => {
  const big = 0xfedcba9876543210n; // beyond 2^53: must not lose precision
  const file = handCrafted(
    [
      { key: B('confState'), value: B(`{"voters":[1,${big}],"learners":[18446744073709551615],"auto_leave":false}`) },
      // 3.6's migration first writes an empty storageVersion (schema.go's placeholder).
      { key: B('storageVersion'), value: B('') },
      { key: B('term'), value: u64(7n) },
      { key: B('zz-some-future-key'), value: B('ignored') },
    ],
    [{ key: B('downgrade'), value: B('{"target-version":"3.5.0","enabled":true}') }],
  );
  const b = readEtcdSnapshot(file);
  assert.equal(b.term, 7n);
  assert.deepEqual(b.confState, { voters: [1n, big], learners: [18446744073709551615n], votersOutgoing: [], learnersNext: [], autoLeave: false });
  assert.equal(b.storageVersion, '');
  assert.deepEqual(b.downgrade, { targetVersion: '3.5.0', enabled: true });
  // Written back: the same bytes for those keys.
  const again = decodeEtcdBackend(readBolt(writeEtcdSnapshot(b).subarray(0, -32)).root);
  assert.deepEqual([again.term, again.confState, again.storageVersion, again.downgrade], [b.term, b.confState, b.storageVersion, b.downgrade]);
  // And a simulator loads it, with the history of the base member.
  const loaded = createEtcdSim({ time: 'virtual', etcdVersion: '3.6', fromSnapshot: file });
  assert.equal(loaded.services.maintenance.hashKV({}).hash, populated('3.4').services.maintenance.hashKV({}).hash);
  loaded.close();
});

test('bad newer-layout keys are rejected, naming the key', () => {
  assert.throws(() => readEtcdSnapshot(handCrafted([{ key: B('term'), value: B('7') }], [])), (e: unknown) => e instanceof SnapshotFormatError && /meta term: expected 8 bytes/.test(e.message));
  assert.throws(() => readEtcdSnapshot(handCrafted([{ key: B('confState'), value: B('{"voters":[1,') }], [])), (e: unknown) => e instanceof SnapshotFormatError && /meta confState: not JSON/.test(e.message));
  assert.throws(() => readEtcdSnapshot(handCrafted([{ key: B('confState'), value: B('{"voters":["a"]}') }], [])), (e: unknown) => e instanceof SnapshotFormatError && /meta confState: voters/.test(e.message));
  assert.throws(() => readEtcdSnapshot(handCrafted([], [{ key: B('downgrade'), value: B('[]') }])), (e: unknown) => e instanceof SnapshotFormatError && /cluster downgrade/.test(e.message));
});

test('Hash leaves out meta term and storageVersion as etcd does, and covers confState', () => {
  const b: EtcdBackend = serverOf(populated('3.5')).etcdBackend();
  assert.equal(backendHash({ ...b, term: 99n, storageVersion: '3.6.0' }), backendHash(b));
  assert.notEqual(backendHash({ ...b, confState: { ...b.confState!, voters: [1n] } }), backendHash(b));
});

test('the key bucket laid out by index (the fast path) gives the very bytes of the entry-by-entry layout', () => {
  const sim = populated('3.5');
  // Enough revisions for branch pages.
  for (let i = 0; i < 3000; i++) sim.services.kv.put({ key: B(`/many/${i % 700}`), value: new Uint8Array(40 + (i % 90)).fill(i & 0xff) });
  const b = serverOf(sim).etcdBackend();
  const viaEntries = writeBolt(encodeEtcdBackend(b));
  const viaSource = writeEtcdSnapshot(b);
  assert.deepEqual(viaSource.subarray(0, -32), viaEntries);
  // A backend whose revisions are out of order is refused, not written.
  const swapped = [...b.revisions];
  [swapped[3], swapped[4]] = [swapped[4]!, swapped[3]!];
  assert.throws(() => writeEtcdSnapshot({ ...b, revisions: swapped }), /out of order/);
  sim.close();
});
