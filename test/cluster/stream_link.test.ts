/**
 * Streams over a client's link to a cluster member (src/cluster/stream_link.ts): Watch,
 * LeaseKeepAlive and Election.Observe follow dropLink / delayLink / restoreLink and a paused member as a
 * TCP connection carries them — in order, nothing lost, held while the link is down or the member stopped.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EtcdCluster } from '../../src/cluster/index.js';
import type { messages as M, GrpcError } from '../../src/index.js';
import { VirtualClock } from '../../src/sim/index.js';
import { StreamHold } from '../../src/server/index.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
const B = (s: string): Uint8Array => enc.encode(s);

function newCluster(): EtcdCluster {
  return new EtcdCluster({ clock: new VirtualClock(), seed: 7 });
}

/** What a stream's client received through its listener, and how the stream ended for it. */
function received<R>(call: { onResponse(l: (rs: R[]) => void): void; onEnd(l: (err: GrpcError | undefined) => void): void }): {
  readonly rs: R[];
  /** How the call ended for the client ({ code, details } of its error, or 'ok'); undefined while open. */
  ended(): { code: number; details: string } | 'ok' | undefined;
} {
  const rs: R[] = [];
  let end: { code: number; details: string } | 'ok' | undefined;
  call.onResponse((batch) => rs.push(...batch));
  call.onEnd((err) => (end = err === undefined ? 'ok' : { code: err.code, details: err.details }));
  return { rs, ended: () => end };
}

/** The watchers open on member `i` (etcd_debugging_mvcc_watcher_total). */
function watchersOn(c: EtcdCluster, i: number): number {
  return c.members[i]!.server.services.watch.calls().reduce((n, call) => n + call.stream.watchIds().length, 0);
}

const revisionsOf = (rs: readonly M.WatchResponse[]): number[] => rs.flatMap((r) => r.events.map((e) => Number(e.kv!.mod_revision)));

test('a watch over a dropped link: its create and events wait; on restore every event arrives, in order, none lost', async () => {
  const c = newCluster();
  const leader = c.member(0).services;
  c.dropLink('app', 1);
  const call = c.connect(1, { client: 'app' }).watch();
  const seen = received(call);
  call.write({ request_union: 'create_request', create_request: { key: B('k/'), range_end: B('k0') } });
  await c.advance(10);
  assert.equal(seen.rs.length, 0, 'the create has not reached the member');
  assert.equal(watchersOn(c, 1), 0);
  c.restoreLink('app', 1);
  await c.advance(0);
  assert.equal(seen.rs.length, 1);
  assert.equal(seen.rs[0]!.created, true);
  // Cut again: 300 puts commit and apply on member 1, more than its stream's channel holds.
  c.dropLink('app', 1);
  for (let i = 0; i < 300; i++) await leader.kv.put({ key: B(`k/${i}`), value: B('v') });
  await c.advance(500);
  assert.equal(seen.rs.length, 1, 'nothing reaches the client while the link is down');
  assert.equal(c.members[1]!.server.mvcc.currentRevision, 301);
  c.restoreLink('app', 1);
  await c.advance(1000);
  assert.deepEqual(
    revisionsOf(seen.rs),
    Array.from({ length: 300 }, (_, i) => i + 2),
    'the held responses and the victims\u2019 catch-up: every revision once, in order',
  );
  assert.equal(seen.ended(), undefined);
  c.close();
});

test('a watch over a delayed link: the create is answered after the round trip, each event after one delay', async () => {
  const c = newCluster();
  c.delayLink('app', 2, 30);
  const call = c.connect(2, { client: 'app' }).watch();
  const seen = received(call);
  call.write({ request_union: 'create_request', create_request: { key: B('k') } });
  await c.advance(59);
  assert.equal(seen.rs.length, 0);
  await c.advance(1);
  assert.equal(seen.rs[0]?.created, true, 'created after 30 ms there and 30 ms back');
  await c.member(0).services.kv.put({ key: B('k'), value: B('1') });
  const applied = c.clock.now();
  await c.advance(0);
  assert.equal(c.members[2]!.server.mvcc.currentRevision, 2);
  assert.equal(seen.rs.length, 1);
  await c.advance(29);
  assert.equal(seen.rs.length, 1);
  await c.advance(1);
  assert.equal(c.clock.now() - applied, 30);
  assert.deepEqual(revisionsOf(seen.rs), [2]);
  c.close();
});

test('a client cancel ends the call for the client at once; the member lets the watcher go when the cancel arrives', async () => {
  const c = newCluster();
  c.delayLink('app', 1, 50);
  const call = c.connect(1, { client: 'app' }).watch();
  const seen = received(call);
  call.write({ request_union: 'create_request', create_request: { key: B('k') } });
  await c.advance(100);
  const watchers = (): number => watchersOn(c, 1);
  assert.equal(watchers(), 1);
  call.cancel();
  assert.deepEqual(seen.ended(), { code: 1, details: 'Cancelled on client' });
  assert.equal(call.ended, true);
  await c.advance(49);
  assert.equal(watchers(), 1, 'the cancel is still on its way');
  await c.advance(1);
  assert.equal(watchers(), 0);
  assert.equal(c.members[1]!.server.services.watch.calls().length, 0);
  c.close();
});

