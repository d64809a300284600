/**
 * What etcd's raft guarantees of each single step of a node, judged from outside by naive references of
 * its own (the sim network calls these around every message it delivers and every Ready it handles):
 *  - a new leader appends to every member at once, from its own last index (Raft §5.3: nextIndex starts
 *    just after the leader's last entry), so its first append to each carries just its term's empty entry;
 *  - a follower's rejection of the append the leader last sent it is answered at once by a probe lower
 *    than the rejected index and no lower than the follower's hint (its last index): probing resumes
 *    where the follower said, one step back at least, never from scratch — but a member that was
 *    replicating is probed from its match (etcd's MaybeDecrTo and BecomeProbe leave its hint unused);
 *  - a candidate counts the first answer of each voter: it wins with a quorum of yes, steps back to
 *    follower as soon as a quorum can no longer say yes, and otherwise keeps campaigning;
 *  - a snapshot that got no answer is followed by a probe at its index, not by the same snapshot again;
 *  - a read is released only in the term it was asked, once a quorum of voters answered heartbeats sent
 *    after it was asked (ReadIndex: the leader confirms it still leads after the read arrived);
 *  - the election timer: a voter campaigns no sooner than an election timeout and no later than twice one
 *    (less a tick) after it last heard from a leader, granted a vote, changed role or term or campaigned
 *    (etcd's randomized timeout in [election, 2×election) ticks);
 *  - a message of an older term moves nothing; an append or heartbeat of one is answered at the receiver's
 *    term, a pre-vote of one refused, anything else dropped;
 *  - CheckQuorum's leader lease: a follower that heard its leader within an election timeout ignores a
 *    vote request of a higher term (not a transfer's), and answers one past it;
 *  - a heartbeat tells a member no commit index past what that member is known to hold;
 *  - only the leader of a term sends that term's appends, snapshots, heartbeats and MsgTimeoutNow (raft's
 *    bcastAppend and sendHeartbeat run in stepLeader and tickHeartbeat only): a follower that applied a conf
 *    change as if it led would append to the new member in a term some other member leads;
 *  - the vote rule, per request (raft's Step for MsgVote / MsgPreVote): one vote per term, granted to the
 *    member already voted for or, with no vote and no leader, to any, and a pre-vote of a later term always,
 *    but only for a log at least as up to date (last term, then last index); a refusal is answered too, at
 *    the voter's term; a leader ignores a vote request of a higher term (its lease), unless a transfer's;
 *  - with PreVote on, an election timeout starts a pre-vote, never a vote (and without it, a vote);
 *  - a leader commits only an entry of its own term (Raft §5.4.2: older ones are committed by it);
 *  - what a member takes from its client: a leader appends a proposal, except while it hands leadership over
 *    (for an election timeout after the request) and a conf change while another is unapplied (or one of an
 *    earlier leader may be: until its own first entry is applied); a follower that knows its leader passes a
 *    proposal, a read or a transfer request on to it; anything else drops it;
 *  - a transfer to an up-to-date voter sends it MsgTimeoutNow at once, and MsgTimeoutNow goes only to the
 *    member the leader is handing over to, once its log matches the leader's.
 * These pin the pace and vote-counting rules whose mutants only change how many rounds a catch-up or an
 * election takes (docs/mutation.md): the safety checker and the end-to-end bounds cannot see them.
 * A leader's flow control is judged in flow_rules.ts, at the same hooks. Over 600 lines (stated): the rules
 * share the hooks and the state they keep per member; new ones go to files of their own, as flow_rules.ts.
 */
import { NONE, type ConfChange, type Message, type NodeId, type RaftNode, type Ready } from '../../src/raft/index.js';
import { FlowRules, progressOf } from './flow_rules.js';
import { ReadRules } from './read_rules.js';

type Outcome = 'won' | 'lost' | 'pending';

interface Campaign {
  readonly role: string;
  readonly term: bigint;
  readonly votes: Map<NodeId, boolean>;
}

interface Reads {
  readonly term: bigint;
  /** Context → the order it was asked in and the voters that answered a heartbeat sent after it. */
  readonly asked: Map<string, { readonly seq: number; readonly acks: Set<NodeId> }>;
  seq: number;
}

/** The first Ready after a rejection must probe this member within [lo, hi] (or send it a snapshot). */
interface Probe {
  readonly to: NodeId;
  readonly lo: number;
  readonly hi: number;
  readonly why: string;
}

const key = (from: NodeId, to: NodeId): string => `${from}>${to}`;
/** The messages only a term's leader sends. */
const LEADERS_ONLY = new Set(['MsgApp', 'MsgSnap', 'MsgHeartbeat', 'MsgTimeoutNow']);

