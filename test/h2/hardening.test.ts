/**
 * The HTTP/2 connection against the inputs of issue 32, frame by frame over a real socket: what a client
 * can make the server hold or send must stay bounded, and a violation gets the answer RFC 9113 names.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { CLIENT_PREFACE, ErrorCode, Flags, FrameType, Setting, frame, settingsFrame } from '../../src/h2/frames.js';
import { HpackEncoder } from '../../src/h2/hpack.js';
import type { H2Stream } from '../../src/h2/stream.js';
import { RawClient, requestBlock, serverWithClient, startServer } from './helpers.js';

const block = (): Buffer => requestBlock();

test('empty CONTINUATION frames count against the header block limit with their frame headers: GOAWAY ENHANCE_YOUR_CALM', async () => {
  const { client, streams, close } = await serverWithClient('end', Buffer.from('ok'));
  try {
    // 1 MiB / 9 octets: this many empty frames carry no header octet but exceed the limit by their frame headers.
    const empty = frame(FrameType.CONTINUATION, 0, 1, Buffer.alloc(0));
    const n = Math.ceil((1 << 20) / empty.length) + 1;
    client.send(frame(FrameType.HEADERS, Flags.END_STREAM, 1, Buffer.alloc(0)), Buffer.concat(Array.from({ length: n }, () => empty)));
    // Completed now, the block would be a valid request: the server must have given up on it before.
    client.send(frame(FrameType.CONTINUATION, Flags.END_HEADERS, 1, block()));
    const first = await client.waitFor((f) => f.type === FrameType.GOAWAY || f.streamId === 1);
    assert.equal(first?.type, FrameType.GOAWAY, 'the request was answered');
    assert.equal(first.payload.readUInt32BE(4), ErrorCode.ENHANCE_YOUR_CALM);
    assert.equal(streams.length, 0);
    await client.closed();
  } finally {
    await close();
  }
});

/** A server that answers each request from its first DATA frame, synchronously (as the gRPC door answers a unary call). */
const answeringFromData = (): ReturnType<typeof serverWithClient> => serverWithClient('data', Buffer.from('ok'));

const PING = frame(FrameType.PING, 0, 0, Buffer.from('01234567'));
const pingAck = (f: { type: number; flags: number }): boolean => f.type === FrameType.PING && (f.flags & Flags.ACK) !== 0;

test('a request whose last DATA frame ends it, answered from that frame: no RST_STREAM after the answer', async () => {
  const { client, close } = await answeringFromData();
  try {
    client.send(frame(FrameType.HEADERS, Flags.END_HEADERS, 1, block()), frame(FrameType.DATA, Flags.END_STREAM, 1, Buffer.from('request')), PING);
    await client.waitFor(pingAck);
    const onStream = client.frames.filter((f) => f.streamId === 1).map((f) => f.type);
    assert.deepEqual(onStream, [FrameType.HEADERS, FrameType.DATA, FrameType.HEADERS]);
  } finally {
    await close();
  }
});

test('after such a complete exchange: HEADERS reusing its id is a connection error PROTOCOL_ERROR, DATA on it a stream error STREAM_CLOSED', async () => {
  {
    const { client, close } = await answeringFromData();
    try {
      client.send(frame(FrameType.HEADERS, Flags.END_HEADERS, 1, block()), frame(FrameType.DATA, Flags.END_STREAM, 1, Buffer.from('request')));
      await client.waitFor((f) => f.streamId === 1 && f.type === FrameType.HEADERS && (f.flags & Flags.END_STREAM) !== 0);
      client.send(frame(FrameType.DATA, 0, 1, Buffer.from('more')), PING);
      await client.waitFor(pingAck);
      const rst = client.frames.find((f) => f.type === FrameType.RST_STREAM && f.streamId === 1);
      assert.equal(rst?.payload.readUInt32BE(0), ErrorCode.STREAM_CLOSED);
    } finally {
      await close();
    }
  }
  {
    const { client, close } = await answeringFromData();
    try {
      client.send(frame(FrameType.HEADERS, Flags.END_HEADERS, 1, block()), frame(FrameType.DATA, Flags.END_STREAM, 1, Buffer.from('request')));
      await client.waitFor((f) => f.streamId === 1 && f.type === FrameType.HEADERS && (f.flags & Flags.END_STREAM) !== 0);
      client.send(frame(FrameType.HEADERS, Flags.END_HEADERS, 1, block()), PING);
      const first = await client.waitFor((f) => f.type === FrameType.GOAWAY || pingAck(f));
      assert.equal(first?.type, FrameType.GOAWAY, 'the reused stream id was let through');
      assert.equal(first.payload.readUInt32BE(4), ErrorCode.PROTOCOL_ERROR);
    } finally {
      await close();
    }
  }
});

