/**
 * etcd's API as its .proto files declare it (etcdserverpb's rpc.proto with mvccpb and authpb, and the
 * v3lockpb / v3electionpb services of etcd's server/etcdserver/api/v3lock and v3election), loaded once,
 * with one set of options, for every part of etcdsim that reads them: the gRPC door's method tables and
 * request checks, the JSON gateway's schema, the test and bench clients. The options are the ones the
 * message types in ./generated were generated with (scripts/gen-types.mjs; test/proto/generated_types.test.ts
 * holds the two together), so a decoded request is exactly the `X__Output` type the services take.
 */
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { SERVICE_PACKAGES, type EtcdServiceName } from './calls.js';

/** Where our .proto files live (src/proto; dist/proto once built). rpc.proto imports kv.proto and auth.proto. @public */
export const PROTO_DIR = fileURLToPath(new URL('./', import.meta.url));

/** The protos that declare services; the message-only ones (kv.proto, auth.proto) come in through their imports. */
export const PROTO_FILES: readonly string[] = Object.freeze(['etcdserverpb/rpc.proto', 'v3lockpb/v3lock.proto', 'v3electionpb/v3election.proto']);

/**
 * The options every etcdsim gRPC peer (server and test clients) loads the protos with: field names as in
 * the .proto (keepCase), 64-bit integers and enums as strings, defaults filled in, a oneof's chosen field
 * named; bytes stay Buffers.
 * @public
 */
export const PROTO_LOADER_OPTIONS: protoLoader.Options = Object.freeze({
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_DIR],
});

let cachedPackage: protoLoader.PackageDefinition | undefined;

/** proto-loader's descriptors of every message, enum and service (loaded once). */
export function etcdPackageDefinition(): protoLoader.PackageDefinition {
  cachedPackage ??= protoLoader.loadSync([...PROTO_FILES], PROTO_LOADER_OPTIONS);
  return cachedPackage;
}

/**
 * A service's method definitions (path, streaming, codecs), as a server registers them: the very object
 * grpc-js's `loadPackageDefinition` hangs on a client constructor as `.service`, read here without loading
 * grpc-js, which a member that serves through its own HTTP/2 door (src/h2) never needs (src/grpc/client.ts
 * has the constructors).
 */
export function etcdServiceDefinition(name: EtcdServiceName): grpc.ServiceDefinition {
  return etcdPackageDefinition()[`${SERVICE_PACKAGES[name]}.${name}`] as grpc.ServiceDefinition;
}
