import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { createEtcdSim, type EtcdStream } from '../../src/index.js';
import type { messages as M } from '../../src/index.js';

const dec = new TextDecoder();

function collect<T>(stream: EtcdStream<T>): T[] {
  const got: T[] = [];
  stream.on('data', (r) => got.push(r));
  return got;
}

test('createEtcdSim({ members: 3 }): raw clients pinned to members see each member\'s view', async () => {
  const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 3, applyLagMs: [0, 0, 200] });
  const c0 = sim.client({ member: 0 });
  const c2 = sim.client({ member: 2 });
  const w = c2.watch();
  const got = collect<M.WatchResponse>(w);
  w.create({ key: 'k' });
  await sim.settle();
  assert.equal(got.splice(0).length, 1, 'created');
  const put = await c0.kv.put({ key: 'k', value: 'v1' });
  assert.equal(put.header.member_id, String(sim.cluster.members[0]!.id));
  // Member 2 applies 200 ms after commit: a serializable read there is stale, its watch has nothing yet.
  assert.equal((await c2.kv.range({ key: 'k', serializable: true })).count, '0');
  await sim.settle();
  assert.equal(got.length, 0);
  const lin = c2.kv.range({ key: 'k' });
  await sim.advance(200);
  const r = await lin;
  assert.equal(dec.decode(r.kvs[0]!.value), 'v1');
  assert.equal(r.header.member_id, String(sim.cluster.members[2]!.id));
  assert.deepEqual(
    got.map((x) => x.events.map((e) => dec.decode(e.kv!.value))),
    [['v1']],
  );
  // Status and MemberList through the raw client.
  const st = await c2.maintenance.status({});
  assert.equal(st.leader, String(sim.cluster.members[0]!.id));
  assert.equal((await c2.cluster.memberList({})).members.length, 3);
  // A leader change: the pinned client's writes keep working through the new leader.
  assert.ok(sim.cluster.moveLeader(1));
  const after = c2.kv.put({ key: 'k', value: 'v2' });
  await sim.advance(200);
  assert.equal((await after).header.raft_term, '3');
  w.close();
  sim.close();
});

test('createEtcdSim({ members: 3 }): etcd3 on a follower; a write without quorum fails as etcd fails it', async () => {
  mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'], now: 0 });
  try {
    const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 5 });
    const e1 = sim.etcd3({ member: 1, timers: mock.timers });
    await e1.put('a').value('1');
    assert.equal(await e1.get('a').string(), '1');
    sim.cluster.isolate(1);
    const failed = e1
      .put('b')
      .value('2')
      .then(
        () => 'put',
        (err: Error) => err.message,
      );
    await sim.advance(sim.cluster.requestTimeoutMs);
    assert.match(await failed, /request timed out/);
    e1.close();
    sim.close();
  } finally {
    mock.timers.reset();
  }
});

test('createEtcdSim({ members: 3 }): a failover client after a leader crash: the write in the gap fails (not retried), the read is answered, then on', async () => {
  const sim = createEtcdSim({ members: 3, time: 'virtual', seed: 17 });
  const c = sim.client({ endpoints: [0, 1, 2] });
  const pinned = sim.client({ member: 0 });
  await c.kv.put({ key: 'k', value: 'v1' });
  sim.cluster.crash(0); // the leader
  await assert.rejects(pinned.kv.put({ key: 'k', value: 'x' }), /14 UNAVAILABLE: .*member infra1 is down/);
  // The survivors still know the dead leader: a write they forward to it is lost, etcd answers it at the
  // request timeout (7 s), and clientv3 does not retry it (non-repeatable: it may have been applied). A
  // linearizable read is answered once the new leader confirms a read index (and, being repeatable, would
  // have been retried on an Unavailable answer).
  const settled = <T>(p: Promise<T>): Promise<T | Error> => p.catch((e: Error) => e);
  const write = settled(c.kv.put({ key: 'k', value: 'lost?' }));
  const read = settled(c.kv.range({ key: 'k' }));
  await sim.advance(sim.cluster.requestTimeoutMs);
  const w = await write;
  assert.ok(w instanceof Error, 'the write failed');
  assert.match(w.message, /^14 UNAVAILABLE: etcdserver: request timed out/);
  const r = await read;
  assert.ok(!(r instanceof Error), String(r));
  assert.notEqual(r.header.member_id, String(sim.cluster.members[0]!.id));
  assert.equal(dec.decode(r.kvs[0]!.value), 'v1');
  const after = await c.kv.put({ key: 'k', value: 'v2' });
  assert.notEqual(after.header.raft_term, '2', 'committed in a later term');
  assert.throws(() => sim.services({ endpoints: [0, 1] }), /one member/);
  c.close();
  sim.close();
});
