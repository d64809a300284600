/**
 * A member killed and started again, rebuilt from its backend as etcd rebuilds itself from bbolt (mvcc
 * restore), and etcd issue #19179: a compaction cut short by the kill, resumed at restart, and the lone
 * tombstone the rebuild before PR #19188 left out of the index.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createEtcdSim, type EtcdSim, type messages as M } from '../../src/index.js';
import { serverOf } from '../../src/client/index.js';
import { compatFor } from '../../src/mvcc/index.js';
import { interruptCompaction, memberOfBackend } from '../../src/snapshot/index.js';
import { B } from './helpers.js';

/** Three puts of /k (2..4), its delete at 5, a put of /k at 6: the shape etcd's robustness test found. */
function deletedKey(opts: { restoreLoneTombstone?: boolean; compactionBatchLimit?: number } = {}): EtcdSim {
  const sim = createEtcdSim({ time: 'virtual', ...opts });
  const kv = sim.services.kv;
  for (const v of ['v1', 'v2', 'v3']) kv.put({ key: B('/k'), value: B(v) });
  kv.deleteRange({ key: B('/k') });
  kv.put({ key: B('/k'), value: B('v5') });
  return sim;
}

/** What a watch from `rev` on /k receives once the sync step ran: `TYPE@REV` per event. */
function watchFrom(sim: EtcdSim, rev: number): string[] {
  const call = sim.services.watch.watch();
  call.write({ create_request: { key: B('/k'), start_revision: String(rev) } });
  sim.server.advance(100);
  const events = call.take().flatMap((r: M.WatchResponse) => r.events.map((e) => `${e.type}@${e.kv.mod_revision}`));
  call.cancel();
  return events;
}

test('restoreLoneTombstone: on from the 3.5 profile (3.5.31 has the v3.5.18 backport), off for 3.4.23; an option overrides it', () => {
  assert.equal(compatFor('3.4').restoreLoneTombstone, false);
  for (const v of ['3.5', '3.6', '3.7'] as const) assert.equal(compatFor(v).restoreLoneTombstone, true, v);
  assert.equal(serverOf(createEtcdSim({ time: 'virtual', etcdVersion: '3.4' })).restoreLoneTombstone, false);
  assert.equal(serverOf(createEtcdSim({ time: 'virtual' })).restoreLoneTombstone, true);
  assert.equal(serverOf(createEtcdSim({ time: 'virtual', restoreLoneTombstone: false })).restoreLoneTombstone, false);
  assert.throws(() => createEtcdSim({ time: 'virtual', compactionBatchLimit: 0 }), /compactionBatchLimit must be an integer >= 1/);
});

test('the index rebuild: a key whose first stored revision is a tombstone is restored as {tombstone}{empty}, or left out before the fix', () => {
  const sim = deletedKey();
  sim.services.kv.put({ key: B('/gone'), value: B('x') }); // 7
  sim.services.kv.deleteRange({ key: B('/gone') }); // 8
  sim.compact(5); // keeps /k's tombstone at 5 (the #18089 rule), drops its puts
  const backend = serverOf(sim).etcdBackend();
  assert.deepEqual(
    backend.revisions.map((r) => `${r.main}${r.tombstone ? 't' : ''}`),
    ['5t', '6', '7', '8t'],
  );
  const fixed = memberOfBackend(backend);
  assert.deepEqual(
    fixed.loneTombstones.map((kv) => kv.modRevision),
    [5],
  );
  assert.deepEqual(
    fixed.store.keys.map((k) => [k.key, k.revs.map((kv) => kv.modRevision)]),
    [
      ['/gone', [7, 8]],
      ['/k', [5, 6]],
    ],
  );
  const old = memberOfBackend(backend, { restoreLoneTombstone: false });
  assert.deepEqual(
    old.store.keys.map((k) => [k.key, k.revs.map((kv) => kv.modRevision)]),
    [
      ['/gone', [7, 8]],
      ['/k', [6]],
    ],
  );
  // Either way the tombstone is still in the backend, so the watch history keeps it.
  assert.deepEqual(old.store.log[5 - old.store.logStart]!.map((e) => e.type), ['DELETE']);
});

