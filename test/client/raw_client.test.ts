import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { EtcdClient, fromKey, prefix, type EtcdSim, type EtcdStream, type GrpcError } from '../../src/index.js';
import type { messages as M } from '../../src/index.js';
import type { ElectionClient, EtcdKeepAliveStream, EtcdObserveStream, KVClient, LeaseClient, LockClient, MaintenanceClient, Req, WaitOptions } from '../../src/index.js';
import { B, hdr, inner, kv, newSim } from '../server/helpers.js';

/** Every response a stream delivers, as it is delivered. */
function collect<T>(stream: EtcdStream<T>): T[] {
  const got: T[] = [];
  stream.on('data', (r) => got.push(r));
  return got;
}

/** Asserts the promise rejects with a grpc-js-shaped error: a plain Error with code, details and message. */
async function rejectsGrpc(p: Promise<unknown>, code: number, name: string, details: string): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof Error);
    assert.equal(err.constructor, Error);
    const e = err as GrpcError;
    assert.equal(e.code, code);
    assert.equal(e.details, details);
    assert.equal(e.message, `${code} ${name}: ${details}`);
    assert.deepEqual(e.metadata.get('x'), []);
    return true;
  });
}

function wresp(over: Partial<M.WatchResponse> & { header: M.ResponseHeader }): M.WatchResponse {
  return { watch_id: '0', created: false, canceled: false, compact_revision: '0', cancel_reason: '', fragment: false, events: [], ...over };
}

const put = (key: string, create: number, mod: number, version: number, value: string, lease = '0'): M.Event => ({
  type: 'PUT',
  kv: kv(key, create, mod, version, value, lease),
  prev_kv: null,
});

test('kv: put, range, deleteRange, txn, compact — whole responses, string keys as UTF-8', async () => {
  const sim = newSim();
  const c = sim.client();
  assert.deepStrictEqual(await c.kv.put({ key: '/a/1', value: 'one' }), { header: hdr(2), prev_kv: null });
  assert.deepStrictEqual(await c.kv.put({ key: B('/a/2'), value: B('two') }), { header: hdr(3), prev_kv: null });
  assert.deepStrictEqual(await c.kv.put({ key: '/a/1', value: 'uno', prev_kv: true }), { header: hdr(4), prev_kv: kv('/a/1', 2, 2, 1, 'one') });
  await c.kv.put({ key: '/b', value: 'é' });
  // A string is UTF-8 here (the services alone would read it as base64).
  assert.deepStrictEqual((await c.kv.range({ key: B('/b') })).kvs, [kv('/b', 5, 5, 1, 'é')]);
  assert.deepStrictEqual(await c.kv.range({ ...prefix('/a/') }), {
    header: hdr(5),
    kvs: [kv('/a/1', 2, 4, 2, 'uno'), kv('/a/2', 3, 3, 1, 'two')],
    more: false,
    count: '2',
  });
  assert.deepStrictEqual(await c.kv.range({ ...prefix('/a/'), limit: 1, sort_order: 'DESCEND' }), {
    header: hdr(5),
    kvs: [kv('/a/2', 3, 3, 1, 'two')],
    more: true,
    count: '2',
  });
  assert.equal((await c.kv.range({ ...fromKey('/a/2'), count_only: true })).count, '2');
  assert.deepStrictEqual((await c.kv.range({ key: '/a/1', revision: 2 })).kvs, [kv('/a/1', 2, 2, 1, 'one')]);

  // Txn: compares and ops take strings at any depth.
  const t = await c.kv.txn({
    compare: [{ key: '/a/1', target: 'VALUE', result: 'EQUAL', value: 'uno' }],
    success: [{ request_put: { key: '/a/3', value: 'three' } }, { request_range: { key: '/a/1' } }],
    failure: [{ request_delete_range: { key: '/a/1' } }],
  });
  assert.deepStrictEqual(t, {
    header: hdr(6),
    succeeded: true,
    responses: [
      { response: 'response_put', response_put: { header: inner(6), prev_kv: null } },
      { response: 'response_range', response_range: { header: inner(6), kvs: [kv('/a/1', 2, 4, 2, 'uno')], more: false, count: '1' } },
    ],
  });
  const f = await c.kv.txn({ compare: [{ key: '/a/1', target: 'VERSION', result: 'GREATER', version: 5 }], failure: [{ request_delete_range: { key: '/a/3' } }] });
  assert.equal(f.succeeded, false);
  assert.deepStrictEqual(f.responses, [{ response: 'response_delete_range', response_delete_range: { header: inner(7), deleted: '1', prev_kvs: [] } }]);

  assert.deepStrictEqual(await c.kv.deleteRange({ ...prefix('/a/'), prev_kv: true }), {
    header: hdr(8),
    deleted: '2',
    prev_kvs: [kv('/a/1', 2, 4, 2, 'uno'), kv('/a/2', 3, 3, 1, 'two')],
  });
  assert.deepStrictEqual(await c.kv.compact({ revision: 6, physical: true }), { header: hdr(8) });
  await rejectsGrpc(c.kv.range({ key: '/a/1', revision: 5 }), 11, 'OUT_OF_RANGE', 'etcdserver: mvcc: required revision has been compacted');
  // The store saw exactly these calls: the raw service agrees.
  assert.deepStrictEqual(await c.kv.range({ key: '/b' }), sim.services.kv.range({ key: B('/b') }));
});

