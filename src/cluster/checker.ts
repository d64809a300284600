/**
 * Raft's safety properties checked on a running simulated cluster, and what only a whole cluster shows:
 * src/raft/checker.ts (election safety, log matching, leader completeness, state machine safety, commit
 * monotonic, snapshots) over every running member's node — the same checker a member in a process of its
 * own runs on itself — plus "a member's store equals the committed prefix": the members that applied the
 * same prefix hold the same store (revision, compaction point, a digest of every stored revision) and the
 * same leases; the first member to apply a prefix records its state, every later one must match it. The
 * swarm and the cluster differential run it after every Raft tick, so a model change that breaks Raft fails
 * there at the instant it happens, with the member and the index, instead of as a wrong read some seconds
 * of virtual time later. It reads the cluster and changes nothing; the store states it remembers are
 * bounded by the spread of the members' applied indexes.
 */
import { RaftNodeChecker, type RaftNodeViolation } from '../raft/index.js';
import type { EtcdCluster } from './cluster.js';
import type { MemberState } from './member_state.js';

/** One broken invariant: when, and what. @public */
export interface RaftViolation {
  readonly at: number;
  readonly invariant: RaftNodeViolation['invariant'] | 'store equals committed prefix';
  readonly detail: string;
}

/** The state a member's store and lessor are in after applying a prefix of the log. */
function fingerprint(m: MemberState): string {
  const mvcc = m.server.mvcc;
  const leases = m.server.lessor.leases().sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return `rev ${mvcc.currentRevision} compact ${mvcc.compactRevision} history ${mvcc.hash()} leases [${leases.join(',')}]`;
}

/** Checks a cluster's Raft invariants each time `check()` runs; see the file's header. @public */
export class RaftChecker {
  private readonly nodes = new RaftNodeChecker();
  private readonly stores: RaftViolation[] = [];
  /** The node violations already given a time, and those times. */
  private readonly nodeTimes: number[] = [];
  /** Per applied index, the state the first member to apply up to it had, and which member. */
  private readonly stateAt = new Map<number, { readonly fingerprint: string; readonly member: string }>();
  private readonly lastFingerprinted = new Map<MemberState, number>();
  /** Each member's loop when last checked: a new one is a restart (its commit starts again from its disk). */
  private readonly loops = new Map<MemberState, unknown>();
  private detached = false;

  constructor(private readonly cluster: EtcdCluster) {
    cluster.raft.onCommitted = (m, entries) => {
      if (!this.detached) this.nodes.appliedEntries(m.id, entries);
    };
  }

  /** Every violation found so far. */
  get found(): readonly RaftViolation[] {
    const found = this.nodes.found;
    const now = this.cluster.clock.now();
    while (this.nodeTimes.length < found.length) this.nodeTimes.push(now);
    return [...found.map((v, i) => ({ at: this.nodeTimes[i]!, ...v })), ...this.stores];
  }

  /** Throws the first violation found, if any. */
  assertHolds(): void {
    const all = this.found;
    const v = all[0];
    if (v !== undefined) throw new Error(`Raft invariant broken at ${v.at} ms: ${v.invariant}: ${v.detail}${all.length > 1 ? ` (and ${all.length - 1} more)` : ''}`);
  }

  /** Stops checking (a checker attached with `checkRaftEveryTick`). */
  detach(): void {
    this.detached = true;
  }

  /** Checks every invariant against the cluster as it is now. */
  check(): void {
    if (this.detached) return;
    const running = [];
    for (const m of this.cluster.members) {
      const loop = m.loop;
      if (loop === undefined) continue;
      const seen = this.loops.get(m);
      if (seen !== undefined && seen !== loop) this.nodes.restarted(m.id);
      this.loops.set(m, loop);
      running.push(loop.node);
    }
    this.nodes.check(running);
    void this.found; // stamps new node violations with this instant
    this.checkStores();
  }

  private checkStores(): void {
    let lowest = Infinity;
    for (const m of this.cluster.members) {
      lowest = Math.min(lowest, m.applied);
      if (m.crashed || this.lastFingerprinted.get(m) === m.applied) continue;
      this.lastFingerprinted.set(m, m.applied);
      const fp = fingerprint(m);
      const first = this.stateAt.get(m.applied);
      if (first === undefined) this.stateAt.set(m.applied, { fingerprint: fp, member: m.name });
      else if (first.member !== m.name && first.fingerprint !== fp) {
        this.stores.push({
          at: this.cluster.clock.now(),
          invariant: 'store equals committed prefix',
          detail: `after applying up to ${m.applied}, ${m.name} holds ${fp} but ${first.member} held ${first.fingerprint}`,
        });
      }
    }
    // No member applies below the lowest applied index again (a restart resumes from its own, a snapshot
    // only moves forward): what was recorded below it is never compared with again.
    for (const index of this.stateAt.keys()) if (index < lowest) this.stateAt.delete(index);
  }
}

/** A checker run after every Raft tick of `cluster` (and once now). @public */
export function checkRaftEveryTick(cluster: EtcdCluster): RaftChecker {
  const checker = new RaftChecker(cluster);
  cluster.afterTick(() => checker.check());
  checker.check();
  return checker;
}
