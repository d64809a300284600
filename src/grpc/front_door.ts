/**
 * The front door: what etcd's gRPC server (grpc-go) answers before a request reaches a service method,
 * in front of grpc-js on the same node:http2 server. grpc-js 1.14 has no hook for these (its unknown-method
 * status, receive-size and framing checks are fixed texts or not there at all), so its 'stream' listener
 * is wrapped: each new HTTP/2 stream passes through here first, and is either answered here, as grpc-go
 * answers it, or handed to grpc-js unchanged with a scanner that follows the gRPC framing of its request
 * bytes (a few integer operations per DATA chunk; no copy, no allocation per message).
 *
 * Answered here (texts observed on etcd 3.4.23, docs/observed-etcd-3.4.23.md, "Wire errors"):
 * - a path that is no method: `12 unknown service S` / `12 unknown method M for service S`, and
 *   `malformed method name: "<path>"` for a path without a second slash (code 8 in 3.4's grpc-go, 12 in
 *   the grpc-go of etcd 3.5+);
 * - a grpc-encoding other than identity: `12 grpc: Decompressor is not installed for grpc-encoding "gzip"`
 *   (etcd registers no decompressor);
 * - a non-gRPC content-type or a malformed grpc-timeout: RST_STREAM PROTOCOL_ERROR in 3.4's grpc-go; the
 *   grpc-go of etcd 3.5+ answers instead (its earlyAbortStream): HTTP 415 with
 *   `3 invalid gRPC request content-type "<type>"`, or HTTP 400 with `13 malformed grpc-timeout: <error>`;
 * - a request whose HEADERS frame ends the stream (no DATA at all): grpc-go never wakes the reader, so
 *   etcd never answers; with a deadline it answers `4 context deadline exceeded` at the deadline;
 * - deadlines: grpc-js would answer `4 Deadline exceeded` itself when a call's grpc-timeout passes; etcd's
 *   grpc-go leaves that to the handler, so the door hands the deadline to our handlers instead
 *   (DEADLINE_METADATA) and they end the call as etcd's do; a unary or server-streaming request whose
 *   deadline has passed when its message is read: `4 context deadline exceeded`, the handler not run;
 * - a message over the receive limit: `8 grpc: received message larger than max (N vs. M)`, as soon as
 *   its 5-byte prefix arrives;
 * - a message with the compressed flag (no encoding can be set here):
 *   `13 grpc: compressed flag set with identity or empty encoding`; any other flag byte:
 *   `13 grpc: received unexpected payload format N`;
 * - the request side ending without a message: `2 EOF` for unary and server-streaming methods; with a
 *   partial prefix or message `2 unexpected EOF` (unary) or `13 unexpected EOF` (streams).
 * As in grpc-go, a unary or server-streaming call reads one message: what follows it is not looked at.
 * And as in grpc-go, a call that succeeds ends with an empty `grpc-message` (grpc-js's says `OK`).
 *
 * On a bidirectional stream the answer goes through the method's handler (claimDoorStream below), so that
 * it ends the call as the handler ends it — in trailers after responses already sent, and with the call's
 * watchers or keep-alives released.
 *
 * Unary calls the server hands the door (FrontDoorOptions.unary, the thin unary path) never reach grpc-js:
 * the door keeps their one request message and gives it to the method, which answers through a
 * DoorUnaryCall as grpc-go answers. grpc-js's call stack (interceptors, metadata objects, channelz, its own
 * decoder) was most of the CPU a unary request cost; see docs/performance.md. Server-streaming methods handed
 * over the same way (FrontDoorOptions.serverStream: Maintenance.Snapshot) stream through a
 * DoorServerStreamCall, written as the HTTP/2 stream drains.
 */
import * as http2 from 'node:http2';
import type { Socket } from 'node:net';
import type * as grpc from '@grpc/grpc-js';
import { afterHostTime, hostNow } from '../sim/index.js';
import type { ResponseSink } from '../server/index.js';

export type MethodKind = 'unary' | 'serverStream' | 'bidi';

