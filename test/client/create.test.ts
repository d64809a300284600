import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createEtcdSim, text, utf8, type WatchResponse } from '../../src/index.js';
import { clusterOf, serverOf } from '../../src/client/index.js';

const b = utf8;

/** A seeded scenario touching leases, watches, progress, compaction and expiry; returns its full trace. */
function scenario(seed: number): string {
  const sim = createEtcdSim({ time: 'virtual', seed, watchProgressNotifyIntervalMs: 1000 });
  const trace: string[] = [];
  const st = sim.watchStream();
  const record = (label: string, rs: WatchResponse[]): void => {
    for (const r of rs) {
      const evs = r.events.map((e) => `${e.type}:${text(e.kv.key)}@${e.kv.modRevision}`).join(',');
      trace.push(`${label} t=${sim.clock.now()} id=${r.watchId} rev=${r.revision} c=${r.created} x=${r.canceled} cr=${r.compactRevision} [${evs}]`);
    }
  };
  st.watch({ key: b('/s/'), rangeEnd: b('/s0'), progressNotify: true });
  const lease = sim.lessor.grant(0n, 3);
  trace.push(`grant ${lease.id} ttl=${lease.ttl}`);
  sim.mvcc.put({ key: b('/s/a'), value: b('1'), lease: lease.id });
  sim.mvcc.put({ key: b('/s/b'), value: b('2'), lease: lease.id });
  sim.mvcc.put({ key: b('/s/c'), value: b('3') });
  record('w', st.take());
  for (let i = 0; i < 8; i++) {
    sim.server.advance(500);
    record('w', st.take());
  }
  sim.compact(sim.mvcc.currentRevision);
  const behind = sim.watchStream();
  behind.watch({ key: b('/s/'), rangeEnd: b('/s0'), startRevision: 2 });
  sim.server.advance(100);
  record('behind', behind.take());
  trace.push(`rev=${sim.mvcc.currentRevision} hash=${sim.digest()} leases=${sim.lessor.leases().join(',')}`);
  return trace.join('\n');
}

test('sim.server is published as an interface; serverOf(sim) is the member behind it, and refuses what createEtcdSim did not make', () => {
  const sim = createEtcdSim({ time: 'virtual' });
  const server = serverOf(sim);
  assert.equal(server, sim.server);
  assert.equal(server.auth.enabled, sim.server.auth.enabled);
  assert.throws(() => serverOf({ ...sim }), /serverOf: not a simulator made by createEtcdSim/);
  sim.close();
});

test('sim.cluster is published as an interface; clusterOf(sim) is the cluster behind it; a member given as a plain object is found by its ID', () => {
  const sim = createEtcdSim({ time: 'virtual', members: 3 });
  const cluster = clusterOf(sim);
  assert.equal(cluster, sim.cluster);
  const second = sim.cluster.members[1]!;
  assert.equal(sim.cluster.member({ ...second }), second, 'a copy of a member names the member with its ID');
  assert.throws(() => sim.cluster.member({ ...second, id: 99n }), /no member 99/);
  assert.throws(() => clusterOf({ ...sim }), /clusterOf: not a simulator made by createEtcdSim/);
  sim.close();
});

test('same seed, same trace, byte for byte; another seed changes only what is random (lease IDs)', () => {
  const first = scenario(42);
  assert.equal(scenario(42), first);
  const other = scenario(43);
  assert.notEqual(other, first);
  const stripIds = (t: string): string => t.replace(/grant \d+/, 'grant X');
  assert.equal(stripIds(other), stripIds(first));
});

test('a lease expires on the virtual clock: its keys go in one revision and the watcher sees one response', () => {
  const sim = createEtcdSim({ time: 'virtual' });
  const st = sim.watchStream();
  st.watch({ key: b('/l/'), rangeEnd: b('/l0') });
  const { id, ttl } = sim.lessor.grant(0n, 1);
  assert.equal(ttl, 2, 'etcd raises a TTL below the minimum (2 s with default election settings)');
  sim.mvcc.put({ key: b('/l/x'), value: b('1'), lease: id });
  sim.mvcc.put({ key: b('/l/y'), value: b('2'), lease: id });
  st.take();
  sim.server.advance(1999);
  assert.equal(sim.mvcc.range({ key: b('/l/x') }).count, 1, 'not expired before its TTL');
  sim.server.advance(501);
  assert.equal(sim.mvcc.range({ key: b('/l/'), rangeEnd: b('/l0') }).count, 0);
  const rs = st.take();
  assert.equal(rs.length, 1);
  assert.deepEqual(
    rs[0]!.events.map((e) => `${e.type} ${text(e.kv.key)} ${e.kv.modRevision}`),
    ['DELETE /l/x 4', 'DELETE /l/y 4'],
  );
  assert.equal(sim.lessor.timeToLive(id).ttl, -1);
});

test('restore moves watchers to unsynced and rebuilds the lessor from the restored keys', () => {
  const leader = createEtcdSim({ time: 'virtual' });
  const follower = createEtcdSim({ time: 'virtual' });
  const lease = follower.lessor.grant(7n, 60);
  leader.lessor.grant(7n, 60);
  for (const s of [leader, follower]) s.mvcc.put({ key: b('k'), value: b('v'), lease: 7n });
  leader.mvcc.put({ key: b('k2'), value: b('v2'), lease: 7n });
  const st = follower.watchStream();
  st.watch({ key: b('k2'), startRevision: 3 });
  st.take();
  follower.restore(leader.snapshot());
  assert.equal(follower.watchable.unsynced.size, 1);
  follower.server.advance(100);
  const rs = st.take();
  assert.deepEqual(rs.flatMap((r) => r.events.map((e) => text(e.kv.key))), ['k2']);
  assert.deepEqual(follower.lessor.timeToLive(lease.id, true).keys.map(text), ['k', 'k2']);
});
