/**
 * The Raft node's rules one at a time (src/raft/node.ts), on a hand-driven network where the test decides
 * which messages arrive: elections and the vote rule, PreVote and CheckQuorum, leader transfer, ReadIndex,
 * snapshot catch-up, membership changes and a restart from the persisted hard state. The property test
 * (test/properties/raft_node.property.test.ts) mixes them under random faults; these pin each one down.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { MemoryStorage, RaftNode, RaftNodeChecker, bootstrapStorage, type Message, type NodeId, type RaftStorage, type ReadState } from '../../src/raft/index.js';
import { SimRandom } from '../../src/sim/index.js';

const ELECTION = 10;
const empty = new Uint8Array(0);
const b = (s: string): Uint8Array => new TextEncoder().encode(s);

/** Nodes whose messages wait in a queue until the test delivers them; `cut` members hear nothing. */
class Bench {
  readonly nodes = new Map<NodeId, RaftNode>();
  readonly disks = new Map<NodeId, MemoryStorage>();
  readonly reads = new Map<NodeId, ReadState[]>();
  readonly checker = new RaftNodeChecker();
  cut = new Set<NodeId>();
  /** Messages this says to drop are lost. */
  drop: (m: Message) => boolean = () => false;
  private queue: Message[] = [];
  /** Every message delivered. */
  readonly delivered: Message[] = [];

  constructor(
    ids: readonly NodeId[],
    private readonly opts: { readonly checkQuorum?: boolean; readonly maxEntriesPerMessage?: number } = {},
  ) {
    const boot = bootstrapStorage(ids.map((id) => ({ id })));
    for (const id of ids) this.start(id, boot);
  }

  start(id: NodeId, storage: RaftStorage): RaftNode {
    const n = new RaftNode(
      {
        id,
        random: new SimRandom(1).fork(`n${id}`),
        electionTicks: ELECTION,
        preVote: true,
        checkQuorum: this.opts.checkQuorum ?? true,
        ...(this.opts.maxEntriesPerMessage === undefined ? {} : { maxEntriesPerMessage: this.opts.maxEntriesPerMessage }),
      },
      storage,
    );
    this.nodes.set(id, n);
    this.disks.set(id, new MemoryStorage(storage));
    this.reads.set(id, []);
    return n;
  }

  node(id: NodeId): RaftNode {
    return this.nodes.get(id)!;
  }

  /** Collects every node's Ready (persisting it), then delivers messages until none is left. */
  flush(): void {
    for (let round = 0; round < 10_000; round++) {
      for (const [id, n] of this.nodes) {
        while (n.hasReady()) {
          const rd = n.ready();
          this.disks.get(id)!.save(rd);
          this.queue.push(...rd.messages);
          this.reads.get(id)!.push(...rd.readStates);
          this.checker.appliedEntries(id, rd.committedEntries);
          n.advance(rd);
        }
      }
      this.checker.check([...this.nodes.values()]);
      const msgs = this.queue;
      this.queue = [];
      if (msgs.length === 0) return;
      for (const m of msgs) if (!this.cut.has(m.to) && !this.cut.has(m.from) && !this.drop(m)) {
          this.delivered.push(m);
          this.nodes.get(m.to)?.step(m);
        }
    }
    throw new Error('messages never stop');
  }

  /** Ticks every node not cut off `n` times, delivering after each. */
  tick(n: number, only?: readonly NodeId[]): void {
    for (let i = 0; i < n; i++) {
      for (const [id, node] of this.nodes) if (only === undefined || only.includes(id)) node.tick();
      this.flush();
    }
  }

  leaders(): NodeId[] {
    return [...this.nodes.values()].filter((n) => n.role === 'leader' && !this.cut.has(n.id)).map((n) => n.id);
  }

  elect(): NodeId {
    for (let i = 0; i < 10 * ELECTION && this.leaders().length !== 1; i++) this.tick(1);
    const [l] = this.leaders();
    assert.ok(l !== undefined, 'no leader elected');
    return l;
  }
}

test('a new cluster starts from its bootstrap entries at term 1 and elects one leader at term 2', () => {
  const bench = new Bench([1n, 2n, 3n]);
  for (const n of bench.nodes.values()) assert.deepEqual([n.term, n.log.committed, n.log.lastIndex()], [1n, 3, 3]);
  const l = bench.elect();
  const leader = bench.node(l);
  assert.equal(leader.term, 2n);
  bench.tick(1);
  // The new leader's empty entry commits at index 4 on every member.
  for (const n of bench.nodes.values()) assert.deepEqual([n.term, n.leader, n.log.committed], [2n, l, 4]);
  bench.checker.assertHolds();
});