export interface FrontDoorOptions {
  /** Every method grpc-js serves, by path (`/etcdserverpb.KV/Range`). */
  readonly methods: ReadonlyMap<string, MethodKind>;
  /** The services those methods belong to (`etcdserverpb.KV`). */
  readonly services: ReadonlySet<string>;
  /** The receive limit (etcd: --max-request-bytes + 512 KiB). */
  readonly maxReceiveBytes: number;
  /** The code of `malformed method name`: 8 in etcd 3.4.23's grpc-go (1.33), 12 in etcd 3.5+'s (1.59 and later). */
  readonly malformedMethodCode: number;
  /** A bad content-type or grpc-timeout is answered with HTTP 415 / 400 and a status (grpc-go of etcd 3.5+), not reset. */
  readonly headerErrorsAnswered: boolean;
  /**
   * Unary methods the door serves itself, without grpc-js (the thin unary path, by path): once the one
   * request message has arrived whole and passed the checks above, the handler gets it and answers
   * through the DoorUnaryCall. Methods not listed go to grpc-js.
   */
  readonly unary?: ReadonlyMap<string, (call: DoorUnaryCall) => void> | undefined;
  /**
   * Server-streaming methods the door serves itself (by path), as `unary` above: once the one request
   * message is whole, the handler gets it and streams its responses through the DoorServerStreamCall.
   * Methods not listed go to grpc-js.
   */
  readonly serverStream?: ReadonlyMap<string, (call: DoorServerStreamCall) => void> | undefined;
}

/**
 * A unary call the door serves itself: the request message, the request's headers (its metadata, lower-case
 * names as HTTP/2 carries them) and deadline, and the two ways a unary call ends in grpc-go — one response
 * message then `grpc-status: 0`, or a trailers-only status.
 */
export interface DoorUnaryCall {
  /** The request message (without its 5-byte prefix). */
  readonly message: Buffer;
  readonly headers: http2.IncomingHttpHeaders;
  /** When the call's grpc-timeout passes (host ms), or undefined for none. */
  readonly deadline: number | undefined;
  /** The HTTP/2 stream (for its session's TLS socket: the client certificate). */
  readonly stream: http2.ServerHttp2Stream;
  /** `listener` runs if the client cancels or the connection drops before the call is answered; returns an unsubscribe. */
  onCancel(listener: () => void): () => void;
  /** Answers with one message, already framed (frameMessage, or an encoder that leaves the 5 bytes free), then status 0. */
  reply(frame: Buffer): void;
  /** Answers with a status in one HEADERS frame (as grpc-go does for a handler's error before any message). */
  fail(code: number, details: string): void;
}

/**
 * A server-streaming call the door serves itself (Maintenance.Snapshot): the request as for DoorUnaryCall,
 * and its responses sent as grpc-go's server sends a stream — HEADERS (`:status 200`, the request's
 * content-type), the messages, trailers `grpc-status: 0` with an empty `grpc-message` — or a trailers-only
 * status for an error before any message.
 */
export interface DoorServerStreamCall extends Omit<DoorUnaryCall, 'reply'> {
  /**
   * Answers OK and gives the sink its responses go to (sendResponses), each written as the buffers `frames`
   * makes of it (one framed message, written in order, not copied), then status 0 at the end; undefined when
   * the call was answered already or its stream is gone. The sink takes another response only while less
   * than grpc-go's per-stream write quota (64 KiB) waits in the stream: what HTTP/2 flow control holds back
   * stays with the caller, so a client that stops reading costs at most that much here. A stream that
   * closes (the client cancelled, the connection dropped) is `gone`.
   */
  sink<R>(frames: (r: R) => readonly Buffer[]): ResponseSink<R> | undefined;
}

/** `message` with gRPC's 5-byte prefix (uncompressed, big-endian length) in front. */
export function frameMessage(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

export interface FrontDoor {
  /** Drops every connection as etcd does when it stops: the sockets close, no GOAWAY, no trailers. */
  dropConnections(): void;
  /** Ends the calls that etcd would keep waiting (HEADERS-only requests) — their sockets are going. */
  forgetHeld(): void;
}

type StreamListener = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, flags: number, rawHeaders: string[]) => void;
type AnyHttp2Server = http2.Http2Server | http2.Http2SecureServer;

const END_STREAM = 0x1;
const noop = (): void => {};

/**
 * The state of one gRPC request seen by the door; a bidirectional handler claims it (claimDoorStream) and
 * sets `fail`, through which the door's answers then end the call.
 */
