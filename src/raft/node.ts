/**
 * One etcd member's Raft node (go.etcd.io/raft's raft + RawNode), message-driven and pure: the member feeds
 * it ticks (one per heartbeat interval, as etcd's raftNode does), the messages its peers sent and its own
 * proposals, and takes from it a Ready: entries and hard state to persist, messages to send, committed
 * entries to apply, confirmed reads. No I/O, no clock and no randomness of its own (the randomized election
 * timeout comes from the seeded stream it is given), so N nodes on a simulated network replay from a seed.
 *
 * What it models, at the level a client and an operator observe etcd:
 *  - roles and terms; elections after a randomized timeout in [election, 2×election) ticks; PreVote (a
 *    pre-candidate asks for votes at term+1 without moving its term, so a partitioned member rejoining does
 *    not depose a working leader) and CheckQuorum (a leader that has not heard from a quorum within an
 *    election timeout steps down; a member that heard from its leader within one ignores vote requests);
 *  - the vote rule: one vote per term, only for a log at least as up to date (last term, then last index);
 *  - log replication with log matching (an append names the entry before it; a follower that lacks it
 *    rejects with its last index as the hint), probe and replicate states, flow paused while probing;
 *  - commit by a quorum of voters only for an entry of the leader's own term (Raft §5.4.2), then heartbeats
 *    carry the commit index a follower may know;
 *  - a snapshot for a follower whose next entry is compacted away, resent after an election timeout when
 *    no answer came (etcd's transport reports a failed snapshot; here the answer's absence does);
 *  - membership changes as log entries, one pending at a time, taking effect when applied (as etcd's
 *    ApplyConfChange after apply); learners get the log and never vote; a removed member is told so;
 *  - leader transfer (MsgTransferLeader / MsgTimeoutNow: the target campaigns at once, past PreVote and
 *    the leader lease); proposals are dropped while a transfer is under way, as etcd drops them;
 *  - ReadIndex reads: the leader confirms its leadership with a heartbeat round and answers the commit
 *    index of that moment, once it has committed an entry of its term (etcd 3.4 drops earlier ones).
 * Not modelled: flow-control inflight windows (a count per message bounds memory instead), joint consensus
 * (etcd's v2 conf changes are single-member ones), async storage writes.
 */
import { RaftCore } from './core.js';
import { NONE, type ConfChange, type Entry, type Message, type MessageType, type NodeId } from './messages.js';
import { toProbe, type Progress } from './progress.js';

const TRANSFER = 'transfer';

export class RaftNode extends RaftCore {
  // ---- what the member does to it ----

  /** One heartbeat interval passed. */
  tick(): void {
    if (this.roleNow === 'leader') this.tickLeader();
    else this.tickElection();
  }

  /** Proposes `data` (forwarded to the leader by a follower). False when it is dropped here. */
  propose(data: Uint8Array): boolean {
    return this.proposeEntry({ type: 'normal', data });
  }

  /** Proposes a membership change; false when dropped (no leader, a change still pending, a transfer). */
  proposeConfChange(conf: ConfChange, data: Uint8Array = new Uint8Array(0)): boolean {
    return this.proposeEntry({ type: 'conf', data, conf });
  }

  /** Asks for a linearizable read point; its ReadState arrives in a later Ready with this context. */
  readIndex(context: string): boolean {
    if (this.roleNow === 'leader') return this.leaderReadIndex(context, this.id);
    if (this.lead === NONE) return false;
    this.send({ type: 'MsgReadIndex', to: this.lead, term: 0n, context });
    return true;
  }

  /** Asks the leader to hand leadership to `to` (etcd's MoveLeader). */
  transferLeadership(to: NodeId): void {
    this.step({ type: 'MsgTransferLeader', from: to, to: this.id, term: 0n });
  }

  /**
   * Starts an election now, as a MsgTimeoutNow does: past PreVote and the voters' leader lease (an
   * operator's forced election; a leader campaigns for a new term of its own).
   */
  campaignNow(): void {
    if (this.promotable()) this.campaign('election', true);
  }

  /** A leader heartbeats `to` now (its connection to a stopped peer just came back). */
  heartbeatTo(to: NodeId): void {
    const pr = this.tracker.prs.get(to);
    if (this.roleNow !== 'leader' || to === this.id || pr === undefined) return;
    const context = this.reads.lastContext();
    this.send({ type: 'MsgHeartbeat', to, commit: Math.min(pr.match, this.log.committed), ...(context === undefined ? {} : { context }) });
  }

