/**
 * src/http/h2's connection and streams against node:http2's client as the peer: request/response with
 * trailers, many concurrent streams, flow control both ways (checked from outside by a frame-watching
 * proxy), RST_STREAM both ways, GOAWAY, PING, header blocks in CONTINUATION frames both ways.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as http2 from 'node:http2';
import { createHash } from 'node:crypto';
import { ErrorCode, FrameType, Flags, Setting } from '../../src/h2/frames.js';
import { headerValue } from '../../src/h2/hpack.js';
import type { H2Stream } from '../../src/h2/stream.js';
import { startFrameProxy, startServer, type SeenFrame } from './helpers.js';

const GRPC_HEADERS = [':status', '200', 'content-type', 'application/grpc'];

/** A server stream handler echoing the request body with a trailer saying how many bytes came. */
function echo(st: H2Stream): void {
  const parts: Buffer[] = [];
  st.onData = (c) => parts.push(c);
  st.onEnd = () => {
    const body = Buffer.concat(parts);
    st.respond(GRPC_HEADERS);
    if (body.length > 0) st.write(body);
    st.end(['grpc-status', '0', 'x-received', String(body.length), 'x-path', st.path]);
  };
}

interface Reply {
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders | undefined;
  body: Buffer;
  rstCode: number;
}

/** One request on `session`: POST `path` with `body`, the whole reply. */
function request(session: http2.ClientHttp2Session, path: string, body?: Buffer, extra: http2.OutgoingHttpHeaders = {}): Promise<Reply> {
  return new Promise((resolve) => {
    const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...extra }, { endStream: body === undefined });
    let headers: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders | undefined;
    const parts: Buffer[] = [];
    req.on('response', (h) => (headers = h));
    req.on('trailers', (t) => (trailers = t));
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('error', () => {}); // a reset: rstCode says which
    req.on('close', () => resolve({ headers, trailers, body: Buffer.concat(parts), rstCode: req.rstCode ?? 0 }));
    if (body !== undefined) req.end(body);
  });
}

function connect(port: number, options: http2.ClientSessionOptions = {}): http2.ClientHttp2Session {
  const s = http2.connect(`http://127.0.0.1:${port}`, options);
  s.on('error', () => {});
  return s;
}

const closeSession = (s: http2.ClientHttp2Session): Promise<void> => new Promise((r) => s.close(() => r()));

test('a unary-like call: headers, body, response with trailers', async () => {
  const srv = await startServer(echo);
  const c = connect(srv.port);
  try {
    const r = await request(c, '/etcdserverpb.KV/Put', Buffer.from('hello'));
    assert.equal(r.headers[':status'], 200);
    assert.equal(r.headers['content-type'], 'application/grpc');
    assert.equal(r.body.toString(), 'hello');
    assert.equal(r.trailers?.['grpc-status'], '0');
    assert.equal(r.trailers?.['x-received'], '5');
    assert.equal(r.trailers?.['x-path'], '/etcdserverpb.KV/Put');
    assert.equal(r.rstCode, 0);
    // A request without a body (HEADERS with END_STREAM) and a trailers-only answer.
    const only = await startServer((st) => st.respond([':status', '200', 'content-type', 'application/grpc', 'grpc-status', '12'], true));
    const c2 = connect(only.port);
    const r2 = await request(c2, '/x.Y/Z');
    assert.equal(r2.headers['grpc-status'], '12');
    assert.equal(r2.trailers, undefined);
    await closeSession(c2);
    await only.close();
  } finally {
    await closeSession(c);
    await srv.close();
  }
});

test('request headers arrive as a flat list with the pseudo-headers first', async () => {
  let seen: readonly string[] = [];
  const srv = await startServer((st) => {
    seen = st.headers;
    echo(st);
  });
  const c = connect(srv.port);
  try {
    await request(c, '/a', Buffer.from('x'), { authorization: 'token-1', 'grpc-timeout': '5S' });
    assert.equal(headerValue(seen, ':method'), 'POST');
    assert.equal(headerValue(seen, ':path'), '/a');
    assert.equal(headerValue(seen, 'authorization'), 'token-1');
    assert.equal(headerValue(seen, 'grpc-timeout'), '5S');
    assert.equal(seen[0]!.startsWith(':'), true);
  } finally {
    await closeSession(c);
    await srv.close();
  }
});

