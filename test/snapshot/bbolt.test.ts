import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { BoltFormatError, boltKey, childBucket, isBucketEntry, readBolt, writeBolt, type BoltBucket, type BoltEntry } from '../../src/snapshot/index.js';
import { SnapshotFormatError, readEtcdSnapshot, writeEtcdSnapshot, type EtcdBackend } from '../../src/snapshot/index.js';
import { createEtcdSim, serverOf } from '../../src/client/create.js';

const B = (s: string): Uint8Array => new TextEncoder().encode(s);
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** A bucket's content in a comparable form (hex keys and values, nested buckets as objects). */
function plain(b: BoltBucket): unknown {
  return b.entries.map((e) => (isBucketEntry(e) ? { k: hex(e.key), bucket: plain(e.bucket), seq: String(e.bucket.sequence ?? 0n) } : { k: hex(e.key), v: hex(e.value) }));
}

/** Page types of a file, by page id (0x01 branch, 0x02 leaf, 0x04 meta, 0x10 freelist), skipping overflow pages. */
function pageKinds(file: Uint8Array, pageSize = 4096): Map<string, number> {
  const v = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const kinds = new Map<string, number>();
  for (let id = 0; id * pageSize < file.length; ) {
    const flags = v.getUint16(id * pageSize + 8, true);
    const overflow = v.getUint32(id * pageSize + 12, true);
    const name = flags === 1 ? 'branch' : flags === 2 ? 'leaf' : flags === 4 ? 'meta' : flags === 16 ? 'freelist' : `0x${flags.toString(16)}`;
    kinds.set(name, (kinds.get(name) ?? 0) + 1);
    if (overflow > 0) kinds.set('overflowing', (kinds.get('overflowing') ?? 0) + 1);
    id += overflow + 1;
  }
  return kinds;
}

test('bbolt round trip: many keys (branch pages), values larger than a page (overflow), nested and inline buckets', () => {
  const many: BoltEntry[] = Array.from({ length: 20_000 }, (_, i) => ({ key: B(`key/${String(i).padStart(6, '0')}`), value: B(`value ${i}`.repeat(1 + (i % 5))) }));
  const big: BoltEntry[] = [1, 4095, 4096, 4097, 70_000, 300_000].map((n, i) => ({ key: B(`big${i}`), value: new Uint8Array(n).map((_, j) => (j * 31 + i) & 0xff) }));
  const root: BoltBucket = {
    entries: [
      { key: B('big'), bucket: { entries: big } },
      { key: B('empty'), bucket: { entries: [] } },
      { key: B('many'), bucket: { entries: many, sequence: 42n } },
      {
        key: B('nested'),
        bucket: {
          entries: [
            { key: B('a'), value: B('1') },
            { key: B('deep'), bucket: { entries: [{ key: B('deeper'), bucket: { entries: [{ key: B('x'), value: B('y') }] } }] } },
            { key: B('wide'), bucket: { entries: many.slice(0, 3000) } },
          ],
        },
      },
      { key: B('small'), bucket: { entries: [{ key: B('k'), value: B('v') }] } },
    ],
  };
  const file = writeBolt(root);
  assert.equal(file.length % 4096, 0);
  const kinds = pageKinds(file);
  assert.equal(kinds.get('meta'), 2);
  assert.equal(kinds.get('freelist'), 1);
  assert.ok((kinds.get('branch') ?? 0) >= 2, 'a multi-level tree has branch pages');
  assert.ok((kinds.get('overflowing') ?? 0) >= 3, 'large values overflow onto following pages');
  const db = readBolt(file);
  assert.equal(db.pageSize, 4096);
  assert.equal(db.pageCount * 4096, file.length);
  assert.deepEqual(plain(db.root), plain(root));
  // Small leaf-only buckets are stored inline (in their parent's leaf), as bbolt does: no page of their own.
  const onlyInline = writeBolt({ entries: [{ key: B('a'), bucket: { entries: [{ key: B('k'), value: B('v') }] } }, { key: B('b'), bucket: { entries: [] } }] });
  assert.equal(onlyInline.length, 4 * 4096, 'two metas, the freelist, the root leaf');
  assert.deepEqual(plain(readBolt(onlyInline).root), [
    { k: hex(B('a')), bucket: [{ k: hex(B('k')), v: hex(B('v')) }], seq: '0' },
    { k: hex(B('b')), bucket: [], seq: '0' },
  ]);
});

