/**
 * etcd's API as declared by its .proto files, in one place: the .proto files themselves, the one loader
 * every door reads them through (loader.ts), the names of their calls (calls.ts), and the message types
 * proto-loader-gen-types writes from them (generated/, `npm run gen-types`; src/server/messages.ts derives
 * the services' message types from those). A leaf: it imports nothing of etcdsim, and no grpc-js — a member
 * serves through its own HTTP/2 door and never dials, so grpc-js's client constructors live with the gRPC
 * client (src/grpc/client.ts). The in-process simulator reads no .proto at all: it lists etcd's calls from
 * calls.ts alone, without the loader's proto-loader and protobufjs (test/layout/index_imports.test.ts).
 */
export { PROTO_DIR, PROTO_FILES, PROTO_LOADER_OPTIONS, etcdPackageDefinition, etcdServiceDefinition } from './loader.js';
export { callNameOf, SERVICE_DECLARATIONS, SERVICE_PACKAGES, type CallName, type EtcdServiceName } from './calls.js';
export type * from './generated/index.js';
