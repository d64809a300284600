/**
 * etcd's gRPC gateway: the v3 API as JSON over HTTP/1.1 under `/v3/` (and `/v3beta/` in 3.4 and 3.5, which
 * etcd rewrites to `/v3/`), as etcd 3.4.23 answers it (docs: README, "HTTP on the client port"). Every route is
 * a POST whose body is the request message in JSON (json.ts) and goes through the member's message-form
 * services — the same calls the gRPC front door makes — so there is one engine and one path.
 *
 * What the gateway adds, as observed on 3.4.23:
 * - a unary answer: 200, `Content-Type: application/json`, `Grpc-Metadata-Content-Type: application/grpc`;
 * - a call's error: the HTTP status grpc-gateway maps its code to (HTTPStatusFromCode), the body
 *   `{"error":M,"message":M,"code":N}`, chunked, with the trailer `Grpc-Trailer-Content-Type` (over TLS
 *   other headers: see overTls; 3.5 and 3.6+ write their gateway's error bodies: see errorBody);
 * - a body that is not JSON: 400 with code 3 and Go's decoder text (500 with code 2 for a stream's first
 *   message), without the trailer;
 * - streams (Watch, LeaseKeepAlive, Snapshot): every response a line `{"result":...}`, chunked; a watch
 *   stays open after the request body ends (etcd's Watch handler runs until the client goes), a
 *   keep-alive stream ends with it;
 * - a known path with another method: 405 `Method Not Allowed`; an unknown path under /v3/: 404 `Not Found`.
 * Auth: the token comes from the `Authorization` header (or `Grpc-Metadata-Token`), as the gateway
 * forwards them; a client certificate's CN is never used for a gateway request, as in etcd.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import {
  grpcError,
  isPromiseLike,
  sendResponses,
  toGrpcError,
  type Awaitable,
  type CallContext,
  type GrpcError,
  type MemberView,
  type StreamHold,
  serverCompat,
} from '../server/index.js';
import { routeAt, type BidiCall, type Route } from './gateway_routes.js';
import { GrpcCode, type EtcdVersion } from '../etcd/index.js';
import { gatewayBodyLimit, readBody } from './request_body.js';
import { goString, JsonRequestError, messageFromJson, messageToJson, readJsonValue, type JsonValue } from './json.js';

/** What the handler uses of a request: node:http's IncomingMessage and node:http2's compatibility request both have it. */
export interface HttpRequest {
  /** The connection (a TLSSocket, with `encrypted`, over TLS). */
  readonly socket: unknown;
  readonly method?: string | undefined;
  readonly url?: string | undefined;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  on(event: 'data', listener: (chunk: Buffer) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
}

/** What the handler uses of a response (node:http's ServerResponse, node:http2's Http2ServerResponse). */
export interface HttpResponse {
  readonly headersSent: boolean;
  setHeader(name: string, value: string | number): unknown;
  writeHead(status: number, headers?: Record<string, string | number | string[]>): unknown;
  write(chunk: string): boolean;
  addTrailers(trailers: Record<string, string>): void;
  end(): unknown;
  end(chunk: string): unknown;
  once(event: 'drain', listener: () => void): unknown;
  on(event: 'close', listener: () => void): unknown;
  off(event: 'close', listener: () => void): unknown;
}

// Both servers' objects fit.
type Fits<T, U extends T> = U;
export type _Fit = [Fits<HttpRequest, IncomingMessage>, Fits<HttpRequest, Http2ServerRequest>, Fits<HttpResponse, ServerResponse>, Fits<HttpResponse, Http2ServerResponse>];

/** grpc-gateway's HTTPStatusFromCode. */
export function httpStatusFromCode(code: number): number {
  return [200, 408, 500, 400, 504, 404, 409, 403, 429, 412, 409, 400, 501, 500, 503, 500, 401][code] ?? 500;
}

/**
 * The error body of the release's gateway: 3.4 (observed) writes grpc-gateway v1's errorBody struct in Go's
 * field order; 3.5's grpc-gateway 1.16 its internal Error message in proto field order; 3.6+ (grpc-gateway
 * v2, protojson without unpopulated fields) the google.rpc.Status (protojson's varying spaces aside).
 */
function errorBody(v: EtcdVersion, code: number, message: string): string {
  const m = goString(message);
  if (v === '3.4') return `{"error":${m},"message":${m},"code":${code}}`;
  if (v === '3.5') return `{"error":${m},"code":${code},"message":${m}}`;
  return `{"code":${code},"message":${m}}`;
}

/** The gateway's handle on one member. */
export interface Gateway {
  /** Answers `path` (already under /v3/, the prefix removed); false when no route has it (caller: 404). */
  handle(path: string, req: HttpRequest, res: HttpResponse): boolean;
  /** Breaks every open stream (the server is stopping; its sockets are going). */
  closeStreams(): void;
}

/**
 * `maxConcurrentStreams` (etcd's --max-concurrent-streams): etcd's gateway reaches the member over one gRPC
 * connection, so all gateway calls together may have that many streams open; one more waits until a call
 * ends (a watch never does by itself: with the limit reached by watches, a range waits until its client
 * gives up, as in etcd).
 */
export function createGateway(member: () => MemberView, maxBodyBytes = gatewayBodyLimit(1.5 * 1024 * 1024), maxConcurrentStreams?: number): Gateway {
  const open = new Set<BidiCall>();
  const slots = new StreamSlots(maxConcurrentStreams ?? Infinity);
  return {
    handle(path, req, res) {
      const s = member();
      const route = routeAt(path);
      if (route === undefined || (route.since === '3.5' && s.etcdVersion === '3.4')) return false;
      if (req.method !== 'POST') {
        plainError(res, 405, 'Method Not Allowed');
        return true;
      }
      const ctx = gatewayContext(req);
      const sock = req.socket as { encrypted?: unknown } | null;
      if (sock?.encrypted === true) overTls.add(res);
      slots.run(res, () => {
        if (route.bidi !== undefined) serveBidi(s, route, ctx, req, res, open);
        else
          void readBody(req, maxBodyBytes).then((body) => {
            // The rest of a body not read whole is left unread: the connection closes after the answer, as etcd's does.
            if ('text' in body) {
              if (!body.whole) res.setHeader('Connection', 'close');
              return serveUnary(s, route, ctx, body.text, res, open);
            }
            res.setHeader('Connection', 'close');
            const max = maxBodyBytes / 4;
            callError(res, s.etcdVersion, grpcError(GrpcCode.RESOURCE_EXHAUSTED, `grpc: received message larger than max (${body.over} vs. ${max})`));
          });
      });
      return true;
    },
    closeStreams() {
      for (const c of [...open]) c.cancel();
    },
  };
}

/** The streams of the gateway's one connection to the member: a call holds one until its response closes. */
class StreamSlots {
  private open = 0;
  private readonly waiting: Array<{ res: HttpResponse; run: () => void; gone: () => void }> = [];
  constructor(private readonly limit: number) {}

