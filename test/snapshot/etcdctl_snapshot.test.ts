import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startEtcd } from '../../src/diff/etcd_process.js';
import { serve } from '../../src/grpc/server.js';
import { createEtcdSim, serverOf } from '../../src/client/create.js';
import { readEtcdSnapshot, snapshotStatus, type EtcdBackend } from '../../src/snapshot/index.js';
import type { KeyValue } from '../../src/mvcc/index.js';
import { requireCommands } from '../support/prerequisites.js';
import { ctlOk, etcdctl, getAll, hashKV, restoreAndStart, scratchDir, writeHistory, type JsonKv } from './helpers.js';

/** Compared with a real etcd 3.4.23 through its own tools (skipped outside CI when they are missing). */
const skip = requireCommands(['etcd', 'etcdctl']);

/** The key bucket and the other etcd-visible facts of a backend, for comparing two snapshots. */
function essentials(b: EtcdBackend): object {
  return {
    revisions: b.revisions.map((r) => ({ main: r.main, sub: r.sub, tombstone: r.tombstone, kv: { ...r.kv, key: Buffer.from(r.kv.key).toString(), value: Buffer.from(r.kv.value).toString(), lease: r.kv.lease !== 0n } })),
    compact: [b.scheduledCompactRev, b.finishedCompactRev],
    leases: b.leases.map((l) => [l.ttl, l.remainingTTL]),
    authEnabled: b.authEnabled,
    authRevision: b.authRevision,
    users: b.users.map((u) => [u.name, u.roles, u.noPassword]),
    roles: b.roles.map((r) => ({ name: r.name, perms: r.perms.map((p) => [p.permType, Buffer.from(p.key).toString(), Buffer.from(p.rangeEnd).toString()]) })),
    clusterVersion: b.clusterVersion,
  };
}

/** A simulator KeyValue as `etcdctl get -w json` prints it (lease as the lossy JSON number etcdctl's reader gets). */
function asJsonKv(kv: KeyValue): JsonKv {
  const o: Record<string, unknown> = { key: Buffer.from(kv.key).toString('base64'), create_revision: kv.createRevision, mod_revision: kv.modRevision, version: kv.version };
  if (kv.value.length > 0) o['value'] = Buffer.from(kv.value).toString('base64');
  if (kv.lease !== 0n) o['lease'] = Number(kv.lease);
  return o as unknown as JsonKv;
}

test('simulator → etcdctl snapshot save / status / restore → a real etcd 3.4.23 answers as the simulator did', { skip, timeout: 180_000 }, async () => {
  const scratch = scratchDir();
  const sim = await serve({ port: 0, etcdVersion: '3.4' });
  const real = await startEtcd();
  try {
    await writeHistory(sim.address, { withAuth: false });
    await writeHistory(real.address, { withAuth: false });
    const simFile = join(scratch.dir, 'sim.db');
    const realFile = join(scratch.dir, 'real.db');
    await ctlOk(['snapshot', 'save', simFile], sim.address);
    await ctlOk(['snapshot', 'save', realFile], real.address);

    // etcd's own reader accepts the file, and counts what a real etcd's snapshot of the same requests holds.
    const [simStatus, realStatus] = await Promise.all(
      [simFile, realFile].map(async (f) => JSON.parse(await ctlOk(['snapshot', 'status', f, '-w', 'json'])) as { hash: number; revision: number; totalKey: number; totalSize: number }),
    );
    assert.equal(simStatus!.revision, realStatus!.revision);
    assert.equal(simStatus!.totalKey, realStatus!.totalKey);
    assert.ok(simStatus!.totalSize > 0 && simStatus!.totalSize % 4096 === 0);
    // etcd reads back exactly what was written: its hash of every bucket is the one computed here.
    assert.deepEqual(simStatus, snapshotStatus(readFileSync(simFile)));
    assert.deepEqual(realStatus, snapshotStatus(readFileSync(realFile)));
    // Bucket by bucket, the same content (IDs, the member record and the consistent index aside).
    assert.deepEqual(essentials(readEtcdSnapshot(readFileSync(simFile))), essentials(readEtcdSnapshot(readFileSync(realFile))));

    // Restored into a real etcd: every read and HashKV as the simulator answers them.
    const restored = await restoreAndStart(simFile, join(scratch.dir, 'restored'));
    try {
      assert.deepEqual(await getAll(restored.address), await getAll(sim.address));
      assert.deepEqual(await getAll(restored.address, ['--rev=5']), await getAll(sim.address, ['--rev=5']));
      assert.deepEqual(await getAll(restored.address, ['--rev=9']), await getAll(sim.address, ['--rev=9']));
      assert.equal(await hashKV(restored.address), await hashKV(sim.address));
      for (const rev of [5, 8, 12]) assert.equal(await hashKV(restored.address, rev), await hashKV(sim.address, rev));
      // The real etcd that got the same requests agrees too, up to the lease grant (lease IDs are random).
      assert.equal(await hashKV(restored.address, 12), await hashKV(real.address, 12));
      const compacted = await etcdctl(['get', 'a', '--rev=3'], restored.address);
      assert.match(compacted.stderr, /required revision has been compacted/);
      assert.equal(await ctlOk(['role', 'get', 'reader'], restored.address), await ctlOk(['role', 'get', 'reader'], sim.address));
      assert.equal(await ctlOk(['user', 'get', 'alice'], restored.address), await ctlOk(['user', 'get', 'alice'], sim.address));
      const leases = await ctlOk(['lease', 'list'], restored.address);
      assert.equal(leases, await ctlOk(['lease', 'list'], sim.address));
    } finally {
      await restored.stop();
    }
  } finally {
    await sim.close();
    await real.stop();
    scratch.cleanup();
  }
});

