/**
 * etcd's services as grpc-js client constructors (`new (etcdService('KV'))(address, creds)`), for the test and
 * bench clients, the differential and the shadow — everything that dials etcd as a gRPC client. Apart from
 * loader.ts because it loads grpc-js, which a serving member does not need (start-up is an e2e test's cost).
 */
import * as grpc from '@grpc/grpc-js';
import { etcdPackageDefinition, SERVICE_PACKAGES, type EtcdServiceName } from './loader.js';

let cachedObject: grpc.GrpcObject | undefined;

/** etcd's API as a grpc-js package object: `.etcdserverpb.KV`, `.v3lockpb.Lock`, ... (loaded once). @public */
export function loadEtcdProtos(): grpc.GrpcObject {
  cachedObject ??= grpc.loadPackageDefinition(etcdPackageDefinition());
  return cachedObject;
}

/** A service constructor (for plain grpc-js clients): `etcdService('KV')`. @public */
export function etcdService(name: EtcdServiceName): grpc.ServiceClientConstructor {
  const pkg = loadEtcdProtos()[SERVICE_PACKAGES[name]] as grpc.GrpcObject;
  return pkg[name] as grpc.ServiceClientConstructor;
}
