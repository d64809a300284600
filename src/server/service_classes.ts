/**
 * The class that answers each of etcd's eight services on a member (EtcdServer builds one of each): the
 * handlers of etcd's calls, whose methods are the calls a member answers. Tables that need only the names
 * (and run in the playground's browser bundle, which must not load the protos) read them here, with
 * serviceMethods; member_calls.ts joins them with the .proto's declarations.
 */
import type { EtcdServiceName } from '../proto/index.js';
import { AuthService } from './auth_service.js';
import { ElectionService } from './election_service.js';
import { KVService } from './kv_service.js';
import { LeaseService } from './lease_service.js';
import { LockService } from './lock_service.js';
import { MaintenanceService } from './maintenance_service.js';
import { ClusterService } from './membership_service.js';
import { WatchService } from './watch_service.js';

export const SERVICE_CLASSES: Readonly<Record<EtcdServiceName, { readonly prototype: object }>> = {
  KV: KVService,
  Watch: WatchService,
  Lease: LeaseService,
  Cluster: ClusterService,
  Maintenance: MaintenanceService,
  Auth: AuthService,
  Lock: LockService,
  Election: ElectionService,
};