test('many concurrent streams on one connection', async () => {
  const srv = await startServer(echo);
  const c = connect(srv.port);
  try {
    const n = 300;
    const replies = await Promise.all(Array.from({ length: n }, (_, i) => request(c, `/s/${i}`, Buffer.from(`body-${i}`.repeat(i % 7 + 1)))));
    replies.forEach((r, i) => {
      assert.equal(r.body.toString(), `body-${i}`.repeat(i % 7 + 1));
      assert.equal(r.trailers?.['x-path'], `/s/${i}`);
    });
    assert.equal(srv.connections.length, 1);
    assert.equal(srv.connections[0]!.streamCount, 0);
  } finally {
    await closeSession(c);
    await srv.close();
  }
});

/**
 * Follows the server's send windows as the client grants them (client SETTINGS and WINDOW_UPDATEs) and
 * fails if a DATA frame of the server ever goes beyond the stream's or the connection's window.
 */
function windowChecker(): { onFrame: (f: SeenFrame) => void; violations: string[]; dataBytes: Map<number, number> } {
  let initial = 65535;
  let conn = 65535;
  const streams = new Map<number, number>();
  const dataBytes = new Map<number, number>();
  const violations: string[] = [];
  const win = (id: number): number => streams.get(id) ?? initial;
  return {
    violations,
    dataBytes,
    onFrame: (f) => {
      if (f.from === 'client' && f.type === FrameType.SETTINGS && (f.flags & Flags.ACK) === 0) {
        for (let i = 0; i < f.payload.length; i += 6) {
          if (f.payload.readUInt16BE(i) !== Setting.INITIAL_WINDOW_SIZE) continue;
          const v = f.payload.readUInt32BE(i + 2);
          for (const [id, w] of streams) streams.set(id, w + v - initial);
          initial = v;
        }
      } else if (f.from === 'client' && f.type === FrameType.WINDOW_UPDATE) {
        const inc = f.payload.readUInt32BE(0) & 0x7fffffff;
        if (f.streamId === 0) conn += inc;
        else streams.set(f.streamId, win(f.streamId) + inc);
      } else if (f.from === 'server' && f.type === FrameType.DATA) {
        const n = f.payload.length;
        conn -= n;
        streams.set(f.streamId, win(f.streamId) - n);
        dataBytes.set(f.streamId, (dataBytes.get(f.streamId) ?? 0) + n);
        if (conn < 0) violations.push(`connection window ${conn}`);
        if (win(f.streamId) < 0) violations.push(`stream ${f.streamId} window ${win(f.streamId)}`);
      }
    },
  };
}

test('a large response to a slow reader stays within the client windows and completes', async () => {
  const size = 4 * 1024 * 1024 + 123;
  const payload = Buffer.alloc(size);
  for (let i = 0; i < size; i++) payload[i] = (i * 31 + (i >> 9)) & 0xff;
  let server: H2Stream | undefined;
  let writeResult: boolean | undefined;
  let drains = 0;
  const srv = await startServer((st) => {
    server = st;
    st.onEnd = () => {
      st.respond(GRPC_HEADERS);
      st.onDrain = () => drains++;
      writeResult = st.write(payload);
      st.end(['grpc-status', '0']);
    };
  });
  const proxy = await startFrameProxy(srv.port);
  const check = windowChecker();
  let firstWindowFilled: (() => void) | undefined;
  const filled = new Promise<void>((r) => (firstWindowFilled = r));
  proxy.onFrame = (f) => {
    check.onFrame(f);
    if ((check.dataBytes.get(1) ?? 0) >= 16384) firstWindowFilled?.();
  };
  const c = connect(proxy.port, { settings: { initialWindowSize: 16384 } });
  try {
    const req = c.request({ ':method': 'POST', ':path': '/big', 'content-type': 'application/grpc' }, { endStream: true });
    req.pause();
    const hash = createHash('sha256');
    let got = 0;
    let trailers: http2.IncomingHttpHeaders | undefined;
    req.on('trailers', (t) => (trailers = t));
    await filled;
    // The client has not read: the server holds the rest in the stream's queue.
    assert.equal(writeResult, false);
    assert.ok(server!.writableLength > size - 200_000, `queued ${server!.writableLength}`);
    const done = new Promise<void>((resolve) => req.on('close', resolve));
    // Now read slowly: one chunk per turn of the event loop.
    req.on('data', (d: Buffer) => {
      got += d.length;
      hash.update(d);
      req.pause();
      setImmediate(() => req.resume());
    });
    req.resume();
    await done;
    assert.equal(got, size);
    assert.equal(hash.digest('hex'), createHash('sha256').update(payload).digest('hex'));
    assert.equal(trailers?.['grpc-status'], '0');
    assert.equal(drains, 1);
    assert.deepEqual(check.violations, []);
    assert.equal(check.dataBytes.get(1), size);
    // It took many client WINDOW_UPDATEs, each answered with more DATA.
    assert.ok(proxy.frames.filter((f) => f.from === 'client' && f.type === FrameType.WINDOW_UPDATE && f.streamId === 1).length > 10);
  } finally {
    await closeSession(c);
    await proxy.close();
    await srv.close();
  }
});