/**
 * Sends `flood` (after the preface) from a client that reads nothing until the server stopped reading it
 * (its socket paused) or read it all, then reads until `expected` octets came back. Returns the most the
 * server's socket held in its write buffer, sampled after every read the connection handled.
 */
async function floodUnread(flood: Buffer, expected: number, onStream: (st: H2Stream) => void = () => {}): Promise<number> {
  let maxQueued = 0;
  let serverStopped: (() => void) | undefined;
  let serverSocket: net.Socket | undefined;
  const srv = await startServer(onStream);
  const raw = net.createServer((socket) => {
    serverSocket = socket;
    srv.accept(socket);
    socket.on('data', () => {
      maxQueued = Math.max(maxQueued, socket.writableLength);
      if (socket.bytesRead >= flood.length) serverStopped?.(); // not throttled: it read the whole flood
    });
    socket.on('pause', () => serverStopped?.());
  });
  await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
  const client = net.connect((raw.address() as net.AddressInfo).port, '127.0.0.1');
  try {
    await new Promise<void>((resolve) => client.once('connect', resolve));
    client.pause();
    await new Promise<void>((resolve) => {
      serverStopped = resolve;
      client.write(Buffer.concat([CLIENT_PREFACE, settingsFrame([])]));
      client.write(flood);
    });
    await new Promise((resolve) => setImmediate(resolve)); // the read that stopped it is written out
    maxQueued = Math.max(maxQueued, serverSocket?.writableLength ?? 0);
    // Now the client reads: everything is answered in the end.
    let received = 0;
    await new Promise<void>((resolve) => {
      client.on('data', (d: Buffer) => {
        received += d.length;
        if (received >= expected) resolve();
      });
      client.resume();
    });
    return maxQueued;
  } finally {
    client.destroy();
    await new Promise<void>((resolve) => raw.close(() => resolve()));
    await srv.close();
  }
}

test('a peer that sends PINGs and reads none of the answers is throttled: the server stops reading while 50 of its replies wait', async () => {
  // 17 MB of PING ACKs, more than the kernel's buffers on both ends take while the client reads nothing.
  const pings = 1_000_000;
  const flood = Buffer.allocUnsafe(pings * PING.length);
  for (let at = 0; at < flood.length; at += PING.length) PING.copy(flood, at);
  const maxQueued = await floodUnread(flood, flood.length);
  assert.ok(maxQueued <= 64 * 1024, `the server's write buffer held ${maxQueued} octets`);
});

test('a peer that opens streams and reads none of the answers is throttled: the server stops reading while 256 KiB of them wait', async () => {
  // Requests of 13 octets (their header fields indexed once, then referenced), each answered by a status
  // of 12 KB: 60 MB of answers, more than the kernel's buffers take while the client reads nothing (up to
  // 4 MiB sent and 32 MiB received on Linux's defaults).
  const streams = 5000;
  const message = 'x'.repeat(12_000);
  const first = Buffer.concat([Buffer.from([0x83, 0x86]), Buffer.from([0x44, 0x06]), Buffer.from('/p.S/M'), Buffer.from([0x41, 0x01, 0x61])]);
  const refs = Buffer.from([0x83, 0x86, 0xbf, 0xbe]);
  const parts: Buffer[] = [frame(FrameType.HEADERS, Flags.END_HEADERS | Flags.END_STREAM, 1, first)];
  for (let id = 3; id < 2 * streams; id += 2) parts.push(frame(FrameType.HEADERS, Flags.END_HEADERS | Flags.END_STREAM, id, refs));
  const flood = Buffer.concat(parts);
  const answer = [':status', '200', 'grpc-status', '13', 'grpc-message', message];
  let answered = 0;
  const maxQueued = await floodUnread(flood, streams * (9 + new HpackEncoder().encode(answer).length), (st) => {
    answered++;
    st.respond(answer, true);
  });
  assert.equal(answered, streams);
  assert.ok(maxQueued <= 300 * 1024, `the server's write buffer held ${maxQueued} octets`);
});

