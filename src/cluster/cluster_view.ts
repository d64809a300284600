/**
 * A simulated cluster as a test holds it (`sim.cluster`): its members as an operator sees them (name, ID,
 * URLs, Raft role and term, up, paused or crashed, the member's services and its server), what etcd's Status
 * reports of each, the cluster's trace of events, a client's connection to one member, and the fault levers
 * (ClusterLevers). Interfaces, so that the published types say what a user may rely on: an EtcdCluster and
 * its MemberStates implement them, and their wiring (Raft nodes, apply queues, held calls, links) stays
 * with the floors and tests that reach for it (src/client's clusterOf).
 */
import type { Clock } from '../sim/index.js';
import type { EtcdServerView } from '../server/index.js';
import type { CallAnswer } from './routing.js';
import type { ClusterMemberConfig, ClusterTraceEvent } from './cluster.js';
import type { ClusterLevers } from './levers.js';
import type { ConnectOptions, MemberRaftStatus, MemberRef, RaftRole } from './member_state.js';
import type { ClusterMemberServices } from './services.js';

/** One member of a simulated cluster, as `sim.cluster.members` lists it. @public */
export interface SimulatedMember {
  /** Its place in the cluster (0, 1, ...). */
  readonly index: number;
  readonly id: bigint;
  readonly name: string;
  readonly clientUrls: readonly string[];
  readonly peerUrls: readonly string[];
  readonly role: RaftRole;
  readonly term: bigint;
  /** Neither paused nor crashed. */
  readonly up: boolean;
  readonly paused: boolean;
  readonly crashed: boolean;
  /** Removed from the cluster (MemberRemove): it stopped for good. */
  readonly removed: boolean;
  /** The index it applied up to. */
  readonly applied: number;
  /** The commit index it knows. */
  readonly commit: number;
  /** Its server (a restart replaces it). */
  readonly server: EtcdServerView;
  /** Its services as a client linked to it calls them (writes through Raft). */
  readonly services: ClusterMemberServices;
}

/** `sim.cluster`: the members, their Raft state, the proposal trace and the fault levers. @public */
export interface EtcdClusterView extends ClusterLevers {
  readonly clock: Clock;
  readonly clusterId: bigint;
  readonly preVote: boolean;
  readonly heartbeatMs: number;
  readonly electionTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly snapshotCount: number;
  readonly snapshotCatchUpEntries: number;
  /** The members in order. */
  readonly members: readonly SimulatedMember[];
  readonly size: number;
  /** Votes needed: a majority of the voting members. */
  readonly quorum: number;
  /** The member that currently acts as leader (up, in the leader role, highest term), if any. */
  readonly leader: SimulatedMember | undefined;
  /** The highest term any member has seen. */
  readonly term: bigint;
  /** The cluster's commit index (the leader's; without one, the highest a member knows). */
  readonly committedIndex: number;
  /** A member by index, name, member ID or itself. */
  member(ref: MemberRef): SimulatedMember;
  /**
   * Starts the member a MemberAdd added (etcd started with --initial-cluster-state existing and the peer
   * URLs MemberAdd named): it joins the end of `members`, catches up from the leader, and publishes its
   * name and client URLs (default: the next infraN and etcd's Procfile ports) through Raft.
   */
  join(id: bigint, config?: ClusterMemberConfig): SimulatedMember;
  /** A member's Raft status (what Status reports, plus the levers' state). */
  status(ref: MemberRef): MemberRaftStatus;
  /** The cluster's events so far (elections, faults, commits, applies), for determinism checks and debugging. */
  trace(): readonly ClusterTraceEvent[];
  /** A client's services linked to one member. */
  connect(ref: MemberRef, opts?: ConnectOptions): ClusterMemberServices;
  /** The answer a call of the cluster's services (a promise they returned) has already had; undefined while it waits. */
  answerOf<T>(call: Promise<T>): CallAnswer<T> | undefined;
  /** Pushes queued stream responses on every member now; answers how many went. */
  flush(): number;
}
