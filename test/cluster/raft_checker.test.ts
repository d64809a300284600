/**
 * The Raft invariant checker (src/cluster/raft_checker.ts) must be able to fail: each invariant is broken
 * on purpose, by reaching past the levers into the cluster's bookkeeping, and the checker names it. A run
 * without a planted fault finds nothing (here, and in the swarm and the cluster differential, which run it
 * after every tick).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EtcdCluster, RaftChecker, checkRaftEveryTick } from '../../src/cluster/index.js';
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

test('planted: two leaders in one term', async () => {
  const { c, checker } = await running();
  const leader = c.leader!;
  const other = c.members.find((m) => m !== leader)!;
  other.role = 'leader';
  other.term = leader.term;
  checker.check();
  assert.deepEqual(
    checker.found.map((v) => v.invariant),
    ['one leader per term'],
  );
  assert.match(checker.found[0]!.detail, new RegExp(`${leader.name} and ${other.name} both led term ${leader.term}`));
  assert.throws(() => checker.assertHolds(), /Raft invariant broken .*one leader per term/);
  c.close();
});

test('planted: a committed entry replaced in the log', async () => {
  const { c, checker } = await running();
  const log = c.log;
  const k = c.committedIndex - log.offset - 1;
  const e = log.entries[k]!;
  log.entries[k] = { ...e, label: 'forged' };
  checker.check();
  assert.deepEqual(
    checker.found.map((v) => v.invariant),
    ['committed prefix'],
  );
  assert.match(checker.found[0]!.detail, new RegExp(`committed entry at ${e.index} .* became term ${e.term}, forged`));
  c.close();
});

test('planted: a member applied past its commit index', async () => {
  const { c, checker } = await running();
  const m = c.member(2);
  m.applied = m.commit + 1;
  checker.check();
  assert.ok(checker.found.some((v) => v.invariant === 'applied <= committed' && v.detail.includes(`${m.name} applied ${m.commit + 1}`)), JSON.stringify(checker.found));
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