test('a peer that grants a huge window and reads nothing: DATA waits in the stream (write() says false) instead of the socket buffer', async () => {
  const total = 32 * 1024 * 1024;
  const chunk = Buffer.alloc(16 * 1024, 0x61);
  let written = 0;
  let maxSocketBuffer = 0;
  let serverSocket: net.Socket | undefined;
  let wrote: (() => void) | undefined;
  const srv = await startServer((st) => {
    st.respond([':status', '200']);
    // A well-behaved server: writes while write() says yes, and again on onDrain.
    const go = (): void => {
      while (written < total) {
        written += chunk.length;
        const more = st.write(chunk);
        maxSocketBuffer = Math.max(maxSocketBuffer, serverSocket?.writableLength ?? 0);
        if (!more) break;
      }
      wrote?.();
    };
    st.onDrain = go;
    go();
  });
  const raw = net.createServer((socket) => {
    serverSocket = socket;
    srv.accept(socket);
  });
  await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
  const client = net.connect((raw.address() as net.AddressInfo).port, '127.0.0.1');
  try {
    await new Promise<void>((resolve) => client.once('connect', resolve));
    client.pause();
    const huge = 0x7fffffff;
    const settings = settingsFrame([[Setting.INITIAL_WINDOW_SIZE, huge]]);
    const grant = frame(FrameType.WINDOW_UPDATE, 0, 0, Buffer.from([0x7f, 0xff, 0x00, 0x00]));
    await new Promise<void>((resolve) => {
      wrote = resolve;
      client.write(Buffer.concat([CLIENT_PREFACE, settings, grant, frame(FrameType.HEADERS, Flags.END_HEADERS | Flags.END_STREAM, 1, block())]));
    });
    assert.ok(written < total, 'write() never pushed back');
    assert.ok(maxSocketBuffer <= 256 * 1024, `the socket buffered ${maxSocketBuffer} octets`);
  } finally {
    client.destroy();
    await new Promise<void>((resolve) => raw.close(() => resolve()));
    await srv.close();
  }
});

// To see that the connection let a reset stream go: WeakRefs to the streams, then a full collection.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

test('rapid reset: streams the client resets while their answer waits for window are let go at once, not kept until the window opens', async () => {
  // Each answer is 16 KiB of DATA: the connection's 65,535-octet send window takes four, the rest wait for it.
  const refs: Array<WeakRef<H2Stream>> = [];
  const srv = await startServer((st) => {
    refs.push(new WeakRef(st));
    st.onEnd = () => {
      st.respond([':status', '200']);
      st.write(Buffer.alloc(16 * 1024, 0x61));
      st.end(['grpc-status', '0']);
    };
  });
  const client = await RawClient.connect(srv.port);
  const call = (id: number): Buffer => frame(FrameType.HEADERS, Flags.END_HEADERS | Flags.END_STREAM, id, block());
  try {
    // First the window is used up (and the socket drained of those answers)...
    client.send(call(1), call(3), call(5), call(7), PING);
    await client.waitFor(pingAck);
    // ...then every call waits for window, and the client resets each one at once.
    const n = 500;
    const calls: Buffer[] = [];
    for (let id = 9; id < 9 + 2 * n; id += 2) calls.push(call(id), frame(FrameType.RST_STREAM, 0, id, Buffer.from([0, 0, 0, ErrorCode.CANCEL])));
    const from = client.frames.length;
    client.send(...calls, PING);
    await client.waitFor(pingAck, from);
    assert.equal(refs.length, 4 + n);
    gc();
    const kept = refs.slice(4).filter((r) => r.deref() !== undefined).length;
    assert.equal(kept, 0, `${kept} of ${n} reset streams are still held`);
    assert.equal(srv.connections[0]!.streamCount, 1); // the fourth, its last octet waiting for window
  } finally {
    client.destroy();
    await srv.close();
  }
});