export class StepRules {
  /** Per member: its ticks since its election timer last started again (see the header). */
  private readonly timerFrom = new Map<NodeId, number>();
  /** The member whose tick is being handled (a campaign in its Ready is the timer's). */
  private ticking: NodeId | undefined;
  /** Per leader → member: the last MsgApp or MsgSnap sent, at which term (a MsgApp's prev index, a snapshot's own). */
  private readonly lastSent = new Map<string, { readonly term: bigint; readonly type: string; readonly index: number }>();
  private readonly campaigns = new Map<NodeId, Campaign>();
  private readonly reads = new Map<NodeId, Reads>();
  private readonly probes = new Map<NodeId, Probe>();
  /** The member that led each term (one at most: the checker's election safety), as its Readies showed it. */
  private readonly leaderOf = new Map<bigint, NodeId>();
  /** A message of an older term a member stepped: what it must answer, and its state, which must not move. */
  private readonly stales = new Map<NodeId, { readonly m: Message; readonly answer: string | undefined; readonly before: string }>();
  /** A vote request a follower must answer or, inside its leader lease, ignore (judged at its next Ready). */
  private readonly votes = new Map<NodeId, { readonly from: NodeId; readonly type: string; readonly answer: boolean; readonly term: bigint; readonly ticks: number }>();
  /** A vote request and what the vote rule says of it (judged at the member's next Ready). */
  private readonly ballots = new Map<NodeId, { readonly m: Message; readonly expect: 'ignore' | 'grant' | 'refuse'; readonly term: bigint }>();
  /** Per leader: the member it hands leadership to, in which term, and the ticks left before it gives up. */
  private readonly transfers = new Map<NodeId, { readonly term: bigint; readonly to: NodeId; ticks: number }>();
  /** A message a member must send in its next Ready (a request passed on to its leader, a MsgTimeoutNow). */
  private readonly owed = new Map<NodeId, { readonly to: NodeId; readonly type: string; readonly why: string; readonly entries?: number }>();
  /** The answer a member owes an append or snapshot it stepped (judged at its next Ready). */
  private readonly answers = new Map<NodeId, { readonly to: NodeId; readonly index: number; readonly reject: boolean; readonly hint: number | undefined; readonly why: string }>();
  /** Per member: its commit index at its last Ready. */
  private readonly commits = new Map<NodeId, number>();
  /** A leader's flow control (flow_rules.ts). */
  private readonly flow = new FlowRules();
  /** The member the network steps a message into while it handles a Ready (stepMidReady). */
  midReady: NodeId | undefined;
  /** A leader's broadcast of the reads it takes (read_rules.ts). */
  private readonly readRules = new ReadRules();

  constructor(
    private readonly electionTicks: number,
    /** etcd's --pre-vote for every member. */
    private readonly preVote: boolean,
  ) {}

  /** Before `node` steps `m`: returns what must hold right after the step. */
  beforeStep(node: RaftNode, m: Message): () => void {
    const after = this.roleOrTerm(node);
    if (m.term === 0n) return this.local(node, m, after);
    if (m.term < node.term) {
      this.stale(node, m);
      return after;
    }
    this.ballot(node, m);
    this.appendAnswer(node, m);
    if (node.role === 'leader' && m.term === node.term) {
      this.flow.beforeStep(node, m, this.midReady === node.id, this.transferOf(node)?.to);
      if (m.type === 'MsgAppResp' && m.reject === true) this.rejected(node, m);
      else if (m.type === 'MsgHeartbeatResp' && m.context !== undefined) this.acked(node, m.from, m.context);
      return after;
    }
    this.lease(node, m);
    const vote = this.voteAnswer(node, m);
    const term = node.term;
    return () => {
      vote?.();
      // A pre-vote moves no term (raft §9.6: the pre-candidate asks at term+1 without taking it); a refusal
      // of a higher term does move the pre-candidate's, as any message of a higher term does.
      if (m.type === 'MsgPreVote' && node.term !== term) throw new Error(`${node.id}: a pre-vote request from ${m.from} moved its term ${term} → ${node.term}`);
      if (m.type === 'MsgPreVoteResp' && m.reject === true && m.term > term && (node.term !== m.term || node.role !== 'follower')) {
        throw new Error(`${node.id}: a pre-vote refusal of term ${m.term} left it ${node.role} at term ${node.term}`);
      }
      after();
      // A follower that hears from its leader of this term starts its election timer again.
      const fromLeader = m.type === 'MsgApp' || m.type === 'MsgHeartbeat' || m.type === 'MsgSnap';
      if (fromLeader && node.role === 'follower' && m.term === node.term) this.timerFrom.set(node.id, 0);
    };
  }

