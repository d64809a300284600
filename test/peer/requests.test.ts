/**
 * A process member's requests (src/peer/requests.ts) over three Raft loops (src/raft/loop.ts) on a
 * virtual clock, their messages carried by the test with a 1 ms delay unless a member is cut off: a
 * proposal at a follower is answered with its own apply's result; a linearizable read at a follower waits
 * until it applied what was acknowledged before; with no quorum a proposal and a read fail with etcd's
 * `etcdserver: request timed out` at the request timeout.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { MemberRequests } from '../../src/peer/requests.js';
import { RaftLoop } from '../../src/raft/index.js';
import { MemoryStorage, NONE, RaftNode, bootstrapStorage, type NodeId } from '../../src/raft/index.js';
import { SimRandom, VirtualClock } from '../../src/sim/index.js';

const IDS = [1n, 2n, 3n];
const TIMEOUT_MS = 5000;

interface Member {
  readonly loop: RaftLoop;
  readonly requests: MemberRequests;
  readonly kv: Map<string, string>;
}

function cluster(): { clock: VirtualClock; members: Map<NodeId, Member>; cut: Set<NodeId>; noAppend: Set<NodeId> } {
  const clock = new VirtualClock();
  const cut = new Set<NodeId>();
  /** Members that get no log entries (but heartbeats and read answers). */
  const noAppend = new Set<NodeId>();
  const members = new Map<NodeId, Member>();
  const boot = bootstrapStorage(IDS.map((id) => ({ id })));
  for (const id of IDS) {
    const node = new RaftNode({ id, random: new SimRandom(3).fork(`m${id}`), electionTicks: 10, preVote: true, checkQuorum: true }, boot);
    const kv = new Map<string, string>();
    let requests: MemberRequests | undefined;
    const loop = new RaftLoop({
      node,
      clock,
      heartbeatMs: 100,
      persistence: new MemoryStorage(boot),
      send: (m) => {
        if (cut.has(m.from) || cut.has(m.to) || (m.type === 'MsgApp' && noAppend.has(m.to))) return;
        clock.setTimer(clock.now() + 1, () => {
          if (!cut.has(m.from) && !cut.has(m.to)) members.get(m.to)!.loop.step(m);
        });
      },
      apply: (entries) => {
        for (const e of entries) {
          if (e.type !== 'normal' || e.data.length === 0) continue;
          const [reqId, key, value] = new TextDecoder().decode(e.data).split(' ') as [string, string, string];
          kv.set(key, value);
          requests!.applied(BigInt(reqId), `${key}@${e.index}`);
        }
        const last = entries[entries.length - 1];
        if (last !== undefined) requests!.appliedTo(last.index);
      },
      snapshotData: () => new Uint8Array(0),
      snapshotCount: 1000,
      catchUpEntries: 10,
      onReadState: (r) => requests!.readState(r),
      onSoftState: () => requests!.leaderChanged(),
    });
    requests = new MemberRequests(
      { id, propose: (d) => loop.propose(d), proposeConfChange: (c, d) => loop.proposeConfChange(c, d), readIndex: (c) => loop.readIndex(c), leader: () => node.leader, applied: () => node.log.applied, reachable: (p) => !cut.has(p) && !cut.has(id) },
      clock,
      TIMEOUT_MS,
    );
    members.set(id, { loop, requests, kv });
  }
  for (const m of members.values()) m.loop.start();
  return { clock, members, cut, noAppend };
}

/** Runs the clock until `p` settles (at most `ms`), returning its outcome. */
async function settle<T>(clock: VirtualClock, p: Promise<T>, ms = 10_000): Promise<{ ok: T } | { err: unknown }> {
  let out: { ok: T } | { err: unknown } | undefined;
  p.then((ok) => (out = { ok }), (err: unknown) => (out = { err }));
  for (let t = 0; t < ms && out === undefined; t += 10) {
    clock.advance(10);
    await Promise.resolve();
  }
  await Promise.resolve();
  assert.ok(out !== undefined, 'the request never settled');
  return out;
}

const utf8 = new TextEncoder();

test("a follower's proposal is answered by its own apply, and its linearizable read sees it", async () => {
  const { clock, members, noAppend } = cluster();
  clock.advance(3000);
  const leader = [...members.values()].find((m) => m.loop.node.role === 'leader')!;
  const follower = [...members.values()].find((m) => m !== leader)!;
  const other = [...members.values()].find((m) => m !== leader && m !== follower)!;
  assert.notEqual(follower.loop.node.leader, NONE);
  // The third member gets no entries: the write commits without it, and its read must wait for them.
  noAppend.add(other.loop.node.id);
  const put = await settle(clock, follower.requests.propose(7n, utf8.encode('7 a 1')));
  assert.ok('ok' in put && typeof put.ok === 'string' && put.ok.startsWith('a@'));
  let served = false;
  const reading = other.requests.linearizableRead().then(() => (served = true));
  clock.advance(1000);
  await Promise.resolve();
  assert.equal(served, false, 'a read served before the member applied what the leader had committed');
  noAppend.clear();
  const read = await settle(clock, reading);
  assert.ok('ok' in read);
  assert.equal(other.kv.get('a'), '1', 'the read waited until the write was applied here');
});

test('without a quorum a proposal and a read fail with etcdserver: request timed out', async () => {
  const { clock, members, cut } = cluster();
  clock.advance(3000);
  const leader = [...members.values()].find((m) => m.loop.node.role === 'leader')!;
  const [a, b] = [...members.values()].filter((m) => m !== leader) as [Member, Member];
  cut.add(leader.loop.node.id);
  cut.add(b.loop.node.id);
  const put = await settle(clock, a.requests.propose(8n, utf8.encode('8 b 2')));
  assert.ok('err' in put);
  // Proposed to the leader it knew, which never answered; by then it knows no leader: ErrTimeout.
  assert.match(String((put.err as Error).message), /UNAVAILABLE: etcdserver: request timed out$/);
  const read = await settle(clock, a.requests.linearizableRead());
  assert.ok('err' in read);
  assert.match(String((read.err as Error).message), /UNAVAILABLE: etcdserver: request timed out$/);
  assert.equal(a.kv.get('b'), undefined);
});