test('rapid reset: a call the client reset counts against SETTINGS_MAX_CONCURRENT_STREAMS while its work runs (busy), and at most 1000 such', async () => {
  const refused = (client: RawClient, id: number, from: number): Promise<unknown> => client.waitFor((f) => f.streamId === id && f.type === FrameType.RST_STREAM, from);
  const reset = (id: number): Buffer => frame(FrameType.RST_STREAM, 0, id, Buffer.from([0, 0, 0, ErrorCode.CANCEL]));
  const open = (id: number): Buffer => frame(FrameType.HEADERS, Flags.END_HEADERS, id, block());
  for (const limit of [4, 0xffffffff]) {
    const releases: Array<() => void> = [];
    // Each call's response has begun (a stream of answers, say), so its reset is no early one (too_many_early_resets).
    const srv = await startServer(
      (st) => {
        releases.push(st.busy());
        st.respond([':status', '200']);
      },
      { maxConcurrentStreams: limit },
    );
    const client = await RawClient.connect(srv.port);
    try {
      // As many calls as the limit allows (1000 reset calls without a limit), each reset while its work runs.
      const n = Math.min(limit, 1000);
      const frames: Buffer[] = [];
      for (let i = 0; i < n; i++) frames.push(open(2 * i + 1), reset(2 * i + 1));
      let id = 2 * n + 1;
      let from = client.frames.length;
      client.send(...frames, open(id), PING);
      await client.waitFor(pingAck, from);
      assert.equal(releases.length, n);
      const rst = await refused(client, id, from);
      assert.ok(rst !== undefined, `a call beyond ${n} reset ones still working was let through`);
      assert.equal((rst as { payload: Buffer }).payload.readUInt32BE(0), ErrorCode.REFUSED_STREAM);
      // One call's work ends (twice: the second release does nothing): one more call may start, not two.
      releases[0]!();
      releases[0]!();
      from = client.frames.length;
      client.send(open((id += 2)), reset(id), open(id + 2), PING);
      await client.waitFor(pingAck, from);
      assert.equal(releases.length, n + 1);
      const second = await refused(client, id + 2, from);
      assert.equal((second as { payload: Buffer }).payload.readUInt32BE(0), ErrorCode.REFUSED_STREAM);
    } finally {
      client.destroy();
      await srv.close();
    }
  }
});

test('HPACK bomb: 16 header lists over SETTINGS_MAX_HEADER_LIST_SIZE get 431 each, the 17th ends the connection with ENHANCE_YOUR_CALM', async () => {
  let streams = 0;
  const srv = await startServer(() => void streams++, { maxHeaderListSize: 1000 });
  const client = await RawClient.connect(srv.port);
  try {
    // One 200-octet field indexed, then blocks of ten references to it: 2,320 octets decoded from 12.
    const literal = Buffer.concat([Buffer.from([0x40, 0x05]), Buffer.from('x-big'), Buffer.from([0x7f, 200 - 127]), Buffer.alloc(200, 0x62)]);
    const bomb = Buffer.concat([Buffer.from([0x83, 0x86]), Buffer.alloc(10, 0xbe)]);
    const blocks = [frame(FrameType.HEADERS, Flags.END_HEADERS | Flags.END_STREAM, 1, Buffer.concat([Buffer.from([0x83, 0x86]), literal]))];
    for (let id = 3; id <= 35; id += 2) blocks.push(frame(FrameType.HEADERS, Flags.END_HEADERS | Flags.END_STREAM, id, bomb));
    client.send(...blocks, PING);
    const first = await client.waitFor((f) => f.type === FrameType.GOAWAY || pingAck(f));
    assert.equal(first?.type, FrameType.GOAWAY, 'the bomb was never cut off');
    assert.equal(first.payload.readUInt32BE(4), ErrorCode.ENHANCE_YOUR_CALM);
    const refused = client.frames.filter((f) => f.type === FrameType.HEADERS && f.streamId >= 3).map((f) => f.streamId);
    assert.deepEqual(refused, Array.from({ length: 16 }, (_, i) => 3 + 2 * i), 'each of the first 16 lists gets its 431');
    assert.equal(streams, 0); // the first request has no :path: malformed, not handed over
    await client.closed();
  } finally {
    client.destroy();
    await srv.close();
  }
});

