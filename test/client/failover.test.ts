/**
 * Clients over several members of a simulated cluster (`endpoints`): the raw client fails over as etcd's
 * Go client (clientv3 3.4) does, etcd3 with its own connection pool. Virtual time, no sleeps.
 */
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { createEtcdSim, type EtcdClusterSim, type EtcdStream } from '../../src/index.js';
import type { messages as M } from '../../src/index.js';

const dec = new TextDecoder();

/** The index of the member a response header names. */
function servedBy(sim: EtcdClusterSim, header: { member_id: string | number } | null | undefined): number {
  const i = sim.cluster.members.findIndex((m) => String(m.id) === String(header?.member_id));
  assert.ok(i >= 0, `no member ${String(header?.member_id)}`);
  return i;
}

function collect<T>(stream: EtcdStream<T>): T[] {
  const got: T[] = [];
  stream.on('data', (r) => got.push(r));
  return got;
}

/** Settles a promise into what it gave or the error's message, so a test can advance time meanwhile. */
function outcome<T>(p: Promise<T>): Promise<{ ok: T } | { err: string }> {
  return p.then(
    (ok) => ({ ok }),
    (e: Error) => ({ err: e.message }),
  );
}

async function withMockTimers(fn: () => Promise<void>): Promise<void> {
  mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'], now: 0 });
  try {
    await fn();
  } finally {
    mock.timers.reset();
  }
}

test('raw client over endpoints: round robin over every member, then around a crashed one and back after its restart', async () => {
  const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 7 });
  const c = sim.client({ endpoints: [0, 'infra2', sim.cluster.members[2]!.id] });
  await c.kv.put({ key: 'k', value: 'v' });
  const who = async (n: number): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push(servedBy(sim, (await c.kv.range({ key: 'k' })).header));
    return out;
  };
  const first = await who(6);
  assert.deepEqual(new Set(first), new Set([0, 1, 2]), `every member serves: ${first.join(',')}`);
  // Round robin: the same order again and again.
  assert.deepEqual(first.slice(3), first.slice(0, 3));
  sim.cluster.crash(2);
  const during = await who(6);
  assert.ok(!during.includes(2), `nothing on the crashed member: ${during.join(',')}`);
  assert.deepEqual(new Set(during), new Set([0, 1]));
  // grpc-go reconnects after its backoff (1 s ± 20 %); the member is back by then.
  sim.cluster.restart(2);
  await sim.advance(1300);
  const after = await who(6);
  assert.ok(after.includes(2), `the restarted member serves again: ${after.join(',')}`);
  c.close();
  sim.close();
});

test('raw client: a read in flight on a member that crashes is retried on another; a write is not (clientv3 retry rules)', async () => {
  const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 11 });
  const c = sim.client({ endpoints: [0, 1, 2] });
  await c.kv.put({ key: 'k', value: 'v' });
  await sim.settle();
  sim.cluster.pause(2);
  const reads = [0, 1, 2].map(() => outcome(c.kv.range({ key: 'k' })));
  const writes = [0, 1, 2].map((i) => outcome(c.kv.put({ key: `w${i}`, value: 'x' })));
  await sim.advance(100);
  // One read and one write went to the paused member and are held there; crashing it breaks them.
  sim.cluster.crash(2);
  await sim.advance(100);
  const r = await Promise.all(reads);
  for (const x of r) {
    assert.ok('ok' in x, `every read answered: ${JSON.stringify(x)}`);
    assert.notEqual(servedBy(sim, x.ok.header), 2);
    assert.equal(dec.decode(x.ok.kvs[0]!.value), 'v');
  }
  const w = await Promise.all(writes);
  const failed = w.filter((x) => 'err' in x);
  assert.equal(failed.length, 1, JSON.stringify(w));
  assert.match((failed[0] as { err: string }).err, /^14 UNAVAILABLE: transport is closing/);
  c.close();
  sim.close();
});