test('requests are not changed by the client, and prefix / fromKey build etcd ranges', async () => {
  const c = newSim().client();
  const req = { key: 'k', value: 'v' };
  await c.kv.put(req);
  assert.deepEqual(req, { key: 'k', value: 'v' });
  const U = (s: string): Uint8Array => new Uint8Array(B(s));
  assert.deepEqual(prefix('a/'), { key: U('a/'), range_end: U('a0') });
  const buf = B('a/');
  assert.deepEqual(prefix(buf), { key: U('a/'), range_end: U('a0') });
  assert.deepEqual(buf, B('a/'), 'the caller’s Buffer is not changed');
  assert.deepEqual(prefix(new Uint8Array([0x61, 0xff])), { key: new Uint8Array([0x61, 0xff]), range_end: U('b') });
  assert.deepEqual(prefix(new Uint8Array([0xff])), { key: new Uint8Array([0xff]), range_end: new Uint8Array([0]) });
  assert.deepEqual(prefix(''), { key: new Uint8Array([0]), range_end: new Uint8Array([0]) });
  assert.deepEqual(fromKey('x'), { key: U('x'), range_end: new Uint8Array([0]) });
  assert.deepEqual(fromKey(''), { key: new Uint8Array([0]), range_end: new Uint8Array([0]) });
});

test('errors: the services’ grpc-shaped errors, as rejections (never thrown synchronously)', async () => {
  const sim = newSim({ maxTxnOps: 2 });
  const c = sim.client();
  await c.kv.put({ key: 'k', value: 'v' });
  let p: Promise<unknown> | undefined;
  assert.doesNotThrow(() => (p = c.kv.put({ key: '' })));
  await rejectsGrpc(p!, 3, 'INVALID_ARGUMENT', 'etcdserver: key is not provided');
  await rejectsGrpc(c.kv.range({ key: 'k', revision: 99 }), 11, 'OUT_OF_RANGE', 'etcdserver: mvcc: required revision is a future revision');
  await rejectsGrpc(c.kv.put({ key: 'k', value: 'v', lease: 42 }), 5, 'NOT_FOUND', 'etcdserver: requested lease not found');
  await rejectsGrpc(c.kv.put({ key: 'k', ignore_value: true, ignore_lease: false, lease: '9223372036854775808' }), 3, 'INVALID_ARGUMENT', 'int64 value 9223372036854775808 out of range for field lease');
  await rejectsGrpc(
    c.kv.txn({ success: [{ request_put: { key: 'a' } }, { request_put: { key: 'b' } }, { request_put: { key: 'c' } }] }),
    3,
    'INVALID_ARGUMENT',
    'etcdserver: too many operations in txn request',
  );
  await rejectsGrpc(c.kv.compact({ revision: 9 }), 11, 'OUT_OF_RANGE', 'etcdserver: mvcc: required revision is a future revision');
  await c.lease.leaseGrant({ ID: 7, TTL: 60 });
  await rejectsGrpc(c.lease.leaseGrant({ ID: 7, TTL: 60 }), 9, 'FAILED_PRECONDITION', 'etcdserver: lease already exists');
  await rejectsGrpc(c.lease.leaseRevoke({ ID: 8 }), 5, 'NOT_FOUND', 'etcdserver: requested lease not found');
  await rejectsGrpc(c.maintenance.hashKV({ revision: 99 }), 11, 'OUT_OF_RANGE', 'etcdserver: mvcc: required revision is a future revision');
  // The rejection is the very error the service throws.
  let direct: unknown;
  try {
    sim.services.kv.put({ key: new Uint8Array(0) });
  } catch (err) {
    direct = err;
  }
  const viaClient = await c.kv.put({ key: '' }).then(
    () => undefined,
    (err: unknown) => err,
  );
  assert.deepStrictEqual(
    { code: (viaClient as GrpcError).code, details: (viaClient as GrpcError).details, message: (viaClient as GrpcError).message },
    { code: (direct as GrpcError).code, details: (direct as GrpcError).details, message: (direct as GrpcError).message },
  );
});

