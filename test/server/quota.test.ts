/**
 * The backend space quota (--quota-backend-bytes) and the db size it is measured against, with etcd's
 * semantics (etcdserver/quota.go, v3rpc/quota.go; the flow observed on 3.4.23 by
 * test/grpc/quota_wire.test.ts): a write that would take the db file to the quota raises NOSPACE and is
 * refused before any other check; compaction frees space in use but not the file; Defragment shrinks the
 * file; after the alarm is taken off, writes go on.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createEtcdSim, type EtcdSim, type EtcdSimOptions } from '../../src/index.js';
import { EtcdCluster } from '../../src/cluster/index.js';
import { DEFAULT_QUOTA_BACKEND_BYTES } from '../../src/server/member_options.js';
import { statusName } from '../../src/server/errors.js';
import { VirtualClock } from '../../src/sim/index.js';
import { B, assertGrpcError } from './helpers.js';

const RESOURCE_EXHAUSTED = 8;
const NOSPACE_TEXT = 'etcdserver: mvcc: database space exceeded';
const KIB = 1024;

function sim(opts: EtcdSimOptions = {}): EtcdSim {
  return createEtcdSim({ time: 'virtual', memberId: 22n, etcdVersion: '3.4', ...opts });
}

function status(s: EtcdSim): { dbSize: number; dbSizeInUse: number; raftIndex: number; errors: string[] } {
  const st = s.services.maintenance.status();
  return { dbSize: Number(st.dbSize), dbSizeInUse: Number(st.dbSizeInUse), raftIndex: Number(st.raftIndex), errors: st.errors };
}

const noSpace = (s: EtcdSim, fn: () => unknown): void => assertGrpcError(fn, RESOURCE_EXHAUSTED, NOSPACE_TEXT, statusName(RESOURCE_EXHAUSTED));

/** Puts `value` under k0, k1, ... until the quota refuses one; returns how many went in. */
function fill(s: EtcdSim, value: Uint8Array): number {
  for (let i = 0; ; i++) {
    try {
      s.services.kv.put({ key: B(`k${i}`), value });
    } catch (err) {
      assert.equal((err as { code: number }).code, RESOURCE_EXHAUSTED);
      return i;
    }
  }
}

test('the default quota is 2 GiB; 0 means the default; below 0 there is none', () => {
  assert.equal(sim().server.quotaBackendBytes, DEFAULT_QUOTA_BACKEND_BYTES);
  assert.equal(sim({ quotaBackendBytes: 0 }).server.quotaBackendBytes, 2 * 1024 * 1024 * 1024);
  assert.equal(sim({ quotaBackendBytes: -1 }).server.quotaBackendBytes, Infinity);
  // A tiny quota that every put would exceed, switched off: puts go on.
  const none = sim({ quotaBackendBytes: -1 });
  for (let i = 0; i < 10; i++) none.services.kv.put({ key: B(`k${i}`), value: new Uint8Array(64 * KIB) });
  assert.equal(none.server.mvcc.currentRevision, 11);
});

test('a put that would reach the quota raises NOSPACE (one Raft entry) and is refused; nothing else changes', () => {
  const s = sim({ quotaBackendBytes: 256 * KIB });
  const value = new Uint8Array(16 * KIB);
  const n = fill(s, value);
  assert.ok(n > 5 && n < 16, `${n} puts of 16 KiB under a 256 KiB quota`);
  const after = status(s);
  // The refused put's cost (256 + key + value) would have taken the file to the quota.
  assert.ok(after.dbSize + 256 + `k${n}`.length + value.byteLength >= 256 * KIB, JSON.stringify(after));
  assert.deepStrictEqual(after.errors, ['memberID:22 alarm:NOSPACE ']);
  assert.deepStrictEqual(s.services.maintenance.alarm({ action: 'GET' }).alarms, [{ memberID: '22', alarm: 'NOSPACE' }]);
  assert.equal(s.server.mvcc.currentRevision, n + 1);
  // Each refusal over the quota proposes the alarm again: one entry each, the revision unmoved.
  const index = status(s).raftIndex;
  noSpace(s, () => s.services.kv.put({ key: B('x'), value }));
  assert.equal(status(s).raftIndex, index + 1);
  assert.equal(s.server.mvcc.currentRevision, n + 1);
});

test('the quota comes before every other check: a put without a key, a txn putting one key twice get NOSPACE', () => {
  const s = sim({ quotaBackendBytes: 64 * KIB });
  const big = new Uint8Array(8 * KIB);
  fill(s, big);
  noSpace(s, () => s.services.kv.put({ key: B(''), value: big }));
  noSpace(s, () => s.services.kv.txn({ success: [{ request_put: { key: B('a'), value: big } }, { request_put: { key: B('a') } }] }));
  // Requests that fit the quota meet their own checks first, then the raised alarm.
  assertGrpcError(() => s.services.kv.put({ key: B(''), value: B('v') }), 3, 'etcdserver: key is not provided', statusName(3));
  noSpace(s, () => s.services.kv.put({ key: B('a'), value: B('v') }));
  noSpace(s, () => s.services.lease.leaseGrant({ TTL: '60' }));
  // A request costing nothing passes the quota: a read-only txn is served; a delete-only txn is not a put,
  // and NOSPACE lets deletes through.
  assert.equal(s.services.kv.txn({ success: [{ request_range: { key: B('k0') } }] }).succeeded, true);
  const rev = s.server.mvcc.currentRevision;
  assert.equal(s.services.kv.txn({ success: [{ request_delete_range: { key: B('k0') } }] }).header.revision, String(rev + 1));
});