test('a member that missed a committed entry cannot win an election (the vote rule)', () => {
  // Without CheckQuorum's leader lease the others would vote at once, but for the vote rule.
  const bench = new Bench([1n, 2n, 3n], { checkQuorum: false });
  const l = bench.elect();
  const [stale, other] = [1n, 2n, 3n].filter((id) => id !== l) as [NodeId, NodeId];
  bench.cut.add(stale);
  bench.node(l).propose(b('x'));
  bench.flush();
  assert.equal(bench.node(other).log.committed, 5);
  // The leader dies; the stale member comes back and campaigns first, many times: it never wins.
  bench.cut = new Set([l]);
  for (let i = 0; i < 3 * ELECTION; i++) bench.tick(1, [stale]);
  const answers = bench.delivered.filter((m) => m.type === 'MsgPreVoteResp' && m.to === stale);
  assert.ok(answers.length > 0, 'the stale member campaigned');
  assert.ok(answers.every((m) => m.reject === true), 'the member holding the entry refused it');
  assert.notEqual(bench.node(stale).role, 'leader');
  bench.tick(3 * ELECTION);
  assert.deepEqual(bench.leaders(), [other]);
  bench.checker.assertHolds();
});

test('a leader commits an entry of an earlier term only with one of its own (Raft §5.4.2, Figure 8)', () => {
  const bench = new Bench([1n, 2n, 3n], { checkQuorum: false, maxEntriesPerMessage: 1 });
  const a = bench.elect();
  bench.tick(1);
  const [b2, c] = [1n, 2n, 3n].filter((id) => id !== a) as [NodeId, NodeId];
  // a appends 5@2 that nobody else gets, then is cut off.
  bench.drop = (m) => m.type === 'MsgApp';
  bench.node(a).propose(b('x'));
  bench.flush();
  bench.cut = new Set([a]);
  for (let i = 0; i < 4 * ELECTION && bench.node(b2).role !== 'leader'; i++) bench.tick(1, [b2]);
  assert.equal(bench.node(b2).role, 'leader');
  // b leads term 3 with 5@3 of its own, nobody else gets it; then b is gone and a comes back.
  bench.cut = new Set([b2]);
  // Its probe for 6 is refused by c (which lacks 5) and it sends 5@2 alone; what then carries 6 is lost.
  bench.drop = (m) => m.type === 'MsgApp' && (m.entries ?? []).some((e) => e.index === 6) && bench.node(c).log.lastIndex() >= 5;
  const leader = bench.node(a);
  for (let i = 0; i < 6 * ELECTION && !(leader.role === 'leader' && leader.term > 3n); i++) bench.tick(1, [a]);
  assert.deepEqual([leader.role, leader.term], ['leader', 4n]);
  assert.equal(bench.node(c).log.term(5), leader.log.term(5), 'a quorum (a and c) holds 5@2');
  assert.equal(leader.log.committed, 4, 'an earlier term\'s entry held by a quorum is not committed on its own');
  bench.drop = () => false;
  bench.tick(1);
  assert.equal(leader.log.committed, 6);
  bench.checker.assertHolds();
});

test('PreVote: a member cut off keeps its term, and rejoining does not depose the leader', () => {
  const bench = new Bench([1n, 2n, 3n]);
  const l = bench.elect();
  const lone = [1n, 2n, 3n].find((id) => id !== l)!;
  const term = bench.node(l).term;
  bench.cut.add(lone);
  bench.tick(5 * ELECTION);
  assert.equal(bench.node(lone).term, term, 'a pre-candidate moved its term');
  bench.cut.clear();
  bench.tick(3 * ELECTION);
  assert.deepEqual([bench.leaders(), bench.node(l).term], [[l], term]);
});

test('CheckQuorum: a leader that hears from no quorum for a whole election timeout steps down', () => {
  const bench = new Bench([1n, 2n, 3n]);
  const l = bench.elect();
  bench.cut.add(l);
  // Checked every election timeout: the first check may still count answers from before the cut.
  bench.tick(ELECTION, [l]);
  assert.equal(bench.node(l).role, 'leader');
  bench.tick(ELECTION, [l]);
  assert.equal(bench.node(l).role, 'follower');
  assert.equal(bench.node(l).leader, 0n);
});

test('leader transfer: the target campaigns at once and leads the next term; proposals wait meanwhile', () => {
  const bench = new Bench([1n, 2n, 3n]);
  const l = bench.elect();
  const to = [1n, 2n, 3n].find((id) => id !== l)!;
  const term = bench.node(l).term;
  bench.node(l).transferLeadership(to);
  bench.flush();
  assert.deepEqual([bench.leaders(), bench.node(to).term], [[to], term + 1n]);
});