test('a member that crashes behind a dropped link: its client learns only once the link is back', async () => {
  const c = newCluster();
  const call = c.connect(2, { client: 'app' }).watch();
  const seen = received(call);
  call.write({ request_union: 'create_request', create_request: { key: B('k') } });
  c.dropLink('app', 2);
  c.crash(2);
  await c.advance(1000);
  assert.equal(seen.ended(), undefined, 'no RST reaches the client over a dropped link');
  c.restoreLink('app', 2);
  await c.advance(0);
  assert.deepEqual(seen.ended(), { code: 14, details: 'transport is closing' });
  c.close();
});

test('a keep-alive through a paused follower renews nothing until it runs again; then the held renewal is answered', async () => {
  const c = newCluster();
  const g = await c.member(0).services.lease.leaseGrant({ TTL: '10' });
  const id = BigInt(g.ID);
  const ka = c.connect(2, { client: 'app' }).lease.leaseKeepAlive();
  const seen = received(ka);
  await c.advance(2000);
  c.pause(2);
  ka.write({ ID: g.ID });
  await c.advance(3000);
  assert.equal(seen.rs.length, 0, 'a stopped process reads nothing');
  assert.equal(c.members[0]!.server.lessor.expiryOf(id), 10_000, 'the leader still has the grant-time expiry');
  c.resume(2);
  await c.advance(0);
  assert.deepEqual(
    seen.rs.map((r) => [r.ID, r.TTL, r.header.member_id]),
    [[g.ID, '10', String(c.members[2]!.id)]],
  );
  assert.equal(c.members[0]!.server.lessor.expiryOf(id), 5000 + 10_000, 'renewed when the follower read it, at t = 5 s');
  c.close();
});

test('a keep-alive over a delayed link: each renewal reaches the leader one delay after it was sent', async () => {
  const c = newCluster();
  const g = await c.member(0).services.lease.leaseGrant({ TTL: '10' });
  c.delayLink('app', 0, 200);
  const ka = c.connect(0, { client: 'app' }).lease.leaseKeepAlive();
  const seen = received(ka);
  ka.write({ ID: g.ID });
  ka.write({ ID: g.ID });
  await c.advance(399);
  assert.equal(seen.rs.length, 0);
  await c.advance(1);
  assert.equal(seen.rs.length, 2, 'both answers, in order, a round trip later');
  assert.equal(c.members[0]!.server.lessor.expiryOf(BigInt(g.ID)), 200 + 10_000);
  // A half-close travels the link too: the member ends the call (OK) when it reads it, the client learns a delay later.
  ka.end();
  await c.advance(399);
  assert.equal(seen.ended(), undefined);
  await c.advance(1);
  assert.equal(seen.ended(), 'ok');
  c.close();
});

test('an Observe stream over a dropped link: the new leader\u2019s proclamation waits for the link', async () => {
  const c = newCluster();
  const s = c.member(0).services;
  const g = await s.lease.leaseGrant({ TTL: '60' });
  await s.election.campaign({ name: B('e'), lease: g.ID, value: B('one') });
  const obs = c.connect(1, { client: 'app' }).election.observe({ name: B('e') });
  const seen = received(obs);
  await c.advance(10);
  assert.deepEqual(seen.rs.map((r) => dec.decode(r.kv!.value)), ['one']);
  c.dropLink('app', 1);
  const leader = (await s.election.leader({ name: B('e') })).kv!;
  await s.election.proclaim({ leader: { name: B('e'), key: leader.key, rev: leader.create_revision, lease: g.ID }, value: B('two') });
  await c.advance(100);
  assert.equal(seen.rs.length, 1);
  c.restoreLink('app', 1);
  await c.advance(0);
  assert.deepEqual(seen.rs.map((r) => dec.decode(r.kv!.value)), ['one', 'two']);
  c.close();
});

test('links are per client: another client\u2019s watch on the same member is not held', async () => {
  const c = newCluster();
  c.dropLink('app', 1);
  const mine = c.connect(1, { client: 'app' }).watch();
  const held = received(mine);
  const other = c.connect(1, { client: 'ops' }).watch();
  const free = received(other);
  for (const w of [mine, other]) w.write({ request_union: 'create_request', create_request: { key: B('k') } });
  await c.advance(0);
  assert.equal(free.rs[0]?.created, true);
  assert.equal(held.rs.length, 0);
  c.close();
});

test('a Snapshot stream over a dropped link holds before its next piece; restore-link lets it go on', async () => {
  const c = newCluster();
  await c.member(0).services.kv.put({ key: B('k'), value: B('v') });
  const pieces = (await c.connect(1, { client: 'app' }).maintenance.snapshotStream())[Symbol.iterator]();
  const first = pieces.next().value;
  assert.ok(!(first instanceof StreamHold) && first!.blob.length > 0);
  c.dropLink('app', 1);
  const held = pieces.next().value;
  assert.ok(held instanceof StreamHold, 'nothing more while the link is down');
  let resumed = false;
  held.until(() => (resumed = true));
  await c.advance(1000);
  assert.equal(resumed, false);
  c.restoreLink('app', 1);
  assert.equal(resumed, true);
  assert.ok(!(pieces.next().value instanceof StreamHold));
  c.close();
});
