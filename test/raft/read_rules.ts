/**
 * What a leader does with a read it takes (raft's stepLeader for MsgReadIndex, ReadOnlySafe, etcd's
 * default): unless it is its configuration's only voter (which confirms the read itself at once), it sends
 * every member it tracks a heartbeat carrying the read's context in the same step (bcastHeartbeatWithCtx),
 * so the next round of answers confirms the read rather than the heartbeat a tick later. Judged at the
 * leader's next Ready (the step rules call these).
 */
import type { NodeId, RaftNode, Ready } from '../../src/raft/index.js';

export class ReadRules {
  /** Per leader: the read it took, and the members its next Ready must send a heartbeat with it. */
  private readonly asked = new Map<NodeId, { readonly context: string; readonly to: readonly NodeId[] }>();

  /** `node` is asked for a read under `context` (by its own client, or passed on to it). */
  beforeRead(node: RaftNode, context: string): void {
    // Raft drops a read at a leader that has not committed an entry of its term yet (etcd 3.4).
    if (node.role !== 'leader' || node.log.term(node.log.committed) !== node.term) return;
    const { voters, learners } = node.conf;
    if (voters.length === 1 && voters[0] === node.id) return;
    this.asked.set(node.id, { context, to: [...voters, ...learners].filter((id) => id !== node.id) });
  }

  ready(node: RaftNode, rd: Ready): void {
    const a = this.asked.get(node.id);
    if (a === undefined) return;
    this.asked.delete(node.id);
    const missed = a.to.filter((id) => !rd.messages.some((x) => x.type === 'MsgHeartbeat' && x.to === id && x.context === a.context));
    if (missed.length > 0) throw new Error(`leader ${node.id}: took read ${a.context}, yet its next Ready sends no heartbeat carrying it to ${missed.join(', ')}`);
  }

  settled(node: RaftNode): void {
    const a = this.asked.get(node.id);
    if (a === undefined) return;
    this.asked.delete(node.id);
    throw new Error(`leader ${node.id}: took read ${a.context}, yet it sent nothing`);
  }

  restarted(id: NodeId): void {
    this.asked.delete(id);
  }
}
