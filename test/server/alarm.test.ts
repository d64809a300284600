/**
 * Maintenance.Alarm and what a raised alarm does to a member, against etcd's semantics (3.4.23 observed by
 * test/clients/go_clientv3.test.ts: ACTIVATE lists the alarm, a writing Txn and LeaseGrant fail with
 * ResourceExhausted, Status.errors names it, DEACTIVATE answers the alarm it took off; the rest from etcd's
 * sources: apply.go's capped applier, corrupt.go, v3alarm, etcdhttp's health checks). Every refused request
 * is one Raft entry and changes nothing else: revision, keys and leases stay as they were.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as http from 'node:http';
import { createEtcdSim, type EtcdSim, type EtcdSimOptions } from '../../src/index.js';
import { serve } from '../../src/grpc/index.js';
import { EtcdCluster } from '../../src/cluster/index.js';
import { VirtualClock } from '../../src/sim/index.js';
import { statusName } from '../../src/server/errors.js';
import { readEtcdSnapshot } from '../../src/snapshot/index.js';
import { B, hdr, assertGrpcError } from './helpers.js';

const RESOURCE_EXHAUSTED = 8;
const DATA_LOSS = 15;
const NOSPACE_TEXT = 'etcdserver: mvcc: database space exceeded';
const CORRUPT_TEXT = 'etcdserver: corrupt cluster';

type Version = '3.4' | '3.5' | '3.6' | '3.7';

function sim(etcdVersion: Version, opts: EtcdSimOptions = {}): EtcdSim {
  return createEtcdSim({ time: 'virtual', clusterId: 11n, memberId: 22n, raftTerm: 3, etcdVersion, ...opts });
}

/** What a refused request must leave alone (the raft index moves by the one entry it was). */
function state(s: EtcdSim): { revision: string; keys: string[]; leases: string[]; raftIndex: number } {
  const r = s.services.kv.range({ key: B('\0'), range_end: B('\0') });
  return {
    revision: r.header.revision,
    keys: r.kvs.map((kv) => `${Buffer.from(kv.key).toString()}=${Buffer.from(kv.value).toString()}@${kv.mod_revision}`),
    leases: s.services.lease.leaseLeases().leases.map((l) => l.ID),
    raftIndex: Number(s.services.maintenance.status().raftIndex),
  };
}

/** `fn` is refused with `code` and `details`, after which the member is as it was but one Raft entry further. */
function refused(s: EtcdSim, fn: () => unknown, code: number, details: string): void {
  const before = state(s);
  assertGrpcError(fn, code, details, statusName(code));
  assert.deepStrictEqual(state(s), { ...before, raftIndex: before.raftIndex + 1 });
}

const putTxn = { compare: [{ key: B('a'), target: 'VERSION' as const, result: 'EQUAL' as const, version: '0' }], success: [{ request_put: { key: B('t'), value: B('x') } }] };

test('3.4: ACTIVATE raises NOSPACE for a member and answers it (no header); GET lists it; ACTIVATE again answers the same alarm', () => {
  const s = sim('3.4');
  const m = s.services.maintenance;
  const index = state(s).raftIndex;
  assert.deepStrictEqual(m.alarm({ action: 'GET' }), { header: null, alarms: [] });
  assert.deepStrictEqual(m.alarm({ action: 'ACTIVATE', memberID: '22', alarm: 'NOSPACE' }), { header: null, alarms: [{ memberID: '22', alarm: 'NOSPACE' }] });
  assert.deepStrictEqual(m.alarm({ action: 'GET' }), { header: null, alarms: [{ memberID: '22', alarm: 'NOSPACE' }] });
  assert.deepStrictEqual(m.alarm({ action: 'ACTIVATE', memberID: '22', alarm: 'NOSPACE' }), { header: null, alarms: [{ memberID: '22', alarm: 'NOSPACE' }] });
  // Any member ID, 0 included (etcd does not check it); GET of a type lists that type, NONE every alarm.
  m.alarm({ action: 'ACTIVATE', memberID: '0', alarm: 'CORRUPT' });
  m.alarm({ action: 'ACTIVATE', memberID: 99, alarm: 'NOSPACE' });
  assert.deepStrictEqual(m.alarm({ action: 'GET', alarm: 'NOSPACE' }).alarms, [{ memberID: '22', alarm: 'NOSPACE' }, { memberID: '99', alarm: 'NOSPACE' }]);
  assert.deepStrictEqual(m.alarm({ action: 'GET', alarm: 'CORRUPT' }).alarms, [{ memberID: '0', alarm: 'CORRUPT' }]);
  assert.equal(m.alarm({ action: 'GET' }).alarms.length, 3);
  // Each Alarm request is one Raft entry (9 above).
  assert.equal(state(s).raftIndex, index + 9);
});

