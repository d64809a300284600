import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { messages as M } from '../../src/index.js';
import { B, hdr, kv, newSim } from './helpers.js';
import { serverOf } from '../../src/client/index.js';

function resp(over: Partial<M.WatchResponse> & { header: M.ResponseHeader }): M.WatchResponse {
  return { watch_id: '0', created: false, canceled: false, compact_revision: '0', cancel_reason: '', fragment: false, events: [], ...over };
}

test('create, history replay, live events, prev_kv, cancel: whole responses in message form', () => {
  const sim = newSim();
  const k = sim.services.kv;
  for (let i = 1; i <= 3; i++) k.put({ key: B('k'), value: B(`v${i}`) });
  const call = sim.services.watch.watch();
  call.write({ request_union: 'create_request', create_request: { key: B('k'), start_revision: '2', prev_kv: true } });
  assert.deepStrictEqual(call.take(), [resp({ header: hdr(4), created: true })]);
  sim.server.advance(100); // the sync step replays the history
  assert.deepStrictEqual(call.take(), [
    resp({
      header: hdr(4),
      events: [
        { type: 'PUT', kv: kv('k', 2, 2, 1, 'v1'), prev_kv: null },
        { type: 'PUT', kv: kv('k', 2, 3, 2, 'v2'), prev_kv: kv('k', 2, 2, 1, 'v1') },
        { type: 'PUT', kv: kv('k', 2, 4, 3, 'v3'), prev_kv: kv('k', 2, 3, 2, 'v2') },
      ],
    }),
  ]);
  k.deleteRange({ key: B('k') });
  assert.deepStrictEqual(call.take(), [
    resp({ header: hdr(5), events: [{ type: 'DELETE', kv: kv('k', 0, 5, 0, ''), prev_kv: kv('k', 2, 4, 3, 'v3') }] }),
  ]);
  call.write({ cancel_request: { watch_id: '0' } });
  call.write({ cancel_request: { watch_id: '55' } }); // unknown: no reply at all
  assert.deepStrictEqual(call.take(), [resp({ header: hdr(5), canceled: true })]);
  k.put({ key: B('k'), value: B('x') });
  assert.deepStrictEqual(call.take(), []);
});

test('failed creates and compaction cancels look as etcd sends them', () => {
  const sim = newSim();
  const k = sim.services.kv;
  for (let i = 1; i <= 4; i++) k.put({ key: B('k'), value: B(`v${i}`) });
  k.compact({ revision: '4' });
  const call = sim.services.watch.watch();
  call.write({ create_request: { key: B('b'), range_end: B('a') } });
  call.write({ create_request: { key: B('k'), watch_id: '7' } });
  call.write({ create_request: { key: B('k'), watch_id: 7 } });
  call.write({ create_request: { key: B('k'), start_revision: '2', watch_id: '9' } });
  call.write({ create_request: { key: B('k'), start_revision: '-1' } });
  assert.deepStrictEqual(call.take(), [
    resp({ header: hdr(5), watch_id: '-1', created: true, canceled: true, cancel_reason: 'mvcc: watcher range is empty' }),
    resp({ header: hdr(5), watch_id: '7', created: true }),
    resp({ header: hdr(5), watch_id: '-1', created: true, canceled: true, cancel_reason: 'mvcc: duplicate watch ID provided on the WatchStream' }),
    resp({ header: hdr(5), watch_id: '9', created: true }),
    // etcd >= 3.5.24/3.6.6: a negative start revision is answered created + canceled as compacted.
    resp({ header: hdr(5), watch_id: '-1', created: true, canceled: true, cancel_reason: 'etcdserver: mvcc: required revision has been compacted' }),
  ]);
  sim.server.advance(100);
  // The compaction cancel: header without revision, compact_revision set, no cancel_reason.
  assert.deepStrictEqual(call.take(), [resp({ header: hdr(0), watch_id: '9', canceled: true, compact_revision: '4' })]);
});