test('lease: grant, timeToLive, leases, revoke (keys deleted in one revision)', async () => {
  const sim = newSim();
  const c = sim.client();
  assert.deepStrictEqual(await c.lease.leaseGrant({ ID: '7', TTL: '60' }), { header: hdr(1), ID: '7', TTL: '60', error: '' });
  assert.deepStrictEqual(await c.lease.leaseGrant({ ID: 9, TTL: 1 }), { header: hdr(1), ID: '9', TTL: '2', error: '' }); // raised to the 2 s minimum
  const generated = await c.lease.leaseGrant({ TTL: 30 });
  assert.match(generated.ID, /^[1-9]\d*$/);
  await c.kv.put({ key: 'b', value: '1', lease: '7' });
  await c.kv.put({ key: 'a', value: '2', lease: 7n });
  await sim.advance(1500);
  assert.deepStrictEqual(await c.lease.leaseTimeToLive({ ID: '7', keys: true }), { header: hdr(3), ID: '7', TTL: '58', grantedTTL: '60', keys: [B('a'), B('b')] });
  assert.deepStrictEqual(await c.lease.leaseTimeToLive({ ID: '12345' }), { header: hdr(3), ID: '12345', TTL: '-1', grantedTTL: '0', keys: [] });
  const ids = [7n, 9n, BigInt(generated.ID)].sort((x, y) => (x < y ? -1 : 1)).map((id) => ({ ID: String(id) }));
  assert.deepStrictEqual(await c.lease.leaseLeases(), { header: hdr(3), leases: ids });
  assert.deepStrictEqual(await c.lease.leaseRevoke({ ID: '7' }), { header: hdr(4) });
  assert.equal((await c.kv.range({ ...fromKey('') })).count, '0');
});

test('keep-alive stream: TTL of a live lease, "0" for an unknown one; renewals keep it alive; close ends it', async () => {
  const sim = newSim();
  const c = sim.client();
  await c.lease.leaseGrant({ ID: 5, TTL: 10 });
  const ka = c.lease.leaseKeepAlive();
  const got = collect(ka);
  ka.send({ ID: 5 });
  ka.send({ ID: '404' });
  assert.equal(got.length, 0, 'responses arrive on a later turn, never inside send()');
  await sim.settle();
  assert.deepStrictEqual([...got], [
    { header: hdr(1), ID: '5', TTL: '10' },
    { header: hdr(1), ID: '404', TTL: '0' },
  ]);
  // Renew every 8 s for 24 s: the 10 s lease stays alive.
  for (let i = 0; i < 3; i++) {
    await sim.advance(8000);
    ka.send({ ID: 5 });
  }
  await sim.settle();
  assert.deepEqual(got.slice(2).map((r) => r.TTL), ['10', '10', '10']);
  assert.equal((await c.lease.leaseTimeToLive({ ID: 5 })).TTL, '10');
  await sim.advance(11_000);
  ka.send({ ID: 5 });
  await sim.settle();
  assert.equal(got.at(-1)?.TTL, '0', 'expired: TTL 0, not an error');
  const ends: string[] = [];
  ka.on('error', () => ends.push('error')).on('end', () => ends.push('end'));
  ka.close();
  assert.deepEqual(ends, ['end']);
  assert.equal(ka.ended, true);
  assert.equal(ka.error, undefined);
  ka.send({ ID: 5 }); // ignored after the end
  await sim.settle();
  assert.equal(got.length, 6);
  assert.equal(sim.services.lease.calls().length, 0);
});

