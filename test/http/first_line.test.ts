/**
 * Which protocol a plaintext connection to the client port speaks, decided as etcd 3.4's cmux decides it:
 * HTTP/2's preface to gRPC, a first line that is an HTTP/1 request line (`METHOD SP URI SP HTTP/1.d`, ending
 * within cmux's 4096-octet read) to the HTTP server, and anything else closed without a byte written back.
 * Each first line is sent to the simulator and to a real etcd 3.4.23 in the same run, and both must do what
 * the table says (the table is what etcd was seen to do). Outside CI the etcd half is left out without `etcd`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { simBesideEtcd } from './beside_etcd.js';

const both = simBesideEtcd();

/**
 * What the server wrote before it closed the connection — or, when it answered and kept the connection
 * open, the answer's status line (read up to its first CRLF). A reset counts as closed: cmux closes with the
 * client's unread bytes still queued, which the kernel turns into RST.
 */
function firstAnswer(address: string, sent: string): Promise<string> {
  const [host, port] = address.split(':') as [string, string];
  return new Promise((resolve) => {
    const s = net.connect(Number(port), host, () => s.write(sent, 'latin1'));
    let got = '';
    const done = (): void => {
      s.destroy();
      resolve(got.split('\r\n')[0]!);
    };
    s.on('data', (d: Buffer) => {
      got += d.toString('latin1');
      if (got.includes('\r\n')) done();
    });
    s.on('error', done);
    s.on('close', done);
  });
}

const CLOSED = '';
const line = (uriLength: number, ending: string): string => `GET /${'a'.repeat(uriLength)} HTTP/1.1${ending}Host: x\r\n\r\n`;
// `GET /` + URI + ` HTTP/1.1`: the first line's LF lands at octet 14 + URI length (+1 with its CR).
const TABLE: ReadonlyArray<readonly [string, string, string]> = [
  ['not a request line', 'GARBAGE\r\n\r\n', CLOSED],
  ['binary octets', '\x00\x01\x02\x03\r\n', CLOSED],
  ['no protocol (HTTP/0.9 style)', 'GET /\r\n\r\n', CLOSED],
  ['HTTP/2.0 in a request line', 'GET / HTTP/2.0\r\nHost: x\r\n\r\n', CLOSED],
  ['a third space', 'GET / x HTTP/1.1\r\nHost: x\r\n\r\n', CLOSED],
  ['two spaces after the method', 'GET  /health HTTP/1.1\r\nHost: x\r\n\r\n', CLOSED],
  ['a space after the protocol', 'GET /health HTTP/1.1 \r\nHost: x\r\n\r\n', CLOSED],
  ['a tab for a space', 'GET\t/health HTTP/1.1\r\nHost: x\r\n\r\n', CLOSED],
  ['a lower-case protocol', 'GET /health http/1.1\r\nHost: x\r\n\r\n', CLOSED],
  ['a two-digit minor version', 'GET /health HTTP/1.10\r\nHost: x\r\n\r\n', CLOSED],
  ['a leading zero', 'GET /health HTTP/01.1\r\nHost: x\r\n\r\n', CLOSED],
  ['CR CR LF', 'GET /health HTTP/1.1\r\r\nHost: x\r\n\r\n', CLOSED],
  ['an empty first line', '\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n', CLOSED],
  ['a first line ending at octet 4096 (CRLF)', line(4096 - 15, '\r\n'), CLOSED],
  ['a first line ending at octet 4096 (LF)', line(4096 - 14, '\n'), CLOSED],
  ['a first line ending at octet 4095', line(4095 - 15, '\r\n'), 'HTTP/1.1 404 Not Found'],
  ['HTTP/1.1', 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n', 'HTTP/1.1 200 OK'],
  ['HTTP/1.9 (major version 1)', 'GET /health HTTP/1.9\r\nHost: x\r\n\r\n', 'HTTP/1.1 200 OK'],
  ['HTTP/1.1 without Host', 'GET /health HTTP/1.1\r\n\r\n', 'HTTP/1.1 400 Bad Request: missing required Host header'],
];

test('the first line decides as cmux does: an HTTP/1 request line is served, anything else is closed unanswered (etcd 3.4.23 alike)', async () => {
  const etcd = both.etcd();
  for (const [what, sent, expected] of TABLE) {
    assert.equal(await firstAnswer(both.sim().address, sent), expected, `etcdsim: ${what}`);
    if (etcd !== undefined) assert.equal(await firstAnswer(etcd.address, sent), expected, `etcd 3.4.23: ${what}`);
  }
});

test('a first line still under way is waited for, however it is split; the preface still goes to gRPC', async () => {
  const [host, port] = both.sim().address.split(':') as [string, string];
  const s = net.connect(Number(port), host);
  let got = '';
  s.on('data', (d: Buffer) => (got += d.toString('latin1')));
  const closed = new Promise<void>((resolve) => s.on('close', () => resolve()));
  for (const part of ['GE', 'T /hea', 'lth HTTP', '/1.1\r', '\nHost: x\r\nConnection: close\r\n\r\n']) {
    s.write(part);
    await new Promise((r) => setImmediate(r));
  }
  await closed;
  assert.match(got, /^HTTP\/1\.1 200 OK\r\n/);
  // The preface itself is no HTTP/1 request line, but the HTTP/2 matcher takes it first: a SETTINGS frame back.
  const frameHead = await new Promise<Buffer>((resolve) => {
    const h2 = net.connect(Number(port), host, () => h2.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'), Buffer.from('000000040000000000', 'hex')])));
    let head = Buffer.alloc(0);
    h2.on('data', (d: Buffer) => {
      head = Buffer.concat([head, d]);
      if (head.length >= 9) {
        h2.destroy();
        resolve(head.subarray(0, 9));
      }
    });
  });
  assert.equal(frameHead[3], 0x04, 'a SETTINGS frame');
});
