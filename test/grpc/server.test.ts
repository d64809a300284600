import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { DEFAULT_CLUSTER_ID, DEFAULT_MEMBER_ID } from '../../src/server/index.js';
import { serve } from '../../src/grpc/server.js';
import { rangeStream } from '../../src/grpc/kv_server.js';
import { VirtualClock } from '../../src/sim/index.js';
import { B, RawClient, nextMessages, nextStreamEnd, streamError, withServer, type Msg } from './helpers.js';

const hdr = (rev: number): Msg => ({ cluster_id: String(DEFAULT_CLUSTER_ID), member_id: String(DEFAULT_MEMBER_ID), revision: String(rev), raft_term: '2' });

test('unary KV calls over the wire answer what the service layer answers', async () => {
  await withServer({}, async (h) => {
    const kv = new RawClient(h.address, 'KV');
    try {
      assert.deepEqual(await kv.unary('Put', { key: B('a'), value: B('1') }), { header: hdr(2), prev_kv: null });
      const put2 = await kv.unary('Put', { key: B('a'), value: B('2'), prev_kv: true });
      assert.deepEqual((put2['prev_kv'] as Msg)['value'], B('1'));
      const r = await kv.unary('Range', { key: B('a') });
      assert.deepEqual(r, {
        header: hdr(3),
        kvs: [{ key: B('a'), create_revision: '2', mod_revision: '3', version: '2', value: B('2'), lease: '0' }],
        more: false,
        count: '1',
      });
      const t = await kv.unary('Txn', {
        compare: [{ key: B('a'), target: 'VALUE', result: 'EQUAL', value: B('2') }],
        success: [{ request_put: { key: B('b'), value: B('x') } }, { request_range: { key: B('a') } }],
      });
      assert.equal(t['succeeded'], true);
      assert.deepEqual((t['responses'] as Msg[]).map((x) => x['response']), ['response_put', 'response_range']);
      const d = await kv.unary('DeleteRange', { key: B('a'), range_end: B('c'), prev_kv: true });
      assert.equal(d['deleted'], '2');
      assert.deepEqual(await kv.unary('Compact', { revision: '3' }), { header: hdr(5) });
    } finally {
      kv.close();
    }
  });
});

test('service errors reach the client with etcd code and details', async () => {
  await withServer({ maxTxnOps: 1 }, async (h) => {
    const kv = new RawClient(h.address, 'KV');
    const lease = new RawClient(h.address, 'Lease');
    try {
      await assert.rejects(kv.unary('Range', { key: B('') }), { code: grpc.status.INVALID_ARGUMENT, details: 'etcdserver: key is not provided' });
      await assert.rejects(kv.unary('Range', { key: B('a'), revision: '9' }), {
        code: grpc.status.OUT_OF_RANGE,
        details: 'etcdserver: mvcc: required revision is a future revision',
      });
      await assert.rejects(kv.unary('Txn', { success: [{ request_put: { key: B('a') } }, { request_put: { key: B('b') } }] }), {
        code: grpc.status.INVALID_ARGUMENT,
        details: 'etcdserver: too many operations in txn request',
      });
      await assert.rejects(lease.unary('LeaseRevoke', { ID: '42' }), { code: grpc.status.NOT_FOUND, details: 'etcdserver: requested lease not found' });
    } finally {
      kv.close();
      lease.close();
    }
  });
});

