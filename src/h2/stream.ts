/**
 * One server-side HTTP/2 stream (RFC 9113 §5.1): a request's headers, its DATA as callbacks, and the
 * response sent through the connection's flow control. A plain record with callback slots the server sets
 * when the connection hands it the stream (ConnectionOptions.onStream): no EventEmitter, no Node stream
 * object per request — what node:http2 spends most of its per-call CPU on.
 */
import type { Http2ServerConnection } from './connection.js';
import type { OutgoingHeaders } from './hpack.js';

/** A server stream: the request side arrives through the callbacks, the response goes out through the methods. */
export class H2Stream {
  /**
   * Each DATA payload of the request, as it arrives (padding removed; never empty). The buffer is a view
   * of what the socket read and is never reused, so it may be kept. Its bytes count as consumed once this
   * returns: the connection gives the flow-control window back (WINDOW_UPDATE) as they add up. Unset: the
   * request body is dropped.
   */
  onData: ((chunk: Buffer) => void) | undefined = undefined;
  /** The request side ended (END_STREAM, possibly on trailers): no more onData. */
  onEnd: (() => void) | undefined = undefined;
  /**
   * The stream closed, once, with the error code: NO_ERROR after a complete exchange, the peer's
   * RST_STREAM code, the code of our own reset(), or — when the whole connection went — the GOAWAY code we
   * sent, or CANCEL when the socket just closed.
   */
  onClose: ((code: number) => void) | undefined = undefined;
  /** After a write() returned false: the queued bytes went below the write quota. */
  onDrain: (() => void) | undefined = undefined;

  // Connection-owned state (flow control, queue); read-only to servers.
  /** @internal Receive window we still grant the peer on this stream, and bytes consumed since our last WINDOW_UPDATE. */
  recvWindow: number;
  /** @internal */
  recvUnacked = 0;
  /** @internal Send window the peer grants us (may go negative after a SETTINGS change, RFC 9113 §6.9.2). */
  sendWindow: number;
  /** @internal DATA waiting for window (made on first need): chunks, the first one's sent prefix, and bytes in all. */
  queue: Buffer[] | null = null;
  /** @internal */
  queueHead = 0;
  /** @internal */
  queueOffset = 0;
  /** @internal */
  queued = 0;
  /** @internal In the connection's list of streams waiting for connection window. */
  blocked = false;
  /** @internal A write() returned false and onDrain is owed. */
  needDrain = false;
  /** @internal end() was called; its trailers (undefined: an empty DATA frame with END_STREAM ends it). */
  endRequested = false;
  /** @internal */
  trailers: OutgoingHeaders | undefined = undefined;
  /** @internal The request side ended (END_STREAM received). */
  remoteEnded = false;
  /** @internal The DATA frame being delivered to onData carries END_STREAM. */
  remoteEnding = false;
  /** @internal END_STREAM sent. */
  localEnded = false;
  /** @internal */
  responded = false;
  /** @internal */
  closed = false;
  /** @internal busy() calls not yet released, and whether the stream closed with some (it counts against the stream limit). */
  working = 0;
  /** @internal */
  orphaned = false;
  /**
   * The request's HEADERS frame carried END_STREAM: a request with no body at all (gRPC tells it apart from
   * one whose body is empty: grpc-go waits for a DATA frame that cannot come).
   */
  headersEnded = false;

  constructor(
    private readonly conn: Http2ServerConnection,
    /** The stream identifier (odd: client-initiated). */
    readonly id: number,
    /** The request header list, flat: [name, value, name, value, ...], pseudo-headers first. */
    readonly headers: readonly string[],
    /** The request's :path (a gRPC method: /package.Service/Method). */
    readonly path: string,
    recvWindow: number,
    sendWindow: number,
  ) {
    this.recvWindow = recvWindow;
    this.sendWindow = sendWindow;
  }

  /** Whether the stream is closed (completed or reset): further calls do nothing. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** Whether the request side has ended. */
  get requestEnded(): boolean {
    return this.remoteEnded;
  }

  /** Response bytes written but not yet sent for want of flow-control window. */
  get writableLength(): number {
    return this.queued;
  }

  /**
   * Sends the response headers (a flat list with ':status' first, or a block encoded once). With
   * `endStream` they are the whole response (gRPC's trailers-only answer). Throws when headers were sent already.
   */
  respond(headers: OutgoingHeaders, endStream = false): void {
    this.conn.respondStream(this, headers, endStream);
  }

  /**
   * Queues `data` as DATA frames, sent as the peer's stream and connection windows allow. Returns false when
   * the queued bytes reach the connection's write quota: wait for onDrain before writing more. The buffer is
   * sent from, not copied: it must not change afterwards. Ignored (returns true) once the stream is closed.
   */
  write(data: Buffer): boolean {
    return this.conn.writeStream(this, data);
  }

  /** Ends the response after the queued data: with trailers (a HEADERS frame), or an empty DATA frame. */
  end(trailers?: OutgoingHeaders): void {
    this.conn.endStream(this, trailers);
  }

  /**
   * The server's work for this request goes on past the current turn (an answer still to come): until the
   * returned function is called the stream counts against SETTINGS_MAX_CONCURRENT_STREAMS — also once the
   * client reset it, as grpc-go counts a handler until it returns — and past 1000 such closed streams the
   * connection refuses new ones (REFUSED_STREAM). Calling the function again does nothing.
   */
  busy(): () => void {
    return this.conn.busyStream(this);
  }

  /**
   * Runs `fn` once every frame of the socket read that is being handled is parsed (at once outside a read),
   * unless the stream has closed by then. A server starts a call's work so: a client that resets the call
   * in the same write that sent it (rapid reset) costs the parse of its frames, not the work — grpc-go's
   * handler runs on its own goroutine, and finds the call's context cancelled when the reset was read first.
   * Functions run in the order given, before the read's replies go out in one write.
   */
  afterRead(fn: () => void): void {
    this.conn.afterRead(this, fn);
  }

  /** Resets the stream (RST_STREAM with `code`, default CANCEL); onClose follows with the same code. */
  reset(code = 0x8): void {
    this.conn.resetStream(this, code);
  }
}
