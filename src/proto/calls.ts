/**
 * The names of etcd's services and calls, as the .proto files declare them: each service's package, and its
 * methods (proto-loader's generated service definitions), spelled as a member's service classes spell them
 * (`LeaseGrant` → `leaseGrant`). The doors type the member's services through these, so a method added to a
 * .proto is a method every door's type expects. The same list as a value, with each method's streaming
 * sides: SERVICE_DECLARATIONS (generated from the protos, so it reads none at run time: the in-process
 * simulator and the playground's page, which read no .proto, list their calls from this file alone).
 */
export { SERVICE_DECLARATIONS } from './generated/services.js';
import type { AuthDefinition } from './generated/etcdserverpb/Auth.js';
import type { ClusterDefinition } from './generated/etcdserverpb/Cluster.js';
import type { KVDefinition } from './generated/etcdserverpb/KV.js';
import type { LeaseDefinition } from './generated/etcdserverpb/Lease.js';
import type { MaintenanceDefinition } from './generated/etcdserverpb/Maintenance.js';
import type { WatchDefinition } from './generated/etcdserverpb/Watch.js';
import type { LockDefinition } from './generated/v3lockpb/Lock.js';
import type { ElectionDefinition } from './generated/v3electionpb/Election.js';

/** etcd's eight gRPC services: etcdserverpb's six, v3lockpb.Lock and v3electionpb.Election. @public */
export type EtcdServiceName = 'KV' | 'Watch' | 'Lease' | 'Cluster' | 'Maintenance' | 'Auth' | 'Lock' | 'Election';

/** The proto package each service is declared in. */
export const SERVICE_PACKAGES: Readonly<Record<EtcdServiceName, string>> = Object.freeze({
  KV: 'etcdserverpb',
  Watch: 'etcdserverpb',
  Lease: 'etcdserverpb',
  Cluster: 'etcdserverpb',
  Maintenance: 'etcdserverpb',
  Auth: 'etcdserverpb',
  Lock: 'v3lockpb',
  Election: 'v3electionpb',
});

/** proto-loader's definition of each of etcd's eight services. */
interface ServiceDefinitions {
  KV: KVDefinition;
  Watch: WatchDefinition;
  Lease: LeaseDefinition;
  Cluster: ClusterDefinition;
  Maintenance: MaintenanceDefinition;
  Auth: AuthDefinition;
  Lock: LockDefinition;
  Election: ElectionDefinition;
}

/** The calls of service `S` as a member's service class names them: `CallName<'Lease'>` is `'leaseGrant' | 'leaseRevoke' | ...`. */
export type CallName<S extends EtcdServiceName> = Uncapitalize<keyof ServiceDefinitions[S] & string>;

/** A method's name in the .proto as a member's service class spells it (CallName at run time): `LeaseGrant` → `leaseGrant`. */
export function callNameOf(method: string): string {
  return method.charAt(0).toLowerCase() + method.slice(1);
}
