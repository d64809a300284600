/**
 * The gRPC door: etcd's gRPC server (grpc-go) on our own HTTP/2 layer (src/http/h2). Each HTTP/2 stream of
 * a client connection is checked as grpc-go checks a request before a method runs, its gRPC framing read,
 * and handed to the method's handler as a UnaryCall, ServerStreamCall or BidiCall (call.ts); the handlers'
 * answers go out as grpc-go writes them. One object per call (GrpcStream) beside the H2Stream record.
 *
 * Answered here (texts observed on etcd 3.4.23, docs/observed-etcd-3.4.23.md, "Wire errors"):
 * - a path that is no method: `12 unknown service S` / `12 unknown method M for service S`, and
 *   `malformed method name: "<path>"` for a path without a second slash (code 8 in 3.4's grpc-go, 12 in
 *   the grpc-go of etcd 3.5+);
 * - a grpc-encoding other than identity: `12 grpc: Decompressor is not installed for grpc-encoding "gzip"`
 *   (etcd registers no decompressor);
 * - a non-gRPC content-type or a malformed grpc-timeout: RST_STREAM PROTOCOL_ERROR in 3.4's grpc-go; the
 *   grpc-go of etcd 3.5+ answers instead (its early abort): HTTP 415 with
 *   `3 invalid gRPC request content-type "<type>"`, or HTTP 400 with `13 malformed grpc-timeout: <error>`.
 *   Over TLS a non-gRPC request goes to etcd's HTTP handler instead (AcceptOptions.http);
 * - a request whose HEADERS frame ends the stream (no DATA at all): grpc-go's reader waits for a DATA frame
 *   that cannot come, so etcd never answers; with a deadline it answers `4 context deadline exceeded` then;
 * - a unary or server-streaming request whose deadline passes before its message is read whole:
 *   `4 context deadline exceeded`, the handler not run (the handlers see the deadline: ServerCall.deadline);
 * - a message over the receive limit: `8 grpc: received message larger than max (N vs. M)`, as soon as
 *   its 5-byte prefix arrives;
 * - a message with the compressed flag (no encoding can be set here):
 *   `13 grpc: compressed flag set with identity or empty encoding`; any other flag byte:
 *   `13 grpc: received unexpected payload format N`;
 * - the request side ending without a message: `2 EOF` for unary and server-streaming methods; with a
 *   partial prefix or message `2 unexpected EOF` (unary) or `13 unexpected EOF` (streams).
 * As in grpc-go, a unary or server-streaming call reads one message, runs the handler once it is whole
 * (after the rest of the socket read that brought it is parsed: a reset in that read drops the call before
 * its handler, H2Stream.afterRead), and never looks at what follows it; a call that succeeds ends with an empty `grpc-message`; the
 * response's content-type mirrors the request's; and a call answered while the client's side is still open
 * is followed by RST_STREAM NO_ERROR (the HTTP/2 layer does that, RFC 9113 §8.1).
 *
 * On a bidirectional stream a refusal goes through the handler (BidiCall.onRefused), so that it ends the
 * call as the handler ends it — in trailers after responses already sent, with its watchers released.
 */
import type { Duplex } from 'node:stream';
import { TLSSocket, type PeerCertificate } from 'node:tls';
import { Http2ServerConnection, type PingPolicy, ErrorCode, EncodedHeaders, HpackEncoder, headerValue, type H2Stream } from '../h2/index.js';
import { afterHostTime, hostNextTurn, hostNow } from '../sim/index.js';
import { handOver } from '../mvcc/index.js';
import type { BidiCall, GrpcMethod, ServerStreamCall, UnaryCall } from './call.js';

