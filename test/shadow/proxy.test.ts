/**
 * The proxy's reading of gRPC calls off the bytes it passes on (src/shadow/h2tap.ts, src/shadow/proxy.ts):
 * what the shadow learns of a call — its path and metadata, every message, then its end — arrives in that
 * order, however the bytes are cut into reads, and the client gets etcd's bytes whole.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { Buffer } from 'node:buffer';
import fc from 'fast-check';
import { ConnectionTap } from '../../src/shadow/h2tap.js';
import { startProxy, type TappedCall } from '../../src/shadow/proxy.js';
import { CLIENT_PREFACE, Flags, frame, FrameType, settingsFrame } from '../../src/h2/frames.js';
import { HpackEncoder } from '../../src/h2/hpack.js';

/** A gRPC message: flag 0, 4-byte length, `size` bytes of 'x'. */
function grpcMessage(size: number): Buffer {
  const m = Buffer.alloc(5 + size, 0x78);
  m[0] = 0;
  m.writeUInt32BE(size, 1);
  return m;
}

/** `data` as DATA frames of at most `max` bytes on stream `id`, the last one ending the stream if `end`. */
function dataFrames(id: number, data: Buffer, max: number, end = false): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < data.length; at += max) {
    const last = at + max >= data.length;
    out.push(frame(FrameType.DATA, last && end ? Flags.END_STREAM : 0, id, data.subarray(at, at + max)));
  }
  return out;
}

/** Calls the tap could not read, written down as "unread WHY". */
function unreadInto(seen: string[]): (why: string) => void {
  return (why) => seen.push(`unread ${why}`);
}

/** A tap that writes down what it learns, as "request N", "response N", "end STATUS MESSAGE". */
function recorder(seen: string[]): (path: string, headers: TappedCall['headers']) => TappedCall {
  return (path, headers) => {
    seen.push(`call ${path} token=${String(headers['token'])}`);
    return {
      path,
      headers,
      onRequest: (m) => seen.push(`request ${m.length}`),
      onResponse: (m) => seen.push(`response ${m.length}`),
      onEnd: (status, message) => seen.push(`end ${status} ${message}`),
      onUntapped: (why) => seen.push(`untapped ${why}`),
    };
  };
}

/**
 * Both directions of one connection with two calls: a Put answered with a 50 kB message in DATA frames
 * (padded, one of them) and trailers, the request's header block split into HEADERS and CONTINUATION; and a
 * Range answered trailers-only with an error (grpc-message percent-encoded).
 */
function exchange(): { client: Buffer; server: Buffer } {
  const c = new HpackEncoder();
  const s = new HpackEncoder();
  const put = c.encode([':method', 'POST', ':scheme', 'http', ':path', '/etcdserverpb.KV/Put', ':authority', 'etcd', 'content-type', 'application/grpc', 'te', 'trailers', 'token', 'abc']);
  const range = c.encode([':method', 'POST', ':scheme', 'http', ':path', '/etcdserverpb.KV/Range', ':authority', 'etcd']);
  const padded = Buffer.concat([Buffer.from([3]), grpcMessage(10), Buffer.alloc(3)]);
  const client = Buffer.concat([
    CLIENT_PREFACE,
    settingsFrame([]),
    frame(FrameType.HEADERS, 0, 1, put.subarray(0, 5)),
    frame(FrameType.CONTINUATION, Flags.END_HEADERS, 1, put.subarray(5)),
    frame(FrameType.DATA, Flags.END_STREAM | Flags.PADDED, 1, padded),
    frame(FrameType.HEADERS, Flags.END_HEADERS, 3, range),
    frame(FrameType.DATA, Flags.END_STREAM, 3, grpcMessage(3)),
  ]);
  const server = Buffer.concat([
    settingsFrame([]),
    frame(FrameType.HEADERS, Flags.END_HEADERS, 1, s.encode([':status', '200', 'content-type', 'application/grpc'])),
    ...dataFrames(1, grpcMessage(50_000), 16_384),
    frame(FrameType.HEADERS, Flags.END_HEADERS | Flags.END_STREAM, 3, s.encode([':status', '200', 'grpc-status', '9', 'grpc-message', 'etcdserver%3A no'])),
    frame(FrameType.HEADERS, Flags.END_HEADERS | Flags.END_STREAM, 1, s.encode(['grpc-status', '0'])),
  ]);
  return { client, server };
}

const EXPECTED = [
  'call /etcdserverpb.KV/Put token=abc',
  'request 10',
  'call /etcdserverpb.KV/Range token=undefined',
  'request 3',
  'response 50000',
  'end 9 etcdserver: no',
  'end 0 ',
];

