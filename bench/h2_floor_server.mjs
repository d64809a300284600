// The floor of the served-path bench (bench/served.bench.ts): a gRPC server on bare node:http2 that does
// no work at all — every call, whatever its path, is answered as a unary call is (HEADERS, one message,
// trailers grpc-status 0) with the same constant message once the request side ends. The message is a
// PutResponse with only a header, which also reads as a RangeResponse with no keys. What this process
// spends per call is what node:http2 alone costs; no server built on it can spend less.
// Usage: node bench/h2_floor_server.mjs <port> → prints "h2 floor server on 127.0.0.1:PORT".
import * as http2 from 'node:http2';

// ResponseHeader{cluster_id: 1, member_id: 2, revision: 3, raft_term: 4} as field 1.
const message = Buffer.from('0a080801100218032004', 'hex');
const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, message.length]), message]);
const trailers = { 'grpc-status': '0', 'grpc-message': '' };
const server = http2.createServer();
server.on('stream', (stream) => {
  stream.on('error', () => {});
  stream.on('data', () => {});
  stream.on('end', () => {
    if (stream.closed) return;
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.once('wantTrailers', () => stream.sendTrailers(trailers));
    stream.end(frame);
  });
});
server.listen(Number(process.argv[2] ?? '0'), '127.0.0.1', () => {
  const a = server.address();
  process.stdout.write(`h2 floor server on 127.0.0.1:${typeof a === 'object' && a !== null ? a.port : '?'}\n`);
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(0));
