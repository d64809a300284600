import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createEtcdSim, serverOf } from '../../src/client/create.js';
import { readEtcdSnapshot, snapshotStatus } from '../../src/snapshot/index.js';
import type { KeyValue } from '../../src/mvcc/index.js';

const fixture = (name: string): Buffer => readFileSync(new URL(`./fixtures/${name}`, import.meta.url));

interface Expected {
  revision: number;
  hashKV: number;
  hashKVAt6: number;
  compactRevision: number;
  lease: string;
  kvs: unknown[];
  kvsAt6: unknown[];
  snapshotStatus: unknown;
}

/** A KeyValue as the fixture records what etcdctl printed (values by length, lease attached or not). */
const shape = (kv: KeyValue): unknown => ({
  key: Buffer.from(kv.key).toString(),
  create_revision: kv.createRevision,
  mod_revision: kv.modRevision,
  version: kv.version,
  valueLength: kv.value.length,
  lease: kv.lease === 0n ? 0 : 1,
});

test('a committed snapshot of a real etcd 3.4.23 loads: the same reads, HashKV, lease and auth as that etcd answered', () => {
  const bytes = fixture('etcd-3.4.23-small.db');
  const want = JSON.parse(fixture('etcd-3.4.23-small.expected.json').toString()) as Expected;
  // etcdctl snapshot status, computed without etcd: the same hash, revision, key count and size.
  assert.deepEqual(snapshotStatus(bytes), want.snapshotStatus);
  const backend = readEtcdSnapshot(bytes);
  assert.deepEqual([backend.scheduledCompactRev, backend.finishedCompactRev], [4, 4]);
  assert.deepEqual(backend.members.map((m) => m.name), ['default']);
  assert.equal(backend.clusterVersion, '3.4.0');
  assert.match(new TextDecoder().decode(backend.users.find((u) => u.name === 'alice')!.password), /^\$2a\$10\$/, 'bcrypt hashes are carried as stored');
  const sim = createEtcdSim({ time: 'virtual', etcdVersion: '3.4', fromSnapshot: bytes });
  try {
    const all = { key: new Uint8Array([0]), rangeEnd: new Uint8Array([0]) };
    assert.equal(sim.mvcc.currentRevision, want.revision);
    assert.deepEqual(sim.mvcc.range(all).kvs.map(shape), want.kvs);
    assert.deepEqual(sim.mvcc.range({ ...all, revision: 6 }).kvs.map(shape), want.kvsAt6);
    assert.deepEqual(sim.mvcc.hashKV(0), { hash: want.hashKV, hashRevision: want.revision, compactRevision: want.compactRevision });
    assert.equal(sim.mvcc.hashKV(6).hash, want.hashKVAt6);
    assert.throws(() => sim.mvcc.range({ ...all, revision: 3 }), /compacted/);
    assert.deepEqual(sim.lessor.leases().map((id) => id.toString(16)), [want.lease]);
    assert.deepEqual(sim.lessor.timeToLive(BigInt(`0x${want.lease}`), true).keys.map((k) => Buffer.from(k).toString()), ['leased']);
    const auth = serverOf(sim).auth.snapshot();
    assert.equal(auth.enabled, true);
    assert.deepEqual(auth.roles.map((r) => [r.name, r.perms.map((p) => [p.permType, Buffer.from(p.key).toString(), Buffer.from(p.rangeEnd).toString()])]), [['reader', [['READ', 'a', 'b']]]]);
    assert.deepEqual(auth.users.map((u) => [u.name, u.roles]), [['alice', ['reader']], ['root', ['root']]]);
    // A watch from the compaction point replays the retained history.
    assert.deepEqual(sim.mvcc.eventsAt(7).map((e) => [e.type, Buffer.from(e.kv.key).toString()]), [['PUT', 'x'], ['DELETE', 'b'], ['PUT', 'y']]);
  } finally {
    sim.close();
  }
});

test('the committed fixture, truncated anywhere, is rejected: never a partial load', () => {
  const bytes = fixture('etcd-3.4.23-small.db');
  for (const cut of [0, 100, 4096, 4096 * 5, 4096 * 3 + 32, bytes.length - 4096, bytes.length - 1]) {
    assert.throws(() => createEtcdSim({ time: 'virtual', fromSnapshot: bytes.subarray(0, cut) }), /snapshot: /, `cut at ${cut}`);
  }
  // Without its SHA-256 trailer (a db file copied from a data dir, as etcdctl snapshot restore also takes).
  const bare = createEtcdSim({ time: 'virtual', fromSnapshot: bytes.subarray(0, bytes.length - 32) });
  assert.equal(bare.mvcc.currentRevision, 9);
  bare.close();
});
