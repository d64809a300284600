/**
 * What a leader's flow control does with a follower's answers (raft's stepLeader for MsgAppResp and
 * MsgHeartbeatResp, tracker.Progress's MaybeDecrTo and MaybeUpdate), judged around each step against a
 * naive reference of etcd 3.4.23's raft (the step rules call these):
 *  - a rejection of an append below what the member is known to hold is stale (an answer to an earlier
 *    append, delayed or duplicated on the way): the leader sends that member nothing for it — it neither
 *    probes again nor sends a snapshot;
 *  - an acknowledgement at or below the member's match is stale too (MaybeUpdate changes nothing): the
 *    leader's progress of that member stays as it was (a probe stays paused: the next heartbeat answer
 *    resumes it) and it sends that member nothing;
 *  - one past the match moves the match there, turns a probing member to replicating, and sends that member
 *    an append exactly when the commit index moved (bcastAppend), the member was paused (it may lack the
 *    commit index), or entries past its next index are unsent; otherwise nothing;
 *  - a heartbeat answer resumes a probe and sends the member an append exactly when its match is behind the
 *    leader's last index;
 *  - a late answer to the campaign it won changes nothing and sends nothing.
 * The progress is the leader's own (raft keeps it to itself: etcd shows it in its Status); the rules read
 * it through the node's tracker. A member the leader is sending a snapshot is left out: its answers are
 * the snapshot rules' (step_rules.ts).
 */
import type { Message, NodeId, RaftNode, Ready } from '../../src/raft/index.js';

/** The leader's view of one member (src/raft/progress.ts's Progress), as the rules read it. */
interface ProgressView {
  readonly match: number;
  readonly next: number;
  readonly state: 'probe' | 'replicate' | 'snapshot';
  readonly paused: boolean;
}

/** The leader's progress of `id`, copied (undefined when it tracks no such member). */
export function progressOf(node: RaftNode, id: NodeId): ProgressView | undefined {
  const pr = (node as unknown as { readonly tracker: { readonly prs: ReadonlyMap<NodeId, ProgressView> } }).tracker.prs.get(id);
  return pr === undefined ? undefined : { match: pr.match, next: pr.next, state: pr.state, paused: pr.paused };
}

const show = (p: ProgressView | undefined): string => (p === undefined ? 'untracked' : `${p.state}${p.paused ? ' (paused)' : ''} match ${p.match} next ${p.next}`);

/** What the leader's next Ready must do for the member an answer came from. */
interface Expect {
  readonly to: NodeId;
  readonly why: string;
  /** Whether the Ready sends it an append or snapshot (undefined: decided at the Ready, from the commit index). */
  readonly sends: boolean | undefined;
  /** The progress it must show then (undefined: not judged). */
  readonly progress: ((p: ProgressView | undefined) => boolean) | undefined;
  /** The commit index before the step and whether a paused member or unsent entries owe it an append anyway. */
  readonly commit: number;
  readonly owed: boolean;
  /** The member is the one the leader hands leadership to, and its log now matches the leader's: MsgTimeoutNow. */
  readonly timeoutNow: boolean;
}

export class FlowRules {
  /** Per leader: what its next Ready must do for the member whose answer it stepped. */
  private readonly expect = new Map<NodeId, Expect>();

