/**
 * src/http/h2's connection against hand-made frames over a plain socket: protocol violations end in the
 * error RFC 9113 names — a connection error (GOAWAY with the code, then the socket closes) or a stream
 * error (RST_STREAM, the connection goes on) — and a header block split into CONTINUATION frames by hand.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CLIENT_PREFACE, ErrorCode, Flags, FrameType, Setting, frame, settingsFrame, windowUpdateFrame } from '../../src/h2/frames.js';
import type { H2Stream } from '../../src/h2/stream.js';
import { REQUEST, RawClient, requestBlock, serverWithClient, startServer } from './helpers.js';

const block = requestBlock;
const headers = (id: number, flags: number = Flags.END_HEADERS, h: readonly string[] = REQUEST): Buffer => frame(FrameType.HEADERS, flags, id, block(h));
const data = (id: number, bytes: Buffer, flags: number = 0): Buffer => frame(FrameType.DATA, flags, id, bytes);

/** A server whose streams answer at the end of the request (or never, with `hold`), and one raw client on it. */
const setup = (hold = false): ReturnType<typeof serverWithClient> => serverWithClient(hold ? 'never' : 'end');

async function expectGoaway(client: RawClient, code: number): Promise<void> {
  const g = await client.goaway();
  assert.ok(g !== undefined, 'no GOAWAY');
  assert.equal(g.code, code, `GOAWAY code ${g.code} (${g.debug}), expected ${code}`);
  await client.closed();
}

async function expectRst(client: RawClient, id: number, code: number): Promise<void> {
  const f = await client.waitFor((x) => x.type === FrameType.RST_STREAM && x.streamId === id);
  assert.ok(f !== undefined, `no RST_STREAM on ${id}`);
  assert.equal(f.payload.readUInt32BE(0), code);
}

test('the server starts with SETTINGS and acknowledges the client SETTINGS', async () => {
  const { client, close } = await setup();
  try {
    const s = await client.waitFor((f) => f.type === FrameType.SETTINGS && f.flags === 0);
    assert.ok(s !== undefined && s.payload.length % 6 === 0);
    assert.ok(await client.waitFor((f) => f.type === FrameType.SETTINGS && f.flags === Flags.ACK));
  } finally {
    await close();
  }
});

