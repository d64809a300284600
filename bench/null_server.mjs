// The floor of the server-mode bench: a gRPC server on our etcd protos that does no work at all. Put and
// Txn are answered at once with a constant response (Txn: succeeded), Range with the same 10k keys,
// DeleteRange with none deleted. Whatever time the etcd3 client spends against it is the client's and
// the transport's own, which no server can remove: it bounds how much faster than etcd any Node gRPC
// server can look in this bench.
// Usage: node bench/null_server.mjs → prints "null server on 127.0.0.1:PORT".
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';

const includeDirs = [fileURLToPath(new URL('../src/proto/', import.meta.url))];
const options = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs };
const pkg = grpc.loadPackageDefinition(protoLoader.loadSync('etcdserverpb/rpc.proto', options)).etcdserverpb;
const header = { cluster_id: '1', member_id: '1', revision: '2', raft_term: '2' };
const server = new grpc.Server();
// Range answers the same 10k keys every time (the bench's range row), encoded once at start-up, so the
// row's floor is the client decoding them.
const value = Buffer.from('value-0123456789-value-0123456789');
const kvs = Array.from({ length: 10_000 }, (_, i) => ({
  key: Buffer.from(`etcdsim-bench/null/r/${String(i).padStart(6, '0')}`),
  create_revision: String(i + 2), mod_revision: String(i + 2), version: '1', value, lease: '0',
}));
const kv = pkg.KV.service;
const rangeBytes = kv.Range.responseSerialize({ header, kvs, more: false, count: String(kvs.length) });
const service = { ...kv, Range: { ...kv.Range, responseSerialize: () => rangeBytes } };
server.addService(service, {
  Put: (_call, done) => done(null, { header, prev_kv: null }),
  Range: (_call, done) => done(null, {}),
  Txn: (_call, done) => done(null, { header, succeeded: true, responses: [] }),
  DeleteRange: (_call, done) => done(null, { header, deleted: '0', prev_kvs: [] }),
});
server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) throw err;
  console.log(`null server on 127.0.0.1:${port}`);
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => server.forceShutdown());
