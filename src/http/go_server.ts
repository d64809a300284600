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
    .createServer({ keepAliveTimeout: 0, requestTimeout: 0, maxHeaderSize: MAX_HEADER_BYTES, requireHostHeader: false, ServerResponse: goResponseClass() as unknown as typeof http.ServerResponse }, goServer(handler))
    .on('clientError', answerClientError(handler))
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
 *
 * HTTP/2's preface as a later request of a kept connection (`PRI * HTTP/2.0`, then `SM`): llhttp stops there
 * (HPE_PAUSED_H2_UPGRADE), where Go reads `PRI *` as a request like any other and etcd's mux answers `*`
 * with 400 and closes; the handler answers it so, after the answer under way.
 */
function answerClientError(handler: (req: HttpRequest, res: HttpResponse) => void): (err: ParseError, socket: Duplex) => void {
  // Connections whose `PRI *` answer waits: llhttp, once failed, fails every later read of the connection
  // again. (Every other refusal destroys the socket at once, so nothing is kept for it: under slowloris each
  // of 2000 attackers' resets comes here.)
  const answering = new WeakSet<Duplex>();
  return (err, socket) => {
    if (answering.has(socket)) return;
    const inFlight = (socket as Duplex & { _httpMessage?: (http.ServerResponse & { headersSent?: boolean }) | null })._httpMessage;
    if (err.code === 'HPE_PAUSED_H2_UPGRADE' && socket instanceof net.Socket) {
      answering.add(socket);
      // node:http lets go of the socket in the answer's first 'finish' listener, its own.
      if (inFlight === undefined || inFlight === null) return answerPriStar(handler, socket);
      inFlight.once('finish', () => answerPriStar(handler, socket));
      return;
    }
    if (err.code !== 'ECONNRESET' && socket.writable && inFlight?.headersSent !== true) socket.write(refusalFor(err));
    socket.destroy();
  };
}

/** The handler's answer to Go's reading of an HTTP/2 preface: the request `PRI *` of protocol HTTP/2.0, no headers, no body. */
function answerPriStar(handler: (req: HttpRequest, res: HttpResponse) => void, socket: net.Socket): void {
  if (socket.destroyed) return;
  const req = new http.IncomingMessage(socket);
  req.method = 'PRI';
  req.url = '*';
  req.httpVersionMajor = 2;
  req.httpVersionMinor = 0;
  req.httpVersion = '2.0';
  req.push(null);
  const res = new (goResponseClass())(req);
  res.shouldKeepAlive = false;
  res.assignSocket(socket);
  res.on('finish', () => socket.end());
  handler(req, res);
}

/**
 * node:http's 'checkExpectation' (an Expect other than 100-continue): Go's 417 with no body, written as a
 * response (so with its Date), and the connection closed.
 */
function refuseExpectation(_req: http.IncomingMessage, res: http.ServerResponse): void {
  res.writeHead(417, { Connection: 'close', 'Content-Length': 0 });
  res.end();
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
      if (isGoResponse(res)) res.lengthSet = true;
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
 * target `404 page not found` — and then reads the next request of the connection, as Go does: the socket
 * goes back to node:http's server as a new connection, with the bytes read past the CONNECT's head.
 */
function connectAsRequest(handler: (req: HttpRequest, res: HttpResponse) => void): (this: http.Server, req: http.IncomingMessage, socket: Duplex, head: Buffer) => void {
  return function (this: http.Server, req, socket, head) {
    if (!(socket instanceof net.Socket)) {
      socket.destroy();
      return;
    }
    const server = this;
    const res = new (goResponseClass())(req);
    const keep = keepsAlive(req);
    res.shouldKeepAlive = keep;
    res.assignSocket(socket);
    res.on('finish', () => {
      res.detachSocket(socket);
      if (!keep) return void socket.end();
      server.emit('connection', socket);
      if (head.length > 0) socket.emit('data', head);
    });
    handler(req, res);
  };
}

/** Whether a request lets its connection stay open (Go's and node:http's rule): HTTP/1.1 unless it says close, HTTP/1.0 if it says keep-alive. */
function keepsAlive(req: http.IncomingMessage): boolean {
  const connection = String(req.headers.connection ?? '').toLowerCase();
  return req.httpVersionMajor === 1 && req.httpVersionMinor >= 1 ? !/\bclose\b/.test(connection) : /\bkeep-alive\b/.test(connection);
}

/** Go's textproto.CanonicalMIMEHeaderKey for a valid name: the first letter and each after a hyphen upper-case, the rest lower. */
const canonicalKey = (name: string): string => name.toLowerCase().replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());