test('a bad connection preface: GOAWAY PROTOCOL_ERROR', async () => {
  const srv = await startServer(() => {});
  const client = await RawClient.connect(srv.port, false);
  try {
    client.send(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
    await expectGoaway(client, ErrorCode.PROTOCOL_ERROR);
  } finally {
    client.destroy();
    await srv.close();
  }
});

test('a preface not followed by SETTINGS: GOAWAY PROTOCOL_ERROR', async () => {
  const srv = await startServer(() => {});
  const client = await RawClient.connect(srv.port, false);
  try {
    client.send(CLIENT_PREFACE, frame(FrameType.PING, 0, 0, Buffer.alloc(8)));
    await expectGoaway(client, ErrorCode.PROTOCOL_ERROR);
  } finally {
    client.destroy();
    await srv.close();
  }
});

test('DATA on stream 0: GOAWAY PROTOCOL_ERROR', async () => {
  const { client, close } = await setup();
  try {
    client.send(data(0, Buffer.from('x')));
    await expectGoaway(client, ErrorCode.PROTOCOL_ERROR);
  } finally {
    await close();
  }
});

test('a frame over SETTINGS_MAX_FRAME_SIZE: GOAWAY FRAME_SIZE_ERROR', async () => {
  const { client, close } = await setup();
  try {
    client.send(headers(1, Flags.END_HEADERS), data(1, Buffer.alloc(16385)));
    await expectGoaway(client, ErrorCode.FRAME_SIZE_ERROR);
  } finally {
    await close();
  }
});

test('window overflow: connection → GOAWAY FLOW_CONTROL_ERROR, stream → RST_STREAM FLOW_CONTROL_ERROR', async () => {
  const a = await setup(true);
  try {
    a.client.send(headers(1, Flags.END_HEADERS | Flags.END_STREAM), windowUpdateFrame(1, 0x7fffffff));
    await expectRst(a.client, 1, ErrorCode.FLOW_CONTROL_ERROR);
    a.client.send(windowUpdateFrame(0, 0x7fffffff));
    await expectGoaway(a.client, ErrorCode.FLOW_CONTROL_ERROR);
  } finally {
    await a.close();
  }
  // SETTINGS_INITIAL_WINDOW_SIZE over 2^31-1.
  const b = await setup();
  try {
    b.client.send(settingsFrame([[Setting.INITIAL_WINDOW_SIZE, 0x80000000]]));
    await expectGoaway(b.client, ErrorCode.FLOW_CONTROL_ERROR);
  } finally {
    await b.close();
  }
  // DATA beyond the stream window we granted (small windows for the test).
  const streams: H2Stream[] = [];
  const srv = await startServer((st) => streams.push(st), { initialWindowSize: 100, connectionWindowSize: 65535 });
  const c = await RawClient.connect(srv.port);
  try {
    c.send(headers(1), data(1, Buffer.alloc(101)));
    await expectRst(c, 1, ErrorCode.FLOW_CONTROL_ERROR);
    assert.equal(c.frames.some((f) => f.type === FrameType.GOAWAY), false);
  } finally {
    c.destroy();
    await srv.close();
  }
});

test('stream-state errors: idle, closed and half-closed streams, even ids, CONTINUATION out of place', async () => {
  const cases: Array<[string, (c: RawClient) => void, 'goaway' | number, number]> = [
    ['HEADERS on an even stream id', (c) => c.send(headers(2)), 'goaway', ErrorCode.PROTOCOL_ERROR],
    ['DATA on an idle stream', (c) => c.send(data(7, Buffer.from('x'))), 'goaway', ErrorCode.PROTOCOL_ERROR],
    ['RST_STREAM on an idle stream', (c) => c.send(frame(FrameType.RST_STREAM, 0, 9, Buffer.alloc(4))), 'goaway', ErrorCode.PROTOCOL_ERROR],
    ['CONTINUATION without HEADERS', (c) => c.send(frame(FrameType.CONTINUATION, Flags.END_HEADERS, 1, block())), 'goaway', ErrorCode.PROTOCOL_ERROR],
    ['a frame between HEADERS and CONTINUATION', (c) => c.send(headers(1, 0), frame(FrameType.PING, 0, 0, Buffer.alloc(8))), 'goaway', ErrorCode.PROTOCOL_ERROR],
    ['a stream id going backwards', (c) => c.send(headers(5, Flags.END_HEADERS), headers(3)), 'goaway', ErrorCode.PROTOCOL_ERROR],
    ['PING of 7 octets', (c) => c.send(frame(FrameType.PING, 0, 0, Buffer.alloc(7))), 'goaway', ErrorCode.FRAME_SIZE_ERROR],
    ['SETTINGS of 5 octets', (c) => c.send(frame(FrameType.SETTINGS, 0, 0, Buffer.alloc(5))), 'goaway', ErrorCode.FRAME_SIZE_ERROR],
    ['WINDOW_UPDATE of 0 on the connection', (c) => c.send(windowUpdateFrame(0, 0)), 'goaway', ErrorCode.PROTOCOL_ERROR],
    ['PUSH_PROMISE from a client', (c) => c.send(frame(FrameType.PUSH_PROMISE, Flags.END_HEADERS, 1, Buffer.alloc(4))), 'goaway', ErrorCode.PROTOCOL_ERROR],
    ['a broken HPACK block', (c) => c.send(frame(FrameType.HEADERS, Flags.END_HEADERS, 1, Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff]))), 'goaway', ErrorCode.COMPRESSION_ERROR],
    ['padding longer than the frame', (c) => c.send(headers(1), frame(FrameType.DATA, Flags.PADDED, 1, Buffer.from([9, 1, 2]))), 'goaway', ErrorCode.PROTOCOL_ERROR],
    ['DATA after END_STREAM (half-closed remote)', (c) => c.send(headers(1, Flags.END_HEADERS | Flags.END_STREAM), data(1, Buffer.from('x'))), 1, ErrorCode.STREAM_CLOSED],
    ['a request without :path', (c) => c.send(headers(1, Flags.END_HEADERS, [':method', 'POST', ':scheme', 'http'])), 1, ErrorCode.PROTOCOL_ERROR],
    ['an upper-case header name', (c) => c.send(headers(1, Flags.END_HEADERS, [...REQUEST, 'X-Up', '1'])), 1, ErrorCode.PROTOCOL_ERROR],
    ['a pseudo-header after a regular one', (c) => c.send(headers(1, Flags.END_HEADERS, ['content-type', 'a', ...REQUEST])), 1, ErrorCode.PROTOCOL_ERROR],
    ['trailers without END_STREAM', (c) => c.send(headers(1), headers(1, Flags.END_HEADERS, ['x-t', '1'])), 1, ErrorCode.PROTOCOL_ERROR],
    ['WINDOW_UPDATE of 0 on a stream', (c) => c.send(headers(1), windowUpdateFrame(1, 0)), 1, ErrorCode.PROTOCOL_ERROR],
    ['PRIORITY of 4 octets', (c) => c.send(headers(1), frame(FrameType.PRIORITY, 0, 1, Buffer.alloc(4))), 1, ErrorCode.FRAME_SIZE_ERROR],
  ];
  for (const [name, send, kind, code] of cases) {
    const { client, close } = await setup(true);
    try {
      send(client);
      if (kind === 'goaway') await expectGoaway(client, code);
      else {
        await expectRst(client, kind, code);
        // A stream error leaves the connection usable: a PING still gets its ACK.
        client.send(frame(FrameType.PING, 0, 0, Buffer.from('pingpong')));
        assert.ok(await client.waitFor((f) => f.type === FrameType.PING && f.flags === Flags.ACK), name);
        assert.equal(client.frames.some((f) => f.type === FrameType.GOAWAY), false, name);
      }
    } catch (e) {
      throw new Error(`${name}: ${(e as Error).message}`);
    } finally {
      await close();
    }
  }
});