  /** Before `node` ticks; the member handles its Readies, then calls the returned check. */
  beforeTick(node: RaftNode): () => void {
    const after = this.roleOrTerm(node);
    this.ticking = node.id;
    const ticks = this.timerFrom.get(node.id);
    if (ticks !== undefined) this.timerFrom.set(node.id, ticks + 1);
    // A leader gives a transfer up at the election timeout after it was asked (raft's tickHeartbeat).
    const t = this.transferOf(node);
    if (t !== undefined && --t.ticks <= 0) this.transfers.delete(node.id);
    return () => {
      this.ticking = undefined;
      after();
      const now = this.timerFrom.get(node.id);
      const voter = node.conf.voters.includes(node.id) && !node.removed;
      if (now !== undefined && voter && node.role !== 'leader' && now >= 2 * this.electionTicks - 1) {
        throw new Error(`${node.id}, ${node.role}: nothing started its election timer again for ${now} ticks, yet it did not campaign (at most ${2 * this.electionTicks - 1})`);
      }
    };
  }

  /**
   * CheckQuorum's leader lease: a follower that heard from its leader less than an election timeout ago
   * ignores a vote or pre-vote request of a higher term (no answer, its term unmoved), unless it is a
   * leader transfer's; past that it answers. Judged in the member's next Ready (or when it settles).
   */
  private lease(node: RaftNode, m: Message): void {
    if ((m.type !== 'MsgVote' && m.type !== 'MsgPreVote') || m.term <= node.term || m.context === 'transfer') return;
    if (node.role !== 'follower' || node.leader === NONE) return;
    const ticks = this.timerFrom.get(node.id);
    if (ticks === undefined) return;
    this.votes.set(node.id, { from: m.from, type: m.type === 'MsgVote' ? 'MsgVoteResp' : 'MsgPreVoteResp', answer: ticks >= this.electionTicks, term: node.term, ticks });
  }

  private leaseHeld(node: RaftNode, rd: Ready | undefined): void {
    const v = this.votes.get(node.id);
    if (v === undefined) return;
    this.votes.delete(node.id);
    const answered = rd?.messages.some((x) => x.from === node.id && x.to === v.from && x.type === v.type) ?? false;
    const moved = v.type === 'MsgVoteResp' && v.answer;
    if (answered !== v.answer || (node.term !== v.term) !== moved) {
      throw new Error(`${node.id}, follower ${v.ticks} ticks after it last heard its leader (an election timeout is ${this.electionTicks}): a ${v.type === 'MsgVoteResp' ? 'vote' : 'pre-vote'} request from ${v.from} of a higher term was ${answered ? 'answered' : 'ignored'} (term ${v.term} → ${node.term})`);
    }
  }

  /**
   * A request from the member's own side (term 0: a proposal or read passed on by a follower, a transfer
   * request): a leader takes a proposal or drops it (takes()), a follower that knows its leader passes it on.
   */
  private local(node: RaftNode, m: Message, after: () => void): () => void {
    if (m.type === 'MsgTransferLeader') {
      this.transferAsked(node, m.from);
      return after;
    }
    if (m.type !== 'MsgProp' && m.type !== 'MsgReadIndex') return after;
    if (node.role !== 'leader') {
      const passes = node.leader !== NONE && (m.type === 'MsgReadIndex' || node.role === 'follower');
      if (passes) this.owed.set(node.id, { to: node.leader, type: m.type, why: `${m.type} from ${m.from} reached it as ${node.role} under ${node.leader}`, ...(m.type === 'MsgProp' ? { entries: m.entries?.length ?? 0 } : {}) });
      return after;
    }
    if (m.type === 'MsgReadIndex') {
      this.readRules.beforeRead(node, m.context ?? '');
      return after;
    }
    const entries = m.entries ?? [];
    const n = this.takes(node, entries.some((e) => e.type === 'conf')) ? entries.length : 0;
    const last = node.log.lastIndex();
    return () => {
      after();
      if (node.log.lastIndex() !== last + n) throw new Error(`leader ${node.id}: a proposal of ${entries.length} passed on by ${m.from} took its log from ${last} to ${node.log.lastIndex()}, expected ${last + n}`);
    };
  }

  /**
   * Whether `node` takes a proposal now: a leader unless it is handing leadership over, or (a conf change)
   * one is unapplied — its own, or an earlier leader's, which it cannot tell until its own first entry is
   * applied (raft's pendingConfIndex); a follower that knows its leader (it passes it on); nothing else.
   */
  takes(node: RaftNode, conf: boolean): boolean {
    if (node.role !== 'leader') return node.role === 'follower' && node.leader !== NONE;
    if (this.transferOf(node) !== undefined) return false;
    if (!conf) return true;
    let pending = -1;
    for (const e of node.log.held()) {
      if (e.term !== node.term) continue;
      if (pending < 0) pending = e.index - 1;
      if (e.type === 'conf') pending = e.index;
    }
    return pending <= node.log.applied;
  }

