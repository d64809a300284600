/**
 * etcd's Raft (go.etcd.io/raft) at the level a client observes it, as a state machine moved by `tick()`
 * (one heartbeat interval, as etcd's raftNode ticks its node) and by the cluster's levers:
 *  - a leader and a term; elections after a randomized election timeout without the leader's heartbeat,
 *    with CheckQuorum (a leader steps down when it stops hearing from a quorum; a member that heard from
 *    its leader within an election timeout ignores vote requests) and, as etcd's --pre-vote, PreVote;
 *    the vote rule (one vote per term, only for a log at least as up to date);
 *  - one replicated log: an entry appended at the leader commits once a quorum holds it (of the leader's
 *    term), a new leader's log replaces the others' uncommitted suffixes (log matching);
 *  - log compaction (--snapshot-count, SnapshotCatchUpEntries) and a snapshot for a follower behind it.
 * It knows members, terms and indexes; what an entry does, who waits for it and a member's lessor are the
 * cluster's (RaftEffects), so the protocol reads on its own. Random choices come from the seeded PRNG.
 */
import type { Clock, SimRandom } from '../sim/index.js';
import { installLeaderState, type EntryBody, type MemberState } from './member_state.js';
import { RaftLog, type Entry } from './raft_log.js';

/** What Raft's steps mean for the rest of the cluster. */
export interface RaftEffects {
  trace(event: string): void;
  /** `m` learned of a higher commit index: its apply may be due. */
  commitMoved(m: MemberState): void;
  /** `m`'s state was replaced by the leader's: what it was about to apply is moot, what follows may be due. */
  snapshotInstalled(m: MemberState): void;
  /** `m`'s leader became a different member (etcd 3.4's leaderChanged notification). */
  leaderChanged(m: MemberState): void;
  /** `m` now follows a leader it did not before, or leads: what it proposed without one goes there. */
  leaderKnown(m: MemberState): void;
  /** `l` won an election: its lessor takes over the leases. */
  leads(l: MemberState): void;
  /** `m` stopped leading: its lessor hands nothing over any more. */
  demoted(m: MemberState): void;
  /** A leader's own step at each tick, before its heartbeat (the lease hand-off of a paused leader). */
  leaderTick(l: MemberState): void;
}

/** Timing and log settings, etcd's flags. */
export interface RaftOptions {
  readonly clock: Clock;
  readonly random: SimRandom;
  readonly preVote: boolean;
  readonly heartbeatMs: number;
  readonly electionTimeoutMs: number;
  readonly snapshotCount: number;
  readonly snapshotCatchUpEntries: number;
}

const descending = (a: number, b: number): number => b - a;

/** The cluster's Raft: every member's role, term and log position, and the one replicated log. */
export class Raft {
  readonly log: RaftLog;
  /** The cluster's commit index (the leader's). */
  commitIndex: number;
  /** Each member's side of the current partition (all 0: none). */
  partitionOf: number[];
  /** updateCommit's members' match indexes, reused. */
  private readonly matchScratch: number[] = [];
  private readonly clock: Clock;
  private readonly rand: SimRandom;

  constructor(
    readonly states: readonly MemberState[],
    readonly opts: RaftOptions,
    private readonly effects: RaftEffects,
    start: number,
    initialTerm: bigint,
  ) {
    this.clock = opts.clock;
    this.rand = opts.random;
    this.log = new RaftLog(start, initialTerm);
    this.commitIndex = start;
    this.partitionOf = new Array<number>(states.length).fill(0);
  }

  /** Votes needed: a majority of the voting members. */
  get quorum(): number {
    return Math.floor(this.states.length / 2) + 1;
  }

  /** The member that currently acts as leader (in the leader role, not crashed, highest term), if any. */
  get leader(): MemberState | undefined {
    let best: MemberState | undefined;
    for (const m of this.states) if (m.role === 'leader' && !m.crashed && (best === undefined || m.term > best.term)) best = m;
    return best;
  }

  /** The leader `m` knows (itself if it leads). */
  knownLeader(m: MemberState): MemberState | undefined {
    if (m.crashed) return undefined;
    if (m.role === 'leader') return m;
    return m.lead;
  }