test('raw client: a paused member holds a call until its deadline (DeadlineExceeded, not retried); the next calls go elsewhere', async () => {
  const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 3 });
  const c = sim.client({ endpoints: [0, 1, 2], deadlineMs: 2000 });
  await c.kv.put({ key: 'k', value: 'v' });
  sim.cluster.pause(1);
  const calls = [0, 1, 2].map(() => outcome(c.kv.range({ key: 'k', serializable: true })));
  await sim.advance(1999);
  let done = 0;
  for (const p of calls) void p.then(() => done++);
  await sim.settle();
  assert.equal(done, 2, 'the call on the paused member still hangs');
  await sim.advance(1);
  const all = await Promise.all(calls);
  const timedOut = all.filter((x) => 'err' in x);
  assert.deepEqual(timedOut, [{ err: '4 DEADLINE_EXCEEDED: context deadline exceeded' }]);
  c.close();
  sim.close();
});

test('raw client: a member stopped before the client connects is not picked (its handshake waits) until it runs again', async () => {
  const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 3 });
  sim.cluster.pause(2);
  const c = sim.client({ endpoints: [0, 1, 2], deadlineMs: 2000 });
  const during: number[] = [];
  for (let i = 0; i < 6; i++) during.push(servedBy(sim, (await c.kv.range({ key: 'k', serializable: true })).header));
  assert.deepEqual(new Set(during), new Set([0, 1]), 'no call hangs on the stopped member');
  sim.cluster.resume(2);
  const after: number[] = [];
  for (let i = 0; i < 6; i++) after.push(servedBy(sim, (await c.kv.range({ key: 'k', serializable: true })).header));
  assert.ok(after.includes(2), after.join(','));
  // With every endpoint stopped, a call waits for a connection until its deadline.
  sim.cluster.pause(1);
  const c2 = sim.client({ endpoints: [1], deadlineMs: 500 });
  const waiting = outcome(c2.kv.range({ key: 'k' }));
  await sim.advance(500);
  assert.deepEqual(await waiting, { err: '4 DEADLINE_EXCEEDED: context deadline exceeded' });
  const resumed = c2.kv.range({ key: 'k', serializable: true });
  await sim.advance(100);
  sim.cluster.resume(1);
  await sim.advance(20);
  assert.equal(servedBy(sim, (await resumed).header), 1);
  c.close();
  c2.close();
  sim.close();
});

test('raw client: a dropped link loses the calls sent over it until their deadline; other members keep answering', async () => {
  const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 5 });
  const c = sim.client({ endpoints: [0, 1, 2], client: 'app', deadlineMs: 1000 });
  await c.kv.put({ key: 'k', value: 'v' });
  sim.cluster.dropLink('app', 0);
  const all = await Promise.all(
    [0, 1, 2, 3, 4, 5].map(async () => {
      const p = outcome(c.kv.range({ key: 'k' }));
      await sim.advance(1000);
      return p;
    }),
  );
  const lost = all.filter((x) => 'err' in x);
  assert.equal(lost.length, 2, 'one call in three went to member 0');
  for (const x of all) if ('ok' in x) assert.notEqual(servedBy(sim, x.ok.header), 0);
  // Another client's link to member 0 is untouched.
  const other = sim.client({ endpoints: [0], client: 'other' });
  assert.equal(servedBy(sim, (await other.kv.range({ key: 'k' })).header), 0);
  c.close();
  sim.close();
});

test('raw client: a watch resumes on another member after its member crashed, from the revision after the last it saw', async () => {
  const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 9 });
  const c = sim.client({ endpoints: [0, 1, 2] });
  const writer = sim.client({ member: 0, client: 'writer' });
  const w = c.watch();
  const got = collect<M.WatchResponse>(w);
  w.create({ key: 'k' });
  await sim.settle();
  const created = got.splice(0);
  assert.equal(created.length, 1);
  assert.ok(created[0]!.created);
  const id = created[0]!.watch_id;
  await writer.kv.put({ key: 'k', value: 'v1' });
  await sim.settle();
  const first = got.splice(0);
  assert.deepEqual(first.map((r) => r.events.map((e) => dec.decode(e.kv!.value))), [['v1']]);
  const on = servedBy(sim, first[0]!.header);
  // Member 0 leads; keep the writer's member up.
  if (on === 0) sim.cluster.moveLeader(1);
  const writerMember = on === 0 ? 1 : 0;
  const w2 = sim.client({ member: writerMember, client: 'writer2' });
  sim.cluster.crash(on);
  await w2.kv.put({ key: 'k', value: 'v2' });
  await w2.kv.put({ key: 'k', value: 'v3' });
  await sim.advance(200);
  assert.equal(w.ended, false, 'the stream goes on');
  assert.ok(got.every((r) => !r.created), 'the re-creation is not passed on');
  assert.deepEqual(
    got.flatMap((r) => r.events.map((e) => dec.decode(e.kv!.value))),
    ['v2', 'v3'],
    'nothing lost, nothing twice',
  );
  assert.ok(got.every((r) => r.watch_id === id), 'the watcher keeps its ID');
  assert.ok(got.every((r) => servedBy(sim, r.header) !== on));
  c.close();
  sim.close();
});