test('methods the simulator does not model answer UNIMPLEMENTED; the server keeps serving', async () => {
  await withServer({}, async (h) => {
    const auth = new RawClient(h.address, 'Auth');
    const cluster = new RawClient(h.address, 'Cluster');
    const kv = new RawClient(h.address, 'KV');
    try {
      // Auth is modelled (src/auth): AuthEnable answers etcd's own refusal.
      await assert.rejects(auth.unary('AuthEnable', {}), { code: grpc.status.FAILED_PRECONDITION, details: 'etcdserver: root user does not exist' });
      // Membership changes are modelled (test/grpc/cluster_maintenance_wire.test.ts); Downgrade is not.
      await assert.rejects(cluster.unary('MemberAdd', { peerURLs: ['x'] }), { code: grpc.status.INVALID_ARGUMENT });
      const maintenance = new RawClient(h.address, 'Maintenance');
      await assert.rejects(maintenance.unary('Downgrade', {}), { code: grpc.status.UNIMPLEMENTED }).finally(() => maintenance.close());
      const generic = new grpc.Client(h.address, grpc.credentials.createInsecure());
      const err = await new Promise<grpc.ServiceError>((resolve) => {
        generic.makeUnaryRequest('/etcdserverpb.KV/NoSuchMethod', (x: Buffer) => x, (x: Buffer) => x, Buffer.alloc(0), (e) => resolve(e as grpc.ServiceError));
      });
      generic.close();
      assert.equal(err.code, grpc.status.UNIMPLEMENTED);
      assert.equal((await kv.unary('Put', { key: B('k'), value: B('v') }))['header'] !== undefined, true);
    } finally {
      auth.close();
      cluster.close();
      kv.close();
    }
  });
});

test('a malformed message is INTERNAL at decode, never a crash', async () => {
  await withServer({}, async (h) => {
    const generic = new grpc.Client(h.address, grpc.credentials.createInsecure());
    const err = await new Promise<grpc.ServiceError>((resolve) => {
      // field 1 (key, bytes) claiming 100 bytes that are not there
      generic.makeUnaryRequest('/etcdserverpb.KV/Range', (x: Buffer) => x, (x: Buffer) => x, Buffer.from([0x0a, 0x64, 0x01]), (e) => resolve(e as grpc.ServiceError));
    });
    generic.close();
    assert.equal(err.code, grpc.status.INTERNAL);
    const kv = new RawClient(h.address, 'KV');
    assert.equal((await kv.unary('Range', { key: B('a') }))['count'], '0');
    kv.close();
  });
});

test('a message over max request bytes + 512 KiB is RESOURCE_EXHAUSTED; one under it reaches etcd limits', async () => {
  await withServer({ maxRequestBytes: 1024 }, async (h) => {
    const kv = new RawClient(h.address, 'KV');
    try {
      await assert.rejects(kv.unary('Put', { key: B('k'), value: Buffer.alloc(1024 + 512 * 1024 + 10) }), { code: grpc.status.RESOURCE_EXHAUSTED });
      await assert.rejects(kv.unary('Put', { key: B('k'), value: Buffer.alloc(4096) }), {
        code: grpc.status.INVALID_ARGUMENT,
        details: 'etcdserver: request is too large',
      });
    } finally {
      kv.close();
    }
  });
});

test('watch over the wire: created, replayed history, live events, cancel, events after a half-close', async () => {
  await withServer({}, async (h) => {
    const kv = new RawClient(h.address, 'KV');
    const w = new RawClient(h.address, 'Watch');
    try {
      await kv.unary('Put', { key: B('/w/a'), value: B('1') });
      const call = w.bidi('Watch');
      const first = nextMessages(call, 2);
      call.write({ create_request: { key: B('/w/'), range_end: B('/w0'), start_revision: '1', prev_kv: true } });
      const [created, replay] = await first;
      assert.equal(created?.['created'], true);
      assert.equal(created?.['watch_id'], '0');
      const evs = replay?.['events'] as Msg[];
      assert.equal(evs.length, 1);
      assert.equal(evs[0]?.['type'], 'PUT');
      assert.deepEqual((evs[0]?.['kv'] as Msg)['key'], B('/w/a'));
      const live = nextMessages(call, 1);
      await kv.unary('Put', { key: B('/w/b'), value: B('2') });
      const [ev] = await live;
      assert.deepEqual(((ev?.['events'] as Msg[])[0]?.['kv'] as Msg)['value'], B('2'));
      assert.deepEqual((ev?.['header'] as Msg)['revision'], '3');
      const second = nextMessages(call, 1);
      call.write({ create_request: { key: B('/w/c') } });
      assert.deepEqual([(await second)[0]?.['watch_id'], (await second)[0]?.['created']], ['1', true]);
      const canceled = nextMessages(call, 1);
      call.write({ cancel_request: { watch_id: '0' } });
      assert.equal((await canceled)[0]?.['canceled'], true);
      // A half-close does not end a Watch: as in etcd, the watchers go on sending until the client cancels.
      call.end();
      const afterHalfClose = nextMessages(call, 1);
      await kv.unary('Put', { key: B('/w/c'), value: B('3') });
      assert.deepEqual(((((await afterHalfClose)[0]?.['events'] as Msg[])[0]?.['kv'] as Msg)['key']), B('/w/c'));
      assert.equal(h.openStreams, 1);
      const ended = nextStreamEnd(h);
      const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
      call.on('error', () => {});
      call.cancel();
      assert.deepEqual(await ended, { method: 'Watch', reason: 'cancelled' });
      assert.equal((await status).code, grpc.status.CANCELLED);
      assert.equal(h.openStreams, 0);
    } finally {
      kv.close();
      w.close();
    }
  });
});