export class DoorStream {
  /** Set by a bidi handler: ends the call with this status. */
  fail: ((code: number, details: string) => void) | undefined = undefined;
  private headerGot = 0;
  private flag = 0;
  private length = 0;
  private remaining = 0;
  private done = false;

  constructor(
    readonly stream: http2.ServerHttp2Stream,
    private readonly kind: MethodKind,
    private readonly max: number,
    /** The call's grpc-timeout (ms) and when it passes (host ms); undefined for none. */
    private readonly deadline: { readonly timeoutMs: number; readonly at: number } | undefined = undefined,
    /**
     * Set for a unary or server-streaming call the door serves itself (FrontDoorOptions.unary, .serverStream):
     * it gets the message instead of grpc-js.
     */
    private readonly unary: { readonly handler: (call: CallOnStream) => void; readonly headers: http2.IncomingHttpHeaders; readonly contentType: string } | undefined = undefined,
  ) {
    // The message's bytes are kept (prefix included) until it is whole; grpc-js gets none of them.
    if (unary !== undefined) this.grpcData = [];
  }

  readonly onData = (chunk: Buffer): void => {
    if (this.done) return;
    const n = chunk.length;
    let i = 0;
    while (i < n) {
      if (this.remaining > 0) {
        const take = Math.min(this.remaining, n - i);
        i += take;
        this.remaining -= take;
        if (this.remaining === 0 && !this.completeAt(chunk, i)) return;
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
        this.answer(8, `grpc: received message larger than max (${this.length} vs. ${this.max})`);
        return;
      }
      this.remaining = this.length;
      if (this.remaining === 0 && !this.completeAt(chunk, i)) return;
    }
    this.forward(chunk);
  };

  readonly onEnd = (): void => {
    if (this.done) return;
    const partial = this.headerGot > 0 || this.remaining > 0;
    if (this.kind === 'bidi') {
      if (partial) this.answer(13, 'unexpected EOF');
      return;
    }
    if (!partial) this.answer(2, 'EOF');
    else if (this.kind === 'unary') this.answer(2, 'unexpected EOF');
    else this.answer(13, 'unexpected EOF');
  };

  /**
   * Takes over grpc-js's 'data' and 'end' listeners of a unary or server-streaming call: from here on
   * grpc-js sees only what the door forwards — the bytes of the one request message, then the end of the
   * request — whatever the client sends after it.
   */
  adopt(data: ReadonlyArray<(chunk: Buffer) => void>, end: ReadonlyArray<() => void>): void {
    this.grpcData = data;
    this.grpcEnd = end;
  }

  private grpcData: ReadonlyArray<(chunk: Buffer) => void> | undefined = undefined;
  private grpcEnd: ReadonlyArray<() => void> = [];

  private forward(bytes: Buffer): void {
    if (this.grpcData === undefined || bytes.length === 0) return;
    if (this.unary !== undefined) {
      this.kept.push(bytes);
      return;
    }
    for (const l of this.grpcData) l(bytes);
  }

  /** The bytes of a door-served unary call's request so far (5-byte prefix, then the message). */
  private kept: Buffer[] = [];

  /**
   * A whole message ends at `at` in `chunk`: false when the scan stops here — the message is refused, or
   * it is the one request message of a unary or server-streaming call. grpc-go reads that one message and
   * runs the handler at once, before the request side ends, and never reads what follows it; so grpc-js is
   * handed the bytes up to here and then the end of the request, and the rest of the request's DATA is
   * still read from the stream (returning its flow-control credit) but dropped.
   */
  private completeAt(chunk: Buffer, at: number): boolean {
    if (!this.complete()) return false;
    if (this.kind === 'bidi') return true;
    if (this.unary !== undefined) {
      this.forward(chunk.subarray(0, at));
      this.grpcData = undefined;
      const kept = this.kept;
      this.kept = [];
      const bytes = kept.length === 1 ? kept[0]! : Buffer.concat(kept);
      this.unary.handler(new CallOnStream(this.stream, bytes.subarray(5), this.unary.headers, this.deadline?.at, this.unary.contentType));
      return false;
    }
    if (this.grpcData !== undefined) {
      this.forward(chunk.subarray(0, at));
      this.grpcData = undefined;
      for (const l of this.grpcEnd) l();
      // grpc-js pauses the stream per message; nothing more goes to it, so let the rest flow (and be dropped).
      this.stream.resume();
    }
    return false;
  }

