import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EtcdCluster, checkRaftEveryTick } from '../../src/cluster/index.js';
import { SimRandom, VirtualClock } from '../../src/sim/index.js';

const B = (s: string): Uint8Array => new TextEncoder().encode(s);

/**
 * A seeded swarm of requests on random members with random faults, checking what Raft and etcd promise:
 * Raft's invariants after every tick (src/cluster/checker.ts: src/raft/checker.ts on every node — election safety, log matching, a committed prefix never
 * changes, applied <= committed, a member's store equals the committed prefix); every acknowledged write has its own revision; a linearizable read started after a
 * write was acknowledged sees it (its header revision is at least the write's); and once the faults are
 * undone, every member holds the same store.
 */
async function swarm(seed: number, ops: number): Promise<void> {
  const rnd = new SimRandom(seed);
  const c = new EtcdCluster({ clock: new VirtualClock(), seed, preVote: rnd.nextBool(), traceProposals: false });
  const raft = checkRaftEveryTick(c);
  const acked = new Map<number, number>(); // revision -> ack time
  let lastAckedRev = 0; // highest revision acknowledged so far
  let lastAckedAt = -1;
  const violations: string[] = [];
  // One client connection per member, made once: a connection holds no state of its own (each call reads
  // the member as it is then, a crashed one included), so this is the same run as one per request.
  const views = c.members.map((m) => c.connect(m, { deadlineMs: 10_000 }));
  for (let i = 0; i < ops; i++) {
    const view = views[rnd.nextInt(0, 2)]!;
    const key = B(`k${rnd.nextInt(0, 4)}`);
    const roll = rnd.nextInt(0, 99);
    if (roll < 45) {
      view.kv.put({ key, value: B(String(i)) }).then(
        (r) => {
          const rev = Number(r.header.revision);
          if (acked.has(rev)) violations.push(`revision ${rev} acknowledged twice`);
          acked.set(rev, c.clock.now());
          if (rev > lastAckedRev) {
            lastAckedRev = rev;
            lastAckedAt = c.clock.now();
          }
        },
        () => {},
      );
    } else if (roll < 75) {
      const mustSee = lastAckedAt < c.clock.now() ? lastAckedRev : 0;
      view.kv.range({ key }).then(
        (r) => {
          if (Number(r.header.revision) < mustSee) violations.push(`stale linearizable read: ${r.header.revision} < ${mustSee}`);
        },
        () => {},
      );
    } else if (roll < 85) {
      view.kv.range({ key, serializable: true }).catch(() => {});
    } else if (roll < 90) {
      view.lease.leaseGrant({ TTL: String(rnd.nextInt(2, 4)) }).then(
        (g) => view.kv.put({ key, value: B('leased'), lease: g.ID }).catch(() => {}),
        () => {},
      );
    } else {
      // A fault, or undoing one.
      const m = c.member(rnd.nextInt(0, 2));
      const f = rnd.nextInt(0, 9);
      if (f === 0) c.pause(m);
      else if (f === 1) c.resume(m);
      else if (f === 2) c.isolate(m);
      else if (f === 3) c.heal();
      else if (f === 4) c.crash(m);
      else if (f === 5) c.restart(m);
      else if (f === 6 && c.leader !== undefined) c.moveLeader(m);
      else if (f === 7) c.setApplyLag(m, rnd.nextInt(0, 300));
      else if (f === 8) c.compactLog(rnd.nextInt(0, 20));
      else for (const x of c.members) c.resume(x);
    }
    await c.advance(rnd.nextInt(0, 150));
  }
  // Undo every fault and let the cluster settle.
  c.heal();
  for (const m of c.members) {
    c.resume(m);
    c.restart(m);
  }
  await c.advance(15_000);
  assert.deepEqual(violations, [], `seed ${seed}`);
  assert.deepEqual(raft.found, [], `seed ${seed}`);
  assert.ok(c.leader !== undefined, `seed ${seed}: a leader at the end`);
  const hashes = await Promise.all(c.members.map((m) => c.connect(m).maintenance.hashKV({})));
  assert.equal(new Set(hashes.map((h) => `${h.header.revision}/${h.hash}`)).size, 1, `seed ${seed}: members agree`);
  assert.ok(acked.size > 0, `seed ${seed}: writes were acknowledged`);
  c.close();
}

test('swarm: random requests and faults keep Raft\'s and etcd\'s promises (seeds 1..4)', async () => {
  for (const seed of [1, 2, 3, 4]) await swarm(seed, 600);
});
