/**
 * HTTP/1.1 on the client port against the inputs of issue 32, raw over a socket, each compared with what
 * etcd 3.4.23 (Go's net/http) was seen to answer on loopback: header sections up to 1 MiB, transfer codings
 * other than chunked refused with 501, a gateway body past the request limit refused without reading it
 * all. Where etcd's answer is unsafe (Content-Length beside chunked, kept alive) or out of node:http's reach
 * without its insecure parser (bare-LF line endings), the request is refused with 400; see docs/security.md.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { serve, type ServeHandle } from '../../src/grpc/server.js';

let sim: ServeHandle;
before(async () => {
  // A small request limit, so that the body bound (4 × (limit + 512 KiB)) is a few MiB.
  sim = await serve({ port: 0, etcdVersion: '3.4', maxRequestBytes: 1024 });
});
after(() => sim.close());

/** Sends `head` (then `body`, if any) on a new connection; resolves with all the server sent until it closed or `until` matched. */
function exchange(head: string | Buffer, body?: Buffer, until?: RegExp): Promise<string> {
  const [host, port] = sim.address.split(':') as [string, string];
  return new Promise((resolve) => {
    const s = net.connect(Number(port), host);
    let got = '';
    const done = (): void => {
      s.destroy();
      resolve(got);
    };
    s.on('data', (d: Buffer) => {
      got += d.toString('latin1');
      if (until?.test(got) === true) done();
    });
    s.on('error', done);
    s.on('close', done);
    s.write(head);
    if (body !== undefined) s.write(body);
  });
}

const PUT = '{"key":"YQ==","value":"Yg=="}';

test('a header section up to 1 MiB is read, as Go net/http reads it; beyond, 431', async () => {
  const big = (n: number): string => `GET /version HTTP/1.1\r\nHost: x\r\nX-Token: ${'a'.repeat(n)}\r\n\r\n`;
  assert.match(await exchange(big(20_000), undefined, /"etcdserver"/), /^HTTP\/1\.1 200 /);
  assert.match(await exchange(big(1_000_000), undefined, /"etcdserver"/), /^HTTP\/1\.1 200 /);
  assert.equal(await exchange(big(1_100_000)), GO_ANSWER('431 Request Header Fields Too Large'));
});

/** What Go's net/http writes before it closes a connection whose request it cannot read (etcd 3.4.23, observed). */
const GO_ANSWER = (status: string): string => `HTTP/1.1 ${status}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n${status}`;

test('a request cut off by the peer\'s FIN, or one node:http cannot parse: Go\'s 400 with its text, as etcd 3.4.23 answers, and the connection closed', async () => {
  const [host, port] = sim.address.split(':') as [string, string];
  // Half a header, then FIN: etcd answers 400 on the half-closed connection (node:http's sockets are half-open).
  for (const cut of ['GET /version HTTP/1.1\r\nHost: x\r\nX-a: ', 'GET /version HTTP/1.1\r\nHost: x\r\n']) {
    const answer = await new Promise<string>((resolve) => {
      const s = net.connect(Number(port), host, () => s.end(cut));
      let got = '';
      s.on('data', (d: Buffer) => (got += d.toString('latin1')));
      s.on('close', () => resolve(got));
    });
    assert.equal(answer, GO_ANSWER('400 Bad Request'), JSON.stringify(cut));
  }
  assert.equal(await exchange('GET /version HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'), GO_ANSWER('400 Bad Request'));
  // The port still serves.
  assert.match(await exchange('GET /version HTTP/1.1\r\nHost: x\r\n\r\n', undefined, /"etcdserver"/), /^HTTP\/1\.1 200 /);
});

test('a transfer coding other than chunked: 501 Unsupported transfer encoding, as Go net/http answers', async () => {
  const req = `POST /v3/kv/put HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n${PUT.length.toString(16)}\r\n${PUT}\r\n0\r\n\r\n`;
  const answer = await exchange(req);
  assert.match(answer, /^HTTP\/1\.1 501 /);
  assert.match(answer, /Unsupported transfer encoding/);
});

const LIMIT = 4 * (1024 + 512 * 1024);
const HEAD = (framing: string): string => `POST /v3/kv/put HTTP/1.1\r\nHost: x\r\n${framing}\r\n\r\n`;
const CHUNKED = 'Transfer-Encoding: chunked';
const chunk = (b: Buffer): Buffer => Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')]);
/** The end of an answer's head; for a chunked one (429 has a trailer), the end of its body. */
const HEAD_END = /\r\n\r\n/;
const CHUNKED_END = /\r\n0\r\n/;

// Each request below sends a part of its body and waits: the answer comes before the rest is sent.
test('a gateway body of garbage: 400 with Go\'s decoder text at its first octets, as etcd answers, with or without Content-Length', async () => {
  const junk = Buffer.alloc(64 * 1024, 0x41);
  for (const [head, body] of [[HEAD(`Content-Length: ${200 * 1024 * 1024}`), junk], [HEAD(CHUNKED), chunk(junk)]] as const) {
    const answer = await exchange(head, body, /invalid character/);
    assert.match(answer, /^HTTP\/1\.1 400 /, head);
    assert.match(answer, /Connection: close/i);
    assert.match(answer, /invalid character 'A' looking for beginning of value/);
  }
});

test('a valid gateway body past the bound: 429 RESOURCE_EXHAUSTED as etcd answers an oversized message, at once when Content-Length declares it', async () => {
  const opening = Buffer.from('{"key":"YQ==","value":"');
  const max = `${1024 + 512 * 1024}`;
  // Declared: answered after the first octets, naming the declared length.
  const declared = 64 * 1024 * 1024;
  const first = await exchange(HEAD(`Content-Length: ${declared}`), Buffer.concat([opening, Buffer.alloc(1024, 0x41)]), CHUNKED_END);
  assert.match(first, /^HTTP\/1\.1 429 /);
  assert.match(first, /Connection: close/i);
  assert.ok(first.includes(`received message larger than max (${declared} vs. ${max})`), first);
  // Chunked: refused once the octets read pass the bound, naming them.
  const read = await exchange(HEAD(CHUNKED), Buffer.concat([chunk(opening), chunk(Buffer.alloc(LIMIT, 0x41))]), CHUNKED_END);
  assert.match(read, /^HTTP\/1\.1 429 /);
  assert.match(read, /Connection: close/i);
  assert.ok(read.includes(`received message larger than max (${opening.length + LIMIT} vs. ${max})`), read);
});

test('a complete request followed by more body: answered at once, the rest unread and the connection closed, as etcd does', async () => {
  const answer = await exchange(HEAD(`Content-Length: ${200 * 1024 * 1024}`), Buffer.from(PUT + ' '.repeat(64 * 1024)), HEAD_END);
  assert.match(answer, /^HTTP\/1\.1 200 /);
  assert.match(answer, /Connection: close/i);
});

test('bare-LF line endings and Content-Length beside chunked: 400 (etcd answers both; see docs/security.md)', async () => {
  assert.match(await exchange('GET /version HTTP/1.1\nHost: x\n\n'), /^HTTP\/1\.1 400 /);
  const smuggle = `POST /v3/kv/put HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n${PUT.length.toString(16)}\r\n${PUT}\r\n0\r\n\r\n`;
  assert.match(await exchange(smuggle), /^HTTP\/1\.1 400 /);
});