test('keep-alive stream as an async iterator', async () => {
  const sim = newSim();
  const c = sim.client();
  await c.lease.leaseGrant({ ID: 1, TTL: 20 });
  const ka = c.lease.leaseKeepAlive();
  ka.send({ ID: 1 });
  ka.send({ ID: 2 });
  const seen: string[] = [];
  for await (const r of ka) {
    seen.push(`${r.ID}:${r.TTL}`);
    if (seen.length === 2) ka.close();
  }
  assert.deepEqual(seen, ['1:20', '2:0']);
});

test('watch: replays history from start_revision, then live events; progress; cancel; close', async () => {
  const sim = newSim();
  const c = sim.client();
  await c.kv.put({ key: '/w/a', value: '1' }); // 2
  await c.kv.put({ key: '/w/b', value: '2' }); // 3
  await c.kv.put({ key: '/x', value: 'no' }); // 4
  await c.kv.deleteRange({ key: '/w/a' }); // 5
  const w = c.watch();
  const got = collect(w);
  w.create({ ...prefix('/w/'), start_revision: 3, prev_kv: true });
  assert.equal(got.length, 0, 'never inside the call');
  await sim.settle();
  assert.deepStrictEqual(got.splice(0), [wresp({ header: hdr(5), created: true })]);
  // A watcher behind the head catches up at the store's next sync of unsynced watchers (every 100 ms).
  await sim.advance(100);
  assert.deepStrictEqual(got.splice(0), [
    wresp({
      header: hdr(5),
      events: [put('/w/b', 3, 3, 1, '2'), { type: 'DELETE', kv: kv('/w/a', 0, 5, 0, ''), prev_kv: kv('/w/a', 2, 2, 1, '1') }],
    }),
  ]);
  // Live.
  await c.kv.put({ key: '/w/c', value: '3' }); // 6
  await c.kv.put({ key: '/y', value: 'no' }); // 7
  await sim.settle();
  assert.deepStrictEqual(got.splice(0), [wresp({ header: hdr(6), events: [put('/w/c', 6, 6, 1, '3')] })]);
  // A second watcher on the same stream, with its own ID.
  w.create({ key: '/y', watch_id: 100 });
  w.progress();
  await sim.settle();
  assert.deepStrictEqual(got.splice(0), [wresp({ header: hdr(7), watch_id: '100', created: true }), wresp({ header: hdr(7), watch_id: '-1' })]);
  w.cancel(0);
  await sim.settle();
  assert.deepStrictEqual(got.splice(0), [wresp({ header: hdr(7), canceled: true })]);
  await c.kv.put({ key: '/w/d', value: '4' }); // 8: nobody watches /w/ now
  await c.kv.put({ key: '/y', value: 'yes' }); // 9
  await sim.settle();
  assert.deepStrictEqual(got.splice(0), [wresp({ header: hdr(9), watch_id: '100', events: [put('/y', 7, 9, 2, 'yes')] })]);
  // Requests in the raw form too.
  w.send({ cancel_request: { watch_id: '100' } });
  await sim.settle();
  assert.deepStrictEqual(got.splice(0), [wresp({ header: hdr(9), watch_id: '100', canceled: true })]);
  let ended = 0;
  w.on('end', () => ended++);
  w.close();
  assert.equal(ended, 1);
  assert.equal(sim.services.watch.calls().length, 0);
});

test('watch as an async iterator; a broken stream fires error then end, and the iterator throws', async () => {
  const sim = newSim();
  const c = sim.client();
  const w = c.watch();
  w.create({ key: 'k' });
  await c.kv.put({ key: 'k', value: '1' });
  const it = w[Symbol.asyncIterator]();
  assert.deepStrictEqual((await it.next()).value, wresp({ header: hdr(1), created: true }));
  assert.deepStrictEqual((await it.next()).value, wresp({ header: hdr(2), events: [put('k', 2, 2, 1, '1')] }));
  const order: string[] = [];
  w.on('error', (err) => order.push(`error ${err.code}`)).on('end', () => order.push('end'));
  const pending = it.next();
  assert.equal(sim.breakWatchStreams(), 1);
  assert.deepEqual(order, ['error 14', 'end']);
  await assert.rejects(pending, (err: unknown) => err instanceof Error && (err as GrpcError).code === 14);
  assert.equal(w.error?.code, 14);
});

