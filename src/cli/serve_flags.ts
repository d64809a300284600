/**
 * The flags of `etcdsim serve` and their defaults — etcd's where etcd has the flag — in a module of their
 * own, so the command line can declare them without loading the gRPC server.
 */

/** What commander hands the action (option names camel-cased). */
export interface ServeFlags {
  listenClientUrls: string;
  advertiseClientUrls?: string | undefined;
  name: string;
  maxTxnOps: number;
  maxRequestBytes: number;
  experimentalWatchProgressNotifyInterval: string;
  heartbeatInterval: number;
  electionTimeout: number;
  seed: string;
  clockSpeed: string;
  etcdVersion: string;
  certFile?: string | undefined;
  keyFile?: string | undefined;
  trustedCaFile?: string | undefined;
  clientCertAuth?: boolean | undefined;
  allowNonLoopback: boolean;
  authTokenTtl: number;
  bcryptCost?: number | undefined;
}

/** etcd's defaults (and ours for --seed / --clock-speed / --etcd-version). */
export const SERVE_FLAG_DEFAULTS: Readonly<ServeFlags> = Object.freeze({
  listenClientUrls: 'http://127.0.0.1:2379',
  name: 'default',
  maxTxnOps: 128,
  maxRequestBytes: 1572864,
  experimentalWatchProgressNotifyInterval: '10m',
  heartbeatInterval: 100,
  electionTimeout: 1000,
  seed: '0',
  clockSpeed: '1',
  etcdVersion: '3.7',
  allowNonLoopback: false,
  authTokenTtl: 300,
});