test('a header block split by hand into HEADERS + CONTINUATION frames, with padding and priority', async () => {
  const seen: H2Stream[] = [];
  const srv = await startServer((st) => {
    seen.push(st);
    st.onEnd = () => {
      st.respond([':status', '200']);
      st.end(['grpc-status', '0']);
    };
  });
  const c = await RawClient.connect(srv.port);
  try {
    const b = block([...REQUEST, 'x-long', 'z'.repeat(100)]);
    // HEADERS: PADDED (3 octets of padding) + PRIORITY (5 octets), the first 10 octets of the block.
    const first = Buffer.concat([Buffer.from([3]), Buffer.from([0, 0, 0, 0, 16]), b.subarray(0, 10), Buffer.alloc(3)]);
    c.send(
      frame(FrameType.HEADERS, Flags.PADDED | Flags.PRIORITY | Flags.END_STREAM, 1, first),
      frame(FrameType.CONTINUATION, 0, 1, b.subarray(10, 50)),
      frame(FrameType.CONTINUATION, Flags.END_HEADERS, 1, b.subarray(50)),
      frame(FrameType.PRIORITY, 0, 1, Buffer.alloc(5)),
    );
    const end = await c.waitFor((f) => f.type === FrameType.HEADERS && (f.flags & Flags.END_STREAM) !== 0);
    assert.ok(end !== undefined);
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.path, '/p.S/M');
    assert.deepEqual(seen[0]!.headers.slice(-2), ['x-long', 'z'.repeat(100)]);
    // Padded DATA: the padding is not delivered.
    const got: Buffer[] = [];
    seen.length = 0;
    const srv2 = await startServer((st) => (st.onData = (d) => got.push(d)));
    const c2 = await RawClient.connect(srv2.port);
    c2.send(headers(1), frame(FrameType.DATA, Flags.PADDED, 1, Buffer.from([2, 0x61, 0x62, 0x63, 0, 0])));
    c2.send(frame(FrameType.PING, 0, 0, Buffer.alloc(8)));
    await c2.waitFor((f) => f.type === FrameType.PING);
    assert.equal(Buffer.concat(got).toString(), 'abc');
    c2.destroy();
    await srv2.close();
  } finally {
    c.destroy();
    await srv.close();
  }
});