test('under NOSPACE: Put, a Txn with a put and LeaseGrant are refused with etcd\'s code and text, changing nothing', () => {
  const s = sim('3.4');
  const kv = s.services.kv;
  kv.put({ key: B('a'), value: B('1') });
  const lease = s.services.lease.leaseGrant({ ID: '7', TTL: '60' });
  s.services.maintenance.alarm({ action: 'ACTIVATE', memberID: '22', alarm: 'NOSPACE' });
  refused(s, () => kv.put({ key: B('b'), value: B('2') }), RESOURCE_EXHAUSTED, NOSPACE_TEXT);
  // The go_clientv3 step: its compare fails (a exists), yet the put in its branch makes it refused.
  refused(s, () => kv.txn(putTxn), RESOURCE_EXHAUSTED, NOSPACE_TEXT);
  refused(s, () => kv.txn({ failure: [{ request_put: { key: B('f'), value: B('x') } }] }), RESOURCE_EXHAUSTED, NOSPACE_TEXT);
  refused(s, () => s.services.lease.leaseGrant({ TTL: '60' }), RESOURCE_EXHAUSTED, NOSPACE_TEXT);
  // Before the lessor's own checks: an existing ID is still the space error.
  refused(s, () => s.services.lease.leaseGrant({ ID: lease.ID, TTL: '60' }), RESOURCE_EXHAUSTED, NOSPACE_TEXT);
  assert.deepStrictEqual(state(s).leases, ['7']);
});

test('under NOSPACE: reads, deletes, a Txn without puts, lease revokes and compaction go on', () => {
  const s = sim('3.4');
  const kv = s.services.kv;
  kv.put({ key: B('a'), value: B('1') });
  kv.put({ key: B('b'), value: B('2') });
  kv.put({ key: B('c'), value: B('3') });
  const g = s.services.lease.leaseGrant({ ID: '5', TTL: '60' });
  s.services.maintenance.alarm({ action: 'ACTIVATE', memberID: '22', alarm: 'NOSPACE' });
  assert.equal(kv.range({ key: B('a') }).kvs.length, 1);
  assert.equal(kv.txn({ success: [{ request_range: { key: B('a') } }] }).succeeded, true);
  assert.equal(kv.deleteRange({ key: B('a') }).deleted, '1');
  assert.equal(kv.txn({ success: [{ request_delete_range: { key: B('b') } }] }).header.revision, '6');
  // The quota's cost looks at the txn's own ops only: a put inside a nested txn is not counted.
  const nested = kv.txn({ success: [{ request_txn: { success: [{ request_put: { key: B('n'), value: B('x') } }] } }] });
  assert.equal(nested.header.revision, '7');
  s.services.lease.leaseRevoke({ ID: g.ID });
  assert.deepStrictEqual(state(s).leases, []);
  assert.deepStrictEqual(kv.compact({ revision: '7' }).header, hdr(7));
});

test('under NOSPACE the refusal comes before the permission check (the capped applier wraps the auth one)', () => {
  const s = sim('3.4', {
    auth: { enable: true, users: [{ name: 'root', password: 'r', roles: ['root'] }, { name: 'u', password: 'p' }] },
  });
  const token = s.services.auth.authenticate({ name: 'u', password: 'p' }).token;
  const rootToken = s.services.auth.authenticate({ name: 'root', password: 'r' }).token;
  // Raising an alarm wants root.
  assertGrpcError(() => s.services.maintenance.alarm({ action: 'ACTIVATE', memberID: '22', alarm: 'NOSPACE' }, { token }), 2, 'auth: permission denied', 'UNKNOWN');
  s.services.maintenance.alarm({ action: 'ACTIVATE', memberID: '22', alarm: 'NOSPACE' }, { token: rootToken });
  assertGrpcError(() => s.services.kv.put({ key: B('a'), value: B('1') }, { token }), RESOURCE_EXHAUSTED, NOSPACE_TEXT, 'RESOURCE_EXHAUSTED');
  // A read-only GET: any caller on 3.4.
  assert.equal(s.services.maintenance.alarm({ action: 'GET' }).alarms.length, 1);
});

