/**
 * The served bench's (bench/served.bench.ts) measure of our own HTTP/2 layer, src/http/h2: a do-nothing gRPC
 * server on it — every call, whatever its path, answered with :status 200 / application/grpc, one constant
 * message and trailers grpc-status 0 / empty grpc-message once the request side ends, as
 * bench/h2_floor_server.mjs answers on node:http2: the floor under etcdsim serve, which runs on this layer.
 * The bench runs it compiled with the rest of src/ (compileSim), so no tsx runs in the measured process.
 *
 *   node <compiled>/bench/h2_lib_floor_server.js <port>
 *       → prints "h2 lib floor server on 127.0.0.1:PORT" and serves.
 */
import * as net from 'node:net';
import { Http2ServerConnection } from '../src/h2/connection.js';
import { HpackEncoder } from '../src/h2/hpack.js';
import type { H2Stream } from '../src/h2/stream.js';

// ResponseHeader{cluster_id: 1, member_id: 2, revision: 3, raft_term: 4} as field 1 (as the other floors).
const MESSAGE = Buffer.from('0a080801100218032004', 'hex');
const GRPC_FRAME = Buffer.concat([Buffer.from([0, 0, 0, 0, MESSAGE.length]), MESSAGE]);
const RESPONSE = HpackEncoder.constant([':status', '200', 'content-type', 'application/grpc']);
const TRAILERS = HpackEncoder.constant(['grpc-status', '0', 'grpc-message', '']);
const INTERNAL_ERROR = 0x2;

/** A member's answer to one call: its framed response message, now or later. */
type Handler = (path: string, message: Buffer) => Buffer | Promise<Buffer>;

function reply(st: H2Stream, framed: Buffer): void {
  if (st.isClosed) return;
  st.respond(RESPONSE);
  st.write(framed);
  st.end(TRAILERS);
}

/** Answers each stream once its request ended: the constant message, or the handler's answer. */
function onStream(handler: Handler | undefined): (st: H2Stream) => void {
  if (handler === undefined) return (st) => void (st.onEnd = () => reply(st, GRPC_FRAME));
  return (st) => {
    const parts: Buffer[] = [];
    st.onData = (chunk) => void parts.push(chunk);
    st.onEnd = () => {
      const body = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
      // One whole gRPC message, or the floor's shortcut: a reset.
      if (body.length < 5 || body.readUInt32BE(1) !== body.length - 5) return st.reset(INTERNAL_ERROR);
      let res: Buffer | Promise<Buffer>;
      try {
        res = handler(st.path, body.subarray(5));
      } catch {
        return st.reset(INTERNAL_ERROR);
      }
      if (res instanceof Promise) res.then((framed) => reply(st, framed), () => st.reset(INTERNAL_ERROR));
      else reply(st, res);
    };
  };
}

/** Listens on 127.0.0.1:`port` (0: any free port); resolves with the server, its port and open connections. */
export function listen(port: number, handler?: Handler): Promise<{ server: net.Server; port: number; connections: Set<Http2ServerConnection> }> {
  const connections = new Set<Http2ServerConnection>();
  const streams = onStream(handler);
  const server = net.createServer((socket) => {
    const c = new Http2ServerConnection(socket, { onStream: streams, onClose: () => connections.delete(c) });
    connections.add(c);
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve({ server, port: (server.address() as net.AddressInfo).port, connections })));
}

if (process.argv[1] !== undefined && /h2_lib_floor_server\.(ts|mjs|js)$/.test(process.argv[1])) {
  const { server, port, connections } = await listen(Number(process.argv[2] ?? '0'));
  process.stdout.write(`h2 lib floor server on 127.0.0.1:${port}\n`);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      for (const c of connections) c.close();
      server.close(() => process.exit(0));
      setTimeout(() => process.exit(0), 500).unref();
    });
  }
}