test('a client that cancels or disconnects mid-watch leaves no watcher behind', async () => {
  await withServer({}, async (h) => {
    const w = new RawClient(h.address, 'Watch');
    const call = w.bidi('Watch');
    call.on('error', () => {});
    const created = nextMessages(call, 2);
    call.write({ create_request: { key: B('a') } });
    call.write({ create_request: { key: B('b'), range_end: B('c') } });
    await created;
    assert.equal(h.server.watchable.synced.size + h.server.watchable.unsynced.size, 2);
    assert.equal(h.openStreams, 1);
    const ended = nextStreamEnd(h);
    call.cancel();
    assert.deepEqual(await ended, { method: 'Watch', reason: 'cancelled' });
    assert.equal(h.server.watchable.synced.size + h.server.watchable.unsynced.size, 0);
    assert.equal(h.openStreams, 0);

    // a whole connection going away (the process of a client killed mid-watch)
    const { spawn } = await import('node:child_process');
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/grpc/fixtures/watch_forever.ts', h.address], { stdio: ['ignore', 'pipe', 'inherit'] });
    const watching = new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        if (d.toString().includes('created')) resolve();
      });
      child.on('exit', () => reject(new Error('watch client exited early')));
    });
    await watching;
    w.close();
    assert.equal(h.server.watchable.synced.size + h.server.watchable.unsynced.size, 1);
    const ended2 = nextStreamEnd(h);
    child.kill('SIGKILL');
    assert.equal((await ended2).reason, 'cancelled');
    assert.equal(h.server.watchable.synced.size + h.server.watchable.unsynced.size, 0);
  });
});

test('lease grant, keep-alive stream, time-to-live and revoke over the wire', async () => {
  await withServer({ seed: 7 }, async (h) => {
    const lease = new RawClient(h.address, 'Lease');
    const kv = new RawClient(h.address, 'KV');
    try {
      const g = await lease.unary('LeaseGrant', { TTL: '30', ID: '100' });
      assert.deepEqual(g, { header: hdr(1), ID: '100', TTL: '30', error: '' });
      await kv.unary('Put', { key: B('l'), value: B('v'), lease: '100' });
      const ka = lease.bidi('LeaseKeepAlive');
      const replies = nextMessages(ka, 2);
      ka.write({ ID: '100' });
      ka.write({ ID: '999' });
      const [r1, r2] = await replies;
      assert.deepEqual([r1?.['ID'], r1?.['TTL'], r2?.['ID'], r2?.['TTL']], ['100', '30', '999', '0']);
      const ended = nextStreamEnd(h);
      ka.cancel();
      ka.on('error', () => {});
      assert.deepEqual(await ended, { method: 'LeaseKeepAlive', reason: 'cancelled' });
      assert.equal(h.server.services.lease.calls().length, 0);
      const ttl = await lease.unary('LeaseTimeToLive', { ID: '100', keys: true });
      assert.deepEqual(ttl['keys'], [B('l')]);
      assert.equal(ttl['grantedTTL'], '30');
      assert.deepEqual((await lease.unary('LeaseLeases', {}))['leases'], [{ ID: '100' }]);
      await lease.unary('LeaseRevoke', { ID: '100' });
      assert.equal((await kv.unary('Range', { key: B('l') }))['count'], '0');
    } finally {
      lease.close();
      kv.close();
    }
  });
});