  /**
   * A leader sends its latest snapshot to `to` now, as it does on its own to a follower behind its log; the
   * follower installs it only when it is past what that follower knows committed.
   */
  sendSnapshotTo(to: NodeId): boolean {
    const pr = this.tracker.prs.get(to);
    if (this.roleNow !== 'leader' || to === this.id || pr === undefined) return false;
    const snap = this.log.snapshot;
    pr.state = 'snapshot';
    pr.pendingSnapshot = snap.index;
    pr.snapshotTicks = this.opts.electionTicks;
    this.send({ type: 'MsgSnap', to, snapshot: snap });
    return true;
  }

  /** The application snapshotted its applied state at `index`: compact the log, keeping `keep` entries. */
  compact(index: number, data: Uint8Array, keep: number): void {
    const term = this.log.term(index);
    if (term === undefined) throw new Error(`raft: cannot snapshot at ${index}: no such entry`);
    this.log.compact({ index, term, conf: this.conf, data }, keep);
  }

  /** A message from a peer. */
  step(m: Message): void {
    if (m.term === 0n) {
      this.stepLocal(m);
      return;
    }
    if (m.term > this.termNow) {
      const isVote = m.type === 'MsgVote' || m.type === 'MsgPreVote';
      if (isVote) {
        const inLease = this.opts.checkQuorum && this.lead !== NONE && this.electionElapsed < this.opts.electionTicks;
        if (m.context !== TRANSFER && inLease) return;
      }
      if (m.type === 'MsgPreVote' || (m.type === 'MsgPreVoteResp' && m.reject !== true)) {
        // A pre-vote moves no term; a granted one is answered at the term the candidate will take.
      } else if (m.type === 'MsgApp' || m.type === 'MsgHeartbeat' || m.type === 'MsgSnap') {
        this.becomeFollower(m.term, m.from);
      } else {
        this.becomeFollower(m.term, NONE);
      }
    } else if (m.term < this.termNow) {
      if ((this.opts.checkQuorum || this.opts.preVote) && (m.type === 'MsgHeartbeat' || m.type === 'MsgApp')) {
        // A stale leader cut off by a partition learns the newer term and steps down.
        this.send({ type: 'MsgAppResp', to: m.from });
      } else if (m.type === 'MsgPreVote') {
        this.send({ type: 'MsgPreVoteResp', to: m.from, reject: true });
      }
      return;
    }
    if (m.type === 'MsgVote' || m.type === 'MsgPreVote') {
      this.handleVote(m);
      return;
    }
    if (this.roleNow === 'leader') this.stepLeader(m);
    else if (this.roleNow === 'follower') this.stepFollower(m);
    else this.stepCandidate(m);
  }

  // ---- roles ----

  private becomePreCandidate(): void {
    this.tracker.resetVotes();
    this.lead = NONE;
    this.roleNow = 'pre-candidate';
  }

  private becomeCandidate(): void {
    this.reset(this.termNow + 1n);
    this.voteFor = this.id;
    this.roleNow = 'candidate';
  }

  private becomeLeader(): void {
    this.reset(this.termNow);
    this.lead = this.id;
    this.roleNow = 'leader';
    this.tracker.resetProgress(this.log.lastIndex(), this.id);
    // A change proposed by an earlier leader may still be uncommitted: no new one until it is applied.
    this.pendingConfIndex = this.log.lastIndex();
    this.appendEntries([{ type: 'normal', data: new Uint8Array(0) }]);
  }

  private campaign(kind: 'pre' | 'election', transfer = false): void {
    let voteTerm: bigint;
    let type: MessageType;
    if (kind === 'pre') {
      this.becomePreCandidate();
      voteTerm = this.termNow + 1n;
      type = 'MsgPreVote';
    } else {
      this.becomeCandidate();
      voteTerm = this.termNow;
      type = 'MsgVote';
    }
    if (this.tracker.recordVote(this.id, true) === 'won') {
      if (kind === 'pre') this.campaign('election');
      else this.becomeLeader();
      return;
    }
    for (const id of this.tracker.voters) {
      if (id === this.id) continue;
      this.send({
        type,
        to: id,
        term: voteTerm,
        index: this.log.lastIndex(),
        logTerm: this.log.lastTerm(),
        ...(transfer ? { context: TRANSFER } : {}),
      });
    }
  }

  private handleVote(m: Message): void {
    const pre = m.type === 'MsgPreVote';
    const respType: MessageType = pre ? 'MsgPreVoteResp' : 'MsgVoteResp';
    const canVote = this.voteFor === m.from || (this.voteFor === NONE && this.lead === NONE) || (pre && m.term > this.termNow);
    if (canVote && this.log.isUpToDate(m.index ?? 0, m.logTerm ?? 0n)) {
      // A granted pre-vote answers at the term asked, so the pre-candidate counts it.
      this.send({ type: respType, to: m.from, term: m.term });
      if (!pre) {
        this.electionElapsed = 0;
        this.voteFor = m.from;
      }
    } else {
      this.send({ type: respType, to: m.from, term: this.termNow, reject: true });
    }
  }