  /**
   * A client's proposal (a conf change with `conf`) at `node`: returns the check of what propose() said and
   * did — a leader that takes it appends it (a sole voter commits it at once), a follower passes it on;
   * `more` entries were proposed meanwhile (a RaftLoop handles its Ready within the call: proposeMidReady).
   */
  beforePropose(node: RaftNode, conf: boolean): (ok: boolean, more: number) => void {
    const takes = !node.removed && this.takes(node, conf);
    const { role, leader } = node;
    const last = node.log.lastIndex();
    if (takes && role !== 'leader') this.owed.set(node.id, { to: leader, type: 'MsgProp', why: `a proposal at a follower of ${leader}`, entries: 1 });
    return (ok, more) => {
      if (ok !== takes) throw new Error(`${node.id}, ${role} under ${leader}${node.removed ? ', removed' : ''}: a ${conf ? 'conf change' : 'proposal'} was ${ok ? 'taken' : 'dropped'}, expected ${takes ? 'taken' : 'dropped'}`);
      if (role === 'leader') {
        if (node.log.lastIndex() !== last + (ok ? 1 : 0) + more) throw new Error(`leader ${node.id}: a proposal ${ok ? 'taken' : 'dropped'} (and ${more} more) took its log from ${last} to ${node.log.lastIndex()}`);
        const { voters } = node.conf;
        if (ok && voters.length === 1 && voters[0] === node.id && node.log.committed !== node.log.lastIndex()) throw new Error(`leader ${node.id}, the sole voter: its proposal at ${node.log.lastIndex()} is not committed at once (commit ${node.log.committed})`);
      }
    };
  }

  /**
   * `node` is asked to hand leadership to `to`: a leader starts handing over to a voter other than itself
   * (a request for the member it already hands to changes nothing), with MsgTimeoutNow at once when that
   * member's log is up to date; a member that knows its leader passes the request on.
   */
  transferAsked(node: RaftNode, to: NodeId): void {
    if (node.role !== 'leader') {
      if (node.leader !== NONE) this.owed.set(node.id, { to: node.leader, type: 'MsgTransferLeader', why: `asked to hand leadership to ${to} as ${node.role} under ${node.leader}` });
      return;
    }
    if (to === node.id || !node.conf.voters.includes(to) || this.transferOf(node)?.to === to) return;
    this.transfers.set(node.id, { term: node.term, to, ticks: this.electionTicks });
    if (node.matchOf(to) === node.log.lastIndex()) this.owed.set(node.id, { to, type: 'MsgTimeoutNow', why: `asked to hand leadership to ${to}, whose log is up to date` });
    else if (!node.hasReady() && this.midReady !== node.id) {
      // Its log is behind: raft's sendAppend at once, unless the member waits for a probe's answer or a
      // snapshot, or its next entry is compacted away (a snapshot goes instead).
      const pr = progressOf(node, to);
      if (pr !== undefined && !pr.paused && pr.state !== 'snapshot' && pr.next - 1 >= node.log.firstIndex() - 1) this.owed.set(node.id, { to, type: 'MsgApp', why: `asked to hand leadership to ${to}, whose log is behind (${pr.match} of ${node.log.lastIndex()})` });
    }
  }

  /** `node` is asked for a read by its own client (read_rules.ts). */
  beforeRead(node: RaftNode, context: string): void {
    this.readRules.beforeRead(node, context);
  }

  /** `node` applied a conf change: a leader stops handing leadership to a member it removed. */
  confApplied(node: RaftNode, cc: ConfChange): void {
    if (cc.type === 'remove' && this.transferOf(node)?.to === cc.id) this.transfers.delete(node.id);
  }

  /** The transfer `node` is under way with, while it leads in the term it was asked. */
  private transferOf(node: RaftNode): { readonly term: bigint; readonly to: NodeId; ticks: number } | undefined {
    const t = this.transfers.get(node.id);
    if (t !== undefined && (node.role !== 'leader' || node.term !== t.term)) {
      this.transfers.delete(node.id);
      return undefined;
    }
    return t;
  }

  private owedHeld(node: RaftNode, rd: Ready | undefined): void {
    const o = this.owed.get(node.id);
    if (o === undefined) return;
    this.owed.delete(node.id);
    // A request passed on keeps its sender: a transfer's names the member to hand leadership to. A proposal
    // passed on carries its entries (raft's stepFollower sends the message itself on: m.To = r.lead).
    const sent = (rd?.messages ?? []).filter((x) => x.to === o.to && x.type === o.type);
    if (sent.length !== 1 || (o.entries !== undefined && sent[0]!.entries?.length !== o.entries)) {
      throw new Error(`${node.id}: ${o.why}, so it owes ${o.to} one ${o.type}${o.entries === undefined ? '' : ` of ${o.entries} entries`}; it sent ${describe(sent)}`);
    }
  }

