/** In-process access to the simulator. */
export {
  createEtcdSim,
  type EtcdSim,
  type EtcdSimOptions,
  type EtcdClusterSim,
  type EtcdClusterSimOptions,
  type ClusterClientOptions,
  type TimeMode,
  type TimerDriver,
  type Etcd3SimOptions,
  serverOf,
  clusterOf,
} from './create.js';
export {
  EtcdClient,
  type KVClient,
  type LeaseClient,
  type MaintenanceClient,
  type ClusterClient,
  type AuthClient,
  type Session,
  type LockClient,
  type ElectionClient,
  type WaitOptions,
} from './raw_client.js';
export { EtcdStream, EtcdWatchStream, EtcdKeepAliveStream, EtcdObserveStream, type StreamEvents } from './raw_streams.js';
export { prefix, fromKey, type Req } from './text_keys.js';

// For the floors above, which import this folder only through this index (test/layout/index_imports.test.ts).
export { isSafeRetry, retryBackoffMs, retryPolicyOf, shouldRefreshToken, UNARY_MAX_ATTEMPTS } from './retry_policy.js';