export interface GrpcDoorOptions {
  /** Every method served, by path (`/etcdserverpb.KV/Range`). */
  readonly methods: ReadonlyMap<string, GrpcMethod>;
  /** The services those methods belong to (`etcdserverpb.KV`). */
  readonly services: ReadonlySet<string>;
  /** The receive limit (etcd: --max-request-bytes + 512 KiB). */
  readonly maxReceiveBytes: number;
  /** The code of `malformed method name`: 8 in etcd 3.4.23's grpc-go (1.33), 12 in etcd 3.5+'s (1.59 and later). */
  readonly malformedMethodCode: number;
  /** A bad content-type or grpc-timeout is answered with HTTP 415 / 400 and a status (grpc-go of etcd 3.5+), not reset. */
  readonly headerErrorsAnswered: boolean;
  /**
   * How often a client may ping, in ms (etcd's --grpc-keepalive-min-time, 5 s; at 0 or below etcd leaves
   * grpc-go's own 5 minutes): grpc-go's transport ends a connection that pings more often (PingPolicy).
   */
  readonly keepAliveMinTimeMs: number;
  /** etcd's --max-concurrent-streams: streams one client connection may have open (default: no limit). */
  readonly maxConcurrentStreams?: number | undefined;
}

/** grpc-go's defaultKeepalivePolicyMinTime: its ping spacing when etcd sets none (--grpc-keepalive-min-time <= 0). */
const GRPC_GO_DEFAULT_KEEPALIVE_MIN_TIME_MS = 5 * 60 * 1000;

/** How a connection came to the door. */
export interface AcceptOptions {
  /** Bytes already read from the socket (to tell HTTP/2 from HTTP/1.1), processed first. */
  readonly head?: Buffer | undefined;
  /** Serves a request that is not gRPC (etcd's TLS listener hands those to its HTTP handler). Unset: grpc-go refuses it. */
  readonly http?: ((stream: H2Stream, socket: Duplex) => void) | undefined;
  /**
   * The connection came over TLS. etcd then serves gRPC through Go's net/http HTTP/2 server (beside its
   * HTTP handler), which answers every PING: grpc-go's keepalive enforcement holds on plain connections
   * only (observed, 3.4.23).
   */
  readonly secure?: boolean | undefined;
  /** The client's HTTP/2 preface and SETTINGS arrived (the port's handshake deadline ends). */
  readonly onHandshake?: (() => void) | undefined;
}

export interface GrpcDoor {
  /** Serves gRPC on an HTTP/2 connection (the client preface is still to come, or in `head`). */
  accept(socket: Duplex, opts?: AcceptOptions): void;
  /** Drops every connection as etcd does when it stops: the sockets close, no GOAWAY, no trailers. */
  dropConnections(): void;
  /** Ends the calls that etcd would keep waiting (HEADERS-only requests) — their sockets are going. */
  forgetHeld(): void;
  /** HTTP/2 streams open on the door's connections (requests not yet answered, or still being answered). */
  readonly openStreams: number;
}

/** The connection a call came on: its socket, and the client certificate once read. */
interface Link {
  readonly socket: Duplex;
  cert: PeerCertificate | null | undefined;
}

const EMPTY = Buffer.alloc(0);

/** The response headers of a call answered OK, by the request's content-type (encoded once). */
const okHeaders = new Map<string, EncodedHeaders>();
/** Trailers `grpc-status: 0` with an empty `grpc-message`, as grpc-go writes them (grpc-js writes `OK`). */
const OK_TRAILERS = HpackEncoder.constant(['grpc-status', '0', 'grpc-message', '']);

function okHeadersFor(contentType: string): EncodedHeaders {
  let h = okHeaders.get(contentType);
  if (h === undefined) {
    // grpc-go sends no `date` header.
    h = HpackEncoder.constant([':status', '200', 'content-type', contentType]);
    if (okHeaders.size < 16) okHeaders.set(contentType, h);
  }
  return h;
}