test('a leader refuses proposals while its transfer is under way', () => {
  const bench = new Bench([1n, 2n, 3n]);
  const l = bench.elect();
  const to = [1n, 2n, 3n].find((id) => id !== l)!;
  bench.cut.add(to);
  bench.node(l).transferLeadership(to);
  bench.flush();
  assert.equal(bench.node(l).propose(b('x')), false);
  bench.tick(ELECTION);
  assert.equal(bench.node(l).propose(b('y')), true, 'the transfer is given up after an election timeout');
});

test('ReadIndex: a follower gets the commit index once the leader confirmed its leadership with a quorum', () => {
  const bench = new Bench([1n, 2n, 3n]);
  const l = bench.elect();
  const f = [1n, 2n, 3n].find((id) => id !== l)!;
  bench.node(l).propose(b('x'));
  bench.flush();
  const commit = bench.node(l).log.committed;
  const others = [1n, 2n, 3n].filter((id) => id !== l && id !== f);
  // With the third member silent the leader still has a quorum (itself and f).
  bench.cut = new Set(others);
  assert.equal(bench.node(f).readIndex('r1'), true);
  bench.flush();
  assert.deepEqual(bench.reads.get(f), [{ index: commit, context: 'r1' }]);
  // Alone, a leader cannot confirm a read.
  bench.cut = new Set([f, ...others]);
  bench.node(l).readIndex('r2');
  bench.flush();
  assert.deepEqual(bench.reads.get(l), []);
});

test('a leader answers no read before it committed an entry of its own term', () => {
  const bench = new Bench([1n, 2n, 3n]);
  bench.drop = (m) => m.type === 'MsgApp';
  const l = bench.elect();
  const leader = bench.node(l);
  assert.equal(leader.log.committed, 3, "the new leader's own entry is not committed");
  assert.equal(leader.readIndex('early'), false);
  bench.drop = () => false;
  bench.tick(1);
  assert.equal(leader.readIndex('late'), true);
  bench.flush();
  assert.deepEqual(bench.reads.get(l), [{ index: 4, context: 'late' }]);
});

/** A cluster whose leader wrote ten values while one follower (`lag`) was cut off and heard none of them. */
function lagging(): { bench: Bench; l: NodeId; lag: NodeId; leader: RaftNode } {
  const bench = new Bench([1n, 2n, 3n]);
  const l = bench.elect();
  const lag = [1n, 2n, 3n].find((id) => id !== l)!;
  bench.cut.add(lag);
  for (let i = 0; i < 10; i++) bench.node(l).propose(b(`v${i}`));
  bench.flush();
  return { bench, l, lag, leader: bench.node(l) };
}

test('a follower behind the compacted log catches up from the snapshot', () => {
  const { bench, l, lag, leader } = lagging();
  leader.compact(leader.log.applied, b('state'), 0);
  assert.ok(leader.log.firstIndex() > bench.node(lag).log.lastIndex() + 1);
  bench.cut.clear();
  bench.tick(2);
  const n = bench.node(lag);
  assert.equal(n.log.snapshot.index, leader.log.snapshot.index);
  assert.deepEqual(bench.disks.get(lag)!.storage().snapshot.data, b('state'));
  assert.equal(n.log.committed, leader.log.committed);
  bench.checker.assertHolds();
});

test('a member restarted after the leader compacted past its log catches up from the snapshot and keeps it', () => {
  const { bench, l, lag, leader } = lagging();
  leader.compact(leader.log.applied, b('state'), 2);
  bench.disks.get(l)!.snapshotted(leader.log.snapshot);
  // etcd keeps some entries after its snapshot point for followers just behind: these are still sent as entries.
  assert.equal(leader.log.firstIndex(), leader.log.snapshot.index - 1);
  const restarted = bench.start(lag, bench.disks.get(lag)!.storage());
  bench.checker.restarted(lag);
  assert.ok(restarted.log.lastIndex() < leader.log.firstIndex() - 1, 'the restarted member is behind the compaction point');
  bench.cut.clear();
  bench.tick(2);
  assert.deepEqual([restarted.log.snapshot.index, restarted.log.committed], [leader.log.snapshot.index, leader.log.committed]);
  const disk = bench.disks.get(lag)!.storage();
  assert.deepEqual([disk.snapshot.index, disk.snapshot.data], [leader.log.snapshot.index, b('state')]);
  assert.ok(disk.entries.every((e) => e.index > disk.snapshot.index), 'the old log is gone from its disk');
  // Restarted once more from that disk, it is where it was.
  const again = bench.start(lag, disk);
  bench.checker.restarted(lag);
  assert.deepEqual([again.log.snapshot.index, again.log.applied], [disk.snapshot.index, disk.snapshot.index]);
  bench.tick(2);
  assert.equal(again.log.applied, leader.log.applied);
  bench.checker.assertHolds();
});

