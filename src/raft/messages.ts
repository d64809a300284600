/**
 * What one etcd member's Raft node (go.etcd.io/raft) exchanges and keeps: its log entries, the messages
 * peers send each other (etcd's raftpb.Message types, named as etcd names them), the hard state a member
 * must persist before it answers (term, vote, commit: raft's HardState), the snapshot that replaces a
 * compacted log prefix, and the cluster configuration (voters and learners) that conf-change entries move.
 * Plain data, so the peer transport (src/peer) can carry it in a format of its own: etcd's wire format is
 * not modelled, its meaning is. Member IDs and terms are uint64 in etcd, so bigint here; log indexes stay
 * numbers (a log never reaches 2^53 entries).
 */

/** A member's ID, as etcd derives it (src/server/member_id.ts). 0 is "none", as raft's None. */
export type NodeId = bigint;
export const NONE: NodeId = 0n;

/**
 * A conf change, as raftpb.ConfChange: which member, and what becomes of it. 'update' (etcd's UpdateNode,
 * new peer URLs in the context) leaves Raft's configuration as it is: only the application reads it.
 */
export interface ConfChange {
  readonly type: 'add' | 'addLearner' | 'remove' | 'update';
  readonly id: NodeId;
  /** The application's context (etcd puts the member's name and peer URLs there). */
  readonly context?: Uint8Array;
}

/** One log entry. A conf change's entry carries it beside the bytes; an empty normal entry is a new leader's. */
export interface Entry {
  readonly index: number;
  readonly term: bigint;
  readonly type: 'normal' | 'conf';
  readonly data: Uint8Array;
  readonly conf?: ConfChange;
}

/** Voters and learners (raftpb.ConfState). */
export interface ConfState {
  readonly voters: readonly NodeId[];
  readonly learners: readonly NodeId[];
}

/** A snapshot of the applied state up to `index` (raftpb.Snapshot): the log before it is gone. */
export interface Snapshot {
  readonly index: number;
  readonly term: bigint;
  readonly conf: ConfState;
  readonly data: Uint8Array;
}

/** What must be on disk before a message of this Ready leaves (raftpb.HardState). */
export interface HardState {
  readonly term: bigint;
  readonly vote: NodeId;
  readonly commit: number;
}

export type MessageType =
  | 'MsgApp'
  | 'MsgAppResp'
  | 'MsgVote'
  | 'MsgVoteResp'
  | 'MsgPreVote'
  | 'MsgPreVoteResp'
  | 'MsgHeartbeat'
  | 'MsgHeartbeatResp'
  | 'MsgSnap'
  | 'MsgProp'
  | 'MsgTransferLeader'
  | 'MsgTimeoutNow'
  | 'MsgReadIndex'
  | 'MsgReadIndexResp';

/** One message between members (raftpb.Message, the fields its types use). */
export interface Message {
  readonly type: MessageType;
  readonly from: NodeId;
  readonly to: NodeId;
  readonly term: bigint;
  /** MsgApp: the term of the entry before `entries`; votes: the candidate's last term. */
  readonly logTerm?: bigint;
  /** MsgApp: the index before `entries`; votes: the candidate's last index; MsgAppResp: the follower's match. */
  readonly index?: number;
  readonly entries?: readonly Entry[];
  readonly commit?: number;
  readonly reject?: boolean;
  /** A rejected MsgAppResp: the follower's last index, where the leader probes next. */
  readonly rejectHint?: number;
  readonly snapshot?: Snapshot;
  /** MsgHeartbeat(Resp) and MsgReadIndex(Resp): the read request a heartbeat round confirms. */
  readonly context?: string;
}

/** A confirmed read (raft's ReadState): reads of `context` may be served once `index` is applied. */
export interface ReadState {
  readonly index: number;
  readonly context: string;
}

export type Role = 'follower' | 'pre-candidate' | 'candidate' | 'leader';

/** What changed that nothing needs to persist (raft's SoftState). */
export interface SoftState {
  readonly leader: NodeId;
  readonly role: Role;
}