  run(res: HttpResponse, call: () => void): void {
    if (this.open < this.limit) {
      this.start(res, call);
      return;
    }
    const w = { res, run: call, gone: (): void => void this.waiting.splice(this.waiting.indexOf(w), 1) };
    res.on('close', w.gone);
    this.waiting.push(w);
  }

  private start(res: HttpResponse, call: () => void): void {
    this.open++;
    res.on('close', () => {
      this.open--;
      const next = this.waiting.shift();
      if (next === undefined) return;
      next.res.off('close', next.gone);
      this.start(next.res, next.run);
    });
    call();
  }
}

/** The caller of a gateway request: the token the gateway forwards as metadata. */
function gatewayContext(req: HttpRequest): CallContext {
  const h = req.headers['grpc-metadata-token'] ?? req.headers['authorization'];
  const token = Array.isArray(h) ? h[0] : h;
  return token === undefined ? {} : { token };
}

/**
 * Runs `run` once etcd's simple-token check would let the call through: a token naming a raft index not
 * applied yet holds the call until it is (EtcdServer.tokenWaitIndex) — the gateway's gRPC call has no
 * deadline, so only the client going away ends the wait, as in etcd.
 */
function afterTokenWait(s: MemberView, ctx: CallContext, res: HttpResponse, run: () => void): void {
  const index = s.tokenWaitIndex(ctx);
  if (index === undefined) {
    run();
    return;
  }
  const cancel = (): void => wait?.cancel();
  let wait: { cancel(): void } | undefined;
  wait = s.appliedWait.wait(index, () => {
    res.off('close', cancel);
    run();
  });
  res.on('close', cancel);
}

function serveUnary(s: MemberView, route: Route, ctx: CallContext, body: string, res: HttpResponse, open: Set<BidiCall>): void {
  let msg: Record<string, unknown> = {};
  const read = readJsonValue(body, 0);
  try {
    if ('error' in read) throw new JsonRequestError(read.error);
    // An empty body is an empty request (the decoder's EOF is ignored); a cut one is Go's unexpected EOF.
    if ('incomplete' in read) {
      if (body.trim() !== '') throw new JsonRequestError('unexpected EOF');
    } else {
      msg = messageFromJson(route.requestType, read.value);
    }
  } catch (err) {
    if (!(err instanceof JsonRequestError)) throw err;
    jsonError(res, 400, errorBody(s.etcdVersion, GrpcCode.INVALID_ARGUMENT, err.message), false);
    return;
  }
  // The gateway reads the body before it calls etcd; the token check happens in the call.
  afterTokenWait(s, ctx, res, () => callUnary(s, route, ctx, msg, res, open));
}

/** Calls a non-bidirectional route's method with its request and writes the answer. */
function callUnary(s: MemberView, route: Route, ctx: CallContext, msg: Record<string, unknown>, res: HttpResponse, open: Set<BidiCall>): void {
  if (route.serverStream !== undefined) {
    let rs: Awaitable<Iterable<unknown | StreamHold>>;
    try {
      rs = route.serverStream(s, msg as never, ctx);
    } catch (err) {
      callError(res, s.etcdVersion, toGrpcError(err));
      return;
    }
    // Relayed as etcd's gateway relays its gRPC stream: each response once the socket took the one before.
    const send = (all: Iterable<unknown | StreamHold>): void => {
      startStream(res);
      let gone = false;
      res.on('close', () => (gone = true));
      sendResponses(all, {
        write: (r) => res.write(`{"result":${messageToJson(route.responseType, r)}}\n`),
        onDrain: (resume) => void res.once('drain', resume),
        end: () => void res.end(),
        get gone() {
          return gone;
        },
      });
    };
    // A cluster member answers once Raft let it (src/server/member_view.ts).
    if (isPromiseLike(rs)) rs.then(send, (err: unknown) => callError(res, s.etcdVersion, toGrpcError(err)));
    else send(rs);
    return;
  }
  if (route.streamCall !== undefined) {
    serveStreamCall(s, route, msg, ctx, res, open);
    return;
  }
  if (route.waits !== undefined) {
    // The wait ends early when the client goes away, as the gateway cancels its gRPC call then.
    const gone = new AbortController();
    const onClose = (): void => gone.abort(grpcError(GrpcCode.CANCELLED, 'context canceled'));
    res.on('close', onClose);
    let waiting: Promise<unknown>;
    try {
      waiting = route.waits(s, msg as never, { ...ctx, signal: gone.signal });
    } catch (err) {
      callError(res, s.etcdVersion, toGrpcError(err));
      return;
    }
    waiting.then(
      (out) => {
        if (!gone.signal.aborted) answer(res, route, out);
      },
      (err: unknown) => {
        if (!gone.signal.aborted) callError(res, s.etcdVersion, toGrpcError(err));
      },
    );
    return;
  }
  let out: unknown;
  try {
    out = route.unary!(s, msg as never, ctx);
  } catch (err) {
    callError(res, s.etcdVersion, toGrpcError(err));
    return;
  }
  if (isPromiseLike(out)) {
    out.then(
      (v) => answer(res, route, v),
      (err: unknown) => callError(res, s.etcdVersion, toGrpcError(err)),
    );
    return;
  }
  answer(res, route, out);
}

/**
 * Responses to requests that came over TLS. There etcd's gateway reaches its gRPC server through the same
 * Go http.Server (grpcHandlerFunc, grpc-go's ServeHTTP transport), which gives the call's metadata the
 * CORS headers and the trailer announcements, and puts an error's status in the headers: so the answer
 * carries them as Grpc-Metadata-* headers, and an error has a length and no trailer (observed on 3.4.23).
 */
const overTls = new WeakSet<HttpResponse>();

/** The Grpc-Metadata-* headers of a call's answer (see overTls). */
function callMetadata(res: HttpResponse): Record<string, string | string[]> {
  if (!overTls.has(res)) return { 'Grpc-Metadata-Content-Type': 'application/grpc' };
  return {
    'Grpc-Metadata-Access-Control-Allow-Headers': 'accept, content-type, authorization',
    'Grpc-Metadata-Access-Control-Allow-Methods': 'POST, GET, OPTIONS, PUT, DELETE',
    'Grpc-Metadata-Access-Control-Allow-Origin': '*',
    'Grpc-Metadata-Content-Type': 'application/grpc',
    'Grpc-Metadata-Trailer': ['Grpc-Status', 'Grpc-Message', 'Grpc-Status-Details-Bin'],
  };
}

/** A unary call's answer. */
function answer(res: HttpResponse, route: Route, out: unknown): void {
  const text = messageToJson(route.responseType, out);
  res.writeHead(200, {
    'Content-Type': 'application/json',
    ...callMetadata(res),
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** A server-streaming method served by a stream call (Observe): one line per response until the call ends or the client goes. */
function serveStreamCall(s: MemberView, route: Route, msg: Record<string, unknown>, ctx: CallContext, res: HttpResponse, open: Set<BidiCall>): void {
  let call: BidiCall;
  try {
    call = route.streamCall!(s, msg as never, ctx);
  } catch (err) {
    callError(res, s.etcdVersion, toGrpcError(err));
    return;
  }
  open.add(call);
  pipeResponses(s, route, call, res, () => {
    open.delete(call);
    return false;
  });
  res.on('close', () => call.cancel());
}

/** A service's error, as the gateway writes a status it got from etcd's gRPC server. */
function callError(res: HttpResponse, v: EtcdVersion, e: GrpcError): void {
  const body = errorBody(v, e.code, e.details);
  if (overTls.has(res)) {
    res.writeHead(httpStatusFromCode(e.code), { 'Content-Type': 'application/json', ...callMetadata(res), 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
    return;
  }
  jsonError(res, httpStatusFromCode(e.code), body, true);
}

function jsonError(res: HttpResponse, status: number, body: string, withTrailer: boolean): void {
  if (withTrailer) {
    res.writeHead(status, { 'Content-Type': 'application/json', Trailer: 'Grpc-Trailer-Content-Type' });
    res.write(body);
    res.addTrailers({ 'Grpc-Trailer-Content-Type': 'application/grpc' });
    res.end();
  } else {
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  }
}

/** Go's http.Error: text/plain, nosniff, the text and a newline. */
export function plainError(res: HttpResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  const body = `${text}\n`;
  res.writeHead(status, {
    ...headers,
    'Content-Type': 'text/plain; charset=utf-8',
    'X-Content-Type-Options': 'nosniff',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

function startStream(res: HttpResponse): void {
  if (res.headersSent) return;
  res.writeHead(200, { 'Content-Type': 'application/json', ...callMetadata(res) });
}

/**
 * Writes a stream call's responses as `{"result":...}` lines as the call delivers them, and ends the
 * response when the call ends. The call stops being read while the socket's buffer is full (it pauses,
 * as over gRPC).
 */
function pipeResponses(s: MemberView, route: Route, call: BidiCall, res: HttpResponse, ended: () => boolean): void {
  let done = false;
  const resume = (): void => call.resume();
  res.on('close', () => (done = true));
  call.onResponse((rs) => {
    startStream(res);
    let more = true;
    for (const r of rs) more = res.write(`{"result":${messageToJson(route.responseType, r)}}\n`);
    if (!more && !call.isPaused) {
      call.pause();
      res.once('drain', resume);
    }
  });
  call.onEnd((err) => {
    // `ended` says whether the response was already answered (a first request that could not be read).
    if (ended() || done) return;
    done = true;
    if (err !== undefined && err.code !== GrpcCode.CANCELLED && !res.headersSent) {
      callError(res, s.etcdVersion, err);
      return;
    }
    if (err !== undefined && err.code !== GrpcCode.CANCELLED) {
      // The stream's error chunk: grpc-gateway v1's StreamError (3.4, 3.5), v2's Status (3.6+).
      const v1 = serverCompat(s.etcdVersion).gatewayV1Errors;
      const http = httpStatusFromCode(err.code);
      res.write(
        v1
          ? `{"error":{"grpc_code":${err.code},"http_code":${http},"message":${goString(err.details)},"http_status":${goString(httpStatusText(http))}}}`
          : `{"error":${errorBody(s.etcdVersion, err.code, err.details)}}`,
      );
    }
    startStream(res);
    res.end();
  });
}

/**
 * A bidirectional call over HTTP/1.1: request messages are read from the body as they arrive (one JSON
 * value after another), responses written as `{"result":...}` lines as the call delivers them. The
 * response stops being read when the socket's buffer is full (the call pauses, as over gRPC), and a
 * client that goes away cancels the call.
 */
function serveBidi(s: MemberView, route: Route, ctx: CallContext, req: HttpRequest, res: HttpResponse, open: Set<BidiCall>): void {
  const call = route.bidi!(s, ctx);
  open.add(call);
  let done = false;
  let first = true;
  let text = '';
  let pos = 0;
  pipeResponses(s, route, call, res, () => {
    open.delete(call);
    const answered = done;
    done = true;
    return answered;
  });
  // The request side ended: no more requests. A watch goes on; a keep-alive call ends (see bodyEnd).
  let bodyEnded = false;
  const bodyEnd = (): void => {
    if (bodyEnded) return;
    bodyEnded = true;
    // A watch goes on (closeSend); etcd's keep-alive handler answers every request it read before it
    // returns at EOF.
    const closeSend = (call as Partial<{ closeSend(): void }>).closeSend;
    if (closeSend !== undefined) {
      closeSend.call(call);
    } else {
      call.flush();
      call.end();
    }
  };
  req.on('data', (chunk: Buffer) => {
    if (bodyEnded) return;
    text += chunk.toString('utf8');
    for (;;) {
      const read = readJsonValue(text, pos);
      if ('incomplete' in read) return;
      if ('error' in read) {
        if (first) failFirst(read.error);
        else bodyEnd();
        return;
      }
      pos = read.end;
      let msg: Record<string, unknown>;
      try {
        msg = messageFromJson(route.requestType, read.value);
      } catch (e) {
        if (first) failFirst(e instanceof Error ? e.message : String(e));
        else bodyEnd();
        return;
      }
      first = false;
      try {
        call.write(msg as never);
      } catch (err) {
        call.abort(toGrpcError(err));
        return;
      }
      if (text.length > 65536) {
        text = text.slice(pos);
        pos = 0;
      }
    }
  });
  req.on('end', () => {
    if (first && text.slice(pos).trim() !== '') {
      failFirst('unexpected EOF');
      return;
    }
    bodyEnd();
  });
  res.on('close', () => {
    if (!done) {
      done = true;
      call.cancel();
    }
  });
  // The first request could not be read: the gateway answers before any call, 500 with code 2.
  function failFirst(message: string): void {
    if (done) return;
    done = true;
    call.onResponse(undefined);
    call.cancel();
    jsonError(res, 500, errorBody(s.etcdVersion, GrpcCode.UNKNOWN, message), false);
  }
}

const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  408: 'Request Timeout',
  409: 'Conflict',
  412: 'Precondition Failed',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

function httpStatusText(status: number): string {
  return STATUS_TEXT[status] ?? '';
}