test('Status.errors names each alarm in the AlarmMember\'s text form; DEACTIVATE answers the alarm it took off, and writes go on', () => {
  const s = sim('3.4');
  const m = s.services.maintenance;
  m.alarm({ action: 'ACTIVATE', memberID: '22', alarm: 'NOSPACE' });
  m.alarm({ action: 'ACTIVATE', memberID: '0', alarm: 'NOSPACE' });
  assert.deepStrictEqual(m.status().errors, ['alarm:NOSPACE ', 'memberID:22 alarm:NOSPACE ']);
  assert.deepStrictEqual(m.alarm({ action: 'DEACTIVATE', memberID: '0', alarm: 'NOSPACE' }), { header: null, alarms: [{ memberID: '0', alarm: 'NOSPACE' }] });
  // One NOSPACE alarm is still raised: still capped.
  assertGrpcError(() => s.services.kv.put({ key: B('a') }), RESOURCE_EXHAUSTED, NOSPACE_TEXT, 'RESOURCE_EXHAUSTED');
  assert.deepStrictEqual(m.alarm({ action: 'DEACTIVATE', memberID: '22', alarm: 'NOSPACE' }), { header: null, alarms: [{ memberID: '22', alarm: 'NOSPACE' }] });
  assert.deepStrictEqual(m.alarm({ action: 'DEACTIVATE', memberID: '22', alarm: 'NOSPACE' }), { header: null, alarms: [] });
  assert.deepStrictEqual(m.status().errors, []);
  assert.equal(s.services.kv.put({ key: B('a'), value: B('1') }).header.revision, '2');
  // protobuf-go's text (3.7): no space after the last field.
  const s37 = sim('3.7');
  s37.services.maintenance.alarm({ action: 'ACTIVATE', memberID: '22', alarm: 'CORRUPT' });
  assert.deepStrictEqual(s37.services.maintenance.status().errors, ['memberID:22 alarm:CORRUPT']);
});

test('CORRUPT refuses every proposed KV and lease request with DataLoss; Range and read-only Txn go on', () => {
  const s = sim('3.4');
  const kv = s.services.kv;
  kv.put({ key: B('a'), value: B('1') });
  const g = s.services.lease.leaseGrant({ ID: '9', TTL: '60' });
  s.services.maintenance.alarm({ action: 'ACTIVATE', memberID: '22', alarm: 'CORRUPT' });
  refused(s, () => kv.put({ key: B('b') }), DATA_LOSS, CORRUPT_TEXT);
  refused(s, () => kv.deleteRange({ key: B('a') }), DATA_LOSS, CORRUPT_TEXT);
  refused(s, () => kv.txn({ success: [{ request_delete_range: { key: B('a') } }] }), DATA_LOSS, CORRUPT_TEXT);
  refused(s, () => kv.compact({ revision: '1' }), DATA_LOSS, CORRUPT_TEXT);
  refused(s, () => s.services.lease.leaseGrant({ TTL: '60' }), DATA_LOSS, CORRUPT_TEXT);
  refused(s, () => s.services.lease.leaseRevoke({ ID: g.ID }), DATA_LOSS, CORRUPT_TEXT);
  assert.equal(kv.range({ key: B('a') }).kvs.length, 1);
  assert.equal(kv.txn({ success: [{ request_range: { key: B('a') } }] }).responses.length, 1);
  assert.deepStrictEqual(s.services.maintenance.status().errors, ['memberID:22 alarm:CORRUPT ']);
});

test('both alarms: 3.4 and 3.5 swap the refusals at each change; 3.6+ follow every raised alarm', () => {
  for (const v of ['3.4', '3.5', '3.6', '3.7'] as const) {
    const s = sim(v);
    const m = s.services.maintenance;
    m.alarm({ action: 'ACTIVATE', memberID: '22', alarm: 'NOSPACE' });
    m.alarm({ action: 'ACTIVATE', memberID: '22', alarm: 'CORRUPT' });
    // CORRUPT answers first either way.
    assertGrpcError(() => s.services.kv.put({ key: B('a') }), DATA_LOSS, CORRUPT_TEXT, 'DATA_LOSS');
    const swapping = v === '3.4' || v === '3.5';
    // A delete: 3.4/3.5 replaced the capped applier by the corrupt one (a lone CORRUPT refuses deletes too).
    assertGrpcError(() => s.services.kv.deleteRange({ key: B('a') }), DATA_LOSS, CORRUPT_TEXT, 'DATA_LOSS');
    m.alarm({ action: 'DEACTIVATE', memberID: '22', alarm: 'CORRUPT' });
    assert.equal(m.alarm({ action: 'GET' }).alarms.length, 1, v);
    if (swapping) {
      // The last CORRUPT taken off restores the plain applier: NOSPACE is listed but refuses nothing.
      assert.equal(s.services.kv.put({ key: B('a'), value: B('1') }).header.revision, '2', v);
    } else {
      assertGrpcError(() => s.services.kv.put({ key: B('a') }), RESOURCE_EXHAUSTED, NOSPACE_TEXT, 'RESOURCE_EXHAUSTED');
    }
  }
});