test('a txn costs the larger of its success and failure puts, top level only', async () => {
  const { costTxn } = await import('../../src/server/quota.js');
  const put = (k: string, v: number) => ({ requestPut: { key: B(k), value: new Uint8Array(v) } });
  assert.equal(costTxn({ success: [put('a', 10), put('bb', 20)], failure: [put('c', 100)] }), 256 + 1 + 10 + 256 + 2 + 20);
  assert.equal(costTxn({ success: [put('a', 10)], failure: [put('c', 1000)] }), 256 + 1 + 1000);
  assert.equal(costTxn({ success: [{ requestTxn: { success: [put('n', 5000)] } }, { requestDeleteRange: { key: B('d') } }] }), 0);
});

test('compaction frees space in use, not the file; Defragment shrinks the file; after DEACTIVATE writes go on', () => {
  const s = sim({ quotaBackendBytes: 256 * KIB });
  const fresh = status(s);
  assert.deepStrictEqual([fresh.dbSize, fresh.dbSizeInUse], [20480, 16384], 'a fresh member, as 3.4.23 reports it');
  // One key overwritten until the quota refuses.
  const value = new Uint8Array(16 * KIB);
  let n = 0;
  for (;;) {
    try {
      s.services.kv.put({ key: B('k'), value });
      n++;
    } catch {
      break;
    }
  }
  const full = status(s);
  assert.equal(full.dbSize - 20480, full.dbSizeInUse - 16384, 'nothing freed yet: the file is the data in use');
  s.services.kv.compact({ revision: String(n + 1) });
  const compacted = status(s);
  assert.equal(compacted.dbSize, full.dbSize, 'compaction keeps the file');
  assert.ok(compacted.dbSizeInUse < 16384 + 2 * value.byteLength, `one revision of k in use: ${compacted.dbSizeInUse}`);
  // Still over: the alarm refuses even a put the quota would now take after a defragment... but not before it.
  noSpace(s, () => s.services.kv.put({ key: B('k'), value }));
  s.services.maintenance.defragment({});
  const defragged = status(s);
  assert.equal(defragged.dbSize - 20480, defragged.dbSizeInUse - 16384, 'the file rewritten to the data in use');
  // NOSPACE stays raised until it is taken off.
  noSpace(s, () => s.services.kv.put({ key: B('small'), value: B('1') }));
  s.services.maintenance.alarm({ action: 'DEACTIVATE', memberID: '22', alarm: 'NOSPACE' });
  assert.deepStrictEqual(status(s).errors, []);
  const rev = s.server.mvcc.currentRevision;
  s.services.kv.put({ key: B('small'), value: B('1') });
  assert.equal(s.server.mvcc.currentRevision, rev + 1);
  assert.equal(s.server.mvcc.checkValid(), undefined);
});

test('a cluster: the member asked checks its quota before proposing; NOSPACE is raised on every member', async () => {
  const c = new EtcdCluster({ clock: new VirtualClock(), seed: 3, etcdVersion: '3.4', quotaBackendBytes: 128 * KIB });
  const m1 = c.member(1).services;
  const value = new Uint8Array(16 * KIB);
  let n = 0;
  for (;;) {
    const r = await m1.kv.put({ key: B(`k${n}`), value }).then(
      () => undefined,
      (e: { code: number; details: string }) => e,
    );
    if (r !== undefined) {
      assert.deepStrictEqual({ code: r.code, details: r.details }, { code: RESOURCE_EXHAUSTED, details: NOSPACE_TEXT });
      break;
    }
    n++;
  }
  assert.ok(n > 2, `${n} puts went in`);
  const id = String(c.members[1]!.id);
  for (const i of [0, 1, 2]) {
    assert.deepStrictEqual((await c.member(i).services.maintenance.alarm({})).alarms, [{ memberID: id, alarm: 'NOSPACE' }], `member ${i}`);
    assert.equal(c.members[i]!.server.mvcc.currentRevision, n + 1, `member ${i} applied no refused put`);
  }
  // A lease grant through another member is refused by the raised alarm, at apply, on every member alike.
  await assert.rejects(c.member(2).services.lease.leaseGrant({ TTL: '60' }), (e: { code: number; details: string }) => e.code === RESOURCE_EXHAUSTED && e.details === NOSPACE_TEXT);
});

test("Status reports the quota from etcd 3.6 on (dbSizeQuota: as configured, 0 as 2 GiB since 3.6.6) beside 3.6's other fields; 3.4 and 3.5 have none of them", () => {
  const quotaOf = (v: '3.4' | '3.5' | '3.6' | '3.7', q?: number): unknown => sim({ etcdVersion: v, quotaBackendBytes: q }).services.maintenance.status().dbSizeQuota;
  assert.equal(quotaOf('3.4'), undefined);
  assert.equal(quotaOf('3.5', 1024), undefined);
  assert.equal(quotaOf('3.6'), '2147483648');
  assert.equal(quotaOf('3.7', 0), '2147483648');
  assert.equal(quotaOf('3.7', 16 * 1024 * 1024), '16777216');
  assert.equal(quotaOf('3.6', -1), '-1', 'no quota: reported as configured');
  const later = (v: '3.4' | '3.5' | '3.6' | '3.7'): unknown => {
    const st = sim({ etcdVersion: v }).services.maintenance.status();
    return [st.storageVersion, st.downgradeInfo];
  };
  assert.deepStrictEqual(later('3.5'), [undefined, undefined]);
  assert.deepStrictEqual(later('3.6'), ['3.6.0', { enabled: false, targetVersion: '' }]);
  assert.deepStrictEqual(later('3.7'), ['3.7.0', { enabled: false, targetVersion: '' }]);
});
