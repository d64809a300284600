/**
 * The cluster's invariant checker (src/cluster/checker.ts: src/raft/checker.ts over every member's node,
 * plus the members' stores) must be able to fail: an invariant is broken on purpose, by reaching past the
 * levers into a member's Raft log or store, and the checker names it. A run without a planted fault finds
 * nothing (here, and in the swarm and the cluster differential, which run it after every tick).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EtcdCluster, RaftChecker, checkRaftEveryTick } from '../../src/cluster/index.js';
import type { Entry } from '../../src/raft/index.js';
import { VirtualClock } from '../../src/sim/index.js';

const B = (s: string): Uint8Array => new TextEncoder().encode(s);

/** A 3-member cluster that applied a few writes, with a checker that has seen it so far (and nothing wrong). */
async function running(): Promise<{ c: EtcdCluster; checker: RaftChecker }> {
  const c = new EtcdCluster({ clock: new VirtualClock(), seed: 3 });
  const checker = checkRaftEveryTick(c);
  for (let i = 0; i < 3; i++) await c.member(i).services.kv.put({ key: B(`k${i}`), value: B('v') });
  await c.advance(300);
  assert.deepEqual(checker.found, []);
  return { c, checker };
}

test('a clean run with faults: the checker, run after every tick, finds nothing', async () => {
  const { c, checker } = await running();
  c.pause(0);
  await c.advance(3000);
  c.resume(0);
  c.crash(1);
  c.member(2).services.kv.put({ key: B('a'), value: B('1') }).catch(() => undefined);
  await c.advance(500);
  c.restart(1);
  c.compactLog();
  await c.advance(1000);
  assert.deepEqual(checker.found, []);
  assert.doesNotThrow(() => checker.assertHolds());
  c.close();
});

test('planted: a committed entry replaced in a member\'s log', async () => {
  const { c, checker } = await running();
  const m = c.member(2);
  const log = m.loop!.node.log;
  const held = log.held() as Entry[];
  const k = held.findIndex((e) => e.index === log.committed);
  const e = held[k]!;
  held[k] = { ...e, data: new Uint8Array([0xff]) };
  checker.check();
  const found = checker.found.map((v) => v.invariant);
  assert.ok(found.includes('log matching') && found.includes('state machine safety'), JSON.stringify(checker.found));
  assert.ok(checker.found.some((v) => v.detail.includes(`member ${m.id}`) && v.detail.includes(`${e.index}`)), JSON.stringify(checker.found));
  assert.throws(() => checker.assertHolds(), /Raft invariant broken at \d+ ms: /);
  c.close();
});

test('planted: a member applied past its commit index', async () => {
  const { c, checker } = await running();
  const m = c.member(2);
  const log = m.loop!.node.log;
  log.applied = log.committed + 1;
  checker.check();
  assert.ok(checker.found.some((v) => v.invariant === 'state machine safety' && v.detail.includes(`member ${m.id} applied ${log.committed + 1}`)), JSON.stringify(checker.found));
  c.close();
});

test("planted: a follower's store written behind Raft's back differs from the leader's at the next index (caught after a tick)", async () => {
  const { c, checker } = await running();
  const follower = c.members.find((m) => m !== c.leader)!;
  follower.server.mvcc.put({ key: B('behind-raft'), value: B('x') });
  await c.leader!.services.kv.put({ key: B('k0'), value: B('w') });
  await c.advance(300);
  const v = checker.found.find((x) => x.invariant === 'store equals committed prefix');
  assert.ok(v !== undefined, JSON.stringify(checker.found));
  assert.match(v.detail, new RegExp(`${follower.name} holds rev \\d+`));
  c.close();
});