  private tickElection(): void {
    this.electionElapsed++;
    if (this.promotable() && this.electionElapsed >= this.randomizedTimeout) {
      this.electionElapsed = 0;
      this.campaign(this.opts.preVote ? 'pre' : 'election');
    }
  }

  /** A leader's tick is a heartbeat interval: etcd's server runs raft with HeartbeatTick 1 (etcdserver/raft.go). */
  private tickLeader(): void {
    this.electionElapsed++;
    for (const [id, pr] of this.tracker.prs) {
      if (pr.state === 'snapshot' && --pr.snapshotTicks <= 0) {
        toProbe(pr);
        this.sendAppend(id);
      }
    }
    if (this.electionElapsed >= this.opts.electionTicks) {
      this.electionElapsed = 0;
      if (this.opts.checkQuorum && !this.tracker.quorumActive(this.id)) {
        this.becomeFollower(this.termNow, NONE);
        return;
      }
      this.leadTransferee = NONE;
    }
    this.bcastHeartbeat(this.reads.lastContext());
  }

  // ---- per role ----

  private stepLocal(m: Message): void {
    switch (m.type) {
      case 'MsgProp':
        if (this.roleNow === 'leader') this.leaderPropose(m.entries ?? []);
        else if (this.lead !== NONE && this.roleNow === 'follower') this.send({ ...m, to: this.lead, term: 0n });
        return;
      case 'MsgReadIndex':
        if (this.roleNow === 'leader') this.leaderReadIndex(m.context ?? '', m.from);
        else if (this.lead !== NONE) this.send({ ...m, to: this.lead, term: 0n });
        return;
      case 'MsgTransferLeader':
        if (this.roleNow === 'leader') this.leaderTransfer(m.from);
        else if (this.lead !== NONE) this.send({ type: 'MsgTransferLeader', from: m.from, to: this.lead, term: 0n });
        return;
      default:
        return;
    }
  }

  private proposeEntry(e: { type: 'normal' | 'conf'; data: Uint8Array; conf?: ConfChange }): boolean {
    if (this.removed) return false;
    const entry: Entry = e.conf === undefined ? { index: 0, term: 0n, type: e.type, data: e.data } : { index: 0, term: 0n, type: e.type, data: e.data, conf: e.conf };
    if (this.roleNow === 'leader') return this.leaderPropose([entry]);
    if (this.lead === NONE || this.roleNow !== 'follower') return false;
    this.send({ type: 'MsgProp', to: this.lead, term: 0n, entries: [entry] });
    return true;
  }

  private leaderPropose(entries: readonly Entry[]): boolean {
    if (this.leadTransferee !== NONE || !this.tracker.prs.has(this.id)) return false;
    for (let k = 0; k < entries.length; k++) {
      if (entries[k]!.type !== 'conf') continue;
      if (this.pendingConfIndex > this.log.applied) return false;
      this.pendingConfIndex = this.log.lastIndex() + k + 1;
    }
    this.appendEntries(entries);
    return true;
  }

  /** Appends entries stamped with their index and this term (each a new literal of one shape: no spread). */
  private appendEntries(es: readonly { type: 'normal' | 'conf'; data: Uint8Array; conf?: ConfChange }[]): void {
    let i = this.log.lastIndex();
    const term = this.termNow;
    const stamped: Entry[] = [];
    for (const e of es) {
      i++;
      stamped.push(e.conf === undefined ? { index: i, term, type: e.type, data: e.data } : { index: i, term, type: e.type, data: e.data, conf: e.conf });
    }
    this.log.append(stamped);
    const self = this.tracker.prs.get(this.id);
    if (self !== undefined) {
      self.match = i;
      self.next = i + 1;
    }
    this.maybeCommit();
    this.bcastAppend();
  }

  private leaderReadIndex(context: string, from: NodeId): boolean {
    if (this.log.term(this.log.committed) !== this.termNow) return false;
    if (this.tracker.voters.size === 1 && this.tracker.voters.has(this.id)) {
      this.releaseRead({ context, index: this.log.committed, from });
      return true;
    }
    this.reads.add(context, this.log.committed, from, this.id);
    this.bcastHeartbeat(context);
    return true;
  }

