/**
 * What passes between a member and its Raft node (go.etcd.io/raft's RawNode surface): the options a node is
 * started with, the storage it restarts from (a WAL's hard state and entries plus the last snapshot), the
 * Ready it hands back after each step, the status `etcdctl endpoint status` reads, and a new cluster's
 * bootstrap entries as etcd writes them.
 */
import type { SimRandom } from '../sim/index.js';
import { NONE, type ConfState, type Entry, type HardState, type Message, type NodeId, type ReadState, type Role, type Snapshot, type SoftState } from './messages.js';

/** What a member must have on disk to restart as itself (WAL hard state and entries, plus its snapshot). */
export interface RaftStorage {
  readonly hardState: HardState;
  readonly snapshot: Snapshot;
  readonly entries: readonly Entry[];
}

export interface RaftNodeOptions {
  readonly id: NodeId;
  /** The election timeout's seeded stream (each member its own fork). */
  readonly random: SimRandom;
  /** Ticks without a leader's word before campaigning (etcd: --election-timeout / --heartbeat-interval). */
  readonly electionTicks: number;
  readonly preVote: boolean;
  readonly checkQuorum: boolean;
  /** Entries per MsgApp at most. */
  readonly maxEntriesPerMessage?: number;
}

/** Everything the member has to act on after a step (raft's Ready). */
export interface Ready {
  readonly softState?: SoftState | undefined;
  readonly hardState?: HardState | undefined;
  /** Persist these (and `snapshot`) before sending `messages`. */
  readonly entries: readonly Entry[];
  readonly snapshot?: Snapshot | undefined;
  readonly committedEntries: readonly Entry[];
  readonly messages: readonly Message[];
  readonly readStates: readonly ReadState[];
}

/** What `etcdctl endpoint status` and the checker read of a node. */
export interface RaftStatus {
  readonly id: NodeId;
  readonly role: Role;
  readonly term: bigint;
  readonly vote: NodeId;
  readonly leader: NodeId;
  readonly commit: number;
  readonly applied: number;
  readonly lastIndex: number;
  readonly conf: ConfState;
}


/** A new cluster's first entries (etcd's bootstrap): one conf change per initial member, at term 1, committed. */
export function bootstrapStorage(members: readonly { readonly id: NodeId; readonly context?: Uint8Array }[]): RaftStorage {
  const entries: Entry[] = members.map((m, i) => ({
    index: i + 1,
    term: 1n,
    type: 'conf',
    data: new Uint8Array(0),
    conf: { type: 'add', id: m.id, ...(m.context === undefined ? {} : { context: m.context }) },
  }));
  return {
    hardState: { term: 1n, vote: NONE, commit: entries.length },
    snapshot: { index: 0, term: 0n, conf: { voters: members.map((m) => m.id), learners: [] }, data: new Uint8Array(0) },
    entries,
  };
}