  /**
   * What a member answers an append or snapshot of its term (raft's handleAppendEntries, handleSnapshot),
   * from its log before the step: one below its commit index gets the commit index (the leader's match moves
   * up to what it is known to hold); a matching one the index of its last new entry; any other a rejection
   * with its last index as the hint. A snapshot at or below the commit index gets the commit index; one whose
   * index and term the log holds commits up to it and gets the last index; any other is installed and gets
   * its own index.
   */
  private appendAnswer(node: RaftNode, m: Message): void {
    if ((m.type !== 'MsgApp' && m.type !== 'MsgSnap') || (node.role === 'leader' && m.term === node.term)) return;
    const log = node.log;
    const why = `${m.type} from ${m.from} at ${m.type === 'MsgSnap' ? m.snapshot?.index : m.index}@${m.type === 'MsgSnap' ? m.snapshot?.term : m.logTerm} (its commit ${log.committed}, last ${log.lastIndex()})`;
    const ans = (index: number, reject = false, hint?: number): void => void this.answers.set(node.id, { to: m.from, index, reject, hint, why });
    if (m.type === 'MsgSnap') {
      const snap = m.snapshot;
      if (snap === undefined) return;
      if (snap.index <= log.committed) ans(log.committed);
      else if (log.term(snap.index) === snap.term) ans(log.lastIndex());
      else ans(snap.index);
      return;
    }
    const index = m.index ?? 0;
    if (index < log.committed) ans(log.committed);
    else if (log.term(index) === (m.logTerm ?? 0n)) ans(index + (m.entries?.length ?? 0));
    else ans(index, true, log.lastIndex());
  }

  private answerHeld(node: RaftNode, rd: Ready | undefined): void {
    const a = this.answers.get(node.id);
    if (a === undefined) return;
    this.answers.delete(node.id);
    const sent = (rd?.messages ?? []).filter((x) => x.from === node.id && x.to === a.to && x.type === 'MsgAppResp');
    const x = sent[0];
    if (sent.length !== 1 || x!.index !== a.index || (x!.reject === true) !== a.reject || (a.reject && x!.rejectHint !== a.hint)) {
      throw new Error(`${node.id}: a ${a.why} must be answered at ${a.index}${a.reject ? ` rejected, hint ${a.hint}` : ''}; it answered ${describe(sent)}`);
    }
  }

  /** A leader's commit index moves only to an entry of its own term (Raft §5.4.2). */
  private committedOwnTerm(node: RaftNode): void {
    const before = this.commits.get(node.id);
    const now = node.log.committed;
    this.commits.set(node.id, now);
    if (node.role === 'leader' && before !== undefined && now > before && node.log.term(now) !== node.term) {
      throw new Error(`leader ${node.id} of term ${node.term} committed ${before} → ${now}, an entry of term ${node.log.term(now)}`);
    }
  }

  /**
   * The vote rule for a request of this term or a later one (the stale ones are stale()'s): judged at the
   * member's next Ready against etcd's raft Step. A leader ignores one of a later term (its lease: it heard
   * from itself), and so does a follower within an election timeout of hearing its leader (lease()); past
   * that, a request of a later term finds the member with no vote and no leader (a vote's term is taken
   * first; a pre-vote of a later term is granted whatever the vote).
   */
  private ballot(node: RaftNode, m: Message): void {
    if (m.type !== 'MsgVote' && m.type !== 'MsgPreVote') return;
    const later = m.term > node.term;
    if (later && m.context !== 'transfer' && node.leader !== NONE) {
      const ticks = this.timerFrom.get(node.id) ?? 0;
      if (node.role === 'leader' || ticks < this.electionTicks) {
        this.ballots.set(node.id, { m, expect: 'ignore', term: node.term });
        return;
      }
    }
    const { vote } = node.status();
    const canVote = later || vote === m.from || (vote === NONE && node.leader === NONE);
    const logTerm = m.logTerm ?? 0n;
    const upToDate = logTerm > node.log.lastTerm() || (logTerm === node.log.lastTerm() && (m.index ?? 0) >= node.log.lastIndex());
    this.ballots.set(node.id, { m, expect: canVote && upToDate ? 'grant' : 'refuse', term: node.term });
  }

  private ballotHeld(node: RaftNode, rd: Ready | undefined): void {
    const b = this.ballots.get(node.id);
    if (b === undefined) return;
    this.ballots.delete(node.id);
    const type = b.m.type === 'MsgVote' ? 'MsgVoteResp' : 'MsgPreVoteResp';
    const answers = (rd?.messages ?? []).filter((x) => x.from === node.id && x.to === b.m.from && x.type === type);
    const a = answers[0];
    let ok: boolean;
    if (b.expect === 'ignore') ok = answers.length === 0 && node.term === b.term;
    else if (answers.length !== 1) ok = false;
    else if (b.expect === 'grant') ok = a!.reject !== true && a!.term === b.m.term && (type === 'MsgPreVoteResp' || node.status().vote === b.m.from);
    else ok = a!.reject === true && a!.term === node.term;
    if (!ok) throw new Error(`${node.id}, ${node.role} at term ${b.term} (now ${node.term}), log ${node.log.lastIndex()}@${node.log.lastTerm()}: a ${b.m.type} of term ${b.m.term} from ${b.m.from} for log ${b.m.index}@${b.m.logTerm} must be ${b.expect === 'ignore' ? 'ignored' : b.expect === 'grant' ? 'granted' : 'refused'}; it answered ${describe(answers)}`);
  }