test('on a virtual clock passed to serve(), a test drives lease expiry and watchers hear it over the wire', async () => {
  const clock = new VirtualClock();
  await withServer({ clock }, async (h) => {
    const lease = new RawClient(h.address, 'Lease');
    const kv = new RawClient(h.address, 'KV');
    const w = new RawClient(h.address, 'Watch');
    try {
      await lease.unary('LeaseGrant', { TTL: '5', ID: '1' });
      await kv.unary('Put', { key: B('eph'), value: B('v'), lease: '1' });
      const call = w.bidi('Watch');
      const created = nextMessages(call, 1);
      call.write({ create_request: { key: B('eph') } });
      await created;
      const del = nextMessages(call, 1);
      clock.advance(6000);
      const [ev] = await del;
      assert.equal((ev?.['events'] as Msg[])[0]?.['type'], 'DELETE');
      call.cancel();
      call.on('error', () => {});
    } finally {
      lease.close();
      kv.close();
      w.close();
    }
  });
});

test('Maintenance and Cluster over the wire; Snapshot streams a bbolt file; RangeStream chunks merge to the Range', async () => {
  await withServer({ etcdVersion: '3.4' }, async (h) => {
    const m = new RawClient(h.address, 'Maintenance');
    const c = new RawClient(h.address, 'Cluster');
    const kv = new RawClient(h.address, 'KV');
    try {
      const st = await m.unary('Status', {});
      assert.equal(st['version'], '3.4.23');
      assert.equal(st['leader'], String(DEFAULT_MEMBER_ID));
      const ml = await c.unary('MemberList', {});
      assert.deepEqual((ml['members'] as Msg[])[0]?.['clientURLs'], [h.endpoint]);
      assert.equal((await m.unary('HashKV', { revision: '0' }))['compact_revision'], '-1');
      const snap = await nextMessages(m.serverStream('Snapshot', {}), 2);
      // A bbolt file (magic 0xED0CDAED in meta page 0), then its SHA-256.
      assert.equal(Buffer.from(snap[0]?.['blob'] as Uint8Array).readUInt32LE(16), 0xed0cdaed);
      assert.equal((snap[1]?.['blob'] as Uint8Array).length, 32);
      await Promise.all(Array.from({ length: 2500 }, (_, i) => kv.unary('Put', { key: B(`k${String(i).padStart(4, '0')}`), value: B('v') })));
      const chunks = await nextMessages(kv.serverStream('RangeStream', { key: B('k'), range_end: B('l') }), 3);
      const keys = chunks.flatMap((ch) => ((ch['range_response'] as Msg)['kvs'] as Msg[]).map((x) => String(x['key'])));
      assert.equal(keys.length, 2500);
      assert.equal(keys[2499], 'k2499');
      assert.equal((chunks[0]?.['range_response'] as Msg)['count'], '2500');
      assert.deepEqual(rangeStream({ header: hdr(1) as never, kvs: [], more: false, count: '0' }).length, 1);
      await assert.rejects(nextMessages(kv.serverStream('RangeStream', { key: B('') }), 1), { code: grpc.status.INVALID_ARGUMENT });
    } finally {
      m.close();
      c.close();
      kv.close();
    }
  });
});

test('serve() refuses a non-loopback address unless allowed, and a bad port', async () => {
  await assert.rejects(serve({ host: '0.0.0.0', port: 0 }), /not a loopback address/);
  await assert.rejects(serve({ port: 70000 }), RangeError);
  const h = await serve({ host: 'localhost', port: 0 });
  assert.match(h.endpoint, /^http:\/\/localhost:\d+$/);
  await h.close();
  await h.close();
});