  /** A whole message arrived: false when it is refused (the call is over). */
  private complete(): boolean {
    if (this.flag === 1) {
      this.answer(13, 'grpc: compressed flag set with identity or empty encoding');
      return false;
    }
    if (this.flag !== 0) {
      this.answer(13, `grpc: received unexpected payload format ${this.flag}`);
      return false;
    }
    if (this.kind !== 'bidi') {
      // grpc-go reads one request message of a unary or server-streaming call, nothing after it. It reads
      // it with the call's context: once the deadline has passed, the read fails with the context's error
      // and the handler never runs — the request is not applied (etcd 3.4.23 with grpc-timeout 1n: the
      // most common of its outcomes, a race in grpc-go; see docs/observed-etcd-3.4.23.md, "Wire errors").
      this.done = true;
      if (this.deadlinePassed()) {
        this.answer(4, 'context deadline exceeded');
        return false;
      }
    }
    return true;
  }

  /**
   * The deadline passed (a unary or server-streaming call): grpc-go's read of the request message fails
   * with the context's error as soon as it does, if the message has not arrived whole by then.
   */
  readonly onDeadline = (): void => {
    if (!this.done) this.answer(4, 'context deadline exceeded');
  };

  /**
   * Whether the deadline has passed. A timeout under a millisecond always has by the time a message is
   * read (grpc-go's clock resolves it; the host's millisecond clock here does not).
   */
  private deadlinePassed(): boolean {
    const d = this.deadline;
    return d !== undefined && (d.timeoutMs < 1 || hostNow() >= d.at);
  }

  private answer(code: number, details: string): void {
    this.done = true;
    if (this.fail !== undefined) this.fail(code, details);
    else answerNow(this.stream, code, details);
  }
}

/**
 * A door-served call on its HTTP/2 stream, answered as grpc-go answers: HEADERS (`:status 200`, the
 * request's content-type), one DATA message (unary) or many (server-streaming), trailers `grpc-status: 0`
 * with an empty `grpc-message`; or a trailers-only status. Either way followed by RST_STREAM NO_ERROR when
 * the client's side is still open.
 */
class CallOnStream implements DoorUnaryCall, DoorServerStreamCall {
  private answered = false;

  constructor(
    readonly stream: http2.ServerHttp2Stream,
    readonly message: Buffer,
    readonly headers: http2.IncomingHttpHeaders,
    readonly deadline: number | undefined,
    private readonly contentType: string,
  ) {}

  onCancel(listener: () => void): () => void {
    const onClose = (): void => {
      if (!this.answered) listener();
    };
    this.stream.once('close', onClose);
    return () => this.stream.off('close', onClose);
  }

  reply(frame: Buffer): void {
    this.respondOk()?.end(frame);
  }

  /**
   * The answer's headers, and OK trailers once its messages are written: the stream to write them to, or
   * undefined when the call was answered already or its stream is gone.
   */
  private respondOk(): http2.ServerHttp2Stream | undefined {
    if (this.answered) return undefined;
    this.answered = true;
    const stream = this.stream;
    if (stream.destroyed || stream.closed) return undefined;
    // No `date` header: grpc-go sends none (and Node's costs a string per response).
    stream.respond({ ':status': 200, 'content-type': this.contentType }, REPLY_OPTIONS);
    stream.once('wantTrailers', () => {
      stream.sendTrailers(OK_TRAILERS);
      finishStream(stream);
    });
    return stream;
  }

  sink<R>(frames: (r: R) => readonly Buffer[]): ResponseSink<R> | undefined {
    const stream = this.respondOk();
    if (stream === undefined) return undefined;
    // A cancelled or dropped stream lets its waiting writer (and the snapshot file it holds) go.
    stream.once('close', () => stream.removeAllListeners('drain'));
    return {
      write: (r) => {
        for (const f of frames(r)) stream.write(f);
        return stream.writableLength < STREAM_WRITE_QUOTA;
      },
      // node:http2 completes a write only once flow control let its bytes go to the socket, so 'drain' is the
      // client's reading.
      onDrain: (resume) => void stream.once('drain', resume),
      end: () => void stream.end(),
      get gone() {
        return stream.destroyed || stream.closed;
      },
    };
  }