  /**
   * A message of an older term changes nothing at its receiver; an append or heartbeat of one is answered at
   * the receiver's term (so a leader cut off by a partition learns it and steps down: etcd does so with
   * CheckQuorum or PreVote on, as the sim always runs), a pre-vote of one is refused, anything else is
   * dropped unanswered. Judged in the receiver's next Ready (or when it settles).
   */
  private stale(node: RaftNode, m: Message): void {
    // A node stepping while it handles a Ready (etcd's node does) may hold messages for the sender already,
    // which its next Ready carries with the step's answer, and that Ready's own apply may still move it: judged
    // on a node with nothing queued only.
    if (node.hasReady()) return;
    const answer = m.type === 'MsgApp' || m.type === 'MsgHeartbeat' ? 'MsgAppResp' : m.type === 'MsgPreVote' ? 'MsgPreVoteResp' : undefined;
    this.stales.set(node.id, { m, answer, before: view(node) });
  }

  private staleHeld(node: RaftNode, rd: Ready | undefined): void {
    const s = this.stales.get(node.id);
    if (s === undefined) return;
    this.stales.delete(node.id);
    const to = (rd?.messages ?? []).filter((x) => x.from === node.id && x.to === s.m.from);
    const ok = s.answer === undefined ? to.length === 0 : to.length === 1 && to[0]!.type === s.answer && to[0]!.term === node.term && (s.answer === 'MsgAppResp' || to[0]!.reject === true);
    if (!ok || view(node) !== s.before) {
      throw new Error(`${node.id} at term ${node.term}: a stale ${s.m.type} of term ${s.m.term} from ${s.m.from} was answered with ${describe(to)} (expected ${s.answer ?? 'nothing'}), state ${s.before} → ${view(node)}`);
    }
  }

  /** Before a lever acts on `node` (a forced election): a role or term change starts the timer again. */
  beforeLever(node: RaftNode): () => void {
    return this.roleOrTerm(node);
  }

  /** After a step or a tick: a role or term change starts the election timer again. */
  private roleOrTerm(node: RaftNode): () => void {
    const { role, term } = node;
    return () => {
      if (node.role !== role || node.term !== term) this.timerFrom.set(node.id, 0);
    };
  }

  /** `node` handed its member this Ready. */
  ready(node: RaftNode, rd: Ready): void {
    this.leaseHeld(node, rd);
    this.staleHeld(node, rd);
    this.ballotHeld(node, rd);
    this.owedHeld(node, rd);
    this.answerHeld(node, rd);
    this.committedOwnTerm(node);
    this.flow.ready(node, rd);
    this.readRules.ready(node, rd);
    const probe = this.probes.get(node.id);
    if (probe !== undefined) {
      this.probes.delete(node.id);
      const ok = rd.messages.some((x) => x.to === probe.to && (x.type === 'MsgSnap' || (x.type === 'MsgApp' && x.index! >= probe.lo && x.index! <= probe.hi)));
      if (!ok) throw new Error(`leader ${node.id}: ${probe.why}, but its next Ready sends ${probe.to} no append at an index in [${probe.lo}, ${probe.hi}] nor a snapshot: ${describe(rd.messages.filter((x) => x.to === probe.to))}`);
    }
    if (rd.softState?.role === 'leader') this.newLeader(node, rd);
    if (node.role === 'leader') this.leaderOf.set(node.term, node.id);
    this.timer(node, rd);
    for (const x of rd.messages) {
      if (x.from !== node.id) continue;
      // A heartbeat carries no commit index past what the member is known to hold (raft's sendHeartbeat:
      // min(match, committed)), or a follower with a stale tail would commit entries no quorum holds.
      const match = x.type === 'MsgHeartbeat' ? node.matchOf(x.to) : undefined;
      if (match !== undefined && (x.commit ?? 0) > Math.min(match, node.log.committed)) {
        throw new Error(`leader ${node.id}: its heartbeat tells ${x.to} commit ${x.commit}, past min(its match ${match}, commit ${node.log.committed})`);
      }
      if (LEADERS_ONLY.has(x.type) && this.leaderOf.get(x.term) !== node.id) {
        throw new Error(`${node.id}, ${node.role} at term ${node.term}: sent ${x.type} to ${x.to} at term ${x.term}, which ${this.leaderOf.has(x.term) ? `${this.leaderOf.get(x.term)} leads` : 'it never led'}`);
      }
      if (x.type === 'MsgTimeoutNow') {
        const t = this.transferOf(node);
        if (t?.to !== x.to || node.matchOf(x.to) !== node.log.lastIndex()) {
          throw new Error(`leader ${node.id}: sent MsgTimeoutNow to ${x.to} (its match ${node.matchOf(x.to)}, the log ends at ${node.log.lastIndex()}) while handing leadership to ${t?.to ?? 'no one'}`);
        }
      }
      if (x.type === 'MsgApp' || x.type === 'MsgSnap') this.appended(node, x);
      else if (x.type === 'MsgVote' || x.type === 'MsgPreVote') this.campaigns.set(node.id, { role: node.role, term: node.term, votes: new Map([[node.id, true]]) });
      else if (x.type === 'MsgHeartbeat' && x.context !== undefined) this.asked(node, x.context);
      else if (x.type === 'MsgReadIndexResp') this.released(node, x.context ?? '');
    }
    if (node.role === 'leader') for (const r of rd.readStates) this.released(node, r.context);
  }