test('ACTIVATE of type NONE: stored and listed by 3.4, ignored from 3.5 on; 3.5+ answer with a header', () => {
  const s34 = sim('3.4');
  assert.deepStrictEqual(s34.services.maintenance.alarm({ action: 'ACTIVATE', memberID: '22' }), { header: null, alarms: [{ memberID: '22', alarm: 'NONE' }] });
  assert.deepStrictEqual(s34.services.maintenance.alarm({}).alarms, [{ memberID: '22', alarm: 'NONE' }]);
  // It refuses nothing, and Status names it by its member alone.
  assert.equal(s34.services.kv.put({ key: B('a'), value: B('1') }).header.revision, '2');
  assert.deepStrictEqual(s34.services.maintenance.status().errors, ['memberID:22 ']);
  for (const v of ['3.5', '3.6', '3.7'] as const) {
    const s = sim(v);
    assert.deepStrictEqual(s.services.maintenance.alarm({ action: 'ACTIVATE', memberID: '22', alarm: 'NONE' }), { header: hdr(1), alarms: [] }, v);
    assert.deepStrictEqual(s.services.maintenance.alarm({ action: 'ACTIVATE', memberID: '22', alarm: 'NOSPACE' }), { header: hdr(1), alarms: [{ memberID: '22', alarm: 'NOSPACE' }] });
    assert.deepStrictEqual(s.services.maintenance.alarm({ action: 'GET' }), { header: hdr(1), alarms: [{ memberID: '22', alarm: 'NOSPACE' }] });
  }
});

test('a snapshot carries the raised alarms in its alarm bucket, and a restore from it raises them again', () => {
  const s = sim('3.4');
  s.services.kv.put({ key: B('a'), value: B('1') });
  s.services.maintenance.alarm({ action: 'ACTIVATE', memberID: '22', alarm: 'NOSPACE' });
  const blob = Buffer.concat(s.services.maintenance.snapshot().slice(0, -1).map((r) => r.blob));
  // Each key a marshalled AlarmMember: memberID 22 (field 1), alarm 1 (field 2).
  assert.deepStrictEqual(readEtcdSnapshot(Buffer.concat([blob, s.services.maintenance.snapshot().at(-1)!.blob])).alarms.map((k) => [...k]), [[0x08, 22, 0x10, 1]]);
  const r = sim('3.4');
  r.services.maintenance.restore(Buffer.concat(s.services.maintenance.snapshot().map((x) => x.blob)));
  assert.deepStrictEqual(r.services.maintenance.alarm({}).alarms, [{ memberID: '22', alarm: 'NOSPACE' }]);
  assertGrpcError(() => r.services.kv.put({ key: B('b') }), RESOURCE_EXHAUSTED, NOSPACE_TEXT, 'RESOURCE_EXHAUSTED');
  assert.equal(r.services.kv.range({ key: B('a') }).kvs.length, 1);
  // A snapshot without alarms takes them off.
  r.services.maintenance.restore(Buffer.concat(sim('3.4').services.maintenance.snapshot().map((x) => x.blob)));
  assert.deepStrictEqual(r.services.maintenance.alarm({}).alarms, []);
});

