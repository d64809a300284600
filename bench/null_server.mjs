// The floor of the server-mode bench: a gRPC server on our etcd protos that does no work at all. Put and
// Txn are answered at once with a constant response (Txn: succeeded), Range with no keys, DeleteRange with none deleted. Whatever time the
// etcd3 client spends against it is the client's and the transport's own, which no server can remove:
// it bounds how much faster than etcd any Node gRPC server can look in this bench.
// Usage: node bench/null_server.mjs → prints "null server on 127.0.0.1:PORT".
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';

const includeDirs = [fileURLToPath(new URL('../src/grpc/proto/', import.meta.url))];
const options = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs };
const pkg = grpc.loadPackageDefinition(protoLoader.loadSync('etcdserverpb/rpc.proto', options)).etcdserverpb;
const header = { cluster_id: '1', member_id: '1', revision: '2', raft_term: '2' };
const server = new grpc.Server();
server.addService(pkg.KV.service, {
  Put: (_call, done) => done(null, { header, prev_kv: null }),
  Range: (_call, done) => done(null, { header, kvs: [], more: false, count: '0' }),
  Txn: (_call, done) => done(null, { header, succeeded: true, responses: [] }),
  DeleteRange: (_call, done) => done(null, { header, deleted: '0', prev_kvs: [] }),
});
server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) throw err;
  console.log(`null server on 127.0.0.1:${port}`);
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => server.forceShutdown());