test('a large request body: the server gives the window back as it consumes', async () => {
  const srv = await startServer(
    (st) => {
      let n = 0;
      const h = createHash('sha256');
      st.onData = (d) => {
        n += d.length;
        h.update(d);
      };
      st.onEnd = () => {
        st.respond(GRPC_HEADERS);
        st.end(['grpc-status', '0', 'x-received', String(n), 'x-sha', h.digest('hex')]);
      };
    },
    { initialWindowSize: 65535, connectionWindowSize: 65535 },
  );
  const proxy = await startFrameProxy(srv.port);
  const c = connect(proxy.port);
  try {
    const body = Buffer.alloc(5 * 1024 * 1024 + 7, 0x5a);
    const r = await request(c, '/upload', body);
    assert.equal(r.trailers?.['x-received'], String(body.length));
    assert.equal(r.trailers?.['x-sha'], createHash('sha256').update(body).digest('hex'));
    const updates = proxy.frames.filter((f) => f.from === 'server' && f.type === FrameType.WINDOW_UPDATE);
    assert.ok(updates.some((f) => f.streamId === 0) && updates.some((f) => f.streamId === 1));
    // Never more outstanding than granted: the client could only send what the updates allowed.
    const granted = (id: number): number => 65535 + updates.filter((f) => f.streamId === id).reduce((a, f) => a + f.payload.readUInt32BE(0), 0);
    assert.ok(granted(1) >= body.length && granted(0) >= body.length);
  } finally {
    await closeSession(c);
    await proxy.close();
    await srv.close();
  }
});

/** A server that reports when its (first) stream opens, and the code it closes with. */
async function oneStreamServer(): Promise<{ srv: Awaited<ReturnType<typeof startServer>>; isOpen: Promise<void>; closed: Promise<number> }> {
  let opened: (() => void) | undefined;
  const isOpen = new Promise<void>((r) => (opened = r));
  let closedWith: ((code: number) => void) | undefined;
  const closed = new Promise<number>((r) => (closedWith = r));
  const srv = await startServer((st) => {
    st.onClose = (code) => closedWith?.(code);
    opened?.();
  });
  return { srv, isOpen, closed };
}

test('client RST_STREAM closes the server stream with its code', async () => {
  const { srv, isOpen, closed } = await oneStreamServer();
  const c = connect(srv.port);
  try {
    const req = c.request({ ':method': 'POST', ':path': '/cancel-me' });
    req.on('error', () => {});
    req.write('partial');
    await isOpen;
    req.close(http2.constants.NGHTTP2_CANCEL);
    assert.equal(await closed, ErrorCode.CANCEL);
    assert.equal(srv.connections[0]!.streamCount, 0);
  } finally {
    await closeSession(c);
    await srv.close();
  }
});