test('cluster: an Alarm request goes through Raft and every member applies it; writes at any member are refused', async () => {
  const c = new EtcdCluster({ clock: new VirtualClock(), seed: 3, etcdVersion: '3.4' });
  const m0 = c.member(0).services;
  const m2 = c.member(2).services;
  await m0.kv.put({ key: B('a'), value: B('1') });
  const id = String(c.members[1]!.id);
  assert.deepStrictEqual(await m2.maintenance.alarm({ action: 'ACTIVATE', memberID: id, alarm: 'NOSPACE' }), { header: null, alarms: [{ memberID: id, alarm: 'NOSPACE' }] });
  for (const i of [0, 1, 2]) {
    assert.deepStrictEqual((await c.member(i).services.maintenance.alarm({})).alarms, [{ memberID: id, alarm: 'NOSPACE' }]);
    assert.deepStrictEqual((await c.member(i).services.maintenance.status()).errors, [`memberID:${id} alarm:NOSPACE `]);
  }
  await assert.rejects(m0.kv.put({ key: B('b') }), (e: { code: number; details: string }) => e.code === RESOURCE_EXHAUSTED && e.details === NOSPACE_TEXT);
  await assert.rejects(m2.lease.leaseGrant({ TTL: '60' }), (e: { code: number; details: string }) => e.code === RESOURCE_EXHAUSTED && e.details === NOSPACE_TEXT);
  for (const m of c.members) assert.equal(m.server.mvcc.currentRevision, 2);
  // A member that crashes and restarts raises the alarms of its backend again.
  c.crash(1);
  c.restart(1);
  // The restarted member learns its leader from the leader's next heartbeat (as etcd's does, within one
  // heartbeat interval); until then its Alarm list, which goes through Raft, has no leader to go to.
  await c.advance(c.heartbeatMs);
  assert.deepStrictEqual((await c.member(1).services.maintenance.alarm({})).alarms, [{ memberID: id, alarm: 'NOSPACE' }]);
  assert.deepStrictEqual((await m0.maintenance.alarm({ action: 'DEACTIVATE', memberID: id, alarm: 'NOSPACE' })).alarms, [{ memberID: id, alarm: 'NOSPACE' }]);
  await m0.kv.put({ key: B('b'), value: B('2') });
  for (const i of [0, 1, 2]) assert.deepStrictEqual((await c.member(i).services.maintenance.alarm({})).alarms, []);
  c.close();
});

/** GET over HTTP/1.1: status and body. */
function get(address: string, path: string, method = 'GET', body?: string): Promise<{ status: number; body: string }> {
  const [host, port] = address.split(':') as [string, string];
  return new Promise((resolve, reject) => {
    const req = http.request({ host, port: Number(port), method, path, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('/health: any raised alarm not excluded makes the member unhealthy (3.6+: with its reason); readyz fails on CORRUPT', async () => {
  for (const v of ['3.4', '3.6'] as const) {
    const h = await serve({ port: 0, etcdVersion: v });
    try {
      const reason = v === '3.6';
      assert.deepStrictEqual(await get(h.address, '/health'), { status: 200, body: reason ? '{"health":"true","reason":""}' : '{"health":"true"}' });
      // Raised over the JSON gateway, the same services.
      const id = String(h.server.member.memberId);
      const act = await get(h.address, '/v3/maintenance/alarm', 'POST', JSON.stringify({ action: 'ACTIVATE', memberID: id, alarm: 'NOSPACE' }));
      assert.equal(act.status, 200);
      assert.deepStrictEqual((JSON.parse(act.body) as { alarms: unknown }).alarms, [{ memberID: id, alarm: 'NOSPACE' }]);
      assert.deepStrictEqual(await get(h.address, '/health'), { status: 503, body: reason ? '{"health":"false","reason":"ALARM NOSPACE"}\n' : '{"health":"false"}\n' });
      assert.equal((await get(h.address, '/health?exclude=NOSPACE')).status, 200);
      const put = await get(h.address, '/v3/kv/put', 'POST', JSON.stringify({ key: Buffer.from('k').toString('base64') }));
      assert.equal(put.status, 429); // ResourceExhausted through the gateway
      assert.match(put.body, /database space exceeded/);
      if (v === '3.6') {
        assert.equal((await get(h.address, '/readyz')).status, 200);
        h.server.services.maintenance.alarm({ action: 'ACTIVATE', memberID: id, alarm: 'CORRUPT' });
        assert.deepStrictEqual(await get(h.address, '/readyz/data_corruption'), { status: 503, body: '[-]data_corruption failed: alarm activated: CORRUPT\n\n' });
        assert.deepStrictEqual(await get(h.address, '/health?exclude=NOSPACE'), { status: 503, body: '{"health":"false","reason":"ALARM CORRUPT"}\n' });
      }
    } finally {
      await h.close();
    }
  }
});
