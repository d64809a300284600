/**
 * What Go's net/http server does with an HTTP/1.1 request before etcd's handlers see it, on the client port:
 * node:http parses the request, and these rules answer where Go's server answers otherwise — the refusals it
 * writes itself (a parse error, a Host header missing, doubled or malformed, a transfer coding it does not
 * read, an expectation it does not meet), `OPTIONS *`, and the request target in absolute form, which Go
 * routes by its path. Each answer is the bytes etcd 3.4.23 was seen to write (test/http/go_server.test.ts).
 */
import { Buffer } from 'node:buffer';
import * as http from 'node:http';
import * as net from 'node:net';
import type { Duplex } from 'node:stream';
import type { HttpRequest, HttpResponse } from './gateway.js';

/**
 * The largest HTTP/1.1 header section read: Go's DefaultMaxHeaderBytes (1 MiB) plus the 4096 octets of slack
 * its server reads beyond it, as observed on etcd 3.4.23 (a 1,000,000-octet header is answered, 1,100,000 gets 431).
 */
export const MAX_HEADER_BYTES = (1 << 20) + 4096;

/**
 * node:http's server as etcd configures Go's http.Server: no idle, request or body timeouts (a watch's request
 * body may stay open), a header section of up to 1 MiB (node:http's default is 16 KiB), and the rules below.
 */
export function createGoHttpServer(handler: (req: HttpRequest, res: HttpResponse) => void): http.Server {
  return http
    .createServer({ keepAliveTimeout: 0, requestTimeout: 0, maxHeaderSize: MAX_HEADER_BYTES, requireHostHeader: false }, goServer(handler))
    .on('clientError', answerClientError)
    .on('checkExpectation', refuseExpectation)
    .on('connect', connectAsRequest(handler));
}

/**
 * What Go's server writes for a request it refuses before any handler (server.go's errorHeaders, then the
 * body, by default the status) before it closes the connection.
 */
const goRefusal = (status: string, body: string = status): Buffer =>
  Buffer.from(`HTTP/1.1 ${status}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n${body}`, 'latin1');
const GO_431 = goRefusal('431 Request Header Fields Too Large');
const GO_400 = goRefusal('400 Bad Request');
const GO_400_NO_HOST = goRefusal('400 Bad Request: missing required Host header');
const GO_400_MALFORMED_HOST = goRefusal('400 Bad Request: malformed Host header');
const GO_400_HEADER_NAME = goRefusal('400 Bad Request: invalid header name');
const GO_400_HEADER_VALUE = goRefusal('400 Bad Request: invalid header value');
const GO_501_TE = goRefusal('501 Not Implemented', 'Unsupported transfer encoding');
/** An Expect other than 100-continue: Go answers 417 with no body and closes. */
const GO_417 = Buffer.from('HTTP/1.1 417 Expectation Failed\r\nConnection: close\r\nContent-Length: 0\r\n\r\n', 'latin1');
/** `OPTIONS *`: Go's server answers it itself (globalOptionsHandler), before the handler and its CORS headers. */
const GO_OPTIONS_STAR = { 'Content-Length': 0 } as const;

type ParseError = NodeJS.ErrnoException & { reason?: string; rawPacket?: Buffer; bytesParsed?: number };

/**
 * Go's refusal for what node:http's parser refused, by llhttp's reason where Go names one. A bad octet in a
 * header name is Go's "invalid header name" when its line has a colon; a line without one Go cannot read as a
 * header at all (a plain 400).
 */
function refusalFor(err: ParseError): Buffer {
  if (err.code === 'HPE_HEADER_OVERFLOW') return GO_431;
  if (err.reason === 'Invalid header token') return lineAt(err).includes(0x3a) ? GO_400_HEADER_NAME : GO_400;
  if (err.reason === 'Invalid header value char') return GO_400_HEADER_VALUE;
  return GO_400;
}

/** The line of the parser's input it stopped in (what of it is in the chunk it was given). */
function lineAt(err: ParseError): Buffer {
  const raw = err.rawPacket;
  const at = err.bytesParsed;
  if (raw === undefined || at === undefined) return Buffer.alloc(0);
  const start = raw.lastIndexOf(0x0a, at - 1) + 1;
  const end = raw.indexOf(0x0a, at);
  return raw.subarray(start, end < 0 ? raw.length : end);
}

