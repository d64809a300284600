/**
 * etcd's API as declared by its .proto files, in one place: the .proto files themselves, the one loader
 * every door reads them through (loader.ts; grpc-js's client constructors: clients.ts), and the message
 * types proto-loader-gen-types writes from them (generated/, `npm run gen-types`; src/server/messages.ts derives the services' message types from those).
 * A leaf: it imports nothing of etcdsim. The serving side (src/grpc, src/http) imports loader.ts and calls.ts
 * themselves: this index also re-exports clients.ts, which loads grpc-js, and a member never dials.
 */
export {
  PROTO_DIR,
  PROTO_FILES,
  PROTO_LOADER_OPTIONS,
  SERVICE_PACKAGES,
  etcdPackageDefinition,
  etcdServiceDefinition,
  type EtcdServiceName,
} from './loader.js';
export { loadEtcdProtos, etcdService } from './clients.js';
export { callNameOf, SERVICE_DECLARATIONS, type CallName } from './calls.js';
export type * from './generated/index.js';