test('a restart after a finished compaction: the lone tombstone stays in the backend, so a watch from it still gets the DELETE, fix or not', () => {
  for (const restoreLoneTombstone of [true, false]) {
    const sim = deletedKey({ restoreLoneTombstone });
    sim.compact(5);
    const r = sim.server.restart();
    assert.equal(r.resumedCompactRevision, undefined);
    assert.deepEqual(
      r.loneTombstones.map((kv) => kv.modRevision),
      [5],
    );
    assert.deepEqual(watchFrom(sim, 5), ['DELETE@5', 'PUT@6'], `restoreLoneTombstone=${restoreLoneTombstone}`);
  }
});

test('interruptCompaction: the walk up to the compaction revision in batches, the kept revisions untouched, the meta keys', () => {
  const sim = deletedKey();
  const before = serverOf(sim).etcdBackend();
  sim.compact(5);
  const kept = serverOf(sim).etcdBackend();
  // Revisions up to 5: 2, 3, 4 (puts, deleted), 5 (the tombstone, kept): batches of 2 → 2 full ones and an empty last.
  const one = interruptCompaction(before, kept, 5, 1, 2);
  assert.deepEqual([one.batches, one.committed, one.finished, one.deleted, one.remaining, one.walkedTo], [3, 1, false, 2, 1, 3]);
  assert.deepEqual(
    one.backend.revisions.map((r) => r.main),
    [4, 5, 6],
  );
  assert.equal(one.backend.scheduledCompactRev, 5);
  assert.equal(one.backend.finishedCompactRev, undefined);
  assert.equal(one.backend.consistentIndex, kept.consistentIndex, 'the Compact entry itself was applied');
  const two = interruptCompaction(before, kept, 5, 2, 2);
  assert.deepEqual([two.committed, two.finished, two.deleted, two.remaining], [2, false, 3, 0]);
  assert.deepEqual(
    two.backend.revisions.map((r) => r.main),
    [5, 6],
  );
  const all = interruptCompaction(before, kept, 5, 7, 2);
  assert.deepEqual([all.committed, all.finished, all.deleted], [3, true, 3]);
  assert.equal(all.backend.finishedCompactRev, 5);
  const none = interruptCompaction(before, kept, 5, 0);
  assert.deepEqual([none.batches, none.committed, none.deleted, none.remaining], [1, 0, 0, 3]);
  assert.equal(none.backend.revisions.length, before.revisions.length);
  assert.throws(() => interruptCompaction(before, kept, 5, -1), /afterBatches must be an integer >= 0/);
});

test('etcd #19179: killed after the batches that removed the puts, the member resumes the compaction; before the fix it deletes the lone tombstone too', () => {
  for (const [restoreLoneTombstone, expected] of [
    [false, ['PUT@6']],
    [true, ['DELETE@5', 'PUT@6']],
  ] as const) {
    const sim = deletedKey({ restoreLoneTombstone, compactionBatchLimit: 2 });
    const crash = sim.server.crashDuringCompaction(5, 2);
    assert.equal(crash.response.header.revision, '6');
    assert.equal(crash.progress.finished, false);
    assert.equal(crash.restart.finishedCompactRevision, -1);
    assert.equal(crash.restart.resumedCompactRevision, 5);
    assert.equal(crash.restart.loneTombstonesRestored, restoreLoneTombstone);
    assert.equal(sim.mvcc.compactRevision, 5);
    assert.equal(sim.mvcc.currentRevision, 6);
    assert.deepEqual(watchFrom(sim, 5), expected, `restoreLoneTombstone=${restoreLoneTombstone}`);
    // Reads do not tell the two apart: absent at 5, v5 after.
    assert.equal(sim.mvcc.range({ key: B('/k'), revision: 5 }).kvs.length, 0);
    assert.equal(Buffer.from(sim.mvcc.range({ key: B('/k') }).kvs[0]!.value).toString(), 'v5');
    // A snapshot of the member shows what its backend keeps.
    assert.deepEqual(
      serverOf(sim).etcdBackend().revisions.map((r) => r.main),
      restoreLoneTombstone ? [5, 6] : [6],
    );
  }
});