  /** Two members reach each other: both up, same side of every partition. */
  connected(a: MemberState, b: MemberState): boolean {
    return a.up && b.up && this.partitionOf[a.index] === this.partitionOf[b.index];
  }

  /** Whether leader `l` reaches a quorum (itself included). */
  leaderHasQuorum(l: MemberState): boolean {
    let n = 0;
    for (const m of this.states) if (m === l ? m.up : this.connected(l, m)) n++;
    return n >= this.quorum;
  }

  /** The first leader of a fresh cluster (member 0 won the first election). */
  start(first: MemberState): void {
    for (const m of this.states) {
      m.role = m === first ? 'leader' : 'follower';
      m.lead = first;
      m.vote = first;
      if (m !== first) m.server.lessor.demote();
      this.resetElectionTimer(m);
    }
  }

  /** One heartbeat interval: leaders heartbeat and check their quorum; followers count toward an election. */
  tick(): void {
    const { heartbeatMs, electionTimeoutMs } = this.opts;
    for (const m of this.states) {
      if (!m.up) continue;
      if (m.role === 'leader') {
        this.effects.leaderTick(m);
        this.heartbeat(m);
        if (m.role !== 'leader') continue;
        m.quorumElapsed += heartbeatMs;
        if (m.quorumElapsed >= electionTimeoutMs) {
          m.quorumElapsed = 0;
          const now = this.clock.now();
          let active = 1;
          for (const f of this.states) if (f !== m && now - (m.lastHeard.get(f) ?? -Infinity) < electionTimeoutMs) active++;
          if (active < this.quorum) {
            this.effects.trace(`${m.name} steps down: no quorum (term ${m.term})`);
            this.stepDown(m, m.term, undefined);
          }
        }
      } else {
        m.electionElapsed += heartbeatMs;
        if (m.electionElapsed >= m.randomizedTimeout) this.campaign(m, false);
      }
    }
  }

  /** The leader's heartbeat (and log replication) to every member it reaches. */
  heartbeat(l: MemberState): void {
    for (const f of this.states) {
      if (f === l || !this.connected(l, f)) continue;
      if (f.term > l.term) {
        // The follower's answer carries a higher term (a member that campaigned alone without pre-vote):
        // the leader steps down to it (etcd runs with CheckQuorum, so it answers the heartbeat at all).
        this.effects.trace(`${l.name} steps down: ${f.name} has term ${f.term}`);
        this.stepDown(l, f.term, undefined);
        return;
      }
      this.follow(f, l);
      this.replicate(l, f);
    }
    this.updateCommit(l);
  }

  /** `f` hears from leader `l` (of a term >= its own): it follows `l`. */
  private follow(f: MemberState, l: MemberState): void {
    const newLeader = f.lead !== l || f.role !== 'follower';
    if (f.role === 'leader') this.effects.demoted(f);
    if (f.term < l.term) f.vote = undefined;
    f.term = l.term;
    f.server.setRaftTerm(f.term);
    f.role = 'follower';
    const changed = f.lead !== l;
    f.lead = l;
    f.electionElapsed = 0;
    l.lastHeard.set(f, this.clock.now());
    if (changed) this.effects.leaderChanged(f);
    if (newLeader) this.effects.leaderKnown(f);
  }

  /** Brings `f`'s log in line with leader `l`'s: the rest of the log, or a snapshot if `f` is behind its start. */
  replicate(l: MemberState, f: MemberState): void {
    // Entries it lacks that the leader compacted away come as a snapshot of the leader's state first.
    if (f.match < this.log.offset) this.sendSnapshot(l, f);
    f.match = l.lastIndex;
    if (f.tail.length > 0) f.tail = [];
    const c = Math.min(this.commitIndex, f.match);
    if (c > f.commit) {
      f.commit = c;
      this.effects.commitMoved(f);
    }
  }