/**
 * node:http's 'clientError' (a request its parser refused, or the socket's own error): Go's answer where one
 * can still be written, and the socket dropped. node:http's default writes a bare status line and destroys the
 * socket *with* the error, whose stack Node then formats (streams' destroy reads `err.stack`): under
 * slowloris, 2000 attackers closing cost that once each (issue 32's eighth pass). A response already under way
 * on the connection (`_httpMessage`, node:http's own field, checked as its default does) is not interrupted.
 */
function answerClientError(err: ParseError, socket: Duplex): void {
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (err.code !== 'ECONNRESET' && socket.writable && inFlight?.headersSent !== true) socket.write(refusalFor(err));
  socket.destroy();
}

/** node:http's 'checkExpectation' (an Expect other than 100-continue): Go's 417, and the connection closed. */
function refuseExpectation(req: http.IncomingMessage): void {
  refuse(req, GO_417);
}

/** Go's httpguts.ValidHostHeader: a Host holds only these octets (an empty one is valid). */
const VALID_HOST = /^[0-9A-Za-z!$%&'()*+,\-.:;=[\]_~]*$/;

/** Every value of the Host header as sent (node:http keeps only the first in `headers`). */
function hostValues(req: http.IncomingMessage): string[] {
  const out: string[] = [];
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === 4 && raw[i]!.toLowerCase() === 'host') out.push(raw[i + 1]!);
  return out;
}

function refuse(req: http.IncomingMessage, bytes: Buffer): void {
  const socket = req.socket;
  socket.end(bytes, () => socket.destroy());
}

/**
 * The request listener for node:http: Go's server's own checks and answers in Go's order (the transfer coding
 * is read with the request, the Host header checked after), then `handler`.
 */
function goServer(handler: (req: HttpRequest, res: HttpResponse) => void): http.RequestListener {
  return (req, res) => {
    // Go reads a chunked body or none: any other transfer coding is refused (node:http would pass
    // `gzip, chunked` on as chunked, the body still compressed).
    const te = req.headers['transfer-encoding'];
    if (te !== undefined && (Array.isArray(te) || te.toLowerCase() !== 'chunked')) return refuse(req, GO_501_TE);
    const hosts = hostValues(req);
    if (hosts.length === 0 && req.httpVersionMajor === 1 && req.httpVersionMinor >= 1 && req.method !== 'CONNECT') return refuse(req, GO_400_NO_HOST);
    if (hosts.length > 1) return refuse(req, GO_400);
    if (hosts.length === 1 && !VALID_HOST.test(hosts[0]!)) return refuse(req, GO_400_MALFORMED_HOST);
    const target = req.url ?? '/';
    if (target === '*' && req.method === 'OPTIONS') {
      res.writeHead(200, GO_OPTIONS_STAR);
      res.end();
      return;
    }
    // The absolute form (`GET http://host/health`): Go's handlers, etcd's mux among them, read its path.
    const scheme = /^https?:\/\/[^/?#]*/i.exec(target);
    if (scheme !== null) req.url = target.slice(scheme[0].length);
    handler(req, res);
  };
}

/**
 * node:http's 'connect' (a CONNECT request, which node:http hands over with its socket and no response):
 * Go serves CONNECT as any other request, so it goes to the handler — etcd's mux answers its authority-form
 * target `404 page not found` — and the connection is closed after the answer (Go would read the next request;
 * node:http has let go of the socket).
 */
function connectAsRequest(handler: (req: HttpRequest, res: HttpResponse) => void): (req: http.IncomingMessage, socket: Duplex) => void {
  return (req, socket) => {
    const res = new http.ServerResponse(req);
    res.shouldKeepAlive = false;
    if (!(socket instanceof net.Socket)) {
      socket.destroy();
      return;
    }
    res.assignSocket(socket);
    res.on('finish', () => socket.end());
    handler(req, res);
  };
}
