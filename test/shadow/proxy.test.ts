/**
 * The proxy's tap (src/shadow/proxy.ts) against a plain HTTP/2 server standing in for etcd: what the shadow
 * learns of a call — every message, then its end — arrives in that order, however the application reads.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { Buffer } from 'node:buffer';
import { startProxy, type TappedCall } from '../../src/shadow/proxy.js';

/** A gRPC answer of one `size`-byte message and grpc-status 0, for any call. */
async function fakeEtcd(size: number): Promise<{ address: string; sent: Promise<void>; close(): Promise<void> }> {
  const server = http2.createServer();
  let done!: () => void;
  const sent = new Promise<void>((r) => (done = r));
  server.on('stream', (s) => {
    s.resume();
    s.on('end', () => {
      s.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      s.on('wantTrailers', () => s.sendTrailers({ 'grpc-status': '0' }));
      s.on('close', done);
      const msg = Buffer.alloc(5 + size, 0x78);
      msg[0] = 0;
      msg.writeUInt32BE(size, 1);
      s.end(msg);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return { address: `127.0.0.1:${port}`, sent, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/**
 * etcd's trailers can reach the proxy while its last messages still wait in the proxy's upstream stream: the
 * client reads slower than etcd writes (here a client window of 1 KiB against a 50 kB answer that fits in the
 * proxy's own window), so the pipe to the client has paused it. A long shadow run (seed 7) compared a Put
 * with a 1.5 MB prev_kv as if etcd had answered nothing, because the call had ended before its message came.
 */
test('an answer the client reads slowly: the tap has every message before the call ends', async () => {
  const size = 50_000;
  const etcd = await fakeEtcd(size);
  const seen: string[] = [];
  let ended!: () => void;
  const end = new Promise<void>((r) => (ended = r));
  const proxy = await startProxy({
    etcd: etcd.address,
    host: '127.0.0.1',
    port: 0,
    maxMessageBytes: 4 * 1024 * 1024,
    tap: (path): TappedCall => ({
      path,
      headers: {},
      onRequest: () => seen.push('request'),
      onResponse: (m) => seen.push(`response ${m.length}`),
      onEnd: (status) => {
        seen.push(`end ${status}`);
        ended();
      },
      onUntapped: (why) => seen.push(`untapped ${why}`),
    }),
    tapGateway: () => undefined,
  });
  const session = http2.connect(`http://127.0.0.1:${proxy.port}`, { settings: { initialWindowSize: 1024 } });
  try {
    const st = session.request({ ':method': 'POST', ':path': '/etcdserverpb.KV/Put', 'content-type': 'application/grpc', te: 'trailers' });
    st.pause();
    st.end(Buffer.from([0, 0, 0, 0, 0]));
    // etcd has written the whole answer and its trailers before the client reads any of it.
    await etcd.sent;
    let got = 0;
    st.on('data', (c: Buffer) => (got += c.length));
    st.resume();
    await end;
    await new Promise<void>((r) => (st.closed ? r() : st.on('close', r)));
    assert.equal(got, 5 + size, 'the client got etcd\'s answer whole');
    assert.deepEqual(seen, ['request', `response ${size}`, 'end 0']);
  } finally {
    session.close();
    await proxy.close();
    await etcd.close();
  }
});