/** Creates the door; the client port hands it the HTTP/2 connections (src/http/port.ts). */
export function createGrpcDoor(opts: GrpcDoorOptions): GrpcDoor {
  const connections = new Set<Http2ServerConnection>();
  const held = new Set<{ cancel(): void }>();
  const pingPolicy: PingPolicy = {
    minTimeMs: opts.keepAliveMinTimeMs > 0 ? opts.keepAliveMinTimeMs : GRPC_GO_DEFAULT_KEEPALIVE_MIN_TIME_MS,
    permitWithoutStream: false, // etcd's setting
    now: hostNow,
  };

  const onStream = (st: H2Stream, link: Link, http: AcceptOptions['http']): void => {
    const contentType = headerValue(st.headers, 'content-type');
    if (contentType === undefined || !contentType.startsWith('application/grpc')) {
      if (http !== undefined) return http(st, link.socket);
      // grpc-go (and etcd's cmux in front of it) resets a non-gRPC request: RST_STREAM PROTOCOL_ERROR; later
      // grpc-go answers it.
      if (opts.headerErrorsAnswered) abortEarly(st, 415, 3, `invalid gRPC request content-type ${goQuote(contentType ?? '')}`);
      else st.reset(ErrorCode.PROTOCOL_ERROR);
      return;
    }
    const path = st.path;
    const method = opts.methods.get(path);
    if (method === undefined) return unknownPath(st, path, opts);
    const encoding = headerValue(st.headers, 'grpc-encoding');
    if (encoding !== undefined && encoding !== '' && encoding !== 'identity') {
      return answerNow(st, 12, `grpc: Decompressor is not installed for grpc-encoding ${goQuote(encoding)}`);
    }
    const timeout = headerValue(st.headers, 'grpc-timeout');
    let timeoutMs: number | undefined;
    if (timeout !== undefined) {
      timeoutMs = parseGrpcTimeout(timeout);
      if (timeoutMs === undefined) {
        if (opts.headerErrorsAnswered) abortEarly(st, 400, 13, `malformed grpc-timeout: ${grpcTimeoutError(timeout)}`);
        else st.reset(ErrorCode.PROTOCOL_ERROR);
        return;
      }
    }
    if (st.headersEnded) {
      // The HEADERS frame ended the request: grpc-go's reader waits for a DATA frame that cannot come.
      const timer = timeoutMs === undefined ? undefined : afterHostTime(timeoutMs, () => answerNow(st, 4, 'context deadline exceeded'));
      const h = { cancel: () => timer?.cancel() };
      held.add(h);
      st.onClose = () => {
        h.cancel();
        held.delete(h);
      };
      return;
    }
    const call = new GrpcStream(st, link, method, opts.maxReceiveBytes, responseContentType(contentType), timeoutMs);
    call.start();
  };

  return {
    accept(socket, acceptOpts) {
      const link: Link = { socket, cert: undefined };
      const http = acceptOpts?.http;
      const conn: Http2ServerConnection = new Http2ServerConnection(socket, {
        onStream: (st) => onStream(st, link, http),
        onClose: () => connections.delete(conn),
        nextTurn: hostNextTurn,
        afterMs: afterHostTime,
        // etcd's --max-concurrent-streams; unset, grpc-go's server default as etcd runs it: no limit.
        maxConcurrentStreams: opts.maxConcurrentStreams ?? 0xffffffff,
        head: acceptOpts?.head,
        onHandshake: acceptOpts?.onHandshake,
        pingPolicy: acceptOpts?.secure === true ? undefined : pingPolicy,
      });
      connections.add(conn);
    },
    dropConnections() {
      for (const c of connections) c.destroy();
    },
    forgetHeld() {
      for (const h of held) h.cancel();
      held.clear();
    },
    get openStreams() {
      let n = 0;
      for (const c of connections) n += c.streamCount;
      return n;
    },
  };
}

/**
 * One gRPC call on its HTTP/2 stream: the door's reading of its request (the 5-byte prefixes, the messages)
 * and the call its handler answers through.
 */
class GrpcStream implements UnaryCall, ServerStreamCall, BidiCall {
  onMessage: ((message: Buffer) => void) | undefined = undefined;
  onHalfClose: (() => void) | undefined = undefined;
  onRefused: ((code: number, details: string) => void) | undefined = undefined;
  onDrain: (() => void) | undefined = undefined;
  readonly deadline: number | undefined;
  /** The request message of a unary or server-streaming call. */
  message: Buffer = EMPTY;