  private releaseRead(r: { readonly context: string; readonly index: number; readonly from: NodeId }): void {
    if (r.from === this.id) this.readStates.push({ index: r.index, context: r.context });
    else this.send({ type: 'MsgReadIndexResp', to: r.from, index: r.index, context: r.context });
  }

  private leaderTransfer(to: NodeId): void {
    if (to === this.id || !this.tracker.voters.has(to) || this.leadTransferee === to) return;
    this.leadTransferee = to;
    this.electionElapsed = 0;
    const pr = this.tracker.prs.get(to);
    if (pr !== undefined && pr.match === this.log.lastIndex()) this.send({ type: 'MsgTimeoutNow', to });
    else this.sendAppend(to);
  }

  private stepLeader(m: Message): void {
    const pr = this.tracker.prs.get(m.from);
    if (pr === undefined) return;
    if (m.type === 'MsgAppResp') {
      pr.recentActive = true;
      this.handleAppendResponse(m, pr);
    } else if (m.type === 'MsgHeartbeatResp') {
      pr.recentActive = true;
      // raft clears ProbeSent on any heartbeat answer; only a probe reads it (a member being sent a snapshot
      // waits for it whatever the flag says, and replicate and probe both start unpaused).
      pr.paused = false;
      if (pr.match < this.log.lastIndex()) this.sendAppend(m.from);
      if (m.context !== undefined) for (const r of this.reads.ack(m.context, m.from, this.tracker)) this.releaseRead(r);
    }
  }

  private handleAppendResponse(m: Message, pr: Progress): void {
    const index = m.index ?? 0;
    if (m.reject === true) {
      // raft's MaybeDecrTo: only the answer to the append just sent says where to probe next; stale rejections
      // are ignored. A replicating member probes again from its match (BecomeProbe: its last index is not
      // used); a probing one from the member's last index when that is lower; one being sent a snapshot
      // keeps waiting for it (its next index moves, and nothing is sent until the snapshot is answered).
      if (pr.state === 'replicate') {
        if (index <= pr.match) return;
        pr.next = pr.match + 1;
        toProbe(pr);
      } else {
        if (index !== pr.next - 1) return;
        pr.next = Math.max(Math.min(index, (m.rejectHint ?? index) + 1), 1);
        pr.paused = false;
      }
      this.sendAppend(m.from);
      return;
    }
    // An acknowledgement at or below the match is stale (duplicated, or overtaken by a later one): raft's
    // MaybeUpdate changes nothing for it, and a paused probe waits for the member's next heartbeat answer.
    if (index <= pr.match) return;
    // raft's IsPaused: a probe with its append out, or a member being sent a snapshot.
    const wasPaused = pr.paused || pr.state === 'snapshot';
    pr.match = index;
    pr.next = Math.max(pr.next, index + 1);
    if (pr.state === 'probe' || (pr.state === 'snapshot' && pr.match >= pr.pendingSnapshot)) {
      pr.state = 'replicate';
      pr.paused = false;
      pr.next = pr.match + 1;
    }
    // A paused member may lack the commit index: it gets an append even with no entries for it.
    if (this.maybeCommit()) this.bcastAppend();
    else if (wasPaused) this.sendAppend(m.from);
    // Then as many appends as the entries past its next index take (raft's maybeSendAppend loop; the model
    // has no inflight limit, so a replicating member is sent the whole of the log).
    while (pr.state === 'replicate' && pr.next <= this.log.lastIndex()) this.sendAppend(m.from);
    if (m.from === this.leadTransferee && pr.match === this.log.lastIndex()) this.send({ type: 'MsgTimeoutNow', to: m.from });
  }

  private stepCandidate(m: Message): void {
    const mine: MessageType = this.roleNow === 'pre-candidate' ? 'MsgPreVoteResp' : 'MsgVoteResp';
    switch (m.type) {
      case 'MsgApp':
      case 'MsgHeartbeat':
      case 'MsgSnap':
        this.becomeFollower(m.term, m.from);
        this.stepFollower(m);
        return;
      default:
        if (m.type !== mine) return;
        switch (this.tracker.recordVote(m.from, m.reject !== true)) {
          case 'won':
            if (this.roleNow === 'pre-candidate') this.campaign('election');
            else this.becomeLeader();
            return;
          case 'lost':
            this.becomeFollower(this.termNow, NONE);
            return;
          default:
            return;
        }
    }
  }

