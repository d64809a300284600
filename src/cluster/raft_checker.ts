/**
 * Raft's safety properties, checked on a running simulated cluster (the Raft paper's §5.4 "Election
 * Safety", "Leader Completeness" / "State Machine Safety", and what etcd's raft package asserts with its
 * panics: a committed index never moves back, an applied index never passes the commit index). Kept beside
 * the state machine it checks, as a simulator keeps its checkers: the swarm and the cluster differential
 * run it after every Raft tick, so a model change that breaks Raft fails there at the instant it happens,
 * with the member and the index, instead of as a wrong read some seconds of virtual time later.
 *
 * What it checks, after each tick:
 *  - one leader per term: no two members ever led the same term;
 *  - a committed prefix never changes: the commit index never moves back, and every committed entry still
 *    in the log is the very entry that was committed at its index (the log's compacted part cannot change);
 *  - applied ≤ committed: no member applied past what it knows committed, nor past the cluster's commit;
 *  - a member's store equals the committed prefix: the members that applied the same prefix hold the same
 *    store (revision, compaction point, a digest of every stored revision) and the same leases — the first member to apply a prefix
 *    records its state, every later one must match it. (A member's own path applies each entry, so a
 *    member that diverges does so by a fault of the model, which is what this catches.)
 * It reads the cluster and changes nothing; what it remembers is bounded by the log's uncompacted part and
 * the spread of the members' applied indexes.
 */
import type { EtcdCluster } from './cluster.js';
import type { MemberState } from './member_state.js';
import type { Entry } from './raft_log.js';

/** One broken invariant: when, and what. */
export interface RaftViolation {
  readonly at: number;
  readonly invariant: 'one leader per term' | 'committed prefix' | 'applied <= committed' | 'store equals committed prefix';
  readonly detail: string;
}

/** The state a member's store and lessor are in after applying a prefix of the log. */
function fingerprint(m: MemberState): string {
  const mvcc = m.server.mvcc;
  const leases = m.server.lessor.leases().sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return `rev ${mvcc.currentRevision} compact ${mvcc.compactRevision} history ${mvcc.hash()} leases [${leases.join(',')}]`;
}

/** Checks a cluster's Raft invariants each time `check()` runs; see the file's header. */
export class RaftChecker {
  private readonly violations: RaftViolation[] = [];
  private readonly leaderOfTerm = new Map<bigint, string>();
  /** The committed entries at indexes base+1 .. base+committed.length, as they were when committed. */
  private committed: Entry[] = [];
  private base: number;
  /** Per applied index, the state the first member to apply up to it had, and which member. */
  private readonly stateAt = new Map<number, { readonly fingerprint: string; readonly member: string }>();
  private readonly lastFingerprinted = new Map<MemberState, number>();
  private detached = false;

  constructor(private readonly cluster: EtcdCluster) {
    this.base = cluster.committedIndex;
  }

  /** Every violation found so far (at most one per invariant and index). */
  get found(): readonly RaftViolation[] {
    return this.violations;
  }

  /** Throws the first violation found, if any. */
  assertHolds(): void {
    const v = this.violations[0];
    if (v !== undefined) throw new Error(`Raft invariant broken at ${v.at} ms: ${v.invariant}: ${v.detail}${this.violations.length > 1 ? ` (and ${this.violations.length - 1} more)` : ''}`);
  }

  /** Stops checking (a checker attached with `checkRaftEveryTick`). */
  detach(): void {
    this.detached = true;
  }

  /** Checks every invariant against the cluster as it is now. */
  check(): void {
    if (this.detached) return;
    this.checkLeaders();
    this.checkCommitted();
    this.checkApplied();
    this.checkStores();
  }

  private report(invariant: RaftViolation['invariant'], detail: string): void {
    this.violations.push({ at: this.cluster.clock.now(), invariant, detail });
  }

  private checkLeaders(): void {
    for (const m of this.cluster.members) {
      if (m.role !== 'leader' || m.crashed) continue;
      const seen = this.leaderOfTerm.get(m.term);
      if (seen === undefined) this.leaderOfTerm.set(m.term, m.name);
      else if (seen !== m.name) {
        this.report('one leader per term', `${seen} and ${m.name} both led term ${m.term}`);
        this.leaderOfTerm.set(m.term, m.name);
      }
    }
  }

  private checkCommitted(): void {
    const c = this.cluster;
    const log = c.log;
    const known = this.base + this.committed.length;
    if (c.committedIndex < known) {
      this.report('committed prefix', `the commit index went back from ${known} to ${c.committedIndex}`);
      this.committed.length = Math.max(0, c.committedIndex - this.base);
    }
    // The compacted part cannot change (RaftLog refuses to truncate it): forget it.
    if (log.offset > this.base) {
      this.committed = this.committed.slice(Math.min(this.committed.length, log.offset - this.base));
      this.base = log.offset;
    }
    for (let i = 0; i < this.committed.length; i++) {
      const was = this.committed[i]!;
      const now = log.at(this.base + 1 + i);
      if (now !== was) {
        this.report('committed prefix', `the committed entry at ${was.index} (term ${was.term}, ${was.label}) became ${now === undefined ? 'absent' : `term ${now.term}, ${now.label}`}`);
        if (now !== undefined) this.committed[i] = now;
      }
    }
    for (let i = this.base + this.committed.length + 1; i <= c.committedIndex; i++) {
      const e = log.at(i);
      if (e === undefined) {
        this.report('committed prefix', `index ${i} is committed but not in the log`);
        break;
      }
      this.committed.push(e);
    }
  }

  private checkApplied(): void {
    const c = this.cluster;
    for (const m of c.members) {
      if (m.applied > m.commit) this.report('applied <= committed', `${m.name} applied ${m.applied} but knows only ${m.commit} committed`);
      if (m.commit > c.committedIndex) this.report('applied <= committed', `${m.name} knows ${m.commit} committed, the cluster only ${c.committedIndex}`);
    }
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
        this.report('store equals committed prefix', `after applying up to ${m.applied}, ${m.name} holds ${fp} but ${first.member} held ${first.fingerprint}`);
      }
    }
    // No member applies below the lowest applied index again (a restart resumes from its own, a snapshot
    // only moves forward): what was recorded below it is never compared with again.
    for (const index of this.stateAt.keys()) if (index < lowest) this.stateAt.delete(index);
  }
}

/** A checker run after every Raft tick of `cluster` (and once now). */
export function checkRaftEveryTick(cluster: EtcdCluster): RaftChecker {
  const checker = new RaftChecker(cluster);
  cluster.afterTick(() => checker.check());
  checker.check();
  return checker;
}
