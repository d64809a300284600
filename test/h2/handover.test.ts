/**
 * The two ways src/http/port.ts will hand a connection to src/http/h2: a cleartext socket whose first bytes
 * were already read to tell HTTP/2 from HTTP/1.1 (passed on as `head`), and a TLS socket that negotiated
 * `h2` with ALPN. Both must carry calls as a fresh socket does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import * as tls from 'node:tls';
import { readFileSync } from 'node:fs';
import { Http2ServerConnection } from '../../src/h2/connection.js';
import type { H2Stream } from '../../src/h2/stream.js';
import { requireCommands } from '../support/prerequisites.js';
import { SERVER_EXT, TestPki } from '../grpc/pki.js';

/** Answers every call with its path and request size in the trailers. */
function answer(st: H2Stream): void {
  let n = 0;
  st.onData = (c) => void (n += c.length);
  st.onEnd = () => {
    st.respond([':status', '200', 'content-type', 'application/grpc']);
    st.end(['grpc-status', '0', 'x-path', st.path, 'x-received', String(n)]);
  };
}

/** Three calls on one session, one after another (the first bytes, then the table-indexed headers): their trailers. */
async function threeCalls(session: http2.ClientHttp2Session): Promise<Array<[string, string]>> {
  const out: Array<[string, string]> = [];
  for (const path of ['/a.S/One', '/a.S/Two', '/a.S/One']) {
    out.push(
      await new Promise<[string, string]>((resolve, reject) => {
        const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' });
        req.on('trailers', (t) => resolve([String(t['x-path']), String(t['x-received'])]));
        req.on('error', reject);
        req.resume();
        req.end(Buffer.alloc(7));
      }),
    );
  }
  return out;
}

const EXPECTED: Array<[string, string]> = [
  ['/a.S/One', '7'],
  ['/a.S/Two', '7'],
  ['/a.S/One', '7'],
];

test('a cleartext connection whose first bytes were read to sniff the protocol goes on from them (head)', async () => {
  const sniffed: number[] = [];
  const server = net.createServer((socket) => {
    // A router that hands the socket over after its first four octets (src/http/port.ts waits for the whole
    // preface; the connection takes any part of it as its head).
    let head = Buffer.alloc(0);
    const sniff = (d: Buffer): void => {
      head = Buffer.concat([head, d]);
      if (head.length < 4) return;
      socket.off('data', sniff);
      socket.pause();
      sniffed.push(head.length);
      new Http2ServerConnection(socket, { onStream: answer, head });
      socket.resume();
    };
    socket.on('data', sniff);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const session = http2.connect(`http://127.0.0.1:${(server.address() as net.AddressInfo).port}`);
  session.on('error', () => {});
  try {
    assert.deepEqual(await threeCalls(session), EXPECTED);
    assert.equal(sniffed.length, 1);
    assert.ok(sniffed[0]! >= 4, 'the connection took over bytes already read');
  } finally {
    session.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

test('a TLS connection that negotiated h2 with ALPN carries calls', { skip: requireCommands(['openssl']) }, async () => {
  const pki = new TestPki('etcdsim-h2-tls-');
  pki.ca('ca');
  pki.issue('server', '/CN=localhost', 'ca', SERVER_EXT);
  const protocols: Array<string | false | null> = [];
  const server = tls.createServer({ cert: readFileSync(pki.path('server.crt')), key: readFileSync(pki.path('server.key')), ALPNProtocols: ['h2'] }, (socket) => {
    protocols.push(socket.alpnProtocol);
    new Http2ServerConnection(socket, { onStream: answer });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const session = http2.connect(`https://localhost:${(server.address() as net.AddressInfo).port}`, { ca: readFileSync(pki.path('ca.crt')) });
  session.on('error', () => {});
  try {
    assert.deepEqual(await threeCalls(session), EXPECTED);
    assert.deepEqual(protocols, ['h2']);
  } finally {
    session.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    pki.remove();
  }
});
