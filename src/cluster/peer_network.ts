/**
 * The network between the members of a simulated cluster: what etcd's rafthttp carries between peers,
 * with the faults of iptables and SIGSTOP/SIGKILL. A Raft message reaches its peer when neither is down and
 * both are on the same side of every partition; otherwise it is lost, as rafthttp drops messages to a peer
 * it cannot reach (Raft retries on its own: heartbeats, probes, snapshots). A paused (SIGSTOPped) peer
 * neither sends nor receives; when it runs again, the first thing it reads is its leader's latest heartbeat
 * (raft_group.ts), whose answer makes the leader send what it missed — from the log, or the leader's
 * snapshot when the log was compacted past it (the entries it had in flight are not replayed: etcd's leader
 * sends a stopped follower only a window of them before it waits).
 * A member that removed another (its applied MemberRemove) refuses that member's messages and tells it so,
 * as etcd's rafthttp answers a removed peer: the removed member then stops (membership.ts). Since when
 * each member has reached each other one is kept, for etcd's HealthInterval rule of membership changes.
 * Delivery takes no virtual time: messages are delivered in the order sent, all within the instant they
 * were sent in — one FIFO for the whole cluster, so the same calls give the same order (same seed, same
 * trace).
 */
import type { Message } from '../raft/index.js';
import type { MemberState } from './member_state.js';

export class PeerNetwork {
  /** Each member's side of the current partition (all 0: none). */
  partitionOf: number[];
  private queue: Message[] = [];
  private head = 0;
  private draining = false;

  /** Since when (clock ms) each member has reached each other one, while it does. */
  private readonly since = new Map<MemberState, Map<MemberState, number>>();

  constructor(
    private readonly states: readonly MemberState[],
    private readonly deliver: (to: MemberState, m: Message) => void,
    private readonly refusedAsRemoved: (from: MemberState) => void,
  ) {
    this.partitionOf = new Array<number>(states.length).fill(0);
  }

  /** After a change of who reaches whom (a lever, a member joined or stopped): the pairs' since times follow. */
  noteTopology(now: number): void {
    for (const a of this.states) {
      let row = this.since.get(a);
      if (row === undefined) this.since.set(a, (row = new Map()));
      for (const b of this.states) {
        if (a === b) continue;
        if (!this.connected(a, b)) row.delete(b);
        else if (!row.has(b)) row.set(b, now);
      }
    }
  }

  /** Whether `a` reaches the member with ID `id` now (etcd's peer stream is active). */
  peerActive(a: MemberState, id: bigint): boolean {
    const b = this.byId(id);
    return b !== undefined && this.connected(a, b);
  }

  /** Since when `a` has reached the member with ID `id`; undefined while it does not (etcd's ActiveSince). */
  activeSince(a: MemberState, id: bigint): number | undefined {
    const b = this.byId(id);
    return b !== undefined && this.connected(a, b) ? this.since.get(a)?.get(b) : undefined;
  }

  /** Two members reach each other: both up, same side of every partition. */
  connected(a: MemberState, b: MemberState): boolean {
    return a.up && b.up && this.partitionOf[a.index] === this.partitionOf[b.index];
  }

  send(m: Message): void {
    this.queue.push(m);
  }

  /** Whether messages wait to be delivered. */
  get pending(): boolean {
    return this.head < this.queue.length;
  }

  /** Delivers every message sent, those sent meanwhile included; re-entrant calls leave it to the outer one. */
  drain(): void {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.head < this.queue.length) {
        const m = this.queue[this.head++]!;
        const from = this.byId(m.from);
        const to = this.byId(m.to);
        if (from === undefined || to === undefined || !this.connected(from, to)) continue;
        if (to.removedIds.has(from.id)) this.refusedAsRemoved(from);
        else this.deliver(to, m);
      }
      this.queue = [];
      this.head = 0;
    } finally {
      this.draining = false;
    }
  }

  byId(id: bigint): MemberState | undefined {
    for (const s of this.states) if (s.id === id) return s;
    return undefined;
  }
}
