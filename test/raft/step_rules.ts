/**
 * What etcd's raft guarantees of each single step of a node, judged from outside by naive references of
 * its own (the sim network calls these around every message it delivers and every Ready it handles):
 *  - a new leader appends to every member at once, from its own last index (Raft §5.3: nextIndex starts
 *    just after the leader's last entry), so its first append to each carries just its term's empty entry;
 *  - a follower's rejection of the append the leader last sent it is answered at once by a probe lower
 *    than the rejected index and no lower than the follower's hint (its last index): probing resumes
 *    where the follower said, one step back at least, never from scratch;
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
 *    change as if it led would append to the new member in a term some other member leads.
 * These pin the pace and vote-counting rules whose mutants only change how many rounds a catch-up or an
 * election takes (docs/mutation.md): the safety checker and the end-to-end bounds cannot see them.
 */
import { NONE, type Message, type NodeId, type RaftNode, type Ready } from '../../src/raft/index.js';

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

  constructor(private readonly electionTicks: number) {}

  /** Before `node` steps `m`: returns what must hold right after the step. */
  beforeStep(node: RaftNode, m: Message): () => void {
    const after = this.roleOrTerm(node);
    if (m.term !== 0n && m.term < node.term) {
      this.stale(node, m);
      return after;
    }
    if (node.role === 'leader' && m.term === node.term) {
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
   * A message of an older term changes nothing at its receiver; an append or heartbeat of one is answered at
   * the receiver's term (so a leader cut off by a partition learns it and steps down: etcd does so with
   * CheckQuorum or PreVote on, as the sim always runs), a pre-vote of one is refused, anything else is
   * dropped unanswered. Judged in the receiver's next Ready (or when it settles).
   */
  private stale(node: RaftNode, m: Message): void {
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
    if (campaign && (!node.conf.voters.includes(node.id) || node.removed)) throw new Error(`${node.id} campaigned, not a voter in its own configuration`);
    if (campaign && this.ticking === node.id && from !== undefined && from < this.electionTicks) {
      throw new Error(`${node.id} campaigned ${from} ticks after its election timer started again (an election timeout is ${this.electionTicks} ticks)`);
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
    this.probes.set(node.id, { to: m.from, lo: Math.min(index - 1, hint), hi: index - 1, why: `${m.from} rejected its append at ${index} (hint ${hint})` });
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
    ms.map((x) => ({ type: x.type, index: x.index, entries: x.entries?.map((e) => `${e.index}@${e.term}`) })),
    (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v),
  );
}