test('a real etcd 3.4.23 snapshot → createEtcdSim({ fromSnapshot }) and serve({ fromSnapshot }): same reads, HashKV, leases and auth', { skip, timeout: 180_000 }, async () => {
  const scratch = scratchDir();
  const real = await startEtcd();
  try {
    await writeHistory(real.address, { withAuth: true });
    const root = ['--user=root:rootpw'];
    const file = join(scratch.dir, 'real.db');
    await ctlOk([...root, 'snapshot', 'save', file], real.address);
    const bytes = readFileSync(file);
    const realAll = JSON.parse(await ctlOk([...root, 'get', '', '--from-key', '-w', 'json'], real.address)) as { kvs: JsonKv[]; header: { revision: number } };
    const realHash = JSON.parse(await ctlOk([...root, 'endpoint', 'hashkv', '-w', 'json'], real.address)) as { HashKV: { hash: number; compact_revision: number } }[];
    const realHash8 = JSON.parse(await ctlOk([...root, 'endpoint', 'hashkv', '--rev=8', '-w', 'json'], real.address)) as { HashKV: { hash: number } }[];
    const realAt9 = JSON.parse(await ctlOk([...root, 'get', '', '--from-key', '--rev=9', '-w', 'json'], real.address)) as { kvs: JsonKv[] };
    const realLeases = (await ctlOk([...root, 'lease', 'list'], real.address)).split('\n').slice(1).filter((l) => l !== '');

    const sim = createEtcdSim({ time: 'virtual', etcdVersion: '3.4', fromSnapshot: bytes });
    try {
      const m = serverOf(sim);
      assert.equal(m.mvcc.currentRevision, realAll.header.revision);
      assert.deepEqual(m.mvcc.range({ key: new Uint8Array([0]), rangeEnd: new Uint8Array([0]) }).kvs.map(asJsonKv), realAll.kvs);
      assert.deepEqual(m.mvcc.range({ key: new Uint8Array([0]), rangeEnd: new Uint8Array([0]), revision: 9 }).kvs.map(asJsonKv), realAt9.kvs);
      const h = m.mvcc.hashKV(0);
      assert.equal(h.hash, realHash[0]!.HashKV.hash);
      assert.equal(h.compactRevision, realHash[0]!.HashKV.compact_revision);
      assert.equal(m.mvcc.hashKV(8).hash, realHash8[0]!.HashKV.hash);
      // Leases: the same IDs and granted TTL; the remaining time counts from the load (etcd's promote).
      // etcdctl lease list prints each ID as 16 hex digits (%016x); a random ID may start with zeros.
      assert.deepEqual(m.lessor.leases().map((id) => id.toString(16).padStart(16, '0')), realLeases);
      const ttl = m.lessor.timeToLive(m.lessor.leases()[0]!, true);
      assert.equal(ttl.grantedTTL, 600);
      assert.equal(ttl.ttl, 600);
      assert.deepEqual(ttl.keys.map((k) => Buffer.from(k).toString()), ['leased']);
      // Auth: enabled, users with their roles, roles with their permissions, as the real etcd has them.
      const auth = m.auth.snapshot();
      assert.equal(auth.enabled, true);
      assert.deepEqual(auth.users.map((u) => [u.name, u.roles]), [['alice', ['reader']], ['root', ['root']]]);
      assert.deepEqual(auth.roles.map((r) => r.name), ['reader']); // etcd stores no role root: it is built in
      assert.equal(auth.revision, readEtcdSnapshot(bytes).authRevision);
    } finally {
      sim.close();
    }

    // Over the wire (what `etcdsim serve --from-snapshot` runs): etcdctl sees the real etcd's data.
    const served = await serve({ port: 0, etcdVersion: '3.4', fromSnapshot: bytes });
    try {
      const first = await etcdctl(['get', 'a'], served.address);
      assert.match(first.stderr, /user name is empty|authentication/i, 'auth is enabled after loading');
      // etcd's bcrypt hashes are checked as etcd checks them: the same passwords authenticate.
      const allowed = await etcdctl(['--user=root:rootpw', 'get', 'a'], served.address);
      assert.equal(allowed.code, 0, allowed.stderr);
      const denied = await etcdctl(['--user=root:alicepw', 'get', 'a'], served.address);
      assert.match(denied.stderr, /authentication failed, invalid user ID or password/);
    } finally {
      await served.close();
    }
  } finally {
    await real.stop();
    scratch.cleanup();
  }
});