test('raw client: a watch at revision 0 that saw no event resumes at its creation revision, replaying that revision (clientv3 3.4)', async () => {
  // Observed on a real 3-member etcd 3.4.23 with clientv3 3.4.23: put q=0 (revision 2), watch q, kill the
  // member serving the watch, put q=1: the resumed watch delivers q=0 (revision 2), then q=1 (revision 3).
  const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 9 });
  const c = sim.client({ endpoints: [0, 1, 2] });
  await c.kv.put({ key: 'q', value: '0' });
  const w = c.watch();
  const got = collect<M.WatchResponse>(w);
  w.create({ key: 'q' });
  await sim.settle();
  const [created] = got.splice(0);
  assert.equal(created!.header.revision, '2');
  const on = servedBy(sim, created!.header);
  if (on === 0) sim.cluster.moveLeader(1);
  sim.cluster.crash(on);
  await sim.client({ member: on === 0 ? 1 : 0, client: 'writer' }).kv.put({ key: 'q', value: '1' });
  await sim.advance(200);
  assert.deepEqual(
    got.flatMap((r) => r.events.map((e) => `${dec.decode(e.kv!.value)}@${e.kv!.mod_revision}`)),
    ['0@2', '1@3'],
  );
  c.close();
  sim.close();
});

test('raw client: a keep-alive stream reopens on another member 500 ms after its member crashed', async () => {
  const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 13 });
  const c = sim.client({ endpoints: [0, 1, 2] });
  const { ID } = await c.lease.leaseGrant({ TTL: 5 });
  const ka = c.lease.leaseKeepAlive();
  const got = collect<M.LeaseKeepAliveResponse>(ka);
  ka.send({ ID });
  await sim.settle();
  assert.equal(got.length, 1);
  const on = servedBy(sim, got[0]!.header);
  if (on === 0) sim.cluster.moveLeader(1);
  sim.cluster.crash(on);
  await sim.advance(499);
  ka.send({ ID }); // lost: the stream is reconnecting
  await sim.settle();
  assert.equal(got.length, 1);
  await sim.advance(1);
  ka.send({ ID });
  await sim.settle();
  assert.equal(got.length, 2);
  assert.notEqual(servedBy(sim, got[1]!.header), on);
  assert.equal(got[1]!.TTL, '5');
  assert.equal(ka.ended, false);
  c.close();
  sim.close();
});

test('a pinned client (member: 2) never moves: on a crash its calls fail', async () => {
  const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 1 });
  const c = sim.client({ member: 2 });
  await c.kv.put({ key: 'k', value: 'v' });
  for (let i = 0; i < 3; i++) assert.equal(servedBy(sim, (await c.kv.range({ key: 'k' })).header), 2);
  sim.cluster.crash(2);
  await assert.rejects(c.kv.range({ key: 'k' }), /14 UNAVAILABLE: .*member infra3 is down/);
  assert.throws(() => sim.client({ member: 1, endpoints: [0, 1] }), /not both/);
  assert.throws(() => sim.client({ endpoints: [0, 0] }), /given twice/);
  sim.close();
});

/** One seeded run: the members that served a series of reads and writes around a crash and a restart. */
async function memberSequence(seed: number): Promise<number[]> {
  const sim = createEtcdSim({ members: 3, time: 'virtual', seed });
  const c = sim.client({ endpoints: [0, 1, 2] });
  const seq: number[] = [];
  for (let i = 0; i < 5; i++) seq.push(servedBy(sim, (await c.kv.put({ key: `k${i}`, value: 'v' })).header));
  sim.cluster.crash(1);
  for (let i = 0; i < 5; i++) seq.push(servedBy(sim, (await c.kv.range({ key: 'k0' })).header));
  sim.cluster.restart(1);
  await sim.advance(2000);
  for (let i = 0; i < 5; i++) seq.push(servedBy(sim, (await c.kv.range({ key: 'k0' })).header));
  c.close();
  sim.close();
  return seq;
}