  /** Installs the leader's state on `f` (etcd's MsgSnap; the member's applySnapshot). */
  sendSnapshot(l: MemberState, f: MemberState): void {
    // Never backwards: a member that applied more than the leader keeps its state.
    if (f.applied > l.applied) return;
    installLeaderState(f.server, l.server);
    f.applied = l.applied;
    f.commit = Math.max(f.commit, l.applied);
    f.match = l.applied;
    f.tail = [];
    this.effects.trace(`snapshot ${l.name} -> ${f.name} at ${l.applied}`);
    this.effects.snapshotInstalled(f);
  }

  /** Raft's commit rule: the highest index a quorum holds, if it is of the leader's term. */
  private updateCommit(l: MemberState): void {
    if (l.role !== 'leader') return;
    // A member's match counts whether it is reachable now or not: it acknowledged those entries (its WAL has them).
    // (One array for every commit: this runs on every proposal.)
    const matches = this.matchScratch;
    for (let i = 0; i < this.states.length; i++) {
      const m = this.states[i]!;
      matches[i] = m === l ? l.lastIndex : m.match;
    }
    matches.sort(descending);
    const n = matches[this.quorum - 1]!;
    if (n > this.commitIndex && this.log.termAt(n) === l.term) {
      const now = this.clock.now();
      for (let i = this.commitIndex + 1; i <= n; i++) this.log.at(i)!.committedAt = now;
      this.commitIndex = n;
      l.commit = n;
      this.effects.commitMoved(l);
      for (const f of this.states) {
        if (f !== l && this.connected(l, f)) {
          const c = Math.min(n, f.match);
          if (c > f.commit) {
            f.commit = c;
            this.effects.commitMoved(f);
          }
        }
      }
      this.maybeAutoCompact(l);
    }
  }

  /** `c` campaigns (its election timeout fired, or `force`: a leadership transfer). */
  campaign(c: MemberState, force: boolean): void {
    const { electionTimeoutMs } = this.opts;
    const voters = this.states.filter((v) => v !== c && this.connected(c, v));
    const inLease = (v: MemberState): boolean => !force && v.lead !== undefined && (v.role === 'leader' || v.electionElapsed < electionTimeoutMs);
    const upToDate = (v: MemberState): boolean => {
      const ct = this.lastTerm(c);
      const vt = this.lastTerm(v);
      return ct > vt || (ct === vt && c.lastIndex >= v.lastIndex);
    };
    if (this.opts.preVote && !force) {
      let granted = 1;
      for (const v of voters) if (!inLease(v) && c.term + 1n > v.term && upToDate(v)) granted++;
      if (granted < this.quorum) {
        this.effects.trace(`${c.name} pre-vote lost (term ${c.term})`);
        // A pre-candidate knows no leader (raft's becomePreCandidate clears it) until one's heartbeat
        // reaches it: its Status says no leader, its proposals wait, its require-leader streams count.
        c.lead = undefined;
        this.resetElectionTimer(c);
        return;
      }
    }
    if (c.role === 'leader') this.effects.demoted(c);
    c.term += 1n;
    c.server.setRaftTerm(c.term);
    c.role = 'candidate';
    c.vote = c;
    c.lead = undefined;
    this.resetElectionTimer(c);
    let votes = 1;
    for (const v of voters) {
      if (inLease(v)) continue;
      if (c.term > v.term) {
        if (v.role === 'leader') this.effects.trace(`${v.name} steps down: ${c.name} campaigns at term ${c.term}`);
        this.stepDown(v, c.term, undefined);
      }
      if (v.term === c.term && (v.vote === undefined || v.vote === c) && upToDate(v)) {
        v.vote = c;
        v.electionElapsed = 0;
        votes++;
      }
    }
    if (votes >= this.quorum) this.becomeLeader(c);
    else this.effects.trace(`${c.name} campaign lost at term ${c.term} (${votes} votes)`);
  }

  private lastTerm(m: MemberState): bigint {
    return m.tail.length > 0 ? m.tail[m.tail.length - 1]!.term : this.log.termAt(m.match);
  }

