/**
 * The flags of `etcdsim serve` and their defaults — etcd's where etcd has the flag — in a module of their
 * own, so the command line can declare them without loading the gRPC server.
 */
// validate.js, not the mvcc index: the limits' one definition, without loading the store.
import { DEFAULT_MAX_REQUEST_BYTES, DEFAULT_MAX_TXN_OPS } from '../mvcc/validate.js';
import { DEFAULT_ETCD_VERSION } from '../etcd/index.js';

/**
 * What commander hands the action (option names camel-cased), every value as typed: parseServeFlags
 * (serve.ts) reads them as etcd does, before anything binds.
 */
export interface ServeFlags {
  /** This is one process of a cluster of processes (`etcdsim etcd`): a multi-member --initial-cluster is its cluster. */
  clusterOfProcesses?: boolean | undefined;
  listenClientUrls: string;
  advertiseClientUrls?: string | undefined;
  /** etcd's peer flags: checked and reported (MemberList, the member's ID); no peer port is opened. */
  initialAdvertisePeerUrls: string;
  listenPeerUrls: string;
  /** Default as etcd's: `default=http://localhost:2380`, or NAME=each advertised peer URL for another --name. */
  initialCluster?: string | undefined;
  initialClusterToken: string;
  name: string;
  maxTxnOps: string;
  maxRequestBytes: string;
  experimentalWatchProgressNotifyInterval: string;
  /** etcd's: how often a client may ping on a plain connection (grpc-go's keepalive enforcement). */
  grpcKeepaliveMinTime: string;
  /** etcd's backend space quota in bytes (0: the default, 2 GiB; below 0: none). */
  quotaBackendBytes: string;
  heartbeatInterval: string;
  electionTimeout: string;
  seed: string;
  clockSpeed: string;
  etcdVersion: string;
  certFile?: string | undefined;
  keyFile?: string | undefined;
  trustedCaFile?: string | undefined;
  clientCertAuth?: boolean | undefined;
  allowNonLoopback: boolean;
  authTokenTtl: string;
  bcryptCost?: string | undefined;
  /** etcdsim's own: a snapshot file in etcd's format to start from (see src/snapshot). */
  fromSnapshot?: string | undefined;
  /**
   * etcdsim's own: serve a simulated cluster of this many members (default 1), one client URL each in
   * --listen-client-urls; names and peer URLs from --initial-cluster (default infra1.. on etcd's Procfile ports).
   */
  members?: string | undefined;
  /** etcd's --pre-vote (a cluster's elections; default: off on 3.4, on from 3.5, as etcd). */
  preVote?: boolean | undefined;
}

/** etcd's defaults (and ours for --seed / --clock-speed / --etcd-version). */
export const SERVE_FLAG_DEFAULTS: Readonly<ServeFlags> = Object.freeze({
  listenClientUrls: 'http://127.0.0.1:2379',
  initialAdvertisePeerUrls: 'http://localhost:2380',
  listenPeerUrls: 'http://localhost:2380',
  initialClusterToken: 'etcd-cluster',
  name: 'default',
  maxTxnOps: String(DEFAULT_MAX_TXN_OPS),
  maxRequestBytes: String(DEFAULT_MAX_REQUEST_BYTES),
  experimentalWatchProgressNotifyInterval: '10m',
  grpcKeepaliveMinTime: '5s',
  quotaBackendBytes: '0',
  heartbeatInterval: '100',
  electionTimeout: '1000',
  seed: '0',
  clockSpeed: '1',
  etcdVersion: DEFAULT_ETCD_VERSION,
  allowNonLoopback: false,
  authTokenTtl: '300',
});

/** `--members` bounds: a served cluster of up to 7 members (etcd's recommended maximum). */
export const MEMBERS_MAX = 7;

/** `--clock-speed` bounds (etcdsim's own flag): from a thousandth of real time to a thousand times it. */
export const CLOCK_SPEED_MIN = 0.001;
export const CLOCK_SPEED_MAX = 1000;