test('failover is deterministic: the same seed serves each call on the same member', async () => {
  const a = await memberSequence(21);
  assert.deepEqual(await memberSequence(21), a);
  const others = await Promise.all([22, 23, 24, 25].map(memberSequence));
  assert.ok(others.some((s) => s.join() !== a.join()), 'the seed decides the order');
});

/** The same for etcd3's pool: its shuffle, circuit breakers and retries around a crash. */
async function etcd3Sequence(seed: number): Promise<number[]> {
  const seq: number[] = [];
  await withMockTimers(async () => {
    const sim = createEtcdSim({ members: 3, time: 'virtual', seed });
    const e = sim.etcd3({ endpoints: [0, 1, 2], timers: mock.timers });
    for (let i = 0; i < 5; i++) seq.push(servedBy(sim, (await e.put(`k${i}`).value('v').exec()).header));
    sim.cluster.crash(2);
    for (let i = 0; i < 8; i++) seq.push(servedBy(sim, (await e.get('k0').exec()).header));
    sim.cluster.restart(2);
    await sim.advance(6000); // the circuit breaker half-opens after 5 s
    for (let i = 0; i < 8; i++) seq.push(servedBy(sim, (await e.get('k0').exec()).header));
    e.close();
    sim.close();
  });
  return seq;
}

test('etcd3 over endpoints is deterministic: the same seed serves each call on the same member', async () => {
  const a = await etcd3Sequence(31);
  assert.deepEqual(await etcd3Sequence(31), a);
  assert.ok(a.slice(13).includes(2), `back on the restarted member: ${a.join(',')}`);
  const b = await etcd3Sequence(32);
  const c = await etcd3Sequence(33);
  assert.ok(b.join() !== a.join() || c.join() !== a.join(), 'the seed decides the order');
});

test('etcd3 over endpoints: its pool spreads calls over the members and retries a crashed member\'s calls on another', async () => {
  await withMockTimers(async () => {
    const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 4 });
    const e = sim.etcd3({ endpoints: [0, 1, 2], timers: mock.timers });
    await e.put('k').value('v');
    const who = async (n: number): Promise<number[]> => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push(servedBy(sim, (await e.get('k').exec()).header));
      return out;
    };
    const before = await who(12);
    assert.deepEqual(new Set(before), new Set([0, 1, 2]), before.join(','));
    sim.cluster.crash(2);
    const during = await who(12);
    assert.ok(!during.includes(2), during.join(','));
    // Writes too: a write refused by a down member was never sent, and etcd3 retries it elsewhere.
    for (let i = 0; i < 6; i++) assert.notEqual(servedBy(sim, (await e.put(`p${i}`).value('x').exec()).header), 2);
    e.close();
    sim.close();
  });
});

test('etcd3 over endpoints: a call on a paused member hangs without a deadline; with one it is retried on another host', async () => {
  await withMockTimers(async () => {
    const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 6 });
    const hang = sim.etcd3({ endpoints: [1], timers: mock.timers });
    const e = sim.etcd3({ endpoints: [0, 1, 2], deadlineMs: 1000, timers: mock.timers });
    await e.put('k').value('v');
    sim.cluster.pause(1);
    const held = outcome(hang.get('k').string());
    let settled = false;
    void held.then(() => (settled = true));
    const got = await Promise.all(
      [0, 1, 2, 3, 4, 5].map(async () => {
        const p = e.get('k').exec();
        await sim.advance(1000);
        return p;
      }),
    );
    for (const r of got) assert.notEqual(servedBy(sim, r.header), 1);
    assert.equal(settled, false, 'no deadline: the call on the paused member still waits');
    sim.cluster.resume(1);
    await sim.settle();
    assert.deepEqual(await held, { ok: 'v' });
    hang.close();
    e.close();
    sim.close();
  });
});

test('etcd3 over endpoints: a dropped link times out at the deadline and etcd3 retries on another host', async () => {
  await withMockTimers(async () => {
    const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 8 });
    const e = sim.etcd3({ endpoints: [0, 1, 2], client: 'svc', deadlineMs: 500, timers: mock.timers });
    await e.put('k').value('v');
    sim.cluster.dropLink('svc', 2);
    for (let i = 0; i < 6; i++) {
      const p = e.get('k').exec();
      await sim.advance(500);
      assert.notEqual(servedBy(sim, (await p).header), 2);
    }
    e.close();
    sim.close();
  });
});

