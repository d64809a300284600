/**
 * One HTTP/2 request that is not gRPC, served by the HTTP handler (handler.ts), as etcd's TLS listener
 * answers it (grpcHandlerFunc sends every non-gRPC request to its HTTP mux). The handler was written for
 * node's request/response objects; this gives it the part of them it uses (HttpRequest, HttpResponse) over
 * an H2Stream of our own HTTP/2 layer, with plain listener lists instead of EventEmitters and Node streams.
 *
 * Mapping (as node:http2's compatibility objects do it, or as Go's HTTP/2 server does where the two differ):
 * - request: method = :method, url = :path, headers = the header list as an object (pseudo-headers
 *   included, as node:http2 gives them; no `host` is made up from :authority, nothing reads it). A name
 *   sent more than once gives an array, as Go's http.Header keeps every value (node:http2 joins them with
 *   ", "; the gateway forwards the first token); `cookie` crumbs are joined with "; " (RFC 9113 §8.2.3). The body arrives as 'data'
 *   events, then 'end'.
 * - response: names lower-cased (RFC 9113 §8.2.1), multi-valued headers as repeated fields, and the
 *   connection-specific HTTP/1.1 fields (Connection, Keep-Alive, Transfer-Encoding, ...) dropped, since
 *   HTTP/2 forbids them (§8.2.2) and frames the body itself. Headers go out on writeHead(); a write() or
 *   end() without one answers 200 with the headers set so far, as node does. Trailers (addTrailers) end
 *   the stream in a HEADERS frame. A HEAD request's answer has no body.
 * - backpressure: write() returns false past the stream's write quota, and 'drain' follows (onDrain).
 * - 'close' fires once when the stream closes: after a complete exchange, or when the client resets it
 *   or the connection goes.
 */
import { CONNECTION_SPECIFIC, type H2Stream } from '../h2/index.js';
import type { HttpRequest, HttpResponse } from './gateway.js';
import { hostMicrotask } from '../sim/index.js';

type HeaderValue = string | number | readonly string[];

/** Serves one non-gRPC HTTP/2 request with the HTTP handler, as etcd's TLS listener does. */
export function serveHttpOverH2(stream: H2Stream, socket: unknown, handler: (req: HttpRequest, res: HttpResponse) => void): void {
  const req = new H2Request(stream, socket);
  const res = new H2Response(stream, req.method === 'HEAD');
  stream.onData = (chunk) => req.pushData(chunk);
  stream.onEnd = () => req.pushEnd();
  stream.onDrain = () => res.emitDrain();
  stream.onClose = () => {
    req.closed();
    res.emitClose();
  };
  handler(req, res);
}

/** The request headers as node presents them: an object by lower-case name. */
function headerObject(list: readonly string[]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  for (let i = 0; i < list.length; i += 2) {
    const name = list[i]!;
    const value = list[i + 1]!;
    const had = out[name];
    if (had === undefined) out[name] = value;
    else if (name === 'cookie') out[name] = `${had as string}; ${value}`;
    else if (Array.isArray(had)) had.push(value);
    else out[name] = [had, value];
  }
  return out;
}

/**
 * The request side. Body chunks that come while no 'data' listener is attached are kept and handed to the
 * first one, and 'end' waits for it, as a paused Node stream keeps them: a handler may start reading
 * after a turn of the event loop without losing the body.
 *
 * A request reset before its body ended neither ends nor errors: the handler's body reader then never
 * calls etcd, as Go's gateway, whose body read fails, never does; the response's 'close' says the client went.
 */
class H2Request implements HttpRequest {
  readonly method: string | undefined;
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  private readonly dataListeners: Array<(chunk: Buffer) => void> = [];
  private readonly endListeners: Array<() => void> = [];
  /** Chunks waiting for a 'data' listener (null once one is attached, or once the stream closed). */
  private pending: Buffer[] | null = [];
  private ended = false;
  private endEmitted = false;

  constructor(
    stream: H2Stream,
    readonly socket: unknown,
  ) {
    const headers = headerObject(stream.headers);
    const method = headers[':method'];
    this.method = typeof method === 'string' ? method : undefined;
    this.url = stream.path;
    this.headers = headers;
  }

  on(event: 'data', listener: (chunk: Buffer) => void): this;
  on(event: 'end', listener: () => void): this;
  on(event: 'error', listener: (err: Error) => void): this;
  on(event: 'data' | 'end' | 'error', listener: ((chunk: Buffer) => void) | (() => void) | ((err: Error) => void)): this {
    if (event === 'data') {
      this.dataListeners.push(listener as (chunk: Buffer) => void);
      const kept = this.pending;
      if (kept !== null) {
        this.pending = null;
        for (const c of kept) this.emitData(c);
        // Its 'end' listener is usually attached right after: let it be.
        if (this.ended) hostMicrotask(() => this.emitEnd());
      }
    } else if (event === 'end') {
      this.endListeners.push(listener as () => void);
    }
    // 'error': the stream reports no request-side errors (see the class comment).
    return this;
  }

