/**
 * The door's method table, as grpc-go's server registers etcd's services (etcd's v3rpc/grpc.go): every
 * method of the eight services by its path (`/etcdserverpb.KV/Put`), from the proto's service descriptors
 * with requests decoded as the release decodes them (request_decoding.ts), each served as its service's
 * file maps it (kv_server.ts, watch_server.ts, ...). A method no file maps (Downgrade) leaves its service
 * registered, so grpc-go's `unknown method` answers it, not `unknown service`.
 */
import type { EtcdServiceName } from '../proto/index.js';
import type { GrpcMethod, MethodCodec } from './call.js';
import type { Handlers, MethodTable } from './handlers.js';
import { checkedService, type RequestDecoding } from './request_decoding.js';
import { authServer } from './auth_server.js';
import { clusterServer } from './cluster_server.js';
import { electionServer } from './election_server.js';
import { kvServer } from './kv_server.js';
import { leaseServer } from './lease_server.js';
import { lockServer } from './lock_server.js';
import { maintenanceServer } from './maintenance_server.js';
import { watchServer } from './watch_server.js';

/** What the door dispatches: methods by path, and the services they belong to. */
export interface ServedMethods {
  readonly methods: ReadonlyMap<string, GrpcMethod>;
  readonly services: ReadonlySet<string>;
}

export function methodTable(h: Handlers, decoding: RequestDecoding): ServedMethods {
  const tables: Readonly<Record<EtcdServiceName, MethodTable>> = {
    KV: kvServer(h),
    Watch: watchServer(h),
    Lease: leaseServer(h),
    Cluster: clusterServer(h),
    Maintenance: maintenanceServer(h),
    Auth: authServer(h),
    Lock: lockServer(h),
    Election: electionServer(h),
  };
  const methods = new Map<string, GrpcMethod>();
  const services = new Set<string>();
  for (const [service, impl] of Object.entries(tables) as Array<[EtcdServiceName, MethodTable]>) {
    const def = checkedService(service, decoding);
    for (const [name, make] of Object.entries(impl)) {
      const m = def[name];
      if (m === undefined) throw new Error(`etcdsim: no method ${name} in ${service}`);
      methods.set(m.path, make(m as MethodCodec));
    }
    for (const m of Object.values(def)) services.add(m.path.slice(1, m.path.lastIndexOf('/')));
  }
  return { methods, services };
}