test('bbolt writer rejects what bbolt could not hold: unsorted or duplicate keys, empty keys, values at the root', () => {
  assert.throws(() => writeBolt({ entries: [{ key: B('b'), bucket: { entries: [] } }, { key: B('a'), bucket: { entries: [] } }] }), /ascending/);
  assert.throws(() => writeBolt({ entries: [{ key: B('a'), bucket: { entries: [{ key: B('k'), value: B('1') }, { key: B('k'), value: B('2') }] } }] }), /ascending/);
  assert.throws(() => writeBolt({ entries: [{ key: B('a'), bucket: { entries: [{ key: B(''), value: B('1') }] } }] }), /empty/);
  assert.throws(() => writeBolt({ entries: [{ key: B('a'), value: B('1') }] }), /only buckets/);
});

test('bad and truncated files are rejected with what is wrong, never a partial result', () => {
  const file = writeBolt({ entries: [{ key: B('key'), bucket: { entries: Array.from({ length: 2000 }, (_, i) => ({ key: B(`k${String(i).padStart(5, '0')}`), value: new Uint8Array(100) })) } }] });
  assert.throws(() => readBolt(new Uint8Array(10)), (e: unknown) => e instanceof BoltFormatError && /too small/.test(e.message));
  assert.throws(() => readBolt(new Uint8Array(16384)), /invalid database: meta page 0: not a meta page/);
  assert.throws(() => readBolt(file.subarray(0, file.length - 4096)), /truncated: the meta page says \d+ pages/);
  // One meta page damaged: bbolt falls back to the other, and so does the reader.
  const oneBad = file.slice();
  oneBad[16 + 20]! ^= 0xff;
  assert.deepEqual(plain(readBolt(oneBad).root), plain(readBolt(file).root));
  const bothBad = oneBad.slice();
  bothBad[4096 + 16 + 20]! ^= 0xff;
  assert.throws(() => readBolt(bothBad), /meta page 0: checksum mismatch; meta page 1: checksum mismatch/);
  // A garbled data page: a bad element or page reference is named, with the bucket.
  const garbled = file.slice();
  garbled.fill(0xee, 5 * 4096 + 16, 5 * 4096 + 64);
  assert.throws(() => readBolt(garbled), (e: unknown) => e instanceof BoltFormatError && /bucket key/.test(e.message));
});

