/**
 * A grpc-js client against a tiny gRPC handler written on src/http/h2's stream API, the gRPC framing done
 * by hand (5-octet message prefix, content-type application/grpc, trailers grpc-status): grpc clients
 * accept the library's frames and header blocks, the constant blocks encoded once included.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { HpackEncoder, headerValue } from '../../src/h2/hpack.js';
import type { H2Stream } from '../../src/h2/stream.js';
import { startServer } from './helpers.js';

const RESPONSE_HEADERS = HpackEncoder.constant([':status', '200', 'content-type', 'application/grpc']);
const OK_TRAILERS = HpackEncoder.constant(['grpc-status', '0', 'grpc-message', '']);

function grpcFrame(msg: Buffer): Buffer {
  const b = Buffer.allocUnsafe(5 + msg.length);
  b[0] = 0;
  b.writeUInt32BE(msg.length, 1);
  msg.copy(b, 5);
  return b;
}

/** /test.Echo/Say answers "<message> back, <token metadata>"; /test.Echo/Fail answers NOT_FOUND; others UNIMPLEMENTED (trailers-only). */
function handler(st: H2Stream): void {
  if (st.path !== '/test.Echo/Say' && st.path !== '/test.Echo/Fail') {
    st.respond([':status', '200', 'content-type', 'application/grpc', 'grpc-status', '12', 'grpc-message', `unknown method ${st.path}`], true);
    return;
  }
  const parts: Buffer[] = [];
  st.onData = (d) => parts.push(d);
  st.onEnd = () => {
    const body = Buffer.concat(parts);
    assert.equal(headerValue(st.headers, 'content-type'), 'application/grpc');
    const msg = body.subarray(5, 5 + body.readUInt32BE(1));
    st.respond(RESPONSE_HEADERS);
    if (st.path === '/test.Echo/Fail') {
      st.end(['grpc-status', '5', 'grpc-message', `no such key: ${msg.toString()}`]);
      return;
    }
    st.write(grpcFrame(Buffer.from(`${msg.toString()} back, ${headerValue(st.headers, 'token') ?? 'no token'}`)));
    st.end(OK_TRAILERS);
  };
}

test('grpc-js unary calls to a handler on the h2 stream API', async () => {
  const srv = await startServer(handler);
  const client = new grpc.Client(`127.0.0.1:${srv.port}`, grpc.credentials.createInsecure());
  const call = (path: string, msg: string, md = new grpc.Metadata()): Promise<{ err: grpc.ServiceError | null; res: Buffer | undefined }> =>
    new Promise((resolve) =>
      client.makeUnaryRequest(path, (b: Buffer) => b, (b: Buffer) => b, Buffer.from(msg), md, (err, res) => resolve({ err, res })),
    );
  try {
    const md = new grpc.Metadata();
    md.set('token', 'abc');
    const ok = await call('/test.Echo/Say', 'hello', md);
    assert.equal(ok.err, null);
    assert.equal(ok.res?.toString(), 'hello back, abc');
    // Many calls on the one connection, concurrently.
    const many = await Promise.all(Array.from({ length: 100 }, (_, i) => call('/test.Echo/Say', `m${i}`)));
    many.forEach((r, i) => assert.equal(r.res?.toString(), `m${i} back, no token`));
    const fail = await call('/test.Echo/Fail', 'k1');
    assert.equal(fail.err?.code, grpc.status.NOT_FOUND);
    assert.equal(fail.err?.details, 'no such key: k1');
    const unknown = await call('/test.Echo/Nope', '');
    assert.equal(unknown.err?.code, grpc.status.UNIMPLEMENTED);
    assert.equal(unknown.err?.details, 'unknown method /test.Echo/Nope');
    assert.equal(srv.connections.length, 1);
  } finally {
    client.close();
    await srv.close();
  }
});
