/**
 * What a leader's flow control does with a follower's answer to its appends (raft's stepLeader for
 * MsgAppResp, tracker.Progress's MaybeDecrTo and MaybeUpdate), judged from outside around each step (the step
 * rules call these):
 *  - a rejection of an append below what the member is known to hold is stale (an answer to an earlier
 *    append, delayed or duplicated on the way): the leader sends that member nothing for it — it neither
 *    probes again nor sends a snapshot.
 * (A stale rejection at or past the match index is told apart only by the progress state, which the leader
 * keeps to itself: the step rules judge the answer to the append sent last.)
 */
import type { Message, NodeId, RaftNode, Ready } from '../../src/raft/index.js';

export class FlowRules {
  /** Per leader: a member it must send nothing to in its next Ready, and why. */
  private readonly quiet = new Map<NodeId, { readonly to: NodeId; readonly why: string }>();

  /** Before a leader of `m.term` steps `m`. */
  beforeStep(node: RaftNode, m: Message): void {
    // Judged on a leader with nothing queued: one stepping while it handles a Ready (etcd's node does) may
    // already hold appends for the member, which its next Ready carries with whatever the step sent.
    if (m.type !== 'MsgAppResp' || m.reject !== true || node.hasReady()) return;
    const match = node.matchOf(m.from);
    const index = m.index ?? 0;
    if (match !== undefined && index < match) this.quiet.set(node.id, { to: m.from, why: `${m.from} rejected an append at ${index}, below its match ${match}` });
  }

  ready(node: RaftNode, rd: Ready): void {
    const q = this.quiet.get(node.id);
    if (q === undefined) return;
    this.quiet.delete(node.id);
    const sent = rd.messages.filter((x) => x.to === q.to && (x.type === 'MsgApp' || x.type === 'MsgSnap'));
    if (sent.length > 0) throw new Error(`leader ${node.id}: ${q.why} (stale), yet its next Ready sends it ${sent.map((x) => `${x.type} at ${x.index ?? x.snapshot?.index}`).join(', ')}`);
  }

  settled(node: RaftNode): void {
    this.quiet.delete(node.id);
  }
}
