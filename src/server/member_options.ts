/**
 * How one member is started: etcd's flags that shape a member (EtcdServerOptions, named after etcd's flags
 * with etcd's defaults) and who the member is (MemberInfo: the IDs, name, URLs, term and version that
 * headers, Status and MemberList report), derived from those flags as etcd derives them.
 */
import type { AuthSetup, TokenProviderFactory } from '../auth/index.js';
import { ETCD_RELEASES, type EtcdVersion } from '../etcd/index.js';
import type { Clock } from '../sim/index.js';
import type { EtcdServer, EtcdServices } from './etcd_server.js';
import { DEFAULT_CLUSTER_TOKEN, clusterIdOf, memberIdOf } from './member_id.js';

/** Knobs with etcd's defaults, named after etcd's flags where etcd has one. @public */
export interface EtcdServerOptions {
  /** Time source; default a VirtualClock starting at 0 (time moves only when the caller advances it). */
  readonly clock?: Clock | undefined;
  /** Seed of every random choice (generated lease IDs, progress jitter). Same seed, same run. */
  readonly seed?: number | bigint | undefined;
  /** Which etcd release's rules to follow where releases differ (default 3.7). */
  readonly etcdVersion?: EtcdVersion | undefined;
  /** --max-txn-ops (128). */
  readonly maxTxnOps?: number | undefined;
  /** --max-request-bytes (1.5 MiB). */
  readonly maxRequestBytes?: number | undefined;
  /** --heartbeat-interval in ms (100); with electionTicks it sets the minimum lease TTL. */
  readonly heartbeatIntervalMs?: number | undefined;
  /** --election-timeout / --heartbeat-interval (10 ticks). */
  readonly electionTicks?: number | undefined;
  /** Override the minimum lease TTL in seconds (etcd derives 2 s from the defaults above). */
  readonly minLeaseTTL?: number | undefined;
  /** --experimental-watch-progress-notify-interval in ms (10 min). */
  readonly watchProgressNotifyIntervalMs?: number | undefined;
  /** --experimental-enable-lease-checkpoint (off) and its interval (5 min). */
  readonly leaseCheckpoint?: boolean | undefined;
  readonly leaseCheckpointIntervalMs?: number | undefined;
  /** Watch stream buffer before watchers become victims (etcd chanBufLen, 128). */
  readonly watchChanBufLen?: number | undefined;
  /**
   * Bytes a watch stream's transport holds unread before etcd's send loop waits (grpc-go's per-stream
   * write quota, 64 KiB); a client that stops reading fills it, then the channel.
   */
  readonly watchSendWindowBytes?: number | undefined;
  /** Historical-bug switch (etcd PR #20281); `false` reproduces issue #20221 for teaching runs. */
  readonly restoreKeepsFutureMinRev?: boolean | undefined;
  /** Historical-bug switch (etcd PR #20229); `false` sends progress below a future watch's start revision. */
  readonly progressRespectsStartRev?: boolean | undefined;
  /**
   * Historical-bug switch (etcd PR #19188, issue #19179; default: the release's, see
   * Compat.restoreLoneTombstone): `false` rebuilds the index from the backend as etcd did before the fix,
   * leaving out a key whose first stored revision is a tombstone (its older ones compacted away).
   */
  readonly restoreLoneTombstone?: boolean | undefined;
  /** --experimental-compaction-batch-limit (1000): key-bucket entries per batch of a compaction's deletions. */
  readonly compactionBatchLimit?: number | undefined;
  /**
   * --quota-backend-bytes: the backend's space quota (0: etcd's default, 2 GiB; below 0: none). A Put, a
   * Txn with puts or a LeaseGrant that would take the estimated db file (Status dbSize) to it is refused
   * and raises NOSPACE (see quota.ts).
   */
  readonly quotaBackendBytes?: number | undefined;
  /**
   * cluster_id of every response header (uint64). Default: what etcd derives from the member's ID (see
   * member_id.ts) — etcd's default single-member cluster ID for the default peer URL.
   */
  readonly clusterId?: bigint | undefined;
  /**
   * member_id of every response header and the member's ID (uint64). Default: what etcd derives from
   * `peerUrls` and `initialClusterToken` — etcd's default member ID for the default peer URL.
   */
  readonly memberId?: bigint | undefined;
  /** --initial-cluster-token ('etcd-cluster'): part of the derived member ID. */
  readonly initialClusterToken?: string | undefined;
  /** --name ('default'). */
  readonly memberName?: string | undefined;
  /** --advertise-client-urls (['http://localhost:2379']). */
  readonly clientUrls?: readonly string[] | undefined;
  /** --initial-advertise-peer-urls (['http://localhost:2380']). */
  readonly peerUrls?: readonly string[] | undefined;
  /** raft_term of headers and Status (a single member elected once: 2, as observed on etcd). */
  readonly raftTerm?: bigint | number | undefined;
  /** Version string Status reports (default: the release `etcdVersion` stands for, e.g. '3.7.0'). */
  readonly version?: string | undefined;
  /** --auth-token-ttl in seconds (300): how long a simple token lives after its last use. */
  readonly authTokenTTL?: number | undefined;
  /** bcrypt cost of password hashes, 4..31 (etcd's --bcrypt-cost, 10 by default there); default 4, bcrypt's fastest. */
  readonly authHashCost?: number | undefined;
  /** --auth-token jwt,...: the member's tokens (src/auth/jwt_token.ts) instead of simple ones. */
  readonly authTokenProvider?: TokenProviderFactory | undefined;
  /** Users and roles to start with, and whether auth starts enabled (see AuthSetup). */
  readonly auth?: AuthSetup | undefined;
  /**
   * --client-cert-auth: a call without a token is made by the user its client certificate's Common Name
   * names (CallContext.certCommonName). Off by default, and off in etcd with --trusted-ca-file alone.
   */
  readonly clientCertAuth?: boolean | undefined;
  /**
   * Start from a snapshot in etcd's format (`etcdctl snapshot save` of a real etcd 3.4, or one this
   * simulator streamed): every retained revision, the compaction point, leases, auth. See loadEtcdSnapshot.
   */
  readonly fromSnapshot?: Uint8Array | undefined;
  /**
   * Raft index the member has applied when it starts (default 4, a fresh single member): a cluster member
   * starts past its cluster's bootstrap entries, a restarted one at its backend's consistent index.
   */
  readonly initialRaftIndex?: number | undefined;
  /**
   * --strict-reconfig-check (default true): MemberAdd, MemberRemove and MemberPromote are refused before
   * proposing when the started members would not be a quorum ("not enough started members"). `false` proposes
   * them anyway, as etcd does — a change that cannot commit then waits for its deadline. Removing the member
   * itself stays refused: the simulator has no process to stop.
   */
  readonly strictReconfigCheck?: boolean | undefined;
  /**
   * @internal What the member's front doors and its own services (Lock's Txn, the quota's alarm) call
   * instead of the services it made: a member on a data dir records each request it applied there before
   * answering (src/server/kept_member.ts).
   */
  readonly wrapServices?: ((services: EtcdServices, server: EtcdServer) => EtcdServices) | undefined;
}