  /** `l` wins: its log becomes the cluster log, its lessor is promoted, it appends its term's empty entry. */
  private becomeLeader(l: MemberState): void {
    const changed = l.lead !== l;
    this.rebase(l);
    l.role = 'leader';
    l.lead = l;
    l.quorumElapsed = 0;
    l.lastHeard.clear();
    this.effects.trace(`leader ${l.name} term ${l.term}`);
    if (changed) this.effects.leaderChanged(l);
    this.effects.leads(l);
    this.append(l, { kind: 'empty', label: 'empty', apply: (s) => s.noteRaftEntry() });
    for (const f of this.states) if (f !== l && this.connected(l, f) && f.term <= l.term) this.follow(f, l);
    this.heartbeat(l);
    this.effects.leaderKnown(l);
  }

  /** A leader becomes a follower (of `lead`, or of nobody yet) at `term`. */
  stepDown(m: MemberState, term: bigint, lead: MemberState | undefined): void {
    if (m.role === 'leader') this.effects.demoted(m);
    if (term > m.term) {
      m.term = term;
      m.vote = undefined;
      m.server.setRaftTerm(term);
    }
    m.role = 'follower';
    m.lead = lead;
    this.resetElectionTimer(m);
  }

  /**
   * Makes `l`'s log the cluster log: every other member's agreement with it is recomputed (Raft's log
   * matching: a common prefix, then the member's own uncommitted entries as its tail).
   */
  private rebase(l: MemberState): void {
    const log = this.log;
    const entryOf = (m: MemberState, i: number): Entry | undefined => (i <= m.match ? log.at(i) : m.tail[i - m.match - 1]);
    const lEntries: Entry[] = [];
    for (let i = l.match + 1; i <= l.lastIndex; i++) lEntries.push(entryOf(l, i)!);
    for (const m of this.states) {
      if (m === l) continue;
      let p = Math.min(m.match, l.match);
      const mine: Entry[] = [];
      for (let i = p + 1; i <= m.lastIndex; i++) mine.push(entryOf(m, i)!);
      let k = 0;
      while (k < mine.length && p + 1 <= l.lastIndex && mine[k] === (p + 1 <= l.match ? log.at(p + 1) : lEntries[p - l.match])) {
        p++;
        k++;
      }
      m.match = p;
      m.tail = mine.slice(k);
    }
    log.truncateAfter(l.match);
    for (const e of lEntries) log.append(e);
    l.match = log.lastIndex;
    l.tail = [];
  }

  /** Appends an entry to the leader's log and replicates it to the members the leader reaches. */
  append(l: MemberState, body: EntryBody): Entry {
    // One shape for every entry (a spread would make each its own).
    const e: Entry = { index: this.log.lastIndex + 1, term: l.term, kind: body.kind, label: body.label, apply: body.apply, committedAt: -1 };
    this.log.append(e);
    l.match = e.index;
    for (const f of this.states) if (f !== l && this.connected(l, f)) this.replicate(l, f);
    this.updateCommit(l);
    return e;
  }

  /** Raft's randomized election timeout: [electionTimeout, 2 × electionTimeout), in ticks. */
  resetElectionTimer(m: MemberState): void {
    const { heartbeatMs, electionTimeoutMs } = this.opts;
    m.electionElapsed = 0;
    const ticks = Math.round(electionTimeoutMs / heartbeatMs);
    m.randomizedTimeout = (ticks + this.rand.nextInt(0, ticks - 1)) * heartbeatMs;
  }

  /** Compacts the log up to `index`, keeping what a member holds but has not applied. */
  compactTo(index: number): void {
    // Entries a member holds but has not applied yet stay: they are in that member's own log (its WAL,
    // which a crashed member replays when it restarts). A member that lacks them gets a snapshot instead.
    let upTo = Math.min(index, this.commitIndex);
    for (const m of this.states) if (m.match >= upTo && m.applied < upTo) upTo = m.applied;
    if (upTo <= this.log.offset) return;
    this.log.compact(upTo);
    this.effects.trace(`compact log to ${upTo}`);
  }

  private maybeAutoCompact(l: MemberState): void {
    const { snapshotCount, snapshotCatchUpEntries } = this.opts;
    if (l.applied - this.log.offset > snapshotCount + snapshotCatchUpEntries) this.compactTo(l.applied - snapshotCatchUpEntries);
  }
}