  fail(code: number, details: string): void {
    if (this.answered) return;
    this.answered = true;
    const stream = this.stream;
    if (stream.destroyed || stream.closed) return;
    stream.respond(
      { ':status': 200, 'content-type': this.contentType, 'grpc-status': String(code), 'grpc-message': encodeGrpcMessage(details) },
      STATUS_OPTIONS,
    );
    finishStream(stream);
  }
}

/**
 * Options of the thin path's responses: without Node's `date` header, which grpc-go does not send (Node 20
 * reads `sendDate` here, though its type declarations leave it out).
 */
const REPLY_OPTIONS: http2.ServerStreamResponseOptions & { readonly sendDate: boolean } = { waitForTrailers: true, sendDate: false };
const STATUS_OPTIONS: http2.ServerStreamResponseOptions & { readonly sendDate: boolean } = { endStream: true, sendDate: false };

/**
 * grpc-go's per-stream write quota (defaultWriteQuota, 64 KiB): the bytes a server stream queues before
 * its Send blocks until the transport has written some.
 */
const STREAM_WRITE_QUOTA = 64 * 1024;

/** The trailers of a successful call as grpc-go writes them (its status has no message). */
const OK_TRAILERS: http2.OutgoingHttpHeaders = Object.freeze({ 'grpc-status': '0', 'grpc-message': '' });

/** After the status: RST_STREAM NO_ERROR if the client's side is still open (resetAfterStatus; skipped when it has ended). */
function finishStream(stream: http2.ServerHttp2Stream): void {
  if (!stream.readableEnded) resetAfterStatus(stream);
}

let pendingDoorStream: DoorStream | undefined;

/** The metadata entry that carries a call's deadline (epoch ms) to its handler in place of grpc-timeout. */
export const DEADLINE_METADATA = 'etcdsim-deadline-ms';

/**
 * The DoorStream of the call whose handler grpc-js is starting right now (grpc-js starts a bidi handler
 * synchronously inside the 'stream' event the door forwards), or undefined. Call it first thing in a bidi handler.
 */
export function claimDoorStream(): DoorStream | undefined {
  const d = pendingDoorStream;
  pendingDoorStream = undefined;
  return d;
}

/** The http2 servers grpc-js listens with (a private field of grpc-js 1.14's Server, checked at start-up). */
function http2ServersOf(server: grpc.Server): AnyHttp2Server[] {
  const map = (server as unknown as { http2Servers?: unknown }).http2Servers;
  if (!(map instanceof Map)) throw new Error('etcdsim: this @grpc/grpc-js has no Server.http2Servers map (front door needs grpc-js 1.14)');
  return [...(map.keys() as IterableIterator<AnyHttp2Server>)];
}

