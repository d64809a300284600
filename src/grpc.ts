/**
 * The `etcdsim/grpc` entry point: server mode. serve() puts one simulated member on a real port with
 * etcd's v3 gRPC API, so any etcd client (etcdctl, etcd3, Go's clientv3, jetcd, grpc-js) talks to it as to a
 * single-member etcd. The proto helpers let a test build plain grpc-js clients from etcd's own protos.
 * Kept apart from the root entry point because it loads @grpc/grpc-js and the .proto files, and apart from
 * src/grpc/index.ts (what the floors above use of the gRPC floor) so that publishing a name is a decision
 * made here, name by name, as src/index.ts makes it for the root entry.
 */
export {
  serve,
  type ServeOptions,
  type ServeHandle,
  type TlsOptions,
  type StreamMethod,
  type StreamEndReason,
  type StreamEndInfo,
} from './grpc/server.js';
// etcd's protos for plain grpc-js clients (src/proto), and grpc-js's constructors of etcd's services.
export { PROTO_DIR, PROTO_LOADER_OPTIONS, type EtcdServiceName } from './proto/index.js';
export { loadEtcdProtos, etcdService } from './grpc/client.js';
// serve({ clock }) drives a served member from a test's virtual clock; ServeHandle.server is the member, as
// the interface the root entry publishes for `sim.server` (EtcdServerView: the types it names come from 'etcdsim').
export { VirtualClock, type Clock } from './sim/index.js';
export type { EtcdServerView, EtcdServerOptions } from './server/index.js';
// What ServeOptions' fields take: the rule set (etcd release) and the users and roles to start with.
export type { EtcdVersion } from './etcd/index.js';
export type { AuthSetup } from './auth/index.js';
export type { TokenProvider, TokenProviderFactory } from './auth/index.js';
