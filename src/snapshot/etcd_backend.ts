/**
 * etcd 3.4's backend layout (its bbolt file, which is also its snapshot): which buckets exist and how each
 * one's keys and values are encoded. Everything here is a pure translation between that layout and plain
 * data; src/snapshot/member.ts maps the plain data to and from a simulated member.
 *
 *   key              revision key (main u64 BE, '_', sub u64 BE, + 't' for a delete) → mvccpb.KeyValue
 *                    (a delete stores only the key) — mvcc/kvstore.go, revision.go
 *   meta             consistent_index → u64 BE; scheduledCompactRev / finishedCompactRev → revision key
 *                    {compact revision, 0}, present once a compaction happened — cindex, mvcc/kvstore.go
 *   lease            lease ID as int64 BE → leasepb.Lease {ID, TTL, RemainingTTL} — lease/lessor.go
 *   auth             authEnabled → 1 byte (1/0); authRevision → u64 BE — auth/store.go
 *   authUsers        name → authpb.User {name, password (bcrypt text), roles, options}
 *   authRoles        name → authpb.Role {name, keyPermission[] {permType, key, range_end}}
 *   members          member ID in hex → JSON {id, peerURLs, name, clientURLs} — membership/store.go
 *   members_removed  member ID in hex → "removed"
 *   cluster          clusterVersion → "3.4.0"
 *   alarm            marshalled etcdserverpb.AlarmMember → empty
 *
 * This file names the backend's contents as plain data; backend_records.ts encodes each record and
 * backend_file.ts the whole file, both ways.
 */
import type { KeyPermission } from '../auth/index.js';
import type { KeyValue } from '../mvcc/index.js';

/** One entry of the key bucket: a revision {main, sub} of a key, a put or (tombstone) a delete. */
export interface StoredRevision {
  readonly main: number;
  readonly sub: number;
  readonly tombstone: boolean;
  /** For a tombstone: the key, modRevision = main, everything else zero (what the simulator's store keeps). */
  readonly kv: KeyValue;
}

/** leasepb.Lease as the lease bucket stores it. */
export interface StoredLease {
  readonly id: bigint;
  /** Granted TTL in seconds (already raised to the minimum when granted). */
  readonly ttl: number;
  /** Checkpointed remaining TTL in seconds (0: none; only with lease checkpointing). */
  readonly remainingTTL: number;
}

/** authpb.User as stored: the password is the hash text as written (bcrypt "$2a$..." for a real etcd). */
export interface StoredUser {
  readonly name: string;
  readonly password: Uint8Array;
  readonly roles: readonly string[];
  readonly noPassword: boolean;
}

export interface StoredRole {
  readonly name: string;
  readonly perms: readonly KeyPermission[];
}

/** A member record of the members bucket (membership.Member as JSON). */
export interface StoredMember {
  readonly id: bigint;
  readonly name: string;
  readonly peerURLs: readonly string[];
  readonly clientURLs: readonly string[];
  readonly isLearner: boolean;
}

/** Everything an etcd 3.4 backend holds, decoded. */
export interface EtcdBackend {
  /** The key bucket, in its (revision) order. */
  readonly revisions: readonly StoredRevision[];
  readonly consistentIndex: bigint;
  /** Absent before the first compaction. */
  readonly scheduledCompactRev?: number | undefined;
  readonly finishedCompactRev?: number | undefined;
  readonly leases: readonly StoredLease[];
  readonly authEnabled: boolean;
  readonly authRevision: number;
  readonly users: readonly StoredUser[];
  readonly roles: readonly StoredRole[];
  readonly members: readonly StoredMember[];
  readonly removedMembers: readonly bigint[];
  /** The cluster bucket's clusterVersion ("3.4.0"), if set. */
  readonly clusterVersion?: string | undefined;
  /** The alarm bucket's keys (marshalled AlarmMember), kept as they are. */
  readonly alarms: readonly Uint8Array[];
  // From etcd 3.5 on (absent in a 3.4 backend; see docs/version-differences.md):
  /** meta/term: the raft term of the last applied entry, written with consistent_index (3.5+). */
  readonly term?: bigint | undefined;
  /** meta/confState: the raft configuration as JSON, written on every conf change (3.5+). */
  readonly confState?: StoredConfState | undefined;
  /** meta/storageVersion: the schema version ("3.6.0"), written once the member runs 3.6 or later. */
  readonly storageVersion?: string | undefined;
  /** cluster/downgrade: a downgrade's target and whether it is enabled (3.5+, once one was started). */
  readonly downgrade?: { readonly targetVersion: string; readonly enabled: boolean } | undefined;
}

/** raftpb.ConfState as etcd 3.5+ stores it in meta/confState (Go's JSON of the message). */
export interface StoredConfState {
  readonly voters: readonly bigint[];
  readonly learners: readonly bigint[];
  readonly votersOutgoing: readonly bigint[];
  readonly learnersNext: readonly bigint[];
  readonly autoLeave: boolean;
}

/** A snapshot or backend file that etcd's layout does not explain, naming the bucket and what is wrong. */
export class SnapshotFormatError extends Error {
  constructor(message: string) {
    super(`snapshot: ${message}`);
    this.name = 'SnapshotFormatError';
  }
}
