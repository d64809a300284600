/**
 * The gateway's body reader (src/http/request_body.ts) against etcd's grpc-gateway, which decodes as it
 * reads: what one request holds stays within the bound however long the body (counted in octets held, not
 * resident memory), and a body is answered as soon as its start decides it — but never on a number cut off
 * at a chunk's end.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import * as http from 'node:http';
import * as net from 'node:net';
import { readBody, type BodyMeter, type BodyRead } from '../../src/http/request_body.js';

/** A node:http server on loopback whose every request's body goes through readBody; the results in order. */
async function bodyServer(limit: number, meter: BodyMeter): Promise<{ port: number; reads: BodyRead[]; close(): void }> {
  const reads: BodyRead[] = [];
  const server = http.createServer((req, res) => {
    void readBody(req, limit, meter).then((r) => {
      reads.push(r);
      res.setHeader('Connection', 'close');
      res.end('done');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as net.AddressInfo).port, reads, close: () => server.close() };
}

/** Writes `head`, then `n` octets of `body` in 64 KiB chunked pieces unless an answer comes first; resolves once the server closes. */
function send(port: number, head: string, body: (i: number) => Buffer, n: number): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let got = '';
    let sent = 0;
    let i = 0;
    s.on('data', (d: Buffer) => (got += d.toString('latin1')));
    s.on('error', () => {});
    s.on('close', () => resolve(got));
    const pump = (): void => {
      while (got === '' && sent < n) {
        const b = body(i++);
        sent += b.length;
        if (!s.write(Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')]))) return void s.once('drain', pump);
      }
    };
    s.write(head);
    pump();
  });
}

test('a chunked body many times the bound: refused past it, holding at most the bound and one read, nothing once answered', async () => {
  const limit = 1024 * 1024;
  const meter: BodyMeter = { held: 0, peak: 0 };
  const srv = await bodyServer(limit, meter);
  try {
    const opening = Buffer.from('{"key":"YQ==","value":"');
    const value = Buffer.alloc(64 * 1024, 0x41);
    const answer = await send(srv.port, 'POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n', (i) => (i === 0 ? opening : value), 64 * limit);
    assert.match(answer, /done/);
    const r = srv.reads[0]!;
    assert.ok('over' in r && r.over > limit, JSON.stringify(r));
    assert.ok(meter.peak <= limit + 64 * 1024, `held at most ${meter.peak} octets`);
    assert.equal(meter.held, 0);
  } finally {
    srv.close();
  }
});

test('a body declared past the bound holds only its first read before it is refused', async () => {
  const limit = 1024 * 1024;
  const meter: BodyMeter = { held: 0, peak: 0 };
  const srv = await bodyServer(limit, meter);
  try {
    const s = net.connect(srv.port, '127.0.0.1');
    const closed = new Promise((resolve) => s.on('close', resolve));
    s.on('error', () => {});
    s.end(`POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${200 * limit}\r\n\r\n{"key":"`);
    s.resume();
    await closed;
    assert.deepEqual(srv.reads, [{ over: 200 * limit }]);
    assert.ok(meter.peak < 100, `held at most ${meter.peak} octets`);
  } finally {
    srv.close();
  }
});

/** A request fed by hand, chunk by chunk (readBody listens to 'data' and 'end'). */
function fakeRequest(headers: Record<string, string> = {}): EventEmitter & { headers: Record<string, string>; socket: null } {
  return Object.assign(new EventEmitter(), { headers, socket: null });
}

test('a number cut off at the end of what has arrived decides nothing: the body reads on', async () => {
  // 64 KiB of an array whose last element, so far, reads `1.`, `-` or `1e`: each an error or a shorter value if judged now.
  for (const cut of ['1.', '-', '1e']) {
    const req = fakeRequest();
    const got: { read?: BodyRead } = {};
    void readBody(req, 1 << 20).then((r) => (got.read = r));
    const start = `[${'1,'.repeat(32 * 1024)}${cut}`;
    req.emit('data', Buffer.from(start));
    await Promise.resolve();
    assert.equal(got.read, undefined, cut);
    req.emit('data', Buffer.from('5]'));
    req.emit('end');
    await Promise.resolve();
    assert.deepEqual(got.read, { text: `${start}5]`, whole: true }, cut);
  }
});

test('a complete first value or a syntax error in the first 64 KiB answers before the rest arrives', async () => {
  for (const [start, rest] of [
    [`{"key":"YQ=="}${' '.repeat(64 * 1024)}`, 'more'],
    [`{"key" 1${' '.repeat(64 * 1024)}`, '}'],
  ] as const) {
    const req = fakeRequest({ 'content-length': String(start.length + rest.length) });
    const got: { read?: BodyRead } = {};
    void readBody(req, 1 << 20).then((r) => (got.read = r));
    req.emit('data', Buffer.from(start));
    await Promise.resolve();
    assert.deepEqual(got.read, { text: start, whole: false });
  }
});