/** `b` cut at the given points (each taken modulo its length). */
function cut(b: Buffer, points: readonly number[]): Buffer[] {
  const at = [...new Set(points.map((p) => p % (b.length + 1)))].sort((x, y) => x - y);
  const out: Buffer[] = [];
  let prev = 0;
  for (const p of [...at, b.length]) {
    out.push(b.subarray(prev, p));
    prev = p;
  }
  return out;
}

test('the tap reads calls off both directions of a connection, however the bytes are cut into reads', () => {
  const { client, server } = exchange();
  fc.assert(
    fc.property(fc.array(fc.nat(), { maxLength: 20 }), fc.array(fc.nat(), { maxLength: 20 }), (cc, sc) => {
      const seen: string[] = [];
      const tap = new ConnectionTap(recorder(seen), unreadInto(seen), 1 << 20);
      for (const b of cut(client, cc)) tap.fromClient(b);
      for (const b of cut(server, sc)) tap.fromServer(b);
      tap.close('closed');
      assert.equal(tap.stopped, undefined);
      assert.deepEqual(seen, EXPECTED);
    }),
    { numRuns: 200 },
  );
});

test('a reset ends the call unanswered; the connection closing ends every call still open', () => {
  const c = new HpackEncoder();
  const call = (id: number): Buffer => frame(FrameType.HEADERS, Flags.END_HEADERS, id, c.encode([':method', 'POST', ':path', '/etcdserverpb.Watch/Watch']));
  const seen: string[] = [];
  const tap = new ConnectionTap(recorder(seen), unreadInto(seen), 1 << 20);
  const rst = Buffer.alloc(4);
  rst.writeUInt32BE(8, 0);
  tap.fromClient(Buffer.concat([CLIENT_PREFACE, call(1), call(3), frame(FrameType.RST_STREAM, 0, 1, rst)]));
  tap.fromServer(frame(FrameType.RST_STREAM, 0, 3, rst));
  tap.fromClient(call(5));
  tap.close('connection closed');
  assert.deepEqual(seen, [
    'call /etcdserverpb.Watch/Watch token=undefined',
    'call /etcdserverpb.Watch/Watch token=undefined',
    'end undefined closed by the client',
    'end undefined reset by etcd (8)',
    'call /etcdserverpb.Watch/Watch token=undefined',
    'end undefined connection closed',
  ]);
});

test('bytes the tap cannot follow stop it for the connection: its open calls end not compared, nothing is buffered', () => {
  const c = new HpackEncoder();
  const seen: string[] = [];
  const tap = new ConnectionTap(recorder(seen), unreadInto(seen), 1 << 20, 64 * 1024);
  tap.fromClient(Buffer.concat([CLIENT_PREFACE, frame(FrameType.HEADERS, Flags.END_HEADERS, 1, c.encode([':method', 'POST', ':path', '/etcdserverpb.KV/Put']))]));
  // A header block referring to a dynamic table entry that does not exist: the tables are out of step.
  tap.fromServer(frame(FrameType.HEADERS, Flags.END_HEADERS, 1, Buffer.from([0xff, 0x20])));
  tap.fromServer(frame(FrameType.HEADERS, Flags.END_HEADERS, 1, c.encode(['grpc-status', '0'])));
  const why = 'connection no longer read: a header block that does not decode';
  assert.equal(tap.stopped, why);
  assert.deepEqual(seen, ['call /etcdserverpb.KV/Put token=undefined', `untapped ${why}`, `end undefined ${why}`]);
  const big = new ConnectionTap(recorder([]), unreadInto([]), 1 << 20, 64 * 1024);
  const header = Buffer.from([0x10, 0, 0, FrameType.DATA, 0, 0, 0, 0, 1]); // a 1 MiB frame announced
  big.fromServer(header);
  assert.equal(big.stopped, 'connection no longer read: a frame over 65536 bytes');
});

/**
 * A client that goes on using a connection the tap gave up on: the call whose header block stopped it and
 * every call opened after it are each counted once as unread, with the reason, however the bytes are cut —
 * the tap walks the frame headers and skips the payloads (a frame bigger than it reads included) unread.
 */