  /** @internal */
  pushData(chunk: Buffer): void {
    if (this.pending !== null) this.pending.push(chunk);
    else this.emitData(chunk);
  }

  /** @internal */
  pushEnd(): void {
    this.ended = true;
    if (this.pending === null) this.emitEnd();
  }

  /** @internal The stream closed: what nobody read is dropped. */
  closed(): void {
    this.pending = null;
  }

  private emitData(chunk: Buffer): void {
    for (const l of this.dataListeners.slice()) l(chunk);
  }

  private emitEnd(): void {
    if (this.endEmitted) return;
    this.endEmitted = true;
    for (const l of this.endListeners.slice()) l();
  }
}

/** The response side, written to the stream. */
class H2Response implements HttpResponse {
  /** Headers set before writeHead, by lower-case name. */
  private readonly pendingHeaders = new Map<string, HeaderValue>();
  private trailers: string[] | undefined;
  private sent = false;
  private finished = false;
  private isClosed = false;
  private drainListeners: Array<() => void> = [];
  private closeListeners: Array<() => void> = [];

  constructor(
    private readonly stream: H2Stream,
    /** A HEAD request: the answer's headers only, its body dropped (RFC 9110 §9.3.2), as node and Go do. */
    private readonly headOnly: boolean,
  ) {}

  get headersSent(): boolean {
    return this.sent;
  }

  setHeader(name: string, value: string | number | readonly string[]): this {
    if (this.sent) throw new Error('etcdsim: setHeader() after the response headers were sent');
    this.pendingHeaders.set(name.toLowerCase(), value);
    return this;
  }

  writeHead(status: number, headers?: Record<string, HeaderValue>): this {
    if (this.sent) throw new Error('etcdsim: writeHead() after the response headers were sent');
    if (headers !== undefined) for (const [name, value] of Object.entries(headers)) this.pendingHeaders.set(name.toLowerCase(), value);
    this.respond(status, false);
    return this;
  }

  write(chunk: string): boolean {
    // Past end() nothing more goes out: false, so a writer waits for a 'drain' that will not come.
    if (this.finished) return false;
    if (!this.sent) this.respond(200, false);
    if (this.headOnly) return true;
    return this.stream.write(Buffer.from(chunk, 'utf8'));
  }

  addTrailers(trailers: Record<string, string>): void {
    const list = (this.trailers ??= []);
    for (const [name, value] of Object.entries(trailers)) pushField(list, name.toLowerCase(), value);
  }

  end(chunk?: string): this {
    if (this.finished) return this;
    this.finished = true;
    const body = chunk === undefined || chunk === '' || this.headOnly ? undefined : Buffer.from(chunk, 'utf8');
    if (!this.sent) {
      // Nothing but the headers: one HEADERS frame with END_STREAM is the whole answer.
      if (body === undefined && this.trailers === undefined) {
        this.respond(200, true);
        return this;
      }
      this.respond(200, false);
    }
    if (body !== undefined) this.stream.write(body);
    this.stream.end(this.trailers);
    return this;
  }

  once(event: 'drain', listener: () => void): this {
    this.drainListeners.push(listener);
    return this;
  }

  on(event: 'close', listener: () => void): this {
    this.closeListeners.push(listener);
    return this;
  }

  off(event: 'close', listener: () => void): this {
    const i = this.closeListeners.indexOf(listener);
    if (i >= 0) this.closeListeners.splice(i, 1);
    return this;
  }

  /** @internal The stream's write quota has room again: 'drain' listeners run once each. */
  emitDrain(): void {
    const ls = this.drainListeners;
    this.drainListeners = [];
    for (const l of ls) l();
  }

  /** @internal The stream closed (completed, reset, or its connection went): 'close', once. */
  emitClose(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.finished = true;
    this.drainListeners = [];
    for (const l of this.closeListeners.slice()) l();
  }

  private respond(status: number, endStream: boolean): void {
    this.sent = true;
    const list: string[] = [':status', String(status)];
    for (const [name, value] of this.pendingHeaders) pushField(list, name, value);
    this.stream.respond(list, endStream);
  }
}

/** Appends a field to a flat header list: every value of a multi-valued one, none of a connection-specific one. */
function pushField(list: string[], name: string, value: HeaderValue): void {
  if (CONNECTION_SPECIFIC.has(name) || name.startsWith(':')) return;
  if (typeof value === 'object') for (const v of value) list.push(name, v);
  else list.push(name, String(value));
}