test('a read that opens a thousand calls is handled 256 calls per turn of the event loop, so other connections are read between', async () => {
  let opened = 0;
  let atNextTurn: number | undefined;
  const srv = await startServer((st) => {
    if (opened++ === 0) setImmediate(() => (atNextTurn = opened));
    st.onEnd = () => st.respond([':status', '200'], true);
  });
  const client = await RawClient.connect(srv.port);
  try {
    const calls: Buffer[] = [];
    for (let id = 1; id < 2000; id += 2) calls.push(frame(FrameType.HEADERS, Flags.END_HEADERS | Flags.END_STREAM, id, block()));
    client.send(...calls, PING);
    await client.waitFor(pingAck);
    assert.equal(opened, 1000);
    assert.ok(atNextTurn !== undefined && atNextTurn <= 256, `${atNextTurn} calls were opened in the first turn`);
    assert.equal(client.frames.filter((f) => f.type === FrameType.HEADERS).length, 1000);
  } finally {
    client.destroy();
    await srv.close();
  }
});

test('after a connection error the server reads nothing more, and drops the socket once the linger is over: a flood cut off stays cut off', async () => {
  let linger: (() => void) | undefined;
  const srv = await startServer(() => {}, { afterMs: (_ms, fn) => ((linger = fn), { cancel: () => {} }) });
  let serverSocket: net.Socket | undefined;
  const raw = net.createServer((socket) => {
    serverSocket = socket;
    srv.accept(socket);
  });
  await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
  const client = await RawClient.connect((raw.address() as net.AddressInfo).port);
  try {
    // A PING on a stream is a connection error; 32 MB follow it, more than the kernel's buffers hold.
    const flood = 32 << 20;
    client.socket.write(Buffer.concat([frame(FrameType.PING, 0, 1, Buffer.alloc(8)), Buffer.alloc(flood)]));
    // Without the pause the server would read it all: the client's write drains, or its socket closes.
    const drained = new Promise<'drained'>((resolve) => {
      client.socket.once('drain', () => resolve('drained'));
      client.socket.once('close', () => resolve('drained'));
    });
    const lingering = (async (): Promise<'lingering'> => {
      while (linger === undefined) await new Promise((r) => setImmediate(r));
      return 'lingering';
    })();
    assert.equal(await Promise.race([drained, lingering]), 'lingering', 'the server read the whole flood after its GOAWAY');
    assert.equal((await client.goaway())?.code, ErrorCode.PROTOCOL_ERROR);
    assert.ok(serverSocket!.bytesRead < flood, `the server read ${serverSocket!.bytesRead} octets`);
    assert.equal(client.ended, false); // our side ended, the client's not: the socket lingers
    linger!();
    await client.closed();
  } finally {
    client.destroy();
    await new Promise<void>((resolve) => raw.close(() => resolve()));
    await srv.close();
  }
});

test('a connection that has sent half the client preface is sent nothing: our SETTINGS go out once the preface is whole', async () => {
  const srv = await startServer(() => {});
  const written: number[] = [];
  const raw = net.createServer((socket) => {
    srv.accept(socket);
    // After the connection's own listener: what it wrote for each read.
    socket.on('data', () => written.push(socket.bytesWritten + socket.writableLength));
  });
  await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
  const client = await RawClient.connect((raw.address() as net.AddressInfo).port, false);
  try {
    client.send(CLIENT_PREFACE.subarray(0, 12));
    while (written.length === 0) await new Promise((r) => setImmediate(r));
    assert.deepEqual(written, [0], 'the server wrote before the client preface was whole');
    client.send(CLIENT_PREFACE.subarray(12), settingsFrame([]));
    const first = await client.waitFor(() => true);
    assert.equal(first?.type, FrameType.SETTINGS);
    assert.equal((first!.flags & Flags.ACK), 0);
  } finally {
    client.destroy();
    await new Promise<void>((resolve) => raw.close(() => resolve()));
    await srv.close();
  }
});