test('beyond SETTINGS_MAX_CONCURRENT_STREAMS: REFUSED_STREAM', async () => {
  const srv = await startServer((st) => (st.onData = () => {}), { maxConcurrentStreams: 2 });
  const c = await RawClient.connect(srv.port);
  try {
    c.send(headers(1), headers(3), headers(5));
    await expectRst(c, 5, ErrorCode.REFUSED_STREAM);
    assert.equal(srv.connections[0]!.streamCount, 2);
  } finally {
    c.destroy();
    await srv.close();
  }
});

test('a response ended before the request: RST_STREAM NO_ERROR tells the client to stop', async () => {
  const srv = await startServer((st) => {
    st.respond([':status', '200']);
    st.end(['grpc-status', '0']);
  });
  const c = await RawClient.connect(srv.port);
  try {
    c.send(headers(1));
    await expectRst(c, 1, ErrorCode.NO_ERROR);
    // DATA still in flight on it is ignored, not an error.
    c.send(data(1, Buffer.from('late')), frame(FrameType.PING, 0, 0, Buffer.alloc(8)));
    await c.waitFor((f) => f.type === FrameType.PING);
    assert.equal(c.frames.filter((f) => f.type === FrameType.RST_STREAM).length, 1);
  } finally {
    c.destroy();
    await srv.close();
  }
});

test('a client GOAWAY: open streams finish, then the server ends the connection', async () => {
  const streams: H2Stream[] = [];
  let goaway: [number, number] | undefined;
  const srv = await startServer((st) => streams.push(st), { onGoaway: (code, last) => (goaway = [code, last]) });
  const c = await RawClient.connect(srv.port);
  try {
    c.send(headers(1, Flags.END_HEADERS | Flags.END_STREAM), frame(FrameType.GOAWAY, 0, 0, Buffer.from([0, 0, 0, 0, 0, 0, 0, 0])));
    c.send(frame(FrameType.PING, 0, 0, Buffer.alloc(8)));
    await c.waitFor((f) => f.type === FrameType.PING);
    assert.deepEqual(goaway, [ErrorCode.NO_ERROR, 0]);
    assert.equal(c.ended, false);
    streams[0]!.respond([':status', '200']);
    streams[0]!.end(['grpc-status', '0']);
    await c.closed();
    assert.ok(c.frames.some((f) => f.type === FrameType.HEADERS && (f.flags & Flags.END_STREAM) !== 0 && f.streamId === 1));
  } finally {
    c.destroy();
    await srv.close();
  }
});

test('request trailers end the request side', async () => {
  let ended = false;
  const srv = await startServer((st) => {
    st.onData = () => {};
    st.onEnd = () => {
      ended = true;
      st.respond([':status', '200']);
      st.end(['grpc-status', '0']);
    };
  });
  const c = await RawClient.connect(srv.port);
  try {
    c.send(headers(1), data(1, Buffer.from('x')), headers(1, Flags.END_HEADERS | Flags.END_STREAM, ['x-checksum', '1']));
    assert.ok(await c.waitFor((f) => f.type === FrameType.HEADERS && (f.flags & Flags.END_STREAM) !== 0));
    assert.equal(ended, true);
    // Complete both ways: no RST_STREAM.
    assert.equal(c.frames.some((f) => f.type === FrameType.RST_STREAM), false);
  } finally {
    c.destroy();
    await srv.close();
  }
});