/** etcd's default --initial-advertise-peer-urls. */
const DEFAULT_PEER_URL = 'http://localhost:2380';

/** etcd's IDs for a member started with no flags (name "default", peer URL http://localhost:2380). @public */
export const DEFAULT_CLUSTER_ID = 0xcdf818194e3a8c32n;
/** @public */
export const DEFAULT_MEMBER_ID = 0x8e9e05c52164694dn;

/** Who this member is: what headers, Status and MemberList report. @public */
export interface MemberInfo {
  readonly clusterId: bigint;
  readonly memberId: bigint;
  readonly name: string;
  readonly clientUrls: readonly string[];
  readonly peerUrls: readonly string[];
  readonly raftTerm: bigint;
  readonly version: string;
}

/** etcd's DefaultQuotaBytes (--quota-backend-bytes 0). */
export const DEFAULT_QUOTA_BACKEND_BYTES = 2 * 1024 * 1024 * 1024;

/**
 * The member's identity as etcd derives it from its flags: with no peer URL, token or ID given, etcd's
 * default member and cluster IDs; otherwise the IDs hashed from the peer URLs and cluster token.
 */
export function memberInfoOf(opts: EtcdServerOptions, etcdVersion: EtcdVersion): MemberInfo {
  const peerUrls = opts.peerUrls ?? [DEFAULT_PEER_URL];
  const memberId =
    opts.memberId ?? (opts.peerUrls === undefined && opts.initialClusterToken === undefined ? DEFAULT_MEMBER_ID : memberIdOf(peerUrls, opts.initialClusterToken ?? DEFAULT_CLUSTER_TOKEN));
  const member: MemberInfo = Object.freeze({
    clusterId: opts.clusterId ?? (opts.memberId === undefined && opts.peerUrls === undefined && opts.initialClusterToken === undefined ? DEFAULT_CLUSTER_ID : clusterIdOf([memberId])),
    memberId,
    name: opts.memberName ?? 'default',
    clientUrls: Object.freeze([...(opts.clientUrls ?? ['http://localhost:2379'])]),
    peerUrls: Object.freeze([...peerUrls]),
    raftTerm: BigInt(opts.raftTerm ?? 2),
    version: opts.version ?? ETCD_RELEASES[etcdVersion],
  });
  for (const [what, v] of [['clusterId', member.clusterId], ['memberId', member.memberId], ['raftTerm', member.raftTerm]] as const) {
    if (v < 0n || v >= 2n ** 64n) throw new RangeError(`EtcdServer: ${what} must be a uint64, got ${v}`);
  }
  return member;
}