  /**
   * Before a leader of `m.term` steps `m`. `midReady`: the leader is handling a Ready meanwhile (etcd's node
   * steps messages while a Ready is out), whose advance may still send to the member (an applied conf change).
   */
  beforeStep(node: RaftNode, m: Message, midReady: boolean, transferee: NodeId | undefined): void {
    // Judged on a leader with nothing queued: one stepping while it handles a Ready may already hold appends
    // for the member, which its next Ready carries with whatever the step sent.
    if ((m.type !== 'MsgAppResp' && m.type !== 'MsgHeartbeatResp' && m.type !== 'MsgVoteResp' && m.type !== 'MsgPreVoteResp') || node.hasReady() || midReady) return;
    const pr = progressOf(node, m.from);
    if (pr === undefined) return;
    const index = m.index ?? 0;
    const last = node.log.lastIndex();
    const commit = node.log.committed;
    const set = (e: Omit<Expect, 'to' | 'commit' | 'timeoutNow'>, timeoutNow = false): void => void this.expect.set(node.id, { ...e, to: m.from, commit, timeoutNow });
    if (m.type === 'MsgAppResp' && m.reject === true) {
      if (index < pr.match) set({ why: `${m.from} rejected an append at ${index}, below its match ${pr.match} (stale)`, sends: false, progress: undefined, owed: false });
      return;
    }
    const same = (p: ProgressView | undefined): boolean => p !== undefined && p.match === pr.match && p.next === pr.next && p.state === pr.state && p.paused === pr.paused;
    if (m.type === 'MsgVoteResp' || m.type === 'MsgPreVoteResp') {
      // A late answer to the campaign it won: a leader ignores it (stepLeader has no case for it).
      set({ why: `${m.from} (${show(pr)}) answered its campaign late`, sends: false, progress: same, owed: false });
      return;
    }
    if (pr.state === 'snapshot') return;
    if (m.type === 'MsgHeartbeatResp') {
      set({ why: `${m.from} (${show(pr)}) answered a heartbeat, the log ending at ${last}`, sends: pr.match < last, progress: undefined, owed: false });
      return;
    }
    if (index <= pr.match) {
      set({ why: `${m.from} (${show(pr)}) acknowledged ${index}, not past its match (stale)`, sends: false, progress: same, owed: false });
      return;
    }
    // MaybeUpdate: the match moves; a probe turns to replicate from the match (BecomeReplicate), a replicating
    // member keeps the larger next index.
    const next = pr.state === 'probe' ? index + 1 : Math.max(pr.next, index + 1);
    const moved = (p: ProgressView | undefined): boolean => p !== undefined && p.match === index && (p.state === 'replicate' || p.state === 'snapshot');
    // Handing leadership to that member, whose log is now the leader's: MsgTimeoutNow, once.
    set({ why: `${m.from} (${show(pr)}) acknowledged ${index}, the log ending at ${last}`, sends: undefined, progress: moved, owed: pr.paused || next <= last }, transferee === m.from && index === last);
  }

  ready(node: RaftNode, rd: Ready): void {
    const taken = this.take(node);
    if (taken === undefined) return;
    const { e, sends } = taken;
    const sent = rd.messages.filter((x) => x.to === e.to && (x.type === 'MsgApp' || x.type === 'MsgSnap'));
    const timeoutNow = rd.messages.filter((x) => x.to === e.to && x.type === 'MsgTimeoutNow').length;
    if (timeoutNow !== (e.timeoutNow ? 1 : 0)) throw new Error(`leader ${node.id}: ${e.why}, handing leadership to ${e.timeoutNow ? 'it' : 'another or none'}: it sent ${timeoutNow} MsgTimeoutNow, expected ${e.timeoutNow ? 1 : 0}`);
    if ((sent.length > 0) !== sends) {
      throw new Error(`leader ${node.id}: ${e.why} (commit ${e.commit} → ${node.log.committed}), so its next Ready ${sends ? 'must send it an append' : 'sends it nothing'}; it sends ${sent.length === 0 ? 'none' : sent.map((x) => `${x.type} at ${x.index ?? x.snapshot?.index}`).join(', ')}`);
    }
  }

  /** The leader handled every Ready after the step: one that queued nothing sent nothing. */
  settled(node: RaftNode): void {
    const taken = this.take(node);
    if (taken === undefined) return;
    const { e, sends } = taken;
    if (e.timeoutNow) throw new Error(`leader ${node.id}: ${e.why}, handing leadership to it, whose log is now the leader's: it sent no MsgTimeoutNow`);
    if (sends) throw new Error(`leader ${node.id}: ${e.why} (commit ${e.commit} → ${node.log.committed}), so it must send that member an append; it sent nothing`);
  }

  /** The expectation waiting on `node`, taken, its progress judged, and whether it owes that member an append. */
  private take(node: RaftNode): { e: Expect; sends: boolean } | undefined {
    const e = this.expect.get(node.id);
    if (e === undefined) return undefined;
    this.expect.delete(node.id);
    const p = progressOf(node, e.to);
    if (e.progress !== undefined && !e.progress(p)) throw new Error(`leader ${node.id}: ${e.why}; its progress of that member is now ${show(p)}`);
    return { e, sends: e.sends ?? (e.owed || node.log.committed > e.commit) };
  }
}
