/**
 * What Go's net/http server and etcd's mux answer on the client port's HTTP/1.1 side before or instead of a
 * handler — the refusals Go's server writes itself, `OPTIONS *` and `*`, the absolute request target, paths
 * not in clean form, CONNECT, a PRI request line that is no HTTP/2 preface — sent as raw bytes to the
 * simulator and to a real etcd 3.4.23 in the same run. Each request is followed on the same connection by a
 * `GET /version` that asks to close, so the transcript shows whether the first answer kept the connection
 * (two answers) or closed it (one), with no waiting. Both must give the table's status lines; with etcd on
 * PATH (always in CI) the whole transcripts must agree too — header order and Connection headers included, as
 * Go writes them (its handler's headers sorted, then its own) — but for the Date's value and what the notes name.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { simBesideEtcd } from './beside_etcd.js';

const both = simBesideEtcd();

const THEN_CLOSE = 'GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';

/** Everything the server wrote until it closed the connection. */
function transcript(address: string, sent: string): Promise<string> {
  const [host, port] = address.split(':') as [string, string];
  return new Promise((resolve) => {
    const s = net.connect(Number(port), host, () => s.write(sent + THEN_CLOSE, 'latin1'));
    let got = '';
    s.on('data', (d: Buffer) => (got += d.toString('latin1')));
    s.on('error', () => s.destroy());
    s.on('close', () => resolve(got));
  });
}

/** The answers in a transcript, each as its status line, its headers in the order written (Date's value left out) and its body. */
function answers(t: string): string[] {
  const out: string[] = [];
  let rest = t;
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) {
      out.push(`(partial) ${rest}`);
      break;
    }
    const [status, ...headers] = rest.slice(0, end).split('\r\n');
    const length = headers.find((h) => /^content-length:/i.test(h));
    const bodyEnd = length === undefined ? rest.length : end + 4 + Number(length.split(':')[1]);
    const kept = headers.map((h) => (/^date:/i.test(h) ? 'Date: (now)' : h));
    out.push([status, ...kept, '', rest.slice(end + 4, bodyEnd)].join('\n'));
    rest = rest.slice(bodyEnd);
  }
  return out;
}