test('a lease expiring on the virtual clock deletes its keys in one revision; the watch sees one response', async () => {
  const sim = newSim();
  const c = sim.client();
  const w = c.watch();
  const got = collect(w);
  w.create({ ...prefix('/l/') });
  const { ID } = await c.lease.leaseGrant({ TTL: 1 });
  await c.kv.put({ key: '/l/x', value: '1', lease: ID });
  await c.kv.put({ key: '/l/y', value: '2', lease: ID });
  await sim.settle();
  assert.equal(got.splice(0).length, 3); // created + two puts
  await sim.advance(1999);
  assert.equal((await c.kv.range({ ...prefix('/l/') })).count, '2', 'alive before its 2 s TTL');
  assert.deepEqual(got, []);
  await sim.advance(501);
  assert.equal((await c.kv.range({ ...prefix('/l/') })).count, '0');
  assert.deepStrictEqual(got, [
    wresp({ header: hdr(4), events: [{ type: 'DELETE', kv: kv('/l/x', 0, 4, 0, ''), prev_kv: null }, { type: 'DELETE', kv: kv('/l/y', 0, 4, 0, ''), prev_kv: null }] }),
  ]);
  assert.equal((await c.lease.leaseTimeToLive({ ID })).TTL, '-1');
  const ka = c.lease.leaseKeepAlive();
  ka.send({ ID });
  const [first] = await (async () => {
    for await (const r of ka) return [r];
    return [];
  })();
  assert.deepStrictEqual(first, { header: hdr(4), ID, TTL: '0' });
});

test('maintenance and cluster', async () => {
  const sim = newSim({ version: '3.4.23' });
  const c = sim.client();
  await c.kv.put({ key: 'a', value: '1' });
  await c.kv.put({ key: 'a', value: '2' });
  const st = await c.maintenance.status();
  assert.deepStrictEqual(st, sim.services.maintenance.status());
  assert.equal(st.version, '3.4.23');
  assert.equal(st.leader, '22');
  assert.deepStrictEqual(st.header, hdr(3));
  const h3 = await c.maintenance.hashKV();
  // The newest rules (only the Status version string says 3.4.23): hash_revision is the hashed revision.
  assert.deepStrictEqual(h3, { header: hdr(3), hash: h3.hash, compact_revision: '-1', hash_revision: '3' });
  assert.equal(typeof h3.hash, 'number');
  const h2 = await c.maintenance.hashKV({ revision: 2 });
  assert.notEqual(h2.hash, h3.hash);
  await c.kv.compact({ revision: 2 });
  const after = await c.maintenance.hashKV();
  assert.equal(after.compact_revision, '2');
  assert.deepStrictEqual(after, sim.services.maintenance.hashKV());
  await rejectsGrpc(c.maintenance.hashKV({ revision: 1 }), 11, 'OUT_OF_RANGE', 'etcdserver: mvcc: required revision has been compacted');
  assert.deepStrictEqual(await c.maintenance.defragment(), { header: null });
  assert.deepStrictEqual(await c.maintenance.alarm({ action: 'GET' }), { header: hdr(3), alarms: [] });
  const snap = await c.maintenance.snapshot();
  assert.equal(snap.length, 2); // one chunk of the bbolt file, then its SHA-256
  assert.equal(snap[1]!.remaining_bytes, '0');
  assert.deepStrictEqual(await c.cluster.memberList(), {
    header: hdr(0),
    members: [{ ID: '22', name: 'default', peerURLs: ['http://localhost:2380'], clientURLs: ['http://localhost:2379'], isLearner: false }],
  });
});

test('client.close() ends every stream it opened; new EtcdClient(services) delivers at flush()', async () => {
  const sim = newSim();
  const c = sim.client();
  const w = c.watch();
  const ka = c.lease.leaseKeepAlive();
  c.close();
  assert.equal(w.ended && ka.ended, true);
  assert.equal(sim.services.watch.calls().length + sim.services.lease.calls().length, 0);

  const plain = newSim(); // no scheduler: deliveries at flush / advance only
  const raw = new EtcdClient(plain.services);
  const w2 = raw.watch();
  const got = collect(w2);
  w2.create({ key: 'k' });
  await raw.kv.put({ key: 'k', value: 'v' });
  await plain.settle();
  assert.deepEqual(got, []);
  assert.equal(plain.server.flush(), 2);
  assert.equal(got.length, 2);
});