test('a member added after the leader\'s snapshot joins from it, then proposes and votes like any other', () => {
  const bench = new Bench([1n, 2n, 3n]);
  const l = bench.elect();
  const leader = bench.node(l);
  for (let i = 0; i < 5; i++) leader.propose(b(`v${i}`));
  bench.flush();
  leader.compact(leader.log.applied, b('state'), 0);
  assert.equal(leader.proposeConfChange({ type: 'add', id: 4n }), true);
  bench.start(4n, { hardState: { term: 0n, vote: 0n, commit: 0 }, snapshot: { index: 0, term: 0n, conf: { voters: [], learners: [] }, data: empty }, entries: [] });
  bench.tick(2);
  const joined = bench.node(4n);
  // The snapshot's conf predates it; the conf change after the snapshot adds it.
  assert.deepEqual(joined.log.snapshot.conf.voters.includes(4n), false);
  assert.equal(joined.removed, false);
  assert.ok(joined.conf.voters.includes(4n));
  assert.equal(joined.propose(b('from the new member')), true);
  bench.tick(1);
  assert.equal(joined.log.applied, leader.log.applied);
  bench.cut.add(l);
  bench.tick(4 * ELECTION);
  assert.ok(bench.leaders().length === 1, 'the three left, the new member among them, elect a leader');
  bench.checker.assertHolds();
});

test('the checker reports snapshots that disagree: another state at one index, another term than the committed entry', () => {
  const bench = new Bench([1n, 2n, 3n]);
  const l = bench.elect();
  bench.node(l).propose(b('x'));
  bench.flush();
  const [f1, f2] = [1n, 2n, 3n].filter((id) => id !== l) as [NodeId, NodeId];
  const at = bench.node(l).log.applied;
  bench.node(l).compact(at, b('state'), 0);
  bench.node(f1).compact(at, b('another state'), 0);
  bench.checker.check([...bench.nodes.values()]);
  assert.deepEqual(bench.checker.found.map((v) => v.invariant), ['snapshot']);
  assert.throws(() => bench.checker.assertHolds(), /Raft invariant broken: snapshot: member .* snapshot at \d+/);
  // A member restarted from a snapshot whose term is not the committed entry's at its index.
  const wrong = new RaftNodeChecker();
  wrong.check([bench.node(f2)]);
  const bad = bench.start(f2, { hardState: { term: 2n, vote: 0n, commit: at }, snapshot: { index: at, term: 7n, conf: bench.node(l).conf, data: b('state') }, entries: [] });
  wrong.check([bad]);
  assert.ok(wrong.found.some((v) => v.invariant === 'snapshot' && v.detail.includes(`term 7 at ${at}`)), JSON.stringify(wrong.found));
});

test('membership: a learner joins empty, catches up, is promoted and votes; a removed member knows it', () => {
  const bench = new Bench([1n, 2n, 3n]);
  const l = bench.elect();
  const leader = bench.node(l);
  assert.equal(leader.proposeConfChange({ type: 'addLearner', id: 4n }), true);
  assert.equal(leader.proposeConfChange({ type: 'add', id: 5n }), false, 'one change pending at a time');
  bench.start(4n, { hardState: { term: 0n, vote: 0n, commit: 0 }, snapshot: { index: 0, term: 0n, conf: { voters: [], learners: [] }, data: empty }, entries: [] });
  bench.tick(2);
  const learner = bench.node(4n);
  assert.deepEqual(learner.conf.learners, [4n]);
  assert.equal(learner.log.committed, leader.log.committed);
  bench.tick(5 * ELECTION, [4n]);
  assert.equal(learner.role, 'follower', 'a learner never campaigns');
  assert.equal(leader.proposeConfChange({ type: 'add', id: 4n }), true);
  bench.tick(2);
  assert.deepEqual([...leader.conf.voters].sort(), [1n, 2n, 3n, 4n]);
  const victim = [1n, 2n, 3n].find((id) => id !== l)!;
  assert.equal(leader.proposeConfChange({ type: 'remove', id: victim }), true);
  bench.tick(2);
  assert.equal(bench.node(victim).removed, true);
  assert.ok(!leader.conf.voters.includes(victim));
  bench.checker.assertHolds();
});

test('a restarted member keeps its term and vote: it votes once per term across a restart', () => {
  const bench = new Bench([1n, 2n, 3n]);
  const l = bench.elect();
  const f = [1n, 2n, 3n].find((id) => id !== l)!;
  const before = bench.node(f).status();
  const again = bench.start(f, bench.disks.get(f)!.storage());
  assert.deepEqual([again.term, again.status().vote, again.log.committed <= before.commit], [before.term, before.vote, true]);
  // A vote request of the same term from someone else is refused.
  again.step({ type: 'MsgVote', from: 99n, to: f, term: before.term, index: 1000, logTerm: before.term });
  const rd = again.ready();
  assert.deepEqual(rd.messages.map((m) => [m.type, m.reject === true]), [['MsgVoteResp', true]]);
});