const H = 'Host: x\r\n';
const OK = 'HTTP/1.1 200 OK';
interface Row {
  readonly what: string;
  readonly sent: string;
  /** The status lines of the answers: the request's, then /version's if the connection stayed open. */
  readonly statuses: readonly string[];
  /** Where the simulator is known to differ from etcd beyond the status lines (not compared then). */
  readonly differs?: string;
}
const TABLE: readonly Row[] = [
  { what: 'a Host header twice', sent: `GET /health HTTP/1.1\r\n${H}Host: y\r\n\r\n`, statuses: ['HTTP/1.1 400 Bad Request'] },
  { what: 'a Host with a space', sent: `GET /health HTTP/1.1\r\nHost: x y\r\n\r\n`, statuses: ['HTTP/1.1 400 Bad Request: malformed Host header'] },
  { what: 'an empty Host', sent: `GET /health HTTP/1.1\r\nHost:\r\n\r\n`, statuses: [OK, OK] },
  { what: 'a space in a header name', sent: `GET /health HTTP/1.1\r\n${H}Bad Header: v\r\n\r\n`, statuses: ['HTTP/1.1 400 Bad Request: invalid header name'] },
  { what: 'a header line with a space and no colon', sent: `GET /health HTTP/1.1\r\n${H}Bad Header\r\n\r\n`, statuses: ['HTTP/1.1 400 Bad Request'] },
  { what: 'a NUL in a header value', sent: `GET /health HTTP/1.1\r\n${H}X: a\x00b\r\n\r\n`, statuses: ['HTTP/1.1 400 Bad Request: invalid header value'] },
  { what: 'Transfer-Encoding: identity', sent: `GET /health HTTP/1.1\r\n${H}Transfer-Encoding: identity\r\n\r\n`, statuses: ['HTTP/1.1 501 Not Implemented'] },
  { what: 'an Expect other than 100-continue', sent: `POST /v3/kv/range HTTP/1.1\r\n${H}Expect: foo\r\nContent-Length: 2\r\n\r\n{}`, statuses: ['HTTP/1.1 417 Expectation Failed'] },
  { what: 'OPTIONS *', sent: `OPTIONS * HTTP/1.1\r\n${H}\r\n`, statuses: [OK, OK] },
  { what: 'GET *', sent: `GET * HTTP/1.1\r\n${H}\r\n`, statuses: ['HTTP/1.1 400 Bad Request'] },
  { what: 'PRI * HTTP/1.1 without Host', sent: 'PRI * HTTP/1.1\r\n\r\n', statuses: ['HTTP/1.1 400 Bad Request: missing required Host header'] },
  { what: 'PRI * HTTP/1.1', sent: `PRI * HTTP/1.1\r\n${H}\r\n`, statuses: ['HTTP/1.1 400 Bad Request'] },
  { what: 'PRI /health', sent: `PRI /health HTTP/1.1\r\n${H}\r\n`, statuses: ['HTTP/1.1 405 Method Not Allowed', OK] },
  { what: 'PRI on a gateway path', sent: `PRI /v3/kv/range HTTP/1.1\r\n${H}\r\n`, statuses: ['HTTP/1.1 405 Method Not Allowed', OK] },
  { what: 'the absolute form', sent: `GET http://x/health?exclude=NOSPACE HTTP/1.1\r\n${H}\r\n`, statuses: [OK, OK] },
  { what: 'the absolute form with no path', sent: `GET http://x HTTP/1.1\r\n${H}\r\n`, statuses: ['HTTP/1.1 301 Moved Permanently', OK] },
  { what: 'a doubled slash', sent: `GET //health?a=b HTTP/1.1\r\n${H}\r\n`, statuses: ['HTTP/1.1 301 Moved Permanently', OK] },
  { what: 'a dot segment', sent: `GET /./health HTTP/1.1\r\n${H}\r\n`, statuses: ['HTTP/1.1 301 Moved Permanently', OK] },
  { what: 'a dot-dot segment, POST', sent: `POST /v3/../v3/kv/range HTTP/1.1\r\n${H}Content-Length: 2\r\n\r\n{}`, statuses: ['HTTP/1.1 301 Moved Permanently', OK] },
  { what: 'CONNECT, then the next request', sent: `CONNECT x:1 HTTP/1.1\r\n${H}\r\n`, statuses: ['HTTP/1.1 404 Not Found', OK] },
  { what: 'CONNECT asking to close', sent: `CONNECT x:1 HTTP/1.1\r\n${H}Connection: close\r\n\r\n`, statuses: ['HTTP/1.1 404 Not Found'] },
  { what: 'a lower-case method', sent: `get /health HTTP/1.1\r\n${H}\r\n`, statuses: ['HTTP/1.1 405 Method Not Allowed', OK] },
  { what: 'an unknown method on a gateway path', sent: `FROB /v3/kv/range HTTP/1.1\r\n${H}Content-Length: 2\r\n\r\n{}`, statuses: ['HTTP/1.1 405 Method Not Allowed', OK] },
  { what: 'an unknown method elsewhere', sent: `FROB /nowhere HTTP/1.1\r\n${H}\r\n`, statuses: ['HTTP/1.1 404 Not Found', OK] },
  { what: 'a method that is no token', sent: `G@T /health HTTP/1.1\r\n${H}\r\n`, statuses: ['HTTP/1.1 400 Bad Request'] },
  { what: 'HTTP/1.0', sent: 'GET /health HTTP/1.0\r\n\r\n', statuses: ['HTTP/1.0 200 OK'] },
  { what: 'HTTP/1.0 asking to keep alive', sent: 'GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n', statuses: ['HTTP/1.0 200 OK', OK] },
  { what: 'a kept HTTP/1.1 connection', sent: `GET /health HTTP/1.1\r\n${H}\r\n`, statuses: [OK, OK] },
  {
    what: "HTTP/2's preface as a kept connection's second request",
    sent: `GET /health HTTP/1.1\r\n${H}\r\nPRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`,
    statuses: [OK, 'HTTP/1.1 400 Bad Request'],
  },
  {
    what: "HTTP/2's preface and a SETTINGS frame as a kept connection's second request",
    sent: `GET /version HTTP/1.1\r\n${H}\r\nPRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00`,
    statuses: [OK, 'HTTP/1.1 400 Bad Request'],
  },
  {
    what: 'a header line folded (obs-fold)',
    sent: `GET /health HTTP/1.1\r\n${H}X-A: a\r\n b\r\n\r\n`,
    statuses: ['HTTP/1.1 400 Bad Request'],
    differs: "etcd (Go) joins the folded line to the one before and answers 200; llhttp refuses it, which RFC 9112 §5.2 lets a server do (Go's 400 is written, and the connection closed)",
  },
  {
    what: 'a lower-case method as a kept connection\'s second request',
    sent: `GET /health HTTP/1.1\r\n${H}\r\nget /health HTTP/1.1\r\n${H}\r\n`,
    statuses: [OK],
    differs: "etcd answers it 405 and reads on; the simulator rewrites a connection's first method only (later requests go to llhttp unread, which refuses the method), so it closes after the first answer",
  },
];

test("Go's server and etcd's mux before the handlers: refusals, `*`, the absolute form, unclean paths, CONNECT, PRI, methods, HTTP/1.0, header order (etcd 3.4.23 alike)", async () => {
  // Every row is tried and every difference reported together.
  const failed: string[] = [];
  const check = (what: string, actual: unknown, expected: unknown): void => {
    try {
      assert.deepEqual(actual, expected, what);
    } catch (e) {
      failed.push(e instanceof Error ? e.message : String(e));
    }
  };
  for (const row of TABLE) {
    const simAnswers = answers(await transcript(both.sim().address, row.sent));
    check(`etcdsim: ${row.what}`, simAnswers.map((a) => a.split('\n')[0]), row.statuses);
    const etcd = both.etcd();
    if (etcd === undefined) continue;
    const etcdAnswers = answers(await transcript(etcd.address, row.sent));
    if (row.differs === undefined) check(`etcdsim against etcd 3.4.23: ${row.what}`, simAnswers, etcdAnswers);
    // The first answer alike, if what differs is after it.
    else if (simAnswers[0]!.split('\n')[0] === etcdAnswers[0]!.split('\n')[0]) check(`etcd 3.4.23, the first answer: ${row.what}`, etcdAnswers[0], simAnswers[0]);
  }
  assert.deepEqual(failed, []);
});