  private stepFollower(m: Message): void {
    switch (m.type) {
      case 'MsgApp':
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleAppend(m);
        return;
      case 'MsgHeartbeat':
        this.electionElapsed = 0;
        this.lead = m.from;
        this.log.commitTo(Math.min(m.commit ?? 0, this.log.lastIndex()));
        this.send({ type: 'MsgHeartbeatResp', to: m.from, ...(m.context === undefined ? {} : { context: m.context }) });
        return;
      case 'MsgSnap':
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleSnapshot(m);
        return;
      case 'MsgTimeoutNow':
        if (this.promotable()) this.campaign('election', true);
        return;
      case 'MsgReadIndexResp':
        this.readStates.push({ index: m.index ?? 0, context: m.context ?? '' });
        return;
      default:
        return;
    }
  }

  private handleAppend(m: Message): void {
    const index = m.index ?? 0;
    if (index < this.log.committed) {
      this.send({ type: 'MsgAppResp', to: m.from, index: this.log.committed });
      return;
    }
    if (this.log.matchTerm(index, m.logTerm ?? 0n)) {
      const lastNew = this.log.maybeAppend(index, m.entries ?? []);
      this.log.commitTo(Math.min(m.commit ?? 0, lastNew));
      this.send({ type: 'MsgAppResp', to: m.from, index: lastNew });
    } else {
      this.send({ type: 'MsgAppResp', to: m.from, index, reject: true, rejectHint: this.log.lastIndex() });
    }
  }

  private handleSnapshot(m: Message): void {
    const s = m.snapshot;
    if (s === undefined) return;
    if (s.index <= this.log.committed) {
      this.send({ type: 'MsgAppResp', to: m.from, index: this.log.committed });
      return;
    }
    if (this.log.matchTerm(s.index, s.term)) {
      this.log.commitTo(s.index);
      this.send({ type: 'MsgAppResp', to: m.from, index: this.log.lastIndex() });
      return;
    }
    this.log.restore(s);
    // A member added after the snapshot was taken is not in its conf: the conf change after it adds it.
    this.tracker.restore(s.conf);
    this.send({ type: 'MsgAppResp', to: m.from, index: s.index });
  }

  // ---- replication ----

  private bcastAppend(): void {
    for (const id of this.tracker.prs.keys()) if (id !== this.id) this.sendAppend(id);
  }

  private bcastHeartbeat(context?: string): void {
    for (const [id, pr] of this.tracker.prs) {
      if (id === this.id) continue;
      // A follower may only learn a commit index its log is known to reach.
      const commit = Math.min(pr.match, this.log.committed);
      this.send({ type: 'MsgHeartbeat', to: id, commit, ...(context === undefined ? {} : { context }) });
    }
  }

  private sendAppend(to: NodeId): void {
    const pr = this.tracker.prs.get(to);
    if (pr === undefined || pr.paused || pr.state === 'snapshot') return;
    const prev = pr.next - 1;
    const prevTerm = this.log.term(prev);
    if (prevTerm === undefined || prev < this.log.firstIndex() - 1) {
      this.sendSnapshotTo(to);
      return;
    }
    const entries = this.log.slice(pr.next, this.log.lastIndex() + 1, this.maxPerMessage);
    this.send({ type: 'MsgApp', to, index: prev, logTerm: prevTerm, entries, commit: this.log.committed });
    if (pr.state === 'replicate') {
      const last = entries[entries.length - 1];
      if (last !== undefined) pr.next = last.index + 1;
    } else {
      pr.paused = true;
    }
  }

  /** Commits the highest index a quorum of voters holds, if it is of this term. */
  private maybeCommit(): boolean {
    const mci = this.tracker.committedIndex();
    if (mci > this.log.committed && this.log.term(mci) === this.termNow) {
      this.log.commitTo(mci);
      return true;
    }
    return false;
  }

  // ---- membership ----

  protected applyConfChange(cc: ConfChange): void {
    const type = cc.type;
    if (type === 'update') return; // the configuration stays: nothing to send or commit anew
    const leading = this.roleNow === 'leader';
    // A member the leader did not track is probed from the leader's last index (etcd's initProgress: Next
    // is LastIndex), so its first append carries the last entry.
    this.tracker.applyConfChange({ type, id: cc.id }, this.log.lastIndex(), leading);
    if (cc.type === 'remove' && cc.id === this.id) this.removed = true;
    if (!leading) return;
    if (cc.type === 'remove') {
      if (this.leadTransferee === cc.id) this.leadTransferee = NONE;
      if (cc.id === this.id) {
        this.becomeFollower(this.termNow, NONE);
        return;
      }
      if (this.maybeCommit()) this.bcastAppend();
    } else if (cc.id !== this.id) {
      // (An add or addLearner may name the leader itself, a voter added again or made a learner, which
      // changes nothing: raft sends itself nothing.)
      this.sendAppend(cc.id);
    }
  }
}