test('server reset: the client sees RST_STREAM with the code, onClose gets it too', async () => {
  let closedCode: number | undefined;
  const srv = await startServer((st) => {
    st.onClose = (code) => (closedCode = code);
    st.onData = () => st.reset(ErrorCode.ENHANCE_YOUR_CALM);
  });
  const c = connect(srv.port);
  try {
    const r = await request(c, '/reset', Buffer.from('x'));
    assert.equal(r.rstCode, ErrorCode.ENHANCE_YOUR_CALM);
    assert.equal(closedCode, ErrorCode.ENHANCE_YOUR_CALM);
    // The connection goes on.
    assert.equal((await request(c, '/after', Buffer.from('y'))).rstCode, ErrorCode.ENHANCE_YOUR_CALM);
    assert.equal(srv.connections.length, 1);
  } finally {
    await closeSession(c);
    await srv.close();
  }
});

test('close(): GOAWAY with the last stream id, open streams finish, then the socket ends', async () => {
  const pending: H2Stream[] = [];
  let arrived: (() => void) | undefined;
  const twoArrived = new Promise<void>((r) => (arrived = r));
  const srv = await startServer((st) => {
    st.onEnd = () => {
      pending.push(st);
      if (pending.length === 2) arrived?.();
    };
  });
  const c = connect(srv.port);
  const goaway = new Promise<[number, number]>((r) => c.once('goaway', (code: number, last: number) => r([code, last])));
  const sessionClosed = new Promise<void>((r) => c.once('close', r));
  try {
    const r1 = request(c, '/one');
    const r2 = request(c, '/two');
    await twoArrived;
    srv.connections[0]!.close();
    assert.deepEqual(await goaway, [ErrorCode.NO_ERROR, 3]);
    for (const st of pending) {
      st.respond(GRPC_HEADERS);
      st.end(['grpc-status', '0']);
    }
    assert.equal((await r1).trailers?.['grpc-status'], '0');
    assert.equal((await r2).trailers?.['grpc-status'], '0');
    await sessionClosed;
  } finally {
    c.destroy();
    await srv.close();
  }
});

test('PING is acknowledged with its payload', async () => {
  const srv = await startServer(echo);
  const c = connect(srv.port);
  try {
    const payload = Buffer.from('8 octets');
    await new Promise<void>((r) => c.once('connect', () => r()));
    const echoed = await new Promise<Buffer>((resolve, reject) =>
      c.ping(payload, (err, _ms, p) => (err === null ? resolve(p) : reject(err))),
    );
    assert.deepEqual(echoed, payload);
  } finally {
    await closeSession(c);
    await srv.close();
  }
});

test('header blocks split into CONTINUATION frames, both ways', async () => {
  const big = 'v'.repeat(30_000);
  let got: string | undefined;
  const srv = await startServer((st) => {
    got = headerValue(st.headers, 'x-big');
    st.onEnd = () => {
      st.respond([...GRPC_HEADERS, 'x-big-reply', big.toUpperCase()]);
      st.end(['grpc-status', '0', 'x-big-trailer', big]);
    };
  });
  const proxy = await startFrameProxy(srv.port);
  const c = connect(proxy.port);
  try {
    const r = await request(c, '/big-headers', undefined, { 'x-big': big });
    assert.equal(got, big);
    assert.equal(r.headers['x-big-reply'], big.toUpperCase());
    assert.equal(r.trailers?.['x-big-trailer'], big);
    assert.ok(proxy.frames.some((f) => f.from === 'client' && f.type === FrameType.CONTINUATION));
    assert.ok(proxy.frames.filter((f) => f.from === 'server' && f.type === FrameType.CONTINUATION).length >= 2);
  } finally {
    await closeSession(c);
    await proxy.close();
    await srv.close();
  }
});

test('a socket that closes closes its streams with CANCEL', async () => {
  const { srv, isOpen, closed } = await oneStreamServer();
  const c = connect(srv.port);
  try {
    const req = c.request({ ':method': 'POST', ':path': '/hang' });
    req.on('error', () => {});
    await isOpen;
    c.destroy();
    assert.equal(await closed, ErrorCode.CANCEL);
  } finally {
    await srv.close();
  }
});