/** A seeded scenario through the client: leases (generated IDs), watches, expiry, compaction; its trace. */
async function scenario(sim: EtcdSim): Promise<string> {
  const c = sim.client();
  const trace: string[] = [];
  const w = c.watch();
  w.on('data', (r) => {
    const evs = r.events.map((e) => `${e.type}:${Buffer.from(e.kv.key).toString()}@${e.kv.mod_revision}`).join(',');
    trace.push(`t=${sim.clock.now()} id=${r.watch_id} rev=${r.header.revision} c=${r.created} x=${r.canceled} [${evs}]`);
  });
  w.create({ ...prefix('/s/'), progress_notify: true });
  const a = await c.lease.leaseGrant({ TTL: 3 });
  const b = await c.lease.leaseGrant({ TTL: 5 });
  trace.push(`leases ${a.ID} ${b.ID}`);
  await c.kv.put({ key: '/s/a', value: '1', lease: a.ID });
  await c.kv.put({ key: '/s/b', value: '2', lease: b.ID });
  const ka = c.lease.leaseKeepAlive();
  ka.on('data', (r) => trace.push(`ka t=${sim.clock.now()} ${r.ID}:${r.TTL}`));
  for (let i = 0; i < 6; i++) {
    await sim.advance(1000);
    ka.send({ ID: b.ID });
    w.progress();
  }
  await c.kv.compact({ revision: (await c.kv.range({ key: '/s/b' })).header.revision });
  await sim.advance(6000);
  trace.push(`hash ${(await c.maintenance.hashKV()).hash} ${JSON.stringify((await c.lease.leaseLeases()).leases)}`);
  c.close();
  return trace.join('\n');
}

test('determinism: same seed, same trace; another seed changes only the generated lease IDs', async () => {
  const first = await scenario(newSim({ seed: 7, watchProgressNotifyIntervalMs: 2000 }));
  assert.equal(await scenario(newSim({ seed: 7, watchProgressNotifyIntervalMs: 2000 })), first);
  // Another seed: other lease IDs (so another hash) and other progress-notify jitter; the same events.
  const other = await scenario(newSim({ seed: 8, watchProgressNotifyIntervalMs: 2000 }));
  assert.notEqual(other, first);
  const ids = (t: string): string[] => t.match(/^leases (\S+) (\S+)$/m)!.slice(1);
  const strip = (t: string): string[] => {
    let s = t;
    for (const [i, id] of ids(t).entries()) s = s.split(id).join(`L${i}`);
    return s.split('\n').filter((l) => !l.startsWith('hash') && !/ \[\]$/.test(l));
  };
  assert.deepEqual(strip(other), strip(first));
  assert.match(first, /DELETE:\/s\/a/);
  assert.match(first, /DELETE:\/s\/b/);
});

/** Whether two types are the same (not merely assignable to each other). */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

test('the derived methods keep the signatures the raw client wrote out by hand (checked by npm run typecheck)', () => {
  // Each line fails to compile when the derivation from the protos and the service classes changes a call's shape.
  const same: [
    Same<Parameters<KVClient['put']>, [req: Req<M.PutRequest>]>,
    Same<ReturnType<KVClient['put']>, Promise<M.PutResponse>>,
    Same<Parameters<MaintenanceClient['status']>, [req?: Req<M.StatusRequest> | undefined]>,
    Same<ReturnType<MaintenanceClient['snapshot']>, Promise<M.SnapshotResponse[]>>,
    Same<Parameters<LockClient['lock']>, [req: Req<M.LockRequest>, opts?: WaitOptions | undefined]>,
    Same<ReturnType<LockClient['lock']>, Promise<M.LockResponse>>,
    Same<Parameters<ElectionClient['proclaim']>, [req: Req<M.ProclaimRequest>]>,
    Same<ReturnType<LeaseClient['leaseKeepAlive']>, EtcdKeepAliveStream>,
    Same<ReturnType<ElectionClient['observe']>, EtcdObserveStream>,
    // The streams are the client's own methods, never a unary wrapper of the service's stream call.
    Same<Extract<keyof LeaseClient | keyof ElectionClient | keyof KVClient, 'watch'>, never>,
  ] = [true, true, true, true, true, true, true, true, true, true];
  assert.equal(same.length, 10);
});
