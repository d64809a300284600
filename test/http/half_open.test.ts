/**
 * What a connection costs the client port before its HTTP/2 preface is whole (issue 32's half-open row:
 * thousands of connections that send part of a preface and stall). As etcd's cmux hands grpc-go a connection
 * only once its first bytes match, the port keeps such a connection to the bytes read so far and makes no
 * HTTP/2 connection state for it; and a connection that has sent its preface holds no 64 KiB output buffer
 * before it has that much to write.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { Duplex } from 'node:stream';
import { listenClientPort, type ClientPort } from '../../src/http/port.js';
import { Http2ServerConnection } from '../../src/h2/connection.js';
import { CLIENT_PREFACE, FrameType, settingsFrame } from '../../src/h2/frames.js';
import { RawClient } from '../h2/helpers.js';

/** A plaintext port whose HTTP/2 connections run on Http2ServerConnection; `heads` lists what each was handed. */
async function port(): Promise<{ port: ClientPort; heads: Buffer[] }> {
  const heads: Buffer[] = [];
  const p = await listenClientPort({
    host: '127.0.0.1',
    port: 0,
    tls: undefined,
    handler: (_req, res) => res.end(),
    http2: (socket, head, _secure, onHandshake) => {
      heads.push(Buffer.from(head ?? Buffer.alloc(0)));
      new Http2ServerConnection(socket, { head, onHandshake, onStream: () => {} });
    },
  });
  return { port: p, heads };
}

test('half a preface, then the end of the stream: the connection never reaches the HTTP/2 side', async () => {
  const { port: p, heads } = await port();
  const s = net.connect(p.port, '127.0.0.1');
  try {
    s.on('error', () => {});
    s.resume();
    // The port reads the 12 octets, then the end; the socket closes without an HTTP/2 connection made for it.
    s.end(CLIENT_PREFACE.subarray(0, 12));
    await new Promise<void>((resolve) => s.once('close', () => resolve()));
    assert.deepEqual(heads, []);
  } finally {
    s.destroy();
    await p.close();
  }
});

test('a preface sent an octet at a time reaches the HTTP/2 side whole, once, and is served', async () => {
  const { port: p, heads } = await port();
  const client = await RawClient.connect(p.port, false);
  try {
    for (const b of CLIENT_PREFACE) await new Promise<void>((resolve) => client.socket.write(Buffer.from([b]), () => setImmediate(resolve)));
    client.send(settingsFrame([]));
    const first = await client.waitFor(() => true);
    assert.equal(first?.type, FrameType.SETTINGS);
    assert.equal(heads.length, 1);
    assert.deepEqual(heads[0]!.subarray(0, CLIENT_PREFACE.length), CLIENT_PREFACE);
  } finally {
    client.destroy();
    await p.close();
  }
});

test('only the whole preface goes to the HTTP/2 side: "PRI * HTTP/1.1" is an HTTP/1.1 request, for the HTTP handler', async () => {
  const { port: p, heads } = await port();
  const s = net.connect(p.port, '127.0.0.1');
  try {
    let got = '';
    s.on('data', (d: Buffer) => (got += d.toString('latin1')));
    s.on('error', () => {});
    // The handler here answers every request 200 (etcd's mux answers this one 400: test/http/go_server.test.ts).
    s.write('PRI * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await new Promise<void>((resolve) => s.once('close', () => resolve()));
    assert.match(got, /^HTTP\/1\.1 200 /);
    assert.deepEqual(heads, []);
  } finally {
    s.destroy();
    await p.close();
  }
});

test('a connection that has sent its preface and SETTINGS holds a small output buffer, not 64 KiB', () => {
  // In process, over streams that swallow what is written: only the connections' own buffers remain.
  const n = 200;
  const before = process.memoryUsage().arrayBuffers;
  const held: Http2ServerConnection[] = [];
  for (let i = 0; i < n; i++) {
    const socket = new Duplex({ read() {}, write: (_c, _e, cb) => cb() });
    held.push(new Http2ServerConnection(socket, { head: Buffer.concat([CLIENT_PREFACE, settingsFrame([])]), onStream: () => {} }));
  }
  const perConnection = (process.memoryUsage().arrayBuffers - before) / n;
  // A 64 KiB staging buffer each would be 65,536 octets here; what is left is the first, pooled one (1 KiB).
  assert.ok(perConnection < 8 * 1024, `${perConnection.toFixed(0)} octets of buffers per connection`);
  assert.equal(held.length, n);
});
