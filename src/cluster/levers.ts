/**
 * The faults a test or a teaching scenario pulls on a simulated cluster, each what an operator does to a
 * real one: SIGSTOP/SIGCONT (pause, resume), iptables (partition, isolate, heal), a slow disk (apply lag),
 * a dropped or slow client connection (drop, delay, restore a link), SIGKILL and a restart on the same data
 * dir (crash, restart), `etcdctl move-leader`, and Raft's own log compaction and snapshot sending. Each is
 * deterministic and takes effect at the current instant of the clock.
 */
import { errTransportClosing, EtcdServer } from '../server/index.js';
import { writeEtcdSnapshot } from '../snapshot/index.js';
import type { Applier } from './apply.js';
import type { LeaseHandoff } from './lease_handoff.js';
import type { MemberRef, MemberState } from './member_state.js';
import type { Requests } from './proposals.js';
import type { RaftGroup } from './raft_group.js';
import type { Routing } from './routing.js';

/** The cluster's levers; members by index, name, member ID or state. @public */
export interface ClusterLevers {
  /** SIGSTOP: the member stops: it neither sends nor receives, applies nothing, answers nothing until resumed. */
  pause(ref: MemberRef): void;
  /** SIGCONT: the member carries on where it stopped; calls it held run now, in order. */
  resume(ref: MemberRef): void;
  /**
   * Splits the members into groups that only reach members of their own group (a member in no group is
   * alone). `partition([[0], [1, 2]])` isolates member 0.
   */
  partition(groups: ReadonlyArray<readonly MemberRef[]>): void;
  /** Cuts one member off from all others. */
  isolate(ref: MemberRef): void;
  /** Ends every partition. */
  heal(): void;
  /** Sets how long after commit the member applies entries (its lag behind the leader). */
  setApplyLag(ref: MemberRef, ms: number): void;
  /** Drops everything on the link between a client and a member, both ways, until restored. */
  dropLink(client: string, ref: MemberRef): void;
  /** Delays the link between a client and a member by `ms` each way. */
  delayLink(client: string, ref: MemberRef, ms: number): void;
  /** Restores the link between a client and a member (no drop, no delay). */
  restoreLink(client: string, ref: MemberRef): void;
  /**
   * Kills the member (SIGKILL): its calls and streams break, its in-memory state is gone; what survives is
   * its backend (the state it applied, as bbolt holds it) and its Raft log and vote (the WAL).
   */
  crash(ref: MemberRef): void;
  /**
   * Starts a crashed member again: its server is rebuilt from the backend it left (etcd rebuilds its index
   * from bbolt, its lessor from the lease bucket), it rejoins as a follower of the same term, replays the
   * committed entries it had not applied, and catches up from the leader. A member removed from the
   * cluster stays down.
   */
  restart(ref: MemberRef): void;
  /**
   * Maintenance.MoveLeader as a lever: the leader hands leadership to `target` (etcd's leadership transfer:
   * the transferee campaigns at once, with a term one higher, ignoring the voters' leader lease). Returns
   * whether `target` is leader afterwards.
   */
  moveLeader(ref: MemberRef): boolean;
  /**
   * Forces an election now: the leader steps down and `candidate` (default: the first member up) campaigns
   * as when its election timeout fires.
   */
  forceElection(candidate?: MemberRef): void;
  /**
   * The leader compacts its Raft log up to its applied index (etcd does so every --snapshot-count entries,
   * keeping SnapshotCatchUpEntries): a follower whose log ends before the compaction point can then only
   * catch up through a snapshot of the leader's state. `keep` entries stay (default 0). Returns the new
   * compaction point.
   */
  compactLog(keep?: number): number;
  /** Sends the leader's snapshot to a member now (what the leader does for a follower behind its log). */
  installSnapshot(ref: MemberRef): void;
}

/** The parts of the cluster the levers move. */
export interface LeverContext {
  readonly raft: RaftGroup;
  readonly applier: Applier;
  readonly requests: Requests;
  readonly routing: Routing;
  readonly handoff: LeaseHandoff;
  member(ref: MemberRef): MemberState;
  trace(event: string): void;
  /** Hooks a member's (new) server into the cluster and tells the front doors about it. */
  serverBuilt(m: MemberState): void;
}

/** A lag or delay must be whole ms, >= 0. */
export function checkLag(ms: number): void {
  if (!Number.isSafeInteger(ms) || ms < 0) throw new RangeError(`EtcdCluster: a lag or delay must be an integer number of ms >= 0, got ${ms}`);
}

/** The levers, on the cluster's parts. */
export class Levers implements ClusterLevers {
  constructor(private readonly c: LeverContext) {}

  pause(ref: MemberRef): void {
    const m = this.c.member(ref);
    if (m.crashed || m.paused) return;
    m.paused = true;
    this.c.applier.cancelApplyTimer(m);
    this.c.raft.topologyChanged();
    this.c.trace(`pause ${m.name}`);
  }

  resume(ref: MemberRef): void {
    const m = this.c.member(ref);
    if (!m.paused) return;
    m.paused = false;
    this.c.trace(`resume ${m.name}`);
    this.c.raft.resumed(m);
    this.afterTopologyChange();
    const held = m.held;
    m.held = [];
    for (const h of held) h.run();
    this.c.routing.releaseStreams(m);
    this.c.applier.markDirty(m);
    this.c.applier.pump();
  }

