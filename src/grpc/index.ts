/**
 * What the floors above (the command, the differential, the shadow) use of the gRPC floor: serve() and its
 * options — one member on a real port as etcd's v3rpc serves it — and the gRPC client of a real etcd
 * (connectEtcd, etcd's services as grpc-js constructors). The package's `etcdsim/grpc` entry is another
 * file (src/grpc.ts), which picks what users may import, so this index can offer the floors above what is
 * not published.
 *
 * A served cluster (serve_cluster.ts) is offered by its types only: it loads the simulated cluster and its
 * Raft, which `etcdsim serve` with one member never needs, so the command imports it when it runs.
 */
export {
  serve,
  servedServerOf,
  isLoopback,
  type ServeOptions,
  type ServeHandle,
  type TlsOptions,
  type StreamMethod,
  type StreamEndReason,
  type StreamEndInfo,
} from './server.js';
export {
  connectEtcd,
  etcdService,
  loadEtcdProtos,
  type ConnectOptions,
  type EtcdGrpcClient,
  type GrpcAuthClient,
  type GrpcBidiCall,
  type GrpcKVClient,
  type GrpcLeaseClient,
} from './client.js';
export type { ServedClusterMember, ServeClusterOptions, ServeClusterHandle } from './serve_cluster.js';
// etcd's canonical encoding of the answers that carry key-values: the shadow compares the simulator's with etcd's bytes.
export { encodeRangeResponse, encodePutResponse, encodeDeleteRangeResponse, encodeTxnResponse } from './codec.js';