  // The framing scan: bytes of the prefix seen, its flag and length, the message bytes still to come and those so far.
  private headerGot = 0;
  private flag = 0;
  private length = 0;
  private remaining = 0;
  private parts: Buffer[] = [];
  /** The request is no longer read (refused, or the one message of a unary / server-streaming call is in). */
  private done = false;
  /** The call is answered (its status sent or being sent): cancel listeners no longer run. */
  private answered = false;
  private responded = false;
  private cancelListeners: Array<() => void> | undefined = undefined;
  private deadlineTimer: { cancel(): void } | undefined = undefined;

  constructor(
    private readonly st: H2Stream,
    private readonly link: Link,
    private readonly method: GrpcMethod,
    private readonly max: number,
    private readonly contentType: string,
    private readonly timeoutMs: number | undefined,
  ) {
    this.deadline = timeoutMs === undefined ? undefined : hostNow() + timeoutMs;
  }

  start(): void {
    const st = this.st;
    st.onData = this.onData;
    st.onEnd = this.onEnd;
    st.onClose = this.onClose;
    st.onDrain = this.drained;
    if (this.method.kind === 'bidi') {
      // grpc-go runs a stream handler as soon as the stream opens; it reads the messages as they come.
      this.method.serve(this);
    } else if (this.timeoutMs !== undefined) {
      this.deadlineTimer = afterHostTime(this.timeoutMs, () => {
        if (!this.done) this.refuse(4, 'context deadline exceeded');
      });
    }
  }

  header(name: string): string | undefined {
    return headerValue(this.st.headers, name);
  }

  peerCertificate(): PeerCertificate | undefined {
    const link = this.link;
    if (link.cert === undefined) {
      const s = link.socket;
      const cert = s instanceof TLSSocket && s.authorized ? s.getPeerCertificate() : undefined;
      link.cert = cert === undefined || cert.raw === undefined ? null : cert;
    }
    return link.cert ?? undefined;
  }

  busy(): () => void {
    return this.st.busy();
  }

  onCancel(listener: () => void): () => void {
    (this.cancelListeners ??= []).push(listener);
    return () => {
      const ls = this.cancelListeners;
      const i = ls === undefined ? -1 : ls.indexOf(listener);
      if (i >= 0) ls!.splice(i, 1);
    };
  }

  private readonly onData = (chunk: Buffer): void => {
    if (this.done) return;
    const n = chunk.length;
    let i = 0;
    while (i < n) {
      if (this.remaining > 0) {
        const take = Math.min(this.remaining, n - i);
        this.parts.push(take === n && i === 0 ? chunk : chunk.subarray(i, i + take));
        i += take;
        this.remaining -= take;
        if (this.remaining === 0 && !this.complete()) return;
        continue;
      }
      const b = chunk[i++]!;
      if (this.headerGot === 0) {
        this.flag = b;
        this.length = 0;
      } else {
        this.length = this.length * 256 + b;
      }
      if (++this.headerGot < 5) continue;
      this.headerGot = 0;
      if (this.length > this.max) {
        this.refuse(8, `grpc: received message larger than max (${this.length} vs. ${this.max})`);
        return;
      }
      this.remaining = this.length;
      if (this.remaining === 0 && !this.complete()) return;
    }
  };

  private readonly onEnd = (): void => {
    if (this.done) return;
    const partial = this.headerGot > 0 || this.remaining > 0;
    if (this.method.kind === 'bidi') {
      if (partial) this.refuse(13, 'unexpected EOF');
      // A client that cancels may end its side just before the reset (grpc-js does, in one write): the
      // half-close counts only if the stream is still open a turn later.
      else hostNextTurn(() => this.st.isClosed || this.answered || this.onHalfClose?.());
      return;
    }
    if (!partial) this.refuse(2, 'EOF');
    else if (this.method.kind === 'unary') this.refuse(2, 'unexpected EOF');
    else this.refuse(13, 'unexpected EOF');
  };