test('etcd3 over endpoints: a watcher reconnects on another member and goes on after the last revision it saw', async () => {
  await withMockTimers(async () => {
    const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 10 });
    const e = sim.etcd3({ endpoints: [0, 1, 2], timers: mock.timers });
    const seen: { value: string; member: number }[] = [];
    const watcher = await e.watch().key('k').create();
    watcher.on('data', (r) => {
      for (const ev of r.events) seen.push({ value: ev.kv.value.toString(), member: servedBy(sim, r.header) });
    });
    await e.put('k').value('v1');
    await sim.settle();
    assert.equal(seen.length, 1);
    const on = seen[0]!.member;
    if (on === 0) sim.cluster.moveLeader(1);
    const writer = sim.client({ member: on === 0 ? 1 : 0, client: 'writer' });
    let reconnected = 0;
    watcher.on('connected', () => reconnected++);
    sim.cluster.crash(on);
    await writer.kv.put({ key: 'k', value: 'v2' });
    await sim.advance(1000);
    assert.ok(reconnected >= 1, 'the watcher reconnected');
    assert.deepEqual(
      seen.map((s) => s.value),
      ['v1', 'v2'],
    );
    assert.notEqual(seen[1]!.member, on);
    await watcher.cancel();
    e.close();
    sim.close();
  });
});

test('etcd3 over endpoints: lease keep-alives follow to another member; the lease is not lost', async () => {
  await withMockTimers(async () => {
    const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 12 });
    const e = sim.etcd3({ endpoints: [0, 1, 2], timers: mock.timers });
    const lease = e.lease(3);
    let lost: Error | undefined;
    lease.on('lost', (err) => (lost = err));
    const renewedBy: number[] = [];
    lease.on('keepaliveSucceeded', (r) => renewedBy.push(servedBy(sim, r.header)));
    await lease.grant();
    await sim.advance(1100);
    assert.ok(renewedBy.length >= 1, 'renewed once');
    const on = renewedBy.at(-1)!;
    if (on === 0) sim.cluster.moveLeader(1);
    sim.cluster.crash(on);
    await sim.advance(9000);
    assert.equal(lost, undefined, 'the lease lives on');
    assert.ok(renewedBy.slice(1).some((m) => m !== on), `renewed elsewhere: ${renewedBy.join(',')}`);
    const ttl = await sim.client({ member: on === 0 ? 1 : 0, client: 'check' }).lease.leaseTimeToLive({ ID: await lease.grant() });
    assert.ok(Number(ttl.TTL) > 0, `TTL ${ttl.TTL}`);
    await lease.revoke();
    e.close();
    sim.close();
  });
});

test('clients over endpoints with auth: etcd3 fetches its token from the members, the raw client sends its token to each', async () => {
  await withMockTimers(async () => {
    const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 14 });
    const admin = sim.client({ member: 0, client: 'admin' });
    await admin.auth.userAdd({ name: 'root', password: 'pw' });
    await admin.auth.userGrantRole({ user: 'root', role: 'root' });
    await admin.auth.authEnable();
    const e = sim.etcd3({ endpoints: [0, 1, 2], auth: { username: 'root', password: 'pw' }, timers: mock.timers });
    await e.put('a').value('1');
    const members = new Set<number>();
    for (let i = 0; i < 9; i++) {
      const r = await e.get('a').exec();
      assert.equal(dec.decode(r.kvs[0]!.value), '1');
      members.add(servedBy(sim, r.header));
    }
    assert.equal(members.size, 3, 'the token is valid on every member');
    const anonymous = sim.etcd3({ endpoints: [0, 1, 2], timers: mock.timers });
    await assert.rejects(anonymous.get('a').string(), /user name is empty/);
    const c = sim.client({ endpoints: [0, 1, 2] });
    await c.authenticate('root', 'pw');
    for (let i = 0; i < 3; i++) assert.equal((await c.kv.range({ key: 'a' })).count, '1');
    e.close();
    anonymous.close();
    c.close();
    sim.close();
  });
});