test('progress requests and progress_notify; filters by name and number', () => {
  const sim = newSim({ watchProgressNotifyIntervalMs: 1000 });
  const call = sim.services.watch.watch();
  call.write({ create_request: { key: B('k'), progress_notify: true, filters: ['NOPUT'] } });
  call.write({ create_request: { key: B('k'), filters: [1, 'BOGUS' as 'NOPUT'] } });
  call.write({ progress_request: {} });
  assert.deepStrictEqual(call.take(), [
    resp({ header: hdr(1), created: true }),
    resp({ header: hdr(1), watch_id: '1', created: true }),
    resp({ header: hdr(1), watch_id: '-1' }),
  ]);
  sim.services.kv.put({ key: B('k'), value: B('1') });
  sim.services.kv.deleteRange({ key: B('k') });
  assert.deepStrictEqual(call.take(), [
    resp({ header: hdr(2), watch_id: '1', events: [{ type: 'PUT', kv: kv('k', 2, 2, 1, '1'), prev_kv: null }] }),
    resp({ header: hdr(3), watch_id: '0', events: [{ type: 'DELETE', kv: kv('k', 0, 3, 0, ''), prev_kv: null }] }),
  ]);
  sim.server.advance(2200);
  const ticks = call.take();
  assert.ok(ticks.length >= 1);
  for (const t of ticks) assert.deepStrictEqual(t, resp({ header: hdr(3), watch_id: '0' }));
});

test('watch IDs beyond 2^53 are echoed exactly and can be canceled', () => {
  const sim = newSim();
  const call = sim.services.watch.watch();
  const big = '9223372036854775807';
  call.write({ create_request: { key: B('k'), watch_id: big } });
  call.write({ create_request: { key: B('k'), watch_id: '9007199254740993' } });
  call.write({ create_request: { key: B('k') } });
  sim.services.kv.put({ key: B('k'), value: B('v') });
  const rs = call.take();
  assert.deepEqual(rs.map((r) => [r.watch_id, r.created, r.events.length]), [
    [big, true, 0],
    ['9007199254740993', true, 0],
    ['0', true, 0],
    [big, false, 1],
    ['9007199254740993', false, 1],
    ['0', false, 1],
  ]);
  call.write({ cancel_request: { watch_id: big } });
  assert.deepStrictEqual(call.take(), [resp({ header: hdr(2), watch_id: big, canceled: true })]);
});

test('listener delivery: at flush, at each instant of sim.advance, through a scheduler; never inside a write', () => {
  const sim = newSim();
  const call = sim.services.watch.watch();
  const got: [number, string][] = [];
  call.onResponse((rs) => {
    for (const r of rs) got.push([sim.clock.now(), r.created ? 'created' : r.events.map((e) => `${e.type}@${e.kv.mod_revision}`).join(',')]);
  });
  call.write({ create_request: { key: B('k') } });
  assert.deepEqual(got, []);
  assert.equal(sim.server.flush(), 1);
  const lease = sim.services.lease.leaseGrant({ TTL: '2' });
  sim.services.kv.put({ key: B('k'), value: B('v'), lease: lease.ID });
  assert.equal(got.length, 1);
  sim.server.advance(10_000);
  // The put is delivered at the first instant of the advance; the expiry's delete at the expiry step.
  assert.deepEqual(got, [
    [0, 'created'],
    [10, 'PUT@2'],
    [2000, 'DELETE@3'],
  ]);
  // A scheduler gets a flush function once per batch; the simulator never calls the event loop itself.
  const scheduled: (() => void)[] = [];
  serverOf(sim).delivery.setScheduler((flush) => scheduled.push(flush));
  sim.services.kv.put({ key: B('k'), value: B('a') });
  sim.services.kv.put({ key: B('k'), value: B('b') });
  assert.equal(scheduled.length, 1);
  assert.equal(got.length, 3);
  scheduled[0]!();
  assert.deepEqual(got.slice(3), [
    [10_000, 'PUT@4'],
    [10_000, 'PUT@5'],
  ]);
  // A listener may call back into the server: the responses it causes are delivered in the same flush.
  serverOf(sim).delivery.setScheduler(undefined);
  const other = sim.services.watch.watch();
  const seen: string[] = [];
  other.onResponse((rs) => {
    for (const r of rs) {
      seen.push(r.created ? 'created' : `ev@${r.header.revision}`);
      if (r.created) sim.services.kv.put({ key: B('o'), value: B('1') });
    }
  });
  other.write({ create_request: { key: B('o') } });
  sim.server.flush();
  assert.deepEqual(seen, ['created', 'ev@6']);
});

