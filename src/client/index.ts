/** In-process access to the simulator. */
export { createEtcdSim, type EtcdSim, type EtcdSimOptions, type TimeMode, type TimerDriver, type Etcd3SimOptions } from './create.js';
export {
  EtcdClient,
  KVClient,
  LeaseClient,
  MaintenanceClient,
  ClusterClient,
  AuthClient,
  type Session,
  EtcdStream,
  EtcdWatchStream,
  EtcdKeepAliveStream,
  EtcdObserveStream,
  LockClient,
  ElectionClient,
  type WaitOptions,
  prefix,
  fromKey,
  type Req,
  type StreamEvents,
} from './raw_client.js';