  /** The member handled every Ready after a step: an expected probe that never came is an error. */
  settled(node: RaftNode): void {
    this.leaseHeld(node, undefined);
    this.staleHeld(node, undefined);
    this.ballotHeld(node, undefined);
    this.owedHeld(node, undefined);
    this.answerHeld(node, undefined);
    this.flow.settled(node);
    this.readRules.settled(node);
    const probe = this.probes.get(node.id);
    if (probe === undefined) return;
    this.probes.delete(node.id);
    throw new Error(`leader ${node.id}: ${probe.why}, but it sent nothing`);
  }

  /** A node started or restarted: what its earlier incarnation sent says nothing about the new one. */
  restarted(id: NodeId): void {
    this.timerFrom.set(id, 0);
    this.campaigns.delete(id);
    this.reads.delete(id);
    this.probes.delete(id);
    this.votes.delete(id);
    this.stales.delete(id);
    this.ballots.delete(id);
    this.transfers.delete(id);
    this.owed.delete(id);
    this.answers.delete(id);
    this.commits.delete(id);
    this.readRules.restarted(id);
    for (const k of [...this.lastSent.keys()]) if (k.startsWith(`${id}>`)) this.lastSent.delete(k);
  }

  /** What `from` last sent `to` says nothing about what follows an operator's lever (a snapshot sent now). */
  forgetSent(from: NodeId, to: NodeId): void {
    this.lastSent.delete(key(from, to));
  }

  /**
   * A snapshot that got no answer is followed by a probe at its index (did it arrive?), not by the same
   * snapshot again: only a newer snapshot may follow one directly.
   */
  private appended(node: RaftNode, x: Message): void {
    const k = key(x.from, x.to);
    const index = x.type === 'MsgSnap' ? x.snapshot!.index : (x.index ?? 0);
    const last = this.lastSent.get(k);
    if (x.type === 'MsgSnap' && last?.type === 'MsgSnap' && last.term === x.term && last.index === index) {
      throw new Error(`leader ${node.id}: sent ${x.to} its snapshot at ${index} twice without probing whether the first arrived`);
    }
    this.lastSent.set(k, { term: x.term, type: x.type, index });
  }

  /** A campaign or a vote granted starts the timer again; a campaign on a tick comes an election timeout late at least. */
  private timer(node: RaftNode, rd: Ready): void {
    const campaign = rd.messages.some((x) => x.from === node.id && (x.type === 'MsgPreVote' || x.type === 'MsgVote') && x.context !== 'transfer');
    const from = this.timerFrom.get(node.id);
    // Not even a transfer's MsgTimeoutNow makes a member campaign that is no voter in its own configuration.
    const asks = rd.messages.some((x) => x.from === node.id && (x.type === 'MsgPreVote' || x.type === 'MsgVote'));
    if (asks && (!node.conf.voters.includes(node.id) || node.removed)) throw new Error(`${node.id} campaigned, not a voter in its own configuration`);
    if (campaign && this.ticking === node.id && from !== undefined && from < this.electionTicks) {
      throw new Error(`${node.id} campaigned ${from} ticks after its election timer started again (an election timeout is ${this.electionTicks} ticks)`);
    }
    // An election timeout starts a pre-vote with PreVote on (the term moves only once a quorum would vote).
    const kind = this.preVote ? 'MsgPreVote' : 'MsgVote';
    if (campaign && this.ticking === node.id && !rd.messages.some((x) => x.from === node.id && x.type === kind)) {
      throw new Error(`${node.id} campaigned on its election timeout without a ${kind} (PreVote ${this.preVote ? 'on' : 'off'}): ${describe(rd.messages)}`);
    }
    if (campaign || rd.messages.some((x) => x.from === node.id && x.type === 'MsgVoteResp' && x.reject !== true)) this.timerFrom.set(node.id, 0);
  }