  partition(groups: ReadonlyArray<readonly MemberRef[]>): void {
    const raft = this.c.raft;
    const of = new Array<number>(raft.states.length).fill(-1);
    groups.forEach((g, gi) => {
      for (const r of g) of[this.c.member(r).index] = gi;
    });
    let lone = groups.length;
    const net = raft.network;
    net.partitionOf = of.map((g) => (g >= 0 ? g : lone++));
    this.c.trace(`partition ${net.partitionOf.join(',')}`);
    this.afterTopologyChange();
  }

  isolate(ref: MemberRef): void {
    const m = this.c.member(ref);
    this.partition([this.c.raft.states.filter((s) => s !== m)]);
  }

  heal(): void {
    const net = this.c.raft.network;
    net.partitionOf = net.partitionOf.map(() => 0);
    this.c.trace('heal');
    this.afterTopologyChange();
  }

  setApplyLag(ref: MemberRef, ms: number): void {
    checkLag(ms);
    const m = this.c.member(ref);
    m.applyLagMs = ms;
    this.c.trace(`lag ${m.name} ${ms}`);
    this.c.applier.cancelApplyTimer(m);
    this.c.applier.markDirty(m);
    this.c.applier.pump();
  }

  dropLink(client: string, ref: MemberRef): void {
    const m = this.c.member(ref);
    this.c.routing.link(client, m).dropped = true;
    this.c.trace(`drop ${client}->${m.name}`);
  }

  delayLink(client: string, ref: MemberRef, ms: number): void {
    checkLag(ms);
    const m = this.c.member(ref);
    this.c.routing.link(client, m).delayMs = ms;
    this.c.trace(`delay ${client}->${m.name} ${ms}`);
  }

  restoreLink(client: string, ref: MemberRef): void {
    const m = this.c.member(ref);
    this.c.routing.restore(client, m);
    this.c.trace(`restore ${client}->${m.name}`);
    this.c.routing.releaseStreams(m);
  }

  crash(ref: MemberRef): void {
    const m = this.c.member(ref);
    if (m.crashed) return;
    const wasLeader = m.role === 'leader';
    // The backend with its alarm bucket: the alarms are raised again at restart (etcd's restoreAlarms).
    m.backend = m.server.etcdBackend();
    m.crashed = true;
    m.paused = false;
    m.incarnation++;
    this.c.applier.cancelApplyTimer(m);
    for (const call of m.server.services.watch.calls()) call.abort(errTransportClosing());
    for (const call of m.server.services.lease.calls()) call.abort(errTransportClosing());
    for (const call of [...m.keepAlives]) call.abort(errTransportClosing());
    for (const fn of [...m.onCrash]) fn(errTransportClosing());
    m.onCrash.clear();
    m.server.close();
    const held = m.held;
    m.held = [];
    for (const h of held) h.fail(errTransportClosing());
    this.c.requests.memberCrashed(m);
    this.c.raft.stop(m);
    this.c.trace(`crash ${m.name}${wasLeader ? ' (leader)' : ''}`);
    this.afterTopologyChange();
  }

  restart(ref: MemberRef): void {
    const m = this.c.member(ref);
    // A member removed from the cluster stays down (etcd's exits again, "permanently removed").
    if (!m.crashed || m.removed) return;
    const backend = m.backend!;
    const server = new EtcdServer({ ...m.serverOptions, raftTerm: m.term, fromSnapshot: writeEtcdSnapshot(backend), initialRaftIndex: Number(backend.consistentIndex) });
    server.lessor.demote();
    m.server = server;
    this.c.serverBuilt(m);
    m.backend = undefined;
    m.crashed = false;
    this.c.trace(`restart ${m.name} applied ${m.applied}`);
    this.c.raft.restart(m);
    this.afterTopologyChange();
  }

  moveLeader(ref: MemberRef): boolean {
    const raft = this.c.raft;
    const target = this.c.member(ref);
    const leader = raft.leader;
    if (leader === undefined || !leader.up) return false;
    if (target === leader) return true;
    if (!target.up || !raft.connected(leader, target)) return false;
    // The leader first brings the transferee's log up to date; MsgTimeoutNow then makes it campaign.
    this.c.trace(`transfer ${leader.name} -> ${target.name}`);
    raft.transfer(leader, target);
    return raft.leader === target;
  }

  forceElection(candidate?: MemberRef): void {
    const raft = this.c.raft;
    const c = candidate === undefined ? raft.states.find((s) => s.up) : this.c.member(candidate);
    if (c !== undefined && c.up) raft.campaignNow(c);
  }

  compactLog(keep = 0): number {
    const leader = this.c.raft.leader;
    return leader === undefined ? 0 : this.c.raft.compact(leader, keep);
  }

  installSnapshot(ref: MemberRef): void {
    const raft = this.c.raft;
    const m = this.c.member(ref);
    const leader = raft.leader;
    if (leader === undefined || leader === m || !m.up || !raft.connected(leader, m)) return;
    raft.sendSnapshot(leader, m);
  }

  /** After a pause, partition, crash or restart: what waited may go on (Raft itself catches up at its next heartbeat). */
  private afterTopologyChange(): void {
    this.c.raft.topologyChanged();
    for (const m of this.c.raft.states) if (m.up && m.reads.length > 0) this.c.requests.tryReads(m);
    this.c.raft.settle();
  }
}