  private readonly onClose = (): void => {
    this.done = true;
    this.deadlineTimer?.cancel();
    if (this.answered) return;
    this.answered = true;
    const ls = this.cancelListeners;
    if (ls !== undefined) for (const l of [...ls]) l();
  };

  private readonly drained = (): void => this.onDrain?.();

  /** A whole message is in: false when reading stops here (refused, or the one message of a unary / server-streaming call). */
  private complete(): boolean {
    const parts = this.parts;
    let msg: Buffer = EMPTY;
    if (parts.length === 1) msg = parts[0]!;
    else if (parts.length > 1) {
      // A message of several DATA frames is assembled here; when in a buffer of its own (not Node's pool), no one
      // else holds or changes it: the store may keep a large value of it as it is, not a copy (mvcc handOver).
      msg = Buffer.concat(parts);
      if (msg.byteLength === msg.buffer.byteLength) handOver(msg);
    }
    this.parts = [];
    if (this.flag === 1) {
      this.refuse(13, 'grpc: compressed flag set with identity or empty encoding');
      return false;
    }
    if (this.flag !== 0) {
      this.refuse(13, `grpc: received unexpected payload format ${this.flag}`);
      return false;
    }
    const m = this.method;
    if (m.kind === 'bidi') {
      this.onMessage?.(msg);
      return !this.done;
    }
    // grpc-go reads one request message of a unary or server-streaming call, nothing after it. It reads it
    // with the call's context: once the deadline has passed the read fails with the context's error and the
    // handler never runs — the request is not applied (etcd 3.4.23 with grpc-timeout 1n: the most common of
    // its outcomes, a race in grpc-go; docs/observed-etcd-3.4.23.md, "Wire errors").
    this.done = true;
    this.deadlineTimer?.cancel();
    this.st.onData = undefined;
    if (this.deadlinePassed()) {
      this.refuse(4, 'context deadline exceeded');
      return false;
    }
    this.message = msg;
    // The handler starts once the rest of this read is parsed: a client that reset the call in the same
    // write (rapid reset) costs its frames, not the handler's work and answer (H2Stream.afterRead).
    this.st.afterRead(() => m.serve(this));
    return false;
  }

  /** A timeout under a millisecond always has passed by the time a message is read (grpc-go's clock resolves it; ours does not). */
  private deadlinePassed(): boolean {
    return this.timeoutMs !== undefined && (this.timeoutMs < 1 || hostNow() >= this.deadline!);
  }

  /** The door refuses the request: through the bidi handler when it asked to, else answered here. */
  private refuse(code: number, details: string): void {
    this.done = true;
    this.st.onData = undefined;
    if (this.onRefused !== undefined && !this.answered) this.onRefused(code, details);
    else if (!this.answered) {
      this.answered = true;
      answerNow(this.st, code, details);
    }
  }

  // Answers.

  reply(frame: Buffer): void {
    if (this.answered) return;
    this.answered = true;
    const st = this.st;
    if (st.isClosed) return;
    st.respond(okHeadersFor(this.contentType));
    st.write(frame);
    st.end(OK_TRAILERS);
  }

  fail(code: number, details: string): void {
    this.end(code, details);
  }

  end(code: number, details: string): void {
    if (this.answered) return;
    this.answered = true;
    this.done = true;
    const st = this.st;
    if (st.isClosed) return;
    const message = code === 0 ? '' : encodeGrpcMessage(details);
    if (!this.responded) {
      this.responded = true;
      st.respond([':status', '200', 'content-type', this.contentType, 'grpc-status', String(code), 'grpc-message', message], true);
    } else {
      st.end(code === 0 ? OK_TRAILERS : ['grpc-status', String(code), 'grpc-message', message]);
    }
  }

  send(frame: Buffer): boolean {
    const st = this.st;
    if (st.isClosed) return true;
    if (!this.responded) {
      this.responded = true;
      st.respond(okHeadersFor(this.contentType));
    }
    return st.write(frame);
  }

  get gone(): boolean {
    return this.answered || this.st.isClosed;
  }
}