test('a raised SETTINGS_INITIAL_WINDOW_SIZE lets queued data go; a larger peer max frame size is used', async () => {
  const size = 1024 * 1024;
  const payload = Buffer.alloc(size, 7);
  const srv = await startServer((st) => {
    st.onEnd = () => {
      st.respond(GRPC_HEADERS);
      st.write(payload);
      st.end(['grpc-status', '0']);
    };
  });
  const proxy = await startFrameProxy(srv.port);
  const check = windowChecker();
  let waiting: { atLeast: number; resolve: () => void } | undefined;
  proxy.onFrame = (f) => {
    check.onFrame(f);
    if (waiting !== undefined && (check.dataBytes.get(1) ?? 0) >= waiting.atLeast) waiting.resolve();
  };
  const sent = (atLeast: number): Promise<void> => new Promise((resolve) => (waiting = { atLeast, resolve }));
  const c = connect(proxy.port, { settings: { initialWindowSize: 1000, maxFrameSize: 65536 } });
  try {
    const req = c.request({ ':method': 'POST', ':path': '/w', 'content-type': 'application/grpc' }, { endStream: true });
    req.pause();
    await sent(1000);
    assert.equal(check.dataBytes.get(1), 1000);
    // Without reading: the new initial window applies to the open stream (RFC 9113 §6.9.2).
    c.settings({ initialWindowSize: 40_000 });
    await sent(40_000);
    const done = new Promise<void>((r) => req.on('close', r));
    let got = 0;
    req.on('data', (d: Buffer) => (got += d.length));
    req.resume();
    await done;
    assert.equal(got, size);
    assert.deepEqual(check.violations, []);
    // Frames up to the client's 64 KiB max frame size (windows permitting), never above.
    const sizes = proxy.frames.filter((f) => f.from === 'server' && f.type === FrameType.DATA).map((f) => f.payload.length);
    assert.ok(Math.max(...sizes) > 16384 && Math.max(...sizes) <= 65536, `largest DATA ${Math.max(...sizes)}`);
  } finally {
    await closeSession(c);
    await proxy.close();
    await srv.close();
  }
});

test('a header list over SETTINGS_MAX_HEADER_LIST_SIZE gets 431; the HPACK table stays in step', async () => {
  const srv = await startServer(echo, { maxHeaderListSize: 1000 });
  const c = connect(srv.port);
  try {
    const big = { 'x-big': 'b'.repeat(1200) };
    const r1 = await request(c, '/a', undefined, big);
    assert.equal(r1.headers[':status'], 431);
    // The client indexed x-big when it sent it: the next blocks refer to the table entry.
    const ok = await request(c, '/b', Buffer.from('fine'));
    assert.equal(ok.body.toString(), 'fine');
    const r2 = await request(c, '/c', undefined, big);
    assert.equal(r2.headers[':status'], 431);
    assert.equal((await request(c, '/d', Buffer.from('still'))).body.toString(), 'still');
  } finally {
    await closeSession(c);
    await srv.close();
  }
});

test('several large responses share the connection window; a producer paced by write() and onDrain', async () => {
  const size = 1536 * 1024;
  const chunk = 48 * 1024;
  const srv = await startServer((st) => {
    st.onEnd = () => {
      st.respond(GRPC_HEADERS);
      const id = Number(st.path.slice(1));
      let sent = 0;
      // Write until write() says stop, go on at onDrain: the queue never grows far past the quota.
      const produce = (): void => {
        while (sent < size) {
          const n = Math.min(chunk, size - sent);
          const b = Buffer.alloc(n, (id + sent / chunk) & 0xff);
          sent += n;
          assert.ok(st.writableLength <= 64 * 1024 + chunk);
          if (!st.write(b)) return;
        }
        st.end(['grpc-status', '0']);
      };
      st.onDrain = produce;
      produce();
    };
  });
  const proxy = await startFrameProxy(srv.port);
  const check = windowChecker();
  proxy.onFrame = check.onFrame;
  const c = connect(proxy.port);
  try {
    const replies = await Promise.all([1, 2, 3, 4].map((i) => request(c, `/${i}`)));
    replies.forEach((r, k) => {
      const id = k + 1;
      assert.equal(r.body.length, size);
      for (let at = 0; at < size; at += chunk) assert.equal(r.body[at], (id + at / chunk) & 0xff);
      assert.equal(r.trailers?.['grpc-status'], '0');
    });
    assert.deepEqual(check.violations, []);
  } finally {
    await closeSession(c);
    await proxy.close();
    await srv.close();
  }
});