/** Installs the door on every http2 server `server` has bound (call right after bindAsync resolves). */
export function installFrontDoor(server: grpc.Server, opts: FrontDoorOptions): FrontDoor {
  // The raw sockets (an http2 session's own socket refuses destroy()); for TLS, the TCP socket under it.
  const sockets = new Set<Socket>();
  const held = new Set<{ stream: http2.ServerHttp2Stream; timer: { cancel(): void } | undefined }>();
  for (const h2 of http2ServersOf(server)) {
    const listeners = h2.listeners('stream') as StreamListener[];
    if (listeners.length !== 1) throw new Error(`etcdsim: expected grpc-js's one 'stream' listener, found ${listeners.length}`);
    const grpcListener = listeners[0]!;
    h2.removeListener('stream', grpcListener);
    h2.on('connection', (socket: Socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
    h2.on('stream', (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, flags: number, rawHeaders: string[]) => {
      const contentType = headers['content-type'];
      if (typeof contentType !== 'string' || !contentType.startsWith('application/grpc')) {
        // grpc-go (and etcd's cmux in front of it) resets a non-gRPC request: RST_STREAM PROTOCOL_ERROR; later
        // grpc-go answers it.
        if (opts.headerErrorsAnswered) abortEarly(stream, 415, 3, `invalid gRPC request content-type ${goQuote(typeof contentType === 'string' ? contentType : '')}`);
        else refuse(stream);
        return;
      }
      const path = headers[':path'] ?? '';
      const kind = opts.methods.get(path);
      if (kind === undefined) {
        unknownPath(stream, path, opts);
        return;
      }
      const encoding = headers['grpc-encoding'];
      if (encoding !== undefined && encoding !== '' && encoding !== 'identity') {
        answerNow(stream, 12, `grpc: Decompressor is not installed for grpc-encoding ${goQuote(String(encoding))}`);
        return;
      }
      // The deadline is the handlers' business, as in etcd (a grpc-go server sends no status of its own when
      // it passes; the handler ends with the context's error): grpc-js gets no grpc-timeout, so it runs no
      // deadline timer, and the handlers read the deadline from the DEADLINE_METADATA entry put in its place.
      const timeout = headers['grpc-timeout'];
      delete headers[DEADLINE_METADATA];
      let timeoutMs: number | undefined;
      let deadline: { timeoutMs: number; at: number } | undefined;
      if (timeout !== undefined) {
        timeoutMs = parseGrpcTimeout(String(timeout));
        if (timeoutMs === undefined) {
          if (opts.headerErrorsAnswered) abortEarly(stream, 400, 13, `malformed grpc-timeout: ${grpcTimeoutError(String(timeout))}`);
          else refuse(stream);
          return;
        }
        deadline = { timeoutMs, at: hostNow() + timeoutMs };
        delete headers['grpc-timeout'];
        headers[DEADLINE_METADATA] = String(deadline.at);
      }
      if ((flags & END_STREAM) !== 0) {
        // The HEADERS frame ended the request: grpc-go's reader waits for a DATA frame that cannot come.
        stream.on('error', noop);
        const h: { stream: http2.ServerHttp2Stream; timer: { cancel(): void } | undefined } = { stream, timer: undefined };
        held.add(h);
        if (timeoutMs !== undefined) h.timer = afterHostTime(timeoutMs, () => answerNow(stream, 4, 'context deadline exceeded'));
        stream.once('close', () => {
          h.timer?.cancel();
          held.delete(h);
        });
        return;
      }
      const own: ((call: CallOnStream) => void) | undefined =
        kind === 'unary' ? opts.unary?.get(path) : kind === 'serverStream' ? opts.serverStream?.get(path) : undefined;
      const door = new DoorStream(
        stream,
        kind,
        opts.maxReceiveBytes,
        deadline,
        own === undefined ? undefined : { handler: own, headers, contentType: responseContentType(contentType) },
      );
      // First in line: an answer given here closes the stream before grpc-js looks at the same chunk.
      stream.prependListener('data', door.onData);
      stream.prependListener('end', door.onEnd);
      if (kind !== 'bidi' && deadline !== undefined) {
        const timer = afterHostTime(deadline.timeoutMs, door.onDeadline);
        stream.once('close', () => timer.cancel());
      }
      if (own !== undefined) {
        // The thin path: grpc-js never sees this stream; an error after the answer is the client's going.
        // (prependListener does not start a Readable flowing as on('data') does.)
        stream.on('error', noop);
        stream.resume();
        return;
      }
      endAsGrpcGo(stream, responseContentType(contentType));
      pendingDoorStream = kind === 'bidi' ? door : undefined;
      const before = { data: new Set(stream.listeners('data')), end: new Set(stream.listeners('end')) };
      try {
        grpcListener(stream, headers, flags, rawHeaders);
      } finally {
        pendingDoorStream = undefined;
      }
      if (kind !== 'bidi') {
        // grpc-js added its own 'data' and 'end' listeners while starting the call: the door drives them.
        const data = (stream.listeners('data') as Array<(chunk: Buffer) => void>).filter((l) => !before.data.has(l));
        const end = (stream.listeners('end') as Array<() => void>).filter((l) => !before.end.has(l));
        for (const l of data) stream.removeListener('data', l);
        for (const l of end) stream.removeListener('end', l);
        door.adopt(data, end);
      }
    });
  }
  return {
    dropConnections() {
      for (const s of sockets) s.destroy();
    },
    forgetHeld() {
      for (const h of held) h.timer?.cancel();
      held.clear();
    },
  };
}

/**
 * grpc-go answers with the request's content subtype (`application/grpc` to `application/grpc`,
 * `application/grpc+proto` to `application/grpc+proto`); grpc-js always says `application/grpc+proto`.
 */
function responseContentType(requestContentType: string): string {
  const m = /^application\/grpc\+([^;]*)/.exec(requestContentType);
  return m === null || m[1] === '' ? 'application/grpc' : `application/grpc+${m[1]}`;
}

/**
 * The headers and trailers grpc-js sends on this stream, as grpc-go sends them: the response's content-type
 * mirrors the request's (responseContentType); a successful call ends with
 * `grpc-status: 0` and an empty `grpc-message` (grpc-go's status has no message; grpc-js writes `OK`), and
 * a call whose client has not ended its side by then is reset with RST_STREAM NO_ERROR after them, so the
 * client's request side closes too (grpc-go's finishStream; e.g. a unary call answered after its one
 * message while the client keeps the stream open).
 */
function endAsGrpcGo(stream: http2.ServerHttp2Stream, contentType: string): void {
  const send = stream.sendTrailers;
  stream.sendTrailers = function (this: http2.ServerHttp2Stream, trailers: http2.OutgoingHttpHeaders): void {
    if (Number(trailers['grpc-status']) === 0) trailers['grpc-message'] = '';
    send.call(this, trailers);
    resetAfterStatus(this);
  };
  // The response's HEADERS (and a trailers-only answer, which ends the call the same way).
  const respond = stream.respond;
  stream.respond = function (this: http2.ServerHttp2Stream, headers?: http2.OutgoingHttpHeaders, options?: http2.ServerStreamResponseOptions): void {
    const status = headers?.['grpc-status'];
    if (status !== undefined && Number(status) === 0) headers!['grpc-message'] = '';
    if (headers !== undefined && headers['content-type'] !== undefined) headers['content-type'] = contentType;
    respond.call(this, headers, options);
    if (options?.endStream === true) resetAfterStatus(this);
  };
}

/** RST_STREAM NO_ERROR once the status is out, when the client's side is still open (grpc-go's finishStream). */
function resetAfterStatus(stream: http2.ServerHttp2Stream): void {
  // On the next turn: an RST_STREAM submitted together with the status may go first and drop it.
  setImmediate(() => {
    if (!stream.readableEnded && !stream.closed) stream.close(http2.constants.NGHTTP2_NO_ERROR);
  });
}

function unknownPath(stream: http2.ServerHttp2Stream, path: string, opts: FrontDoorOptions): void {
  // grpc-go's handleStream: strip one leading '/', split at the last '/'.
  const sm = path.startsWith('/') ? path.slice(1) : path;
  const pos = sm.lastIndexOf('/');
  if (pos < 0) {
    answerNow(stream, opts.malformedMethodCode, `malformed method name: ${goQuote(path)}`);
    return;
  }
  const service = sm.slice(0, pos);
  const method = sm.slice(pos + 1);
  answerNow(stream, 12, opts.services.has(service) ? `unknown method ${method} for service ${service}` : `unknown service ${service}`);
}

function refuse(stream: http2.ServerHttp2Stream): void {
  stream.on('error', noop);
  stream.close(http2.constants.NGHTTP2_PROTOCOL_ERROR);
}

/**
 * grpc-go's earlyAbortStream (the grpc-go of etcd 3.5+): a trailers-only answer with an HTTP error status,
 * then RST_STREAM NO_ERROR for a request side still open.
 */
function abortEarly(stream: http2.ServerHttp2Stream, httpStatus: number, code: number, details: string): void {
  stream.on('error', noop);
  if (stream.destroyed || stream.closed) return;
  stream.respond({ ':status': httpStatus, 'content-type': 'application/grpc', 'grpc-status': String(code), 'grpc-message': encodeGrpcMessage(details) }, { endStream: true });
  stream.close(http2.constants.NGHTTP2_NO_ERROR);
}

/**
 * A trailers-only answer as grpc-go writes it (`:status 200`, `content-type: application/grpc`, status and
 * message in the one HEADERS frame that ends the stream), then RST_STREAM NO_ERROR for a request side still
 * open. Closing the stream here also makes grpc-js, if it holds the stream, drop it (its calls check
 * `stream.closed` before every step).
 */
export function answerNow(stream: http2.ServerHttp2Stream, code: number, details: string): void {
  stream.on('error', noop);
  if (stream.destroyed || stream.closed) return;
  if (!stream.headersSent) {
    stream.respond(
      { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(code), 'grpc-message': encodeGrpcMessage(details) },
      { endStream: true },
    );
  }
  stream.close(http2.constants.NGHTTP2_NO_ERROR);
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
  for (const b of Buffer.from(s, 'utf8')) {
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