/**
 * A response written as Go's server writes its header section (server.go's chunkWriter.writeHeader): the
 * status line in the request's protocol (`HTTP/1.0 200 OK` to an HTTP/1.0 request), the handler's headers
 * in canonical form sorted by name, then what the server adds itself in its own order — Date, the
 * Content-Length it computed (etcd's handlers never set one: Go counts the body), a Content-Type it sniffed,
 * `Connection: close` when it will close after a request that asked to keep alive or to close, `Connection:
 * keep-alive` only to an HTTP/1.0 request that asked for it, `Transfer-Encoding: chunked`. node:http writes
 * the handler's headers in the order set and `Connection: keep-alive` on every kept HTTP/1.1 answer.
 * node:http builds the section in _storeHeader (its own method, the one place every answer's header passes);
 * this rewrites what it built before anything is sent.
 */
export interface GoResponse extends http.ServerResponse {
  /** The handler's Content-Type is one Go would have sniffed from the body (written after Content-Length). */
  sniffed: boolean;
  /** The handler set Content-Length itself (Go's `OPTIONS *` answer), so it is sorted with the others. */
  lengthSet: boolean;
}

type GoResponseClass = new (req: http.IncomingMessage) => GoResponse;
let madeGoResponse: GoResponseClass | undefined;

/**
 * The GoResponse class, made at its first use rather than when this module loads: the etcd command's V8
 * start-up snapshot (bin/etcd_snapshot.cjs) runs this module while it is built, and node:http must stay
 * untouched until a process runs (subclassing its ServerResponse is a use).
 */
function goResponseClass(): GoResponseClass {
  madeGoResponse ??= class extends http.ServerResponse implements GoResponse {
    sniffed = false;
    lengthSet = false;

    _storeHeader(firstLine: string, headers: unknown): void {
      (http.ServerResponse.prototype as unknown as { _storeHeader(this: GoResponse, f: string, h: unknown): void })._storeHeader.call(this, firstLine, headers);
      const self = this as unknown as { _header: string | null };
      if (typeof self._header === 'string') self._header = goHeaderSection(self._header, this.req.httpVersionMajor === 1 && this.req.httpVersionMinor === 0, this.sniffed, this.lengthSet);
    }
  };
  return madeGoResponse;
}

/** Whether `res` is a GoResponse (none exists before the class is made). */
const isGoResponse = (res: unknown): res is GoResponse => madeGoResponse !== undefined && res instanceof madeGoResponse;

/** Marks a response's Content-Type as one Go sniffs (etcd's handler sets none; see GoResponse). */
export function goSniffs(res: HttpResponse): void {
  if (isGoResponse(res)) res.sniffed = true;
}

/**
 * node:http's header section rewritten in Go's order (GoResponse). node:http writes the handler's headers
 * first and its own after them, Date first among its own: what follows the Date line is node:http's.
 */
function goHeaderSection(section: string, http10: boolean, sniffed: boolean, lengthSet: boolean): string {
  const lines = section.split('\r\n');
  const status = lines[0]!;
  const fields = lines.slice(1).filter((l) => l !== '');
  const dateAt = fields.findIndex((l) => /^date:/i.test(l));
  const own = dateAt < 0 ? [] : fields.slice(dateAt);
  const handlers = (dateAt < 0 ? fields : fields.slice(0, dateAt)).map((l) => {
    const colon = l.indexOf(':');
    return [canonicalKey(l.slice(0, colon)), l.slice(colon + 1).trimStart()] as const;
  });
  const take = (key: string): string | undefined => {
    const i = handlers.findIndex(([k]) => k === key);
    return i < 0 ? undefined : handlers.splice(i, 1)[0]![1];
  };
  const length = lengthSet ? undefined : take('Content-Length');
  const type = sniffed ? take('Content-Type') : undefined;
  const out = [http10 ? status.replace(/^HTTP\/1\.1 /, 'HTTP/1.0 ') : status];
  for (const [k, v] of [...handlers].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) out.push(`${k}: ${v}`);
  const date = own.find((l) => /^date:/i.test(l));
  if (date !== undefined) out.push(date);
  if (length !== undefined) out.push(`Content-Length: ${length}`);
  if (type !== undefined) out.push(`Content-Type: ${type}`);
  for (const l of own) {
    const lower = l.toLowerCase();
    // Go says keep-alive only to HTTP/1.0, and says nothing of the close that ends an HTTP/1.0 exchange.
    if (lower === 'connection: keep-alive' && !http10) continue;
    if (lower === 'connection: close' && http10) continue;
    if (lower.startsWith('keep-alive:') || lower.startsWith('date:')) continue;
    out.push(l);
  }
  return `${out.join('\r\n')}\r\n\r\n`;
}