test('a stopped tap still counts each call the client opens later on the connection, skipping its bytes unread', () => {
  const c = new HpackEncoder();
  const put = c.encode([':method', 'POST', ':path', '/etcdserverpb.KV/Put']);
  const later = c.encode([':method', 'POST', ':path', '/etcdserverpb.KV/Range']);
  const client = Buffer.concat([
    CLIENT_PREFACE,
    settingsFrame([]),
    frame(FrameType.HEADERS, Flags.END_HEADERS, 1, put),
    frame(FrameType.DATA, 0, 1, grpcMessage(10)),
    // A header block referring to a dynamic table entry that does not exist: the tap stops here.
    frame(FrameType.HEADERS, Flags.END_HEADERS, 3, Buffer.from([0xff, 0x20])),
    ...dataFrames(3, grpcMessage(100_000), 100_000, true), // one frame over the tap's 64 KiB
    frame(FrameType.HEADERS, 0, 5, later.subarray(0, 3)),
    frame(FrameType.CONTINUATION, Flags.END_HEADERS, 5, later.subarray(3)),
    frame(FrameType.DATA, Flags.END_STREAM, 5, grpcMessage(3)),
    frame(FrameType.RST_STREAM, 0, 5, Buffer.alloc(4)),
    frame(FrameType.HEADERS, Flags.END_HEADERS | Flags.END_STREAM, 7, later),
  ]);
  const why = 'connection no longer read: a header block that does not decode';
  fc.assert(
    fc.property(fc.array(fc.nat(), { maxLength: 30 }), (cc) => {
      const seen: string[] = [];
      const tap = new ConnectionTap(recorder(seen), unreadInto(seen), 1 << 20, 64 * 1024);
      for (const b of cut(client, cc)) tap.fromClient(b);
      tap.fromServer(frame(FrameType.HEADERS, Flags.END_HEADERS | Flags.END_STREAM, 1, new HpackEncoder().encode([':status', '200', 'grpc-status', '0'])));
      tap.close('closed');
      assert.deepEqual(seen, [
        'call /etcdserverpb.KV/Put token=undefined',
        'request 10',
        `unread ${why}`, // stream 3, whose headers stopped the tap
        `untapped ${why}`,
        `end undefined ${why}`,
        `unread ${why}`, // stream 5
        `unread ${why}`, // stream 7
      ]);
    }),
    { numRuns: 200 },
  );
});

/** A gRPC answer of one `size`-byte message and grpc-status 0, for any call. */
async function fakeEtcd(size: number): Promise<{ address: string; close(): Promise<void> }> {
  const server = http2.createServer();
  server.on('stream', (s) => {
    s.resume();
    s.on('end', () => {
      s.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      s.on('wantTrailers', () => s.sendTrailers({ 'grpc-status': '0' }));
      s.end(grpcMessage(size));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return { address: `127.0.0.1:${port}`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/**
 * A 1.5 MB answer (a Put's prev_kv of the long shadow run, seed 7, that a proxy terminating HTTP/2 ended for
 * its tap before the last messages came: etcd's trailers reached it while they still waited in its upstream
 * stream) to a client reading through a 1 KiB window: the client gets etcd's bytes whole, the tap the whole
 * message before the call's end.
 */
test('through the proxy: a large answer to a slow client reaches it whole, and the tap has its message before its end', async () => {
  const size = 1_572_800;
  const etcd = await fakeEtcd(size);
  const seen: string[] = [];
  let ended!: () => void;
  const end = new Promise<void>((r) => (ended = r));
  const record = recorder(seen);
  const proxy = await startProxy({
    etcd: etcd.address,
    host: '127.0.0.1',
    port: 0,
    maxMessageBytes: 4 * 1024 * 1024,
    tap: (path, headers) => {
      const call = record(path, headers);
      return { ...call, onEnd: (s, m) => (call.onEnd(s, m), ended()) };
    },
    unread: unreadInto(seen),
    tapGateway: () => undefined,
  });
  const session = http2.connect(`http://127.0.0.1:${proxy.port}`, { settings: { initialWindowSize: 1024 } });
  try {
    const st = session.request({ ':method': 'POST', ':path': '/etcdserverpb.KV/Put', 'content-type': 'application/grpc', te: 'trailers', token: 't1' });
    let got = 0;
    let status: unknown;
    st.on('data', (c: Buffer) => (got += c.length));
    st.on('trailers', (t) => (status = t['grpc-status']));
    st.end(grpcMessage(0));
    await new Promise<void>((r) => st.on('close', r));
    await end;
    assert.equal(got, 5 + size, "the client got etcd's answer whole");
    assert.equal(status, '0');
    assert.deepEqual(seen, ['call /etcdserverpb.KV/Put token=t1', 'request 0', `response ${size}`, 'end 0 ']);
  } finally {
    session.close();
    await proxy.close();
    await etcd.close();
  }
});
