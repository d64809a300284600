/**
 * What a process member (process_member.ts, etcd's EtcdServer of one process) is started with — etcd's
 * flags as the `etcd` command read them — what it tells the command to log, and one member of the cluster
 * as every member holds it (etcd's membership.Member). Apart so the member's file holds its behaviour.
 */
import type { ConfChange, NodeId, RaftNodeViolation, Role, Snapshot } from '../raft/index.js';
import type { EtcdServerOptions } from '../server/index.js';
import type { Clock } from '../sim/index.js';
import type { DataDirLayout } from '../storage/index.js';
import type { PeerAddress, PeerTls } from './transport.js';

/** One member of the cluster as every member holds it (etcd's membership.Member). */
export interface ProcessClusterMember {
  readonly id: NodeId;
  /** '' until the member published its attributes (etcd lists an unstarted member without a name). */
  name: string;
  peerUrls: readonly string[];
  clientUrls: readonly string[];
  isLearner: boolean;
}

/** What the process logs, as etcd logs it (src/cli/etcd turns these into etcd's lines). */
export interface ProcessMemberEvents {
  /** Raft's role or term moved ("became follower/candidate/leader at term N"). */
  role?(role: Role, term: bigint): void;
  /** The member learned its leader ("elected leader X at term N"), or lost it (leader NONE). */
  leader?(leader: NodeId, term: bigint): void;
  /** This member's attributes were applied (etcd's "published {Name:... ClientURLs:[...]} to cluster"). */
  published?(): void;
  /** A conf change was applied ("added member", "removed member"). */
  membership?(change: ConfChange, member: ProcessClusterMember | undefined): void;
  /** This member was removed from the cluster: the process stops, as etcd's does. */
  removed?(): void;
  /** The leader's snapshot was installed (etcd's "applied snapshot"): where this member was, and the snapshot. */
  snapshotApplied?(was: { readonly snapshot: number; readonly applied: number }, incoming: Snapshot): void;
  /** An old snap file, received db or WAL segment was purged (etcd's "purged file PATH successfully"). */
  purged?(path: string): void;
  /** With `raftCheck`: a Raft invariant broke on this member's node (the process exits with it). */
  raftViolated?(v: RaftNodeViolation): void;
}

/** --initial-cluster, parsed: each member's name and peer URLs. */
export interface InitialMember {
  readonly name: string;
  readonly peerUrls: readonly string[];
}

export interface ProcessMemberOptions {
  readonly name: string;
  readonly initialCluster: readonly InitialMember[];
  readonly initialClusterToken: string;
  /** --advertise-client-urls: published through Raft. */
  readonly clientUrls: readonly string[];
  /** --listen-peer-urls' address. */
  readonly listenPeer: PeerAddress;
  readonly peerTls?: PeerTls | undefined;
  readonly layout: DataDirLayout;
  readonly clock: Clock;
  /** The EtcdServer's options (limits, auth, release); its identity and clock come from here. */
  readonly server: Omit<EtcdServerOptions, 'clock' | 'memberId' | 'clusterId' | 'memberName' | 'clientUrls' | 'peerUrls' | 'raftTerm' | 'initialRaftIndex'>;
  readonly heartbeatMs: number;
  readonly electionMs: number;
  readonly preVote: boolean;
  /** --initial-election-tick-advance (etcd's default true); false: the first election waits a whole randomized election timeout. */
  readonly initialElectionTickAdvance?: boolean | undefined;
  /** --initial-cluster-state existing: a new member joins a running cluster (after its MemberAdd). */
  readonly join?: boolean | undefined;
  /** --snapshot-count: applied entries between two snapshots (etcd's default 100000). */
  readonly snapshotCount?: number | undefined;
  /** Lease checkpoints kept in the db (3.6+, or --experimental-enable-lease-checkpoint-persist): a restart keeps the remaining TTLs. */
  readonly leaseCheckpointPersist?: boolean | undefined;
  /** --max-snapshots, --max-wals: old snap files and WAL segments kept (etcd's 5 each; 0 keeps all). */
  readonly maxSnapshots?: number | undefined;
  readonly maxWals?: number | undefined;
  /** Entries kept after a snapshot for followers just behind (etcd's SnapshotCatchUpEntries, 5000). */
  readonly catchUpEntries?: number | undefined;
  /** Check Raft's invariants on this member's node after each Ready (ETCDSIM_RAFT_CHECK=1; tests set it). */
  readonly raftCheck?: boolean | undefined;
  readonly seed: number;
  readonly events?: ProcessMemberEvents | undefined;
}
