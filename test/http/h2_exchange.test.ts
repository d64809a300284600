/**
 * serveHttpOverH2: the HTTP handler (the real one of a member: /health, /version, /metrics, the gateway
 * with a watch stream) answering over our own HTTP/2 streams, to node:http2's client over plaintext (the
 * exchange does not care about TLS). Status, headers as HTTP/2 carries them, bodies, trailers,
 * backpressure through write()/'drain', and 'close' when the client resets.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as http2 from 'node:http2';
import { EtcdServer } from '../../src/server/index.js';
import { createClientHttp } from '../../src/http/index.js';
import type { HttpRequest, HttpResponse } from '../../src/http/gateway.js';
import { serveHttpOverH2 } from '../../src/http/h2_exchange.js';
import { FrameType } from '../../src/h2/frames.js';
import { startFrameProxy, startServer, type TestServer } from '../h2/helpers.js';

/** Each test waits on events only; one that never comes (a missed 'drain' or 'close') fails it instead of hanging. */
const WAIT = { timeout: 20_000 };

type Handler = (req: HttpRequest, res: HttpResponse) => void;

/** A port whose HTTP/2 streams all go to `handler`, each given `socket` as the request's socket. */
function listen(handler: Handler, socket: unknown = { encrypted: false }, writeQuota?: number): Promise<TestServer> {
  return startServer((st) => serveHttpOverH2(st, socket, handler), writeQuota === undefined ? {} : { writeQuota });
}

function connect(port: number, options: http2.ClientSessionOptions = {}): http2.ClientHttp2Session {
  const s = http2.connect(`http://127.0.0.1:${port}`, options);
  s.on('error', () => {});
  return s;
}

const closeSession = (s: http2.ClientHttp2Session): Promise<void> => new Promise((r) => s.close(() => r()));

interface Answer {
  readonly headers: http2.IncomingHttpHeaders;
  readonly trailers: http2.IncomingHttpHeaders | undefined;
  readonly body: string;
}

/** One request with a whole body (or none); resolves with the whole answer. */
function call(c: http2.ClientHttp2Session, method: string, path: string, body?: string, headers: http2.OutgoingHttpHeaders = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = c.request({ ':method': method, ':path': path, ...headers }, { endStream: body === undefined });
    let resHeaders: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders | undefined;
    let text = '';
    req.setEncoding('utf8');
    req.on('response', (h) => (resHeaders = h));
    req.on('trailers', (t) => (trailers = t));
    req.on('data', (d: string) => (text += d));
    req.on('end', () => resolve({ headers: resHeaders, trailers, body: text }));
    req.on('error', reject);
    if (body !== undefined) req.end(body);
  });
}

const b64 = (s: string): string => Buffer.from(s).toString('base64');

function member(): { server: EtcdServer; handler: Handler; close(): void } {
  const server = new EtcdServer();
  server.delivery.setScheduler((flush) => queueMicrotask(flush));
  const http = createClientHttp(server);
  return { server, handler: (req, res) => http.handle(req, res), close: () => http.close() };
}