test('end, cancel and abort close the stream: no watcher is left behind', () => {
  const sim = newSim();
  const watchers = (): number => sim.watchable.synced.size + sim.watchable.unsynced.size;
  const ended: string[] = [];
  const calls = [sim.services.watch.watch(), sim.services.watch.watch(), sim.services.watch.watch()];
  calls.forEach((c, i) => {
    c.write({ create_request: { key: B(`k${i}`) } });
    c.write({ create_request: { key: B(`j${i}`), start_revision: '1' } });
    c.onEnd((err) => ended.push(err === undefined ? `${i}:end` : `${i}:${err.message}`));
  });
  assert.equal(watchers(), 6);
  calls[0]!.end();
  calls[1]!.cancel();
  assert.equal(sim.breakWatchStreams(), 1);
  assert.equal(watchers(), 0);
  assert.deepEqual(ended, ['0:end', '1:1 CANCELLED: Cancelled on client', '2:14 UNAVAILABLE: etcdsim: watch stream broken']);
  assert.equal(serverOf(sim).delivery.openCalls, 0);
  assert.deepEqual(sim.services.watch.calls(), []);
  calls[0]!.write({ create_request: { key: B('late') } }); // ignored after the end
  assert.equal(watchers(), 0);
  calls[0]!.onEnd((err) => ended.push(`late:${String(err)}`));
  assert.equal(ended.at(-1), 'late:undefined');
});

test('closeSend (the client half-closes) ends no watcher: events and catch-up go on until the client cancels', () => {
  const sim = newSim();
  const watchers = (): number => sim.watchable.synced.size + sim.watchable.unsynced.size;
  sim.services.kv.put({ key: B('h'), value: B('1') });
  const call = sim.services.watch.watch();
  const ended: string[] = [];
  call.onEnd((err) => ended.push(err === undefined ? 'end' : err.message));
  call.write({ create_request: { key: B('h') } });
  call.write({ create_request: { key: B('h'), start_revision: '1' } });
  call.closeSend();
  assert.equal(call.sendIsClosed, true);
  call.write({ create_request: { key: B('late') } }); // nothing more is read from the client
  assert.deepStrictEqual(call.take(), [resp({ header: hdr(2), created: true }), resp({ header: hdr(2), watch_id: '1', created: true })]);
  sim.server.advance(100); // the unsynced watcher still catches up
  sim.services.kv.put({ key: B('h'), value: B('2') });
  assert.deepStrictEqual(
    call.take().map((r) => [r.watch_id, r.events.map((e) => e.kv.mod_revision)]),
    [['1', ['2']], ['0', ['3']], ['1', ['3']]],
  );
  assert.equal(watchers(), 2);
  assert.deepEqual(ended, []);
  call.cancel();
  assert.equal(watchers(), 0);
  assert.deepEqual(ended, ['1 CANCELLED: Cancelled on client']);
});

test('a create with a simple token naming a raft index not applied yet holds the stream until the member applies it (3.4)', () => {
  const sim = newSim({ etcdVersion: '3.4' });
  const index = sim.server.raftIndex + 2;
  const call = sim.services.watch.watch({ token: `abcdefghijklmnop.${index}` });
  call.write({ create_request: { key: B('a') } });
  call.write({ progress_request: {} }); // read only after the create: it waits behind it
  sim.server.flush();
  assert.deepStrictEqual(call.take(), []);
  assert.equal(call.waitsForToken, true);
  sim.services.kv.put({ key: B('x'), value: B('1') });
  sim.server.flush();
  assert.deepStrictEqual(call.take(), [], 'one write short of the index');
  sim.services.kv.put({ key: B('x'), value: B('2') });
  assert.deepStrictEqual(call.take(), [], 'released at a delivery point, not inside the commit');
  sim.server.flush();
  assert.equal(call.waitsForToken, false);
  assert.deepStrictEqual(
    call.take().map((r) => [r.watch_id, r.created, r.canceled, r.cancel_reason]),
    [
      ['-1', true, true, 'rpc error: code = Unauthenticated desc = etcdserver: invalid auth token'],
      ['-1', false, false, ''],
    ],
  );
  // A token naming an applied index is looked up at once; a call that ends while it waits leaves nothing.
  const held = sim.services.watch.watch({ token: 'abc.999999' });
  held.write({ create_request: { key: B('a') } });
  assert.equal(serverOf(sim).appliedWait.size, 1);
  held.cancel();
  assert.equal(serverOf(sim).appliedWait.size, 0);
  assert.equal(serverOf(sim).delivery.openCalls, 1);
  call.cancel();
});
