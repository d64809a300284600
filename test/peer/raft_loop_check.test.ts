/**
 * The Raft loop's invariant check (src/raft/loop.ts `check`, what ETCDSIM_RAFT_CHECK=1 turns on in each
 * process member): a single member elected on a virtual clock, checked after every Ready, reports nothing;
 * its node's commit index moved back — a broken model — is reported once the next Ready is handled, with
 * the invariant and the indexes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RaftLoop } from '../../src/raft/index.js';
import { MemoryStorage, RaftNode, RaftNodeChecker, bootstrapStorage, type RaftNodeViolation } from '../../src/raft/index.js';
import { SimRandom, VirtualClock } from '../../src/sim/index.js';

test('the Raft loop checks its node after each Ready and reports a broken invariant', () => {
  const clock = new VirtualClock();
  const boot = bootstrapStorage([{ id: 1n }]);
  const node = new RaftNode({ id: 1n, random: new SimRandom(1).fork('raft'), electionTicks: 10, preVote: true, checkQuorum: true }, boot);
  const violations: RaftNodeViolation[] = [];
  const loop = new RaftLoop({
    node,
    clock,
    heartbeatMs: 100,
    persistence: new MemoryStorage(boot),
    send: () => {},
    apply: () => {},
    snapshotData: () => new Uint8Array(0),
    snapshotCount: 3,
    catchUpEntries: 1,
    check: { checker: new RaftNodeChecker(), violated: (v) => violations.push(v) },
  });
  loop.start();
  clock.advance(3000);
  assert.equal(node.role, 'leader');
  for (let i = 0; i < 10; i++) loop.propose(new TextEncoder().encode(`v${i}`));
  assert.ok(node.log.snapshot.index > 0, 'snapshots were taken and checked too');
  assert.equal(violations.length, 0, JSON.stringify(violations));
  const commit = node.log.committed;
  node.log.committed = commit - 2;
  loop.act(() => undefined);
  loop.stop();
  assert.ok(violations.length > 0);
  assert.equal(violations[0]!.invariant, 'commit monotonic');
  assert.match(violations[0]!.detail, new RegExp(`member 1 commit ${commit} → ${commit - 2}`));
});
