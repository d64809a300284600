/**
 * What a leader's flow control does with a follower's answers (raft's stepLeader for MsgAppResp and
 * MsgHeartbeatResp, tracker.Progress's MaybeDecrTo and MaybeUpdate), judged around each step against a
 * naive reference of etcd 3.4.23's raft (the step rules call these):
 *  - a rejection is stale (an answer to an earlier append, delayed or duplicated on the way) when it is at
 *    or below a replicating member's match, or not of the index a probe was sent at: the leader's progress
 *    stays as it was and it sends that member nothing — it neither probes again nor sends a snapshot;
 *  - any other rejection probes again (MaybeDecrTo): a replicating member from its match (BecomeProbe, the
 *    member's last index unused), a probing one from the rejected index or one past the member's last index,
 *    whichever is lower — the next Ready sends it that append (or a snapshot, if the log was compacted past
 *    it) and the probe waits for its answer; one being sent a snapshot is sent nothing (it is paused);
 *  - an acknowledgement at or below the member's match is stale too (MaybeUpdate changes nothing): the
 *    leader's progress of that member stays as it was (a probe stays paused: the next heartbeat answer
 *    resumes it) and it sends that member nothing;
 *  - one past the match moves the match there, turns a probing member to replicating (and one being sent a
 *    snapshot, once the match reaches the snapshot), and sends that member an append exactly when the commit
 *    index moved (bcastAppend), the member was paused (a probe with its append out, or a snapshot: it may
 *    lack the commit index), or entries past its next index are unsent; otherwise nothing. A replicating
 *    member is then sent all of the log (maybeSendAppend's loop, with no inflight limit in the model): its
 *    next index is one past the leader's last; one still short of its snapshot stays waiting for it;
 *  - a heartbeat answer resumes a probe and sends the member an append exactly when its match is behind the
 *    leader's last index (a member being sent a snapshot: nothing);
 *  - a late answer to the campaign it won changes nothing and sends nothing;
 *  - once a leader handled its Readies, no member it probes is idle while its log has entries the member
 *    lacks: a probe has its append out (raft's ProbeSent) as soon as there is something to send — after the
 *    leader's election, a heartbeat answer, a rejection, a snapshot given up, or a conf change that added
 *    the member (switchToConfig's maybeSendAppend: the new member is sent its first append at once, not
 *    at its first heartbeat answer).
 * The progress is the leader's own (raft keeps it to itself: etcd shows it in its Status); the rules read
 * it through the node's tracker.
 */
import type { Message, NodeId, RaftNode, Ready } from '../../src/raft/index.js';

/** The leader's view of one member (src/raft/progress.ts's Progress), as the rules read it. */
interface ProgressView {
  readonly match: number;
  readonly next: number;
  readonly state: 'probe' | 'replicate' | 'snapshot';
  readonly paused: boolean;
  readonly pendingSnapshot: number;
}

/** The leader's progress per member, as it is (the node keeps its tracker to itself). */
const progresses = (node: RaftNode): ReadonlyMap<NodeId, ProgressView> => (node as unknown as { readonly tracker: { readonly prs: ReadonlyMap<NodeId, ProgressView> } }).tracker.prs;

/** The leader's progress of `id`, copied (undefined when it tracks no such member). */
export function progressOf(node: RaftNode, id: NodeId): ProgressView | undefined {
  const pr = progresses(node).get(id);
  return pr === undefined ? undefined : { match: pr.match, next: pr.next, state: pr.state, paused: pr.paused, pendingSnapshot: pr.pendingSnapshot };
}

const show = (p: ProgressView | undefined): string => (p === undefined ? 'untracked' : `${p.state}${p.paused ? ' (paused)' : ''} match ${p.match} next ${p.next}`);