test('etcd backend: a member written and read back keeps every revision, the compaction point, leases and auth', () => {
  const sim = createEtcdSim({ time: 'virtual', etcdVersion: '3.4', auth: { roles: [{ name: 'r', permissions: [{ permType: 'READ', key: 'a', rangeEnd: 'b' }] }], users: [{ name: 'u', password: 'pw', roles: ['r'] }, { name: 'n', noPassword: true }, { name: 'root', password: 'rootpw', roles: ['root'] }], enable: true } });
  const kv = sim.mvcc;
  kv.put({ key: B('a'), value: B('1') });
  kv.put({ key: B('b'), value: new Uint8Array(10_000).fill(7) });
  kv.deleteRange({ key: B('a') });
  kv.txn({ success: [{ requestPut: { key: B('x'), value: B('1') } }, { requestPut: { key: B('y'), value: B('2') } }, { requestDeleteRange: { key: B('b') } }] });
  const lease = sim.lessor.grant(77n, 120);
  kv.put({ key: B('l'), value: B('v'), lease: lease.id });
  sim.compact(3);
  const file = sim.server.etcdSnapshot();
  // etcd's framing: whole pages, then the SHA-256 of them.
  assert.equal(file.length % 4096, 32);
  assert.equal(hex(file.subarray(file.length - 32)), createHash('sha256').update(file.subarray(0, file.length - 32)).digest('hex'));
  const b = readEtcdSnapshot(file);
  assert.deepEqual(b.revisions.map((r) => `${r.main}_${r.sub}${r.tombstone ? 't' : ''}`), ['2_0', '3_0', '4_0t', '5_0', '5_1', '5_2t', '6_0']);
  assert.equal(b.scheduledCompactRev, 3);
  assert.equal(b.finishedCompactRev, 3);
  assert.deepEqual(b.leases, [{ id: 77n, ttl: 120, remainingTTL: 0 }]);
  assert.deepEqual(b.roles.map((r) => r.name), ['r']);
  assert.equal(b.authEnabled, true);
  assert.deepEqual(b.users.map((u) => [u.name, u.roles, u.noPassword]), [['n', [], true], ['root', ['root'], false], ['u', ['r'], false]]);
  assert.equal(b.clusterVersion, '3.4.0');
  const loaded = createEtcdSim({ time: 'virtual', etcdVersion: '3.4', fromSnapshot: file });
  for (const rev of [0, 4, 5, 6]) assert.equal(loaded.mvcc.hashKV(rev).hash, sim.mvcc.hashKV(rev).hash, `HashKV at ${rev}`);
  assert.deepEqual(loaded.mvcc.range({ key: B('a'), rangeEnd: new Uint8Array([0]), revision: 4 }), sim.mvcc.range({ key: B('a'), rangeEnd: new Uint8Array([0]), revision: 4 }));
  assert.deepEqual(loaded.lessor.timeToLive(77n, true).keys, [B('l')]);
  // Passwords the simulator hashed authenticate after a round trip.
  assert.ok(serverOf(loaded).auth.authenticate('u', 'pw', 100).length > 0);
  assert.throws(() => serverOf(loaded).auth.authenticate('u', 'wrong', 101));
  // Saved again from the loaded member: the same revisions, leases and auth.
  const again = readEtcdSnapshot(loaded.server.etcdSnapshot());
  assert.deepEqual(again.revisions, b.revisions);
  assert.deepEqual([again.leases, again.users, again.roles, again.authRevision], [b.leases, b.users, b.roles, b.authRevision]);
  sim.close();
  loaded.close();
});

test('etcd backend: a file that is no etcd snapshot is rejected, naming the problem', () => {
  const empty: EtcdBackend = { revisions: [], consistentIndex: 1n, leases: [], authEnabled: false, authRevision: 1, users: [], roles: [], members: [], removedMembers: [], alarms: [] };
  const good = writeEtcdSnapshot(empty);
  const badSha = good.slice();
  badSha[good.length - 1]! ^= 1;
  assert.throws(() => readEtcdSnapshot(badSha), (e: unknown) => e instanceof SnapshotFormatError && /SHA-256 trailer does not match/.test(e.message));
  assert.throws(() => readEtcdSnapshot(good.subarray(0, 5000)), /neither whole pages nor pages plus a SHA-256 trailer/);
  assert.throws(() => readEtcdSnapshot(writeBolt({ entries: [{ key: B('other'), bucket: { entries: [] } }] })), /not an etcd backend/);
  const badKey = writeBolt({ entries: [{ key: B('key'), bucket: { entries: [{ key: B('nope'), value: B('') }] } }, { key: B('meta'), bucket: { entries: [] } }] });
  assert.throws(() => readEtcdSnapshot(badKey), /bucket key: 6e6f7065 is not a revision key/);
  assert.throws(() => createEtcdSim({ time: 'virtual', fromSnapshot: badSha }), SnapshotFormatError);
  assert.ok(childBucket(readBolt(good.subarray(0, good.length - 32)).root, 'members_removed') !== undefined);
  assert.deepEqual(boltKey('k'), B('k'));
});