test('killed before the puts were all deleted, the rebuilt index still has the key whole: no lone tombstone, no lost DELETE', () => {
  const sim = deletedKey({ restoreLoneTombstone: false, compactionBatchLimit: 2 });
  const crash = sim.server.crashDuringCompaction(5, 1); // revisions 2, 3 deleted; 4 is still there
  assert.deepEqual(crash.restart.loneTombstones, []);
  assert.deepEqual(watchFrom(sim, 5), ['DELETE@5', 'PUT@6']);
});

test('a compaction etcd refuses kills nothing', () => {
  const sim = deletedKey();
  assert.throws(() => sim.server.crashDuringCompaction(9, 1), (err: Error & { details?: string }) => err.details === 'etcdserver: mvcc: required revision is a future revision');
  assert.equal(sim.mvcc.compactRevision, -1);
  assert.throws(() => sim.server.crashDuringCompaction(5, -1), /afterBatches must be an integer >= 0/);
});

test('restart: the same history, streams broken with UNAVAILABLE, leases counting their TTL again, a new raft term', () => {
  const sim = deletedKey();
  const lease = sim.services.lease.leaseGrant({ TTL: '10' });
  sim.services.kv.put({ key: B('/l'), value: B('x'), lease: lease.ID });
  sim.compact(3);
  const digest = sim.digest();
  const term = sim.server.member.raftTerm;
  const index = sim.server.raftIndex;
  const call = sim.services.watch.watch();
  call.write({ create_request: { key: B('/k') } });
  let ended: { code: number; details: string } | undefined;
  call.onEnd((err) => {
    if (err !== undefined) ended = { code: err.code, details: err.details };
  });
  sim.server.advance(8000);
  const r = sim.server.restart();
  assert.deepEqual(ended, { code: 14, details: 'transport is closing' });
  assert.equal(r.brokenStreams, 1);
  assert.deepEqual([r.revision, r.compactRevision, r.finishedCompactRevision], [7, 3, 3]);
  assert.equal(sim.digest(), digest, 'the rebuilt store holds the same history');
  assert.equal(sim.server.member.raftTerm, term + 1n);
  assert.equal(sim.server.raftIndex, index + 2, 'the new term\'s empty entry and the published attributes (observed on 3.4.23)');
  // The lease had 2 s left; after the restart it counts its full 10 s from now, and still holds its key.
  const ttl = sim.services.lease.leaseTimeToLive({ ID: lease.ID, keys: true });
  assert.equal(ttl.TTL, '10');
  assert.deepEqual(ttl.keys.map((k) => Buffer.from(k).toString()), ['/l']);
  sim.server.advance(9000);
  assert.equal(sim.mvcc.range({ key: B('/l') }).kvs.length, 1);
  sim.server.advance(2000);
  assert.equal(sim.mvcc.range({ key: B('/l') }).kvs.length, 0);
});

test('the revision never goes back below a scheduled compaction whose deletions took the newest revision (etcd #17780)', () => {
  const sim = createEtcdSim({ time: 'virtual', restoreLoneTombstone: false, compactionBatchLimit: 2 });
  for (const v of ['v1', 'v2', 'v3']) sim.services.kv.put({ key: B('/k'), value: B(v) });
  sim.services.kv.deleteRange({ key: B('/k') }); // 5, the newest revision
  const crash = sim.server.crashDuringCompaction(5, 2);
  assert.deepEqual(
    crash.progress.backend.revisions.map((r) => r.main),
    [5],
  );
  // The resumed compaction deletes the lone tombstone: nothing is stored, yet the revision stays 5.
  assert.equal(sim.mvcc.currentRevision, 5);
  assert.equal(sim.mvcc.compactRevision, 5);
  assert.deepEqual(serverOf(sim).etcdBackend().revisions, []);
  assert.equal(sim.services.kv.put({ key: B('/k'), value: B('v6') }).header.revision, '6');
});