test('/health, /version and /metrics of a member over HTTP/2: status, lower-case headers, bodies', WAIT, async () => {
  const m = member();
  const srv = await listen(m.handler);
  const c = connect(srv.port);
  try {
    const health = await call(c, 'GET', '/health');
    assert.equal(health.headers[':status'], 200);
    assert.equal((JSON.parse(health.body) as { health: string }).health, 'true');
    assert.equal(health.headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal(health.headers['content-length'], String(health.body.length));
    // Set with setHeader before writeHead: sent with it.
    assert.equal(health.headers['access-control-allow-origin'], '*');
    assert.equal(health.headers['access-control-allow-methods'], 'POST, GET, OPTIONS, PUT, DELETE');

    const version = await call(c, 'GET', '/version');
    assert.equal(version.headers[':status'], 200);
    assert.deepEqual(JSON.parse(version.body), { etcdserver: m.server.member.version, etcdcluster: m.server.member.version.replace(/^(\d+\.\d+)\..*$/, '$1.0') });

    const wrong = await call(c, 'POST', '/health', 'x');
    assert.equal(wrong.headers[':status'], 405);
    assert.equal(wrong.headers['allow'], 'GET');
    assert.equal(wrong.body, 'Method Not Allowed\n');

    // A reply written later (the scrape is a promise).
    const metrics = await call(c, 'GET', '/metrics');
    assert.equal(metrics.headers[':status'], 200);
    assert.match(String(metrics.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    assert.match(metrics.body, /^etcd_server_has_leader 1$/m);

    const options = await call(c, 'OPTIONS', '/v3/kv/range');
    assert.equal(options.headers[':status'], 200);
    assert.equal(options.body, '');
  } finally {
    await closeSession(c);
    await srv.close();
    m.close();
  }
});

test('a HEAD request: the answer\'s headers (its length included), no DATA bytes', WAIT, async () => {
  const m = member();
  const srv = await listen(m.handler);
  // Node's client drops DATA on a HEAD stream silently: what the server sent is watched on the wire.
  const proxy = await startFrameProxy(srv.port);
  const c = connect(proxy.port);
  try {
    const head = await call(c, 'HEAD', '/health');
    assert.deepEqual([head.headers[':status'], head.headers['content-length'], head.body], [405, String('Method Not Allowed\n'.length), '']);
    const fromServer = proxy.frames.filter((f) => f.from === 'server' && f.streamId === 1);
    assert.ok(fromServer.some((f) => f.type === FrameType.HEADERS));
    assert.deepEqual(fromServer.filter((f) => f.type === FrameType.DATA).map((f) => f.payload.length).filter((n) => n > 0), []);
  } finally {
    await closeSession(c);
    await proxy.close();
    await srv.close();
    m.close();
  }
});

test('the gateway over HTTP/2: a put then a range, and an error with its trailer', WAIT, async () => {
  const m = member();
  const srv = await listen(m.handler);
  const c = connect(srv.port);
  try {
    const put = await call(c, 'POST', '/v3/kv/put', JSON.stringify({ key: b64('k'), value: b64('v1') }));
    assert.equal(put.headers[':status'], 200);
    assert.equal(put.headers['content-type'], 'application/json');
    assert.equal(put.headers['grpc-metadata-content-type'], 'application/grpc');
    assert.equal((JSON.parse(put.body) as { header: { revision: string } }).header.revision, '2');
    assert.equal(m.server.mvcc.currentRevision, 2);

    const range = await call(c, 'POST', '/v3/kv/range', JSON.stringify({ key: b64('k') }));
    assert.equal(range.headers[':status'], 200);
    const kvs = (JSON.parse(range.body) as { kvs: Array<{ key: string; value: string }> }).kvs;
    assert.deepEqual(kvs.map((kv) => [kv.key, kv.value]), [[b64('k'), b64('v1')]]);

    // An error of the call: the body, then the trailer the gateway adds (addTrailers, then end()).
    const bad = await call(c, 'POST', '/v3/kv/put', JSON.stringify({ value: b64('x') }));
    assert.equal(bad.headers[':status'], 400);
    assert.equal(bad.headers['trailer'], 'Grpc-Trailer-Content-Type');
    assert.match(bad.body, /"code":3/);
    assert.equal(bad.trailers?.['grpc-trailer-content-type'], 'application/grpc');

    const unknown = await call(c, 'POST', '/v3/nothing', '{}');
    assert.equal(unknown.headers[':status'], 404);
  } finally {
    await closeSession(c);
    await srv.close();
    m.close();
  }
});

test('over TLS (the socket says so) the answer carries the Grpc-Metadata-* headers, a multi-valued one as repeated fields', WAIT, async () => {
  const m = member();
  const srv = await listen(m.handler, { encrypted: true });
  const c = connect(srv.port);
  try {
    const range = await call(c, 'POST', '/v3/kv/range', JSON.stringify({ key: b64('k') }));
    assert.equal(range.headers[':status'], 200);
    assert.equal(range.headers['grpc-metadata-access-control-allow-origin'], '*');
    // Three fields of the same name; node's client joins them.
    assert.equal(range.headers['grpc-metadata-trailer'], 'Grpc-Status, Grpc-Message, Grpc-Status-Details-Bin');
  } finally {
    await closeSession(c);
    await srv.close();
    m.close();
  }
});

test('a /v3/watch stream: created, events as lines while the request stays open, cancelled by a client reset', WAIT, async () => {
  const m = member();
  let closes = 0;
  let closed: (() => void) | undefined;
  const gone = new Promise<void>((r) => (closed = r));
  const srv = await listen((req, res) => {
    if (req.url === '/v3/watch') {
      res.on('close', () => {
        closes++;
        closed?.();
      });
    }
    m.handler(req, res);
  });
  const c = connect(srv.port);
  try {
    const w = c.request({ ':method': 'POST', ':path': '/v3/watch' });
    w.on('error', () => {});
    w.setEncoding('utf8');
    let status: number | undefined;
    w.on('response', (h) => (status = Number(h[':status'])));
    // Lines as they come; `want(n)` resolves once n lines are in.
    const lines: string[] = [];
    let buffered = '';
    let wake: (() => void) | undefined;
    w.on('data', (d: string) => {
      buffered += d;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        lines.push(buffered.slice(0, nl));
        buffered = buffered.slice(nl + 1);
      }
      wake?.();
    });
    const want = async (n: number): Promise<void> => {
      while (lines.length < n) await new Promise<void>((r) => (wake = r));
    };
    w.write(JSON.stringify({ create_request: { key: b64('w'), prev_kv: true } }));
    await want(1);
    assert.equal(status, 200);
    assert.equal((JSON.parse(lines[0]!) as { result: { created: boolean } }).result.created, true);

    // Writes on other streams of the same connection reach the open watch.
    await call(c, 'POST', '/v3/kv/put', JSON.stringify({ key: b64('w'), value: b64('1') }));
    await call(c, 'POST', '/v3/kv/put', JSON.stringify({ key: b64('w'), value: b64('2') }));
    await call(c, 'POST', '/v3/kv/deleterange', JSON.stringify({ key: b64('w') }));
    await want(4);
    const events = lines.slice(1).flatMap((l) => (JSON.parse(l) as { result: { events: Array<{ type?: string; kv: { value?: string }; prev_kv?: { value?: string } }> } }).result.events);
    assert.deepEqual(
      events.map((e) => [e.type ?? 'PUT', e.kv.value, e.prev_kv?.value]),
      [
        ['PUT', b64('1'), undefined],
        ['PUT', b64('2'), b64('1')],
        ['DELETE', undefined, b64('2')],
      ],
    );
    assert.equal(m.server.services.watch.calls().length, 1);

    // The client resets the stream: 'close' fires and the gateway cancels the watch.
    w.close(http2.constants.NGHTTP2_CANCEL);
    await gone;
    assert.equal(closes, 1);
    assert.equal(m.server.services.watch.calls().length, 0);
  } finally {
    await closeSession(c);
    await srv.close();
    m.close();
  }
});

test('a request reset before its body ended never reaches etcd; the response sees close', WAIT, async () => {
  const m = member();
  let closed: (() => void) | undefined;
  const gone = new Promise<void>((r) => (closed = r));
  let sawData: (() => void) | undefined;
  const dataIn = new Promise<void>((r) => (sawData = r));
  const srv = await listen((req, res) => {
    req.on('data', () => sawData?.());
    res.on('close', () => closed?.());
    m.handler(req, res);
  });
  const c = connect(srv.port);
  try {
    const req = c.request({ ':method': 'POST', ':path': '/v3/kv/put' });
    req.on('error', () => {});
    // A whole put request, but the request side never ends.
    req.write(JSON.stringify({ key: b64('k'), value: b64('v') }));
    await dataIn;
    // destroy(): RST_STREAM CANCEL at once (close() would first end the request side, completing it).
    req.destroy();
    await gone;
    // The unfinished put went nowhere (a round trip later); the member still answers.
    const range = await call(c, 'POST', '/v3/kv/range', JSON.stringify({ key: b64('k') }));
    assert.equal(range.headers[':status'], 200);
    assert.equal(m.server.mvcc.currentRevision, 1);
  } finally {
    await closeSession(c);
    await srv.close();
    m.close();
  }
});

test('the request as the handler sees it: method, url, socket, headers (repeats as arrays, cookies joined)', WAIT, async () => {
  const socket = { encrypted: false, tag: 'the socket' };
  let seen: HttpRequest | undefined;
  const srv = await listen((req, res) => {
    seen = req;
    res.end('ok');
  }, socket);
  const c = connect(srv.port);
  try {
    const a = await call(c, 'GET', '/v3/x?y=1', undefined, { 'x-a': ['1', '2'], cookie: ['a=1', 'b=2'], authorization: 'tok' });
    assert.equal(a.body, 'ok');
    assert.ok(seen !== undefined);
    assert.equal(seen.method, 'GET');
    assert.equal(seen.url, '/v3/x?y=1');
    assert.equal(seen.socket, socket);
    assert.deepEqual(seen.headers['x-a'], ['1', '2']);
    assert.equal(seen.headers['cookie'], 'a=1; b=2');
    assert.equal(seen.headers['authorization'], 'tok');
    assert.equal(seen.headers[':authority'], `127.0.0.1:${srv.port}`);
    assert.equal(seen.headers[':method'], 'GET');
  } finally {
    await closeSession(c);
    await srv.close();
  }
});

test('a body read after a turn of the event loop is all there, then its end', WAIT, async () => {
  let body: Promise<string> | undefined;
  const srv = await listen((req, res) => {
    body = new Promise((resolve) =>
      setImmediate(() => {
        let text = '';
        req.on('data', (d) => (text += d.toString()));
        req.on('end', () => {
          resolve(text);
          res.end(text.toUpperCase());
        });
      }),
    );
  });
  const c = connect(srv.port);
  try {
    const a = await call(c, 'POST', '/echo', 'hello there');
    assert.equal(await body, 'hello there');
    assert.equal(a.body, 'HELLO THERE');
    assert.equal(a.headers[':status'], 200);
  } finally {
    await closeSession(c);
    await srv.close();
  }
});

test('write() or end() before writeHead answers 200 with the headers set so far; connection-specific headers are dropped', WAIT, async () => {
  const srv = await listen((req, res) => {
    res.setHeader('X-Custom', 'yes');
    res.setHeader('Connection', 'keep-alive');
    res.setHeader('Transfer-Encoding', 'chunked');
    if (req.url === '/write') {
      assert.equal(res.headersSent, false);
      res.write('part one, ');
      assert.equal(res.headersSent, true);
      res.end('part two');
    } else if (req.url === '/empty') {
      res.end();
    } else {
      res.writeHead(201, { 'Keep-Alive': 'timeout=5', 'X-Many': ['a', 'b'], 'X-Custom': 'overridden' });
      res.end('made');
    }
  });
  const c = connect(srv.port);
  try {
    // node's client would refuse a response carrying Connection or Transfer-Encoding (RFC 9113 §8.2.2).
    const w = await call(c, 'GET', '/write');
    assert.deepEqual([w.headers[':status'], w.headers['x-custom'], w.body], [200, 'yes', 'part one, part two']);
    assert.equal(w.headers['connection'], undefined);
    assert.equal(w.headers['transfer-encoding'], undefined);
    const e = await call(c, 'GET', '/empty');
    assert.deepEqual([e.headers[':status'], e.headers['x-custom'], e.body, e.trailers], [200, 'yes', '', undefined]);
    const h = await call(c, 'GET', '/head');
    assert.deepEqual([h.headers[':status'], h.headers['x-custom'], h.headers['x-many'], h.headers['keep-alive'], h.body], [201, 'overridden', 'a, b', undefined, 'made']);
  } finally {
    await closeSession(c);
    await srv.close();
  }
});

test('a client that stops reading makes write() return false; drain resumes the writer', WAIT, async () => {
  const chunk = 'x'.repeat(8192);
  let falseAfter: number | undefined;
  let paused: (() => void) | undefined;
  const isPaused = new Promise<void>((r) => (paused = r));
  let drained = 0;
  let total = 0;
  const srv = await listen((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    // Write until told to stop (bounded, so a write() that never says stop fails the test instead of looping).
    let n = 0;
    while (n < 1000) {
      n++;
      total += chunk.length;
      if (!res.write(chunk)) break;
    }
    falseAfter = n;
    paused?.();
    res.once('drain', () => {
      drained++;
      res.end('end');
    });
  }, undefined, 32 * 1024);
  // A small stream window, so the unread response stays in the server's queue.
  const c = connect(srv.port, { settings: { initialWindowSize: 16384 } });
  try {
    const req = c.request({ ':method': 'GET', ':path': '/big' }, { endStream: true });
    req.pause();
    await isPaused;
    assert.ok(falseAfter !== undefined && falseAfter < 1000, `write() returned false after ${falseAfter} writes`);
    // The quota (32 KiB) is queued beyond what the window (16 KiB) let out.
    assert.ok(total >= 32 * 1024 + 16384 && total < 32 * 1024 + 16384 + 2 * chunk.length, `wrote ${total}`);
    assert.equal(drained, 0);
    let got = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (got += d));
    const ended = new Promise<void>((r) => req.on('end', r));
    req.resume();
    await ended;
    assert.equal(drained, 1);
    assert.equal(got.length, total + 3);
    assert.ok(got.endsWith('xend'));
  } finally {
    await closeSession(c);
    await srv.close();
  }
});