/**
 * grpc-go answers with the request's content subtype (`application/grpc` to `application/grpc`,
 * `application/grpc+proto` to `application/grpc+proto`).
 */
function responseContentType(requestContentType: string): string {
  const m = /^application\/grpc\+([^;]*)/.exec(requestContentType);
  return m === null || m[1] === '' ? 'application/grpc' : `application/grpc+${m[1]}`;
}

function unknownPath(st: H2Stream, path: string, opts: GrpcDoorOptions): void {
  // grpc-go's handleStream: strip one leading '/', split at the last '/'.
  const sm = path.startsWith('/') ? path.slice(1) : path;
  const pos = sm.lastIndexOf('/');
  if (pos < 0) return answerNow(st, opts.malformedMethodCode, `malformed method name: ${goQuote(path)}`);
  const service = sm.slice(0, pos);
  const method = sm.slice(pos + 1);
  answerNow(st, 12, opts.services.has(service) ? `unknown method ${method} for service ${service}` : `unknown service ${service}`);
}

/** grpc-go's early abort (the grpc-go of etcd 3.5+): a status alone under an HTTP error status. */
function abortEarly(st: H2Stream, httpStatus: number, code: number, details: string): void {
  st.respond([':status', String(httpStatus), 'content-type', 'application/grpc', 'grpc-status', String(code), 'grpc-message', encodeGrpcMessage(details)], true);
}

/**
 * A status alone as grpc-go writes it for an error before any response (`:status 200`,
 * `content-type: application/grpc`, status and message in the one HEADERS frame that ends the stream).
 */
function answerNow(st: H2Stream, code: number, details: string): void {
  if (st.isClosed) return;
  st.respond([':status', '200', 'content-type', 'application/grpc', 'grpc-status', String(code), 'grpc-message', encodeGrpcMessage(details)], true);
}

/** grpc-go's encodeGrpcMessage: printable ASCII except '%' as is, every other byte of the UTF-8 as %XX. */
export function encodeGrpcMessage(s: string): string {
  let plain = true;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x25) {
      plain = false;
      break;
    }
  }
  if (plain) return s;
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) {
    out += b >= 0x20 && b <= 0x7e && b !== 0x25 ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** Go's %q for the ASCII strings HTTP/2 header values are: quotes, with `"` and `\` escaped and other bytes as \xNN. */
export function goQuote(s: string): string {
  let out = '"';
  for (const b of Buffer.from(s, 'latin1')) {
    if (b === 0x22 || b === 0x5c) out += `\\${String.fromCharCode(b)}`;
    else if (b === 0x09) out += '\\t';
    else if (b >= 0x20 && b < 0x7f) out += String.fromCharCode(b);
    else out += `\\x${b.toString(16).padStart(2, '0')}`;
  }
  return `${out}"`;
}

const TIMEOUT_UNIT_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000_001 };

/** Why grpc-go's decodeTimeout refuses `s` (parseGrpcTimeout returned undefined), in its words. */
export function grpcTimeoutError(s: string): string {
  if (s.length < 2) return `transport: timeout string is too short: ${goQuote(s)}`;
  if (s.length > 9) return `transport: timeout string is too long: ${goQuote(s)}`;
  if (TIMEOUT_UNIT_MS[s[s.length - 1]!] === undefined) return `transport: timeout unit is not recognized: ${goQuote(s)}`;
  return `strconv.ParseInt: parsing ${goQuote(s.slice(0, -1))}: invalid syntax`;
}

/** grpc-go's decodeTimeout: 1–8 characters of a (signed) integer, then a unit; milliseconds, or undefined when malformed. */
export function parseGrpcTimeout(s: string): number | undefined {
  if (s.length < 2 || s.length > 9) return undefined;
  const unit = TIMEOUT_UNIT_MS[s[s.length - 1]!];
  const digits = s.slice(0, -1);
  if (unit === undefined || !/^[+-]?\d+$/.test(digits)) return undefined;
  return Number(digits) * unit;
}