/** What the leader's next Ready must do for the member an answer came from. */
interface Expect {
  readonly to: NodeId;
  readonly why: string;
  /** Whether the Ready sends it an append or snapshot (undefined: decided at the Ready, from the commit index). */
  readonly sends: boolean | undefined;
  /** The progress it must show then, given the leader's last index then (undefined: not judged). */
  readonly progress: ((p: ProgressView | undefined, last: number) => boolean) | undefined;
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
    const same = (p: ProgressView | undefined): boolean => p !== undefined && p.match === pr.match && p.next === pr.next && p.state === pr.state && p.paused === pr.paused;
    if (m.type === 'MsgAppResp' && m.reject === true) {
      if (pr.state === 'replicate' ? index <= pr.match : index !== pr.next - 1) {
        set({ why: `${m.from} (${show(pr)}) rejected an append at ${index} (stale)`, sends: false, progress: same, owed: false });
        return;
      }
      if (pr.state === 'snapshot') {
        set({ why: `${m.from} (${show(pr)}), being sent a snapshot, rejected an append at ${index}`, sends: false, progress: (p) => p?.state === 'snapshot', owed: false });
        return;
      }
      // MaybeDecrTo, and BecomeProbe for a replicating member; the probe is then sent (or a snapshot).
      const next = pr.state === 'replicate' ? pr.match + 1 : Math.max(Math.min(index, (m.rejectHint ?? index) + 1), 1);
      const probing = (p: ProgressView | undefined): boolean => p !== undefined && ((p.state === 'probe' && p.paused && p.next === next) || p.state === 'snapshot');
      set({ why: `${m.from} (${show(pr)}) rejected an append at ${index} (its last index ${m.rejectHint ?? 'not given'}), so it is probed from ${next}`, sends: true, progress: probing, owed: false });
      return;
    }
    if (m.type === 'MsgVoteResp' || m.type === 'MsgPreVoteResp') {
      // A late answer to the campaign it won: a leader ignores it (stepLeader has no case for it).
      set({ why: `${m.from} (${show(pr)}) answered its campaign late`, sends: false, progress: same, owed: false });
      return;
    }
    if (m.type === 'MsgHeartbeatResp') {
      // A member being sent a snapshot is paused: sendAppend sends it nothing.
      set({ why: `${m.from} (${show(pr)}) answered a heartbeat, the log ending at ${last}`, sends: pr.state !== 'snapshot' && pr.match < last, progress: undefined, owed: false });
      return;
    }
    if (index <= pr.match) {
      set({ why: `${m.from} (${show(pr)}) acknowledged ${index}, not past its match (stale)`, sends: false, progress: same, owed: false });
      return;
    }
    if (pr.state === 'snapshot' && index < pr.pendingSnapshot) {
      // The match moves, but the member still waits for its snapshot: nothing is sent to it.
      const waiting = (p: ProgressView | undefined): boolean => p !== undefined && p.match === index && p.state === 'snapshot';
      set({ why: `${m.from} (${show(pr)}) acknowledged ${index}, short of its snapshot at ${pr.pendingSnapshot}`, sends: false, progress: waiting, owed: false }, transferee === m.from && index === last);
      return;
    }
    // MaybeUpdate: the match moves; a probe (or a snapshot now reached) turns to replicate from the match
    // (BecomeReplicate), a replicating member keeps the larger next index; then all of the log is sent to it
    // (or a snapshot, if the log was compacted past it meanwhile).
    const next = pr.state === 'replicate' ? Math.max(pr.next, index + 1) : index + 1;
    const moved = (p: ProgressView | undefined, lastNow: number): boolean => p !== undefined && p.match === index && ((p.state === 'replicate' && p.next === lastNow + 1) || p.state === 'snapshot');
    // Handing leadership to that member, whose log is now the leader's: MsgTimeoutNow, once.
    set({ why: `${m.from} (${show(pr)}) acknowledged ${index}, the log ending at ${last}`, sends: undefined, progress: moved, owed: pr.paused || pr.state === 'snapshot' || next <= last }, transferee === m.from && index === last);
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
    this.noIdleProbe(node);
    const taken = this.take(node);
    if (taken === undefined) return;
    const { e, sends } = taken;
    if (e.timeoutNow) throw new Error(`leader ${node.id}: ${e.why}, handing leadership to it, whose log is now the leader's: it sent no MsgTimeoutNow`);
    if (sends) throw new Error(`leader ${node.id}: ${e.why} (commit ${e.commit} → ${node.log.committed}), so it must send that member an append; it sent nothing`);
  }

  /** A leader probing a member that lacks entries has an append out to it (or is sending it a snapshot). */
  private noIdleProbe(node: RaftNode): void {
    if (node.role !== 'leader') return;
    const last = node.log.lastIndex();
    for (const [id, p] of progresses(node)) {
      if (id !== node.id && p.state === 'probe' && !p.paused && p.match < last) throw new Error(`leader ${node.id}: probing ${id} (${show(p)}) with its log ending at ${last}, yet it has no append out to it`);
    }
  }

  /** The expectation waiting on `node`, taken, its progress judged, and whether it owes that member an append. */
  private take(node: RaftNode): { e: Expect; sends: boolean } | undefined {
    const e = this.expect.get(node.id);
    if (e === undefined) return undefined;
    this.expect.delete(node.id);
    const p = progressOf(node, e.to);
    if (e.progress !== undefined && !e.progress(p, node.log.lastIndex())) throw new Error(`leader ${node.id}: ${e.why}; its progress of that member is now ${show(p)}`);
    return { e, sends: e.sends ?? (e.owed || node.log.committed > e.commit) };
  }
}