  private newLeader(node: RaftNode, rd: Ready): void {
    const { voters, learners } = node.conf;
    for (const id of [...voters, ...learners]) {
      if (id === node.id) continue;
      const app = rd.messages.find((x) => x.type === 'MsgApp' && x.to === id);
      const es = app?.entries ?? [];
      const only = es.length === 1 && es[0]!.term === node.term && es[0]!.data.length === 0 && app!.index === es[0]!.index - 1;
      if (!only) throw new Error(`leader ${node.id} of term ${node.term}: its first append to ${id} is ${app === undefined ? 'missing' : describe([app])}, not just its empty entry after its last index`);
    }
  }

  private rejected(node: RaftNode, m: Message): void {
    const last = this.lastSent.get(key(node.id, m.from));
    const match = node.matchOf(m.from);
    const index = m.index ?? 0;
    // Only the answer to the append sent last, past what the member is known to hold, says where to probe.
    if (last === undefined || last.term !== node.term || last.type !== 'MsgApp' || last.index !== index || match === undefined || index <= match) return;
    const hint = m.rejectHint ?? index;
    const lo = progressOf(node, m.from)?.state === 'replicate' ? match : Math.min(index - 1, hint);
    this.probes.set(node.id, { to: m.from, lo, hi: index - 1, why: `${m.from} rejected its append at ${index} (hint ${hint})` });
  }

  private voteAnswer(node: RaftNode, m: Message): (() => void) | undefined {
    const c = this.campaigns.get(node.id);
    const pre = node.role === 'pre-candidate';
    if (c === undefined || c.role !== node.role || c.term !== node.term || (!pre && node.role !== 'candidate')) return undefined;
    if (m.type !== (pre ? 'MsgPreVoteResp' : 'MsgVoteResp')) return undefined;
    // A granted pre-vote answers at the term the pre-candidate would take; a refusal at the voter's own.
    const counted = (m.reject !== true && pre) ? m.term === node.term + 1n : m.term === node.term;
    if (!counted) return undefined;
    if (!c.votes.has(m.from)) c.votes.set(m.from, m.reject !== true);
    const voters = node.conf.voters;
    const quorum = Math.floor(voters.length / 2) + 1;
    let yes = 0;
    let no = 0;
    for (const id of voters) {
      const v = c.votes.get(id);
      if (v === true) yes++;
      else if (v === false) no++;
    }
    const outcome: Outcome = yes >= quorum ? 'won' : no > voters.length - quorum ? 'lost' : 'pending';
    const { role, term } = node;
    return () => {
      const expected = outcome === 'lost' ? ['follower'] : outcome === 'pending' ? [role] : pre ? ['candidate', 'leader'] : ['leader'];
      const sameTerm = outcome === 'won' && pre ? node.term === term + 1n : node.term === term;
      if (!expected.includes(node.role) || !sameTerm) {
        throw new Error(`${node.id}, ${role} at term ${term} with ${yes} yes and ${no} no of voters ${String(voters)}: the election is ${outcome}, yet it is ${node.role} at term ${node.term}`);
      }
    };
  }

  private asked(node: RaftNode, context: string): void {
    let r = this.reads.get(node.id);
    if (r === undefined || r.term !== node.term) this.reads.set(node.id, (r = { term: node.term, asked: new Map(), seq: 0 }));
    if (!r.asked.has(context)) r.asked.set(context, { seq: r.seq++, acks: new Set() });
  }

  private acked(node: RaftNode, from: NodeId, context: string): void {
    const r = this.reads.get(node.id);
    const answered = r?.term === node.term ? r.asked.get(context) : undefined;
    if (answered === undefined || !node.conf.voters.includes(from)) return;
    // An answer to the heartbeat of one read confirms the leader after every read asked before it too.
    for (const x of r!.asked.values()) if (x.seq <= answered.seq) x.acks.add(from);
  }

  private released(node: RaftNode, context: string): void {
    const voters = node.conf.voters;
    if (voters.length === 1 && voters[0] === node.id) return; // a lone voter confirms itself
    const r = this.reads.get(node.id);
    const read = r?.term === node.term ? r.asked.get(context) : undefined;
    if (read === undefined) throw new Error(`leader ${node.id} released read ${context} in term ${node.term}, which it was not asked in`);
    r!.asked.delete(context);
    const quorum = Math.floor(voters.length / 2) + 1;
    const confirmed = read.acks.size + (voters.includes(node.id) ? 1 : 0);
    if (confirmed < quorum) throw new Error(`leader ${node.id} released read ${context} with ${confirmed} of ${quorum} voters confirming it after it was asked`);
  }
}

/** What a stale message must not move: role, term, vote, leader, log end and commit. */
function view(node: RaftNode): string {
  const st = node.status();
  return `${st.role} term ${st.term} vote ${st.vote} leader ${st.leader} last ${st.lastIndex} commit ${st.commit}`;
}

function describe(ms: readonly Message[]): string {
  return JSON.stringify(
    ms.map((x) => ({ type: x.type, term: x.term, index: x.index, reject: x.reject, entries: x.entries?.map((e) => `${e.index}@${e.term}`) })),
    (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v),
  );
}
