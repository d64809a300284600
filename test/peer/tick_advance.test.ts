/**
 * etcd's initial election tick advance in a process member's Raft loop (src/raft/loop.ts
 * `initialTickAdvance`, etcdserver's adjustTicks): once more than one peer's stream is up — looked at every
 * 50 ms for 5 s from the start — the election clock moves the election ticks less two ahead, so a fresh
 * cluster elects a couple of heartbeats after its members found each other rather than a whole election
 * timeout later. On a virtual clock, one member of three whose messages go nowhere: the same seed gives the
 * same randomized election timeout, so the first campaign comes exactly (election ticks − 2) heartbeats
 * earlier with the advance, and not earlier at all without two active peers. A fresh cluster's first
 * candidate (process_member.ts) advances until it campaigns: at the advance itself, whatever its draw.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RaftLoop } from '../../src/raft/index.js';
import { MemoryStorage, RaftNode, bootstrapStorage } from '../../src/raft/index.js';
import { SimRandom, VirtualClock } from '../../src/sim/index.js';

const HEARTBEAT_MS = 100;
const ELECTION_TICKS = 10;

type LoopOptions = ConstructorParameters<typeof RaftLoop>[0];

/** Member 1 of three on a virtual clock, its messages going nowhere, its loop given the advance and soft-state hook. */
function memberOfThree(seed: number, onSoftState: NonNullable<LoopOptions['onSoftState']>, initialTickAdvance: LoopOptions['initialTickAdvance']): { clock: VirtualClock; node: RaftNode; loop: RaftLoop } {
  const clock = new VirtualClock();
  const boot = bootstrapStorage([{ id: 1n }, { id: 2n }, { id: 3n }]);
  const node = new RaftNode({ id: 1n, random: new SimRandom(seed).fork('raft'), electionTicks: ELECTION_TICKS, preVote: false, checkQuorum: true }, boot);
  const loop = new RaftLoop({
    node,
    clock,
    heartbeatMs: HEARTBEAT_MS,
    persistence: new MemoryStorage(boot),
    send: () => {},
    apply: () => {},
    snapshotData: () => new Uint8Array(0),
    snapshotCount: Number.MAX_SAFE_INTEGER,
    catchUpEntries: 0,
    onSoftState,
    initialTickAdvance,
  });
  return { clock, node, loop };
}

/** When member 1 first campaigns (ms), and how often the loop asked for the active peers. */
function firstCampaign(seed: number, activePeers?: (now: number) => number, untilCampaign = false): { at: number; asked: number; ticks: number } {
  let at: number | undefined;
  let asked = 0;
  let ticks = 0;
  const { clock, node, loop } = memberOfThree(
    seed,
    (_leader, role) => {
      if (role === 'candidate') at ??= clock.now();
    },
    activePeers === undefined
      ? undefined
      : { ticks: untilCampaign ? 2 * ELECTION_TICKS : ELECTION_TICKS - 2, untilCampaign, activePeers: () => (asked++, activePeers(clock.now())) },
  );
  const tick = node.tick.bind(node);
  node.tick = () => {
    ticks++;
    tick();
  };
  loop.start();
  clock.advance(10_000);
  loop.stop();
  assert.ok(at !== undefined, 'the member campaigned');
  return { at, asked, ticks };
}

test('the first campaign comes (election ticks − 2) heartbeats sooner once two peers are up, and only then', () => {
  const seen = new Set<number>();
  for (let seed = 1; seed <= 12; seed++) {
    const plain = firstCampaign(seed).at;
    // Without an advance the randomized timeout is [10, 20) ticks.
    assert.ok(plain >= ELECTION_TICKS * HEARTBEAT_MS && plain < 2 * ELECTION_TICKS * HEARTBEAT_MS, `seed ${seed}: ${plain} ms`);
    seen.add(plain);
    // Both peers up at the first look (50 ms): eight ticks ahead.
    assert.equal(firstCampaign(seed, () => 2).at, plain - (ELECTION_TICKS - 2) * HEARTBEAT_MS, `seed ${seed}`);
    // One peer up is not enough (etcd: more than one active peer).
    assert.equal(firstCampaign(seed, () => 1).at, plain, `seed ${seed}`);
    // Both up from 400 ms: the advance comes at that look, after the four ticks due by then — at once
    // when those and the advance reach the timeout.
    assert.equal(firstCampaign(seed, (now) => (now >= 400 ? 2 : 0)).at, Math.max(400, plain - (ELECTION_TICKS - 2) * HEARTBEAT_MS), `seed ${seed}`);
  }
});

test('the loop looks at the peers every 50 ms for 5 s, then no more; once advanced it stops looking', () => {
  assert.equal(firstCampaign(1, () => 0).asked, 5000 / 50);
  assert.equal(firstCampaign(1, () => 2).asked, 1);
});

test("a fresh cluster's first candidate campaigns at the advance itself, whatever its randomized timeout", () => {
  for (let seed = 1; seed <= 12; seed++) {
    // Both peers up at the first look (50 ms): it campaigns then, not 2 to 11 ticks later.
    assert.equal(firstCampaign(seed, () => 2, true).at, 50, `seed ${seed}`);
    // Up from 400 ms: at that look. One peer is still not enough.
    assert.equal(firstCampaign(seed, (now) => (now >= 400 ? 2 : 0), true).at, 400, `seed ${seed}`);
    assert.equal(firstCampaign(seed, () => 1, true).at, firstCampaign(seed).at, `seed ${seed}`);
  }
});

test('the advance stops ticking once the node campaigned (no second campaign of its own making)', () => {
  for (let seed = 1; seed <= 12; seed++) {
    // Ticks by 10 s: 100 of the ticker, plus the advance's — exactly its randomized timeout (the ticks
    // without an advance), not the 2 × 10 it may take at most.
    const { ticks } = firstCampaign(seed, () => 2, true);
    assert.equal(ticks - 100, firstCampaign(seed).at / HEARTBEAT_MS, `seed ${seed}`);
  }
});

test('a peer coming up is looked at once, not at the next 50 ms poll', () => {
  let peers = 0;
  let at: number | undefined;
  const { clock, loop } = memberOfThree(
    1,
    (_leader, role) => {
      if (role === 'candidate') at ??= clock.now();
    },
    { ticks: 2 * ELECTION_TICKS, untilCampaign: true, activePeers: () => peers },
  );
  loop.start();
  clock.advance(120);
  peers = 2;
  loop.peersChanged();
  assert.equal(at, 120);
  loop.stop();
});

test('a first candidate that already hears a leader does not campaign at the advance', () => {
  let peers = 0;
  const roles: string[] = [];
  const { node, loop } = memberOfThree(
    1,
    (_leader, role) => {
      if (role !== 'follower') roles.push(role);
    },
    { ticks: 2 * ELECTION_TICKS, untilCampaign: true, activePeers: () => peers },
  );
  loop.start();
  loop.step({ type: 'MsgHeartbeat', from: 2n, to: 1n, term: 2n, commit: 0 });
  assert.equal(node.leader, 2n);
  peers = 2;
  loop.peersChanged();
  assert.deepEqual(roles, [], 'still a follower of member 2');
  loop.stop();
});
