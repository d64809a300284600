/**
 * The server side of one HTTP/2 connection (RFC 9113, with HPACK of RFC 7541) over a net.Socket, a
 * TLSSocket or any Duplex — the transport of etcdsim's gRPC door (src/grpc/door.ts), in place of node:http2.
 *
 * Design, chosen for CPU per call (a do-nothing server on it should cost a fifth of node:http2's):
 * - One object per request: the H2Stream record (with its header list, a flat [name, value, ...] array).
 *   No EventEmitter, no Node stream object, no promise per stream; the server sets callbacks on the record
 *   (onData/onEnd/onClose/onDrain) when `onStream` hands it over.
 * - Frames are parsed in place from the socket's buffers (no object per frame); request DATA goes to
 *   onData as views of the read buffer, never copied.
 * - Output is batched (FrameWriter): every frame produced while one socket read is handled — replies
 *   written synchronously by the handlers included — goes out in one socket write; frames produced
 *   elsewhere (a reply resolved later) are flushed once per tick (setImmediate).
 * - HPACK: a full decoder (clients index everything, so steady-state request headers are table hits); the
 *   encoder never indexes, so a server can encode its constant header blocks once (HpackEncoder.constant)
 *   and every connection sends them as they are.
 * - Flow control both ways. Receive: request bytes count as consumed once delivered to onData (the server
 *   bounds what it buffers, as gRPC bounds message size); a WINDOW_UPDATE gives back a stream's or the
 *   connection's window once half of it is consumed, so a large request streams through. Send: DATA
 *   goes out within min(stream window, connection window, peer's max frame size); the rest waits in the
 *   stream's queue and resumes on WINDOW_UPDATE (streams starved of connection window wait in FIFO
 *   order); write() reports false past a write quota (64 KiB by default, grpc-go's) and onDrain follows.
 *   Trailers wait behind their stream's queued DATA. DATA also waits while the output batch and the
 *   socket's buffer hold 64 KiB (a peer may grant a large window and read nothing): the write quota then
 *   pushes back on the server, as grpc-go's blocked writer does, instead of the socket buffering it. The
 *   replies the peer's own frames earn (SETTINGS ACK, PING ACK, RST_STREAM) cannot wait so, hence: past 50
 *   of them queued in the socket, reading stops until they leave (grpc-go's throttle); so it does while the
 *   socket holds 256 KiB (response HEADERS and trailers of calls a peer keeps opening without reading).
 *   Fairness: one turn of the event loop opens at most 256 streams of a connection, then its reading
 *   resumes on the next turn, after the other connections' reads.
 * - Memory held per connection, whatever the input: the unparsed rest of one socket read (reading pauses as
 *   above) plus at most one frame (SETTINGS_MAX_FRAME_SIZE), a header block being continued (maxHeaderBlock,
 *   frame headers counted), the HPACK table (SETTINGS_HEADER_TABLE_SIZE), 1024 remembered reset ids, and per
 *   open stream its queued response (what the server writes past its write quota is the server's to bound).
 * - Errors as RFC 9113 §5.4 sorts them: connection errors (GOAWAY with the code and a reason, then the
 *   socket ends; every open stream's onClose gets the code) and stream errors (RST_STREAM; the connection
 *   lives on). HPACK failures are COMPRESSION_ERROR connection errors, since the tables are out of step.
 * - Rapid reset: the server may put a call's work off until the read's frames are parsed (H2Stream.afterRead),
 *   so a reset in the same read drops it first; and a peer whose resets of unanswered streams outrun its
 *   answered ones by 1000 is cut off (GOAWAY ENHANCE_YOUR_CALM "too_many_early_resets", Go's net/http's name).
 * - Limits: SETTINGS_MAX_CONCURRENT_STREAMS (REFUSED_STREAM beyond; a stream the peer reset counts on while
 *   the server's work for it runs, H2Stream.busy, and at most 1000 such), SETTINGS_MAX_HEADER_LIST_SIZE
 *   (`:status 431`, the block still decoded so the HPACK table stays in step; the 17th such list ends the
 *   connection, ENHANCE_YOUR_CALM), a bound on a header block
 *   across CONTINUATION frames counting their frame headers too (ENHANCE_YOUR_CALM: a flood of empty
 *   CONTINUATION frames is cut off like a large block), SETTINGS_MAX_FRAME_SIZE (FRAME_SIZE_ERROR).
 * - PING is answered at once; a server may bound how often clients ping (PingPolicy, grpc-go's keepalive
 *   enforcement: too many early PINGs end the connection with ENHANCE_YOUR_CALM "too_many_pings").
 * - Simplifications, all allowed by the RFC: PRIORITY and priority fields are ignored; no server push
 *   (SETTINGS_ENABLE_PUSH is irrelevant to a server); until the peer ACKs our SETTINGS a stream receive
 *   window set below the protocol's 65535 is not enforced below 65535 (the peer may not know it yet), and
 *   nothing else depends on the ACK; frames on streams we reset recently are
 *   ignored (a bounded memory of ids); when a response ends before the request did, RST_STREAM NO_ERROR
 *   tells the client to stop sending (RFC 9113 §8.1), as grpc-go does; close() sends one GOAWAY with the
 *   last stream id seen (not the two-step shutdown) and ends the socket when the remaining streams finish.
 *
 * Size: over the 600-line budget on purpose (named in test/layout/budget.test.ts). The frame loop, both
 * directions of flow control, the stream states and the attack bounds all read and write the same private
 * fields of one connection (windows, the output batch, the open-stream table, the reset counters) on every
 * frame; split by idea into files, those fields would have to become public or travel as arguments on the
 * hot path of every call. What does stand alone is already apart: HPACK (hpack.ts), framing (frames.ts),
 * the output batch (writer.ts) and the stream record (stream.ts).
 */
import { Buffer } from 'node:buffer';
import type { Duplex } from 'node:stream';
import {
  CLIENT_PREFACE,
  DEFAULT_MAX_FRAME_SIZE,
  DEFAULT_WINDOW,
  ErrorCode,
  FRAME_HEADER_LENGTH,
  Flags,
  FrameType,
  MAX_MAX_FRAME_SIZE,
  MAX_WINDOW,
  SETTINGS_ACK,
  Setting,
  goawayFrame,
  rstStreamFrame,
  settingsFrame,
  windowUpdateFrame,
} from './frames.js';
import { EncodedHeaders, HpackDecoder, HpackEncoder, HpackError, type OutgoingHeaders } from './hpack.js';
import { H2Stream } from './stream.js';
import { FrameWriter } from './writer.js';

/** How a server uses a connection: the stream callback, and limits (each with a default). */
export interface ConnectionOptions {
  /** A request's headers arrived: a new stream. Set its callbacks here (its DATA may follow in the same read). */
  readonly onStream: (stream: H2Stream) => void;
  /** The connection is gone (socket closed), after every stream's onClose. */
  readonly onClose?: (() => void) | undefined;
  /** The client sent GOAWAY (it opens no more streams; the connection ends when the open ones finish). */
  readonly onGoaway?: ((code: number, lastStreamId: number) => void) | undefined;
  /** SETTINGS_MAX_CONCURRENT_STREAMS we announce and enforce (REFUSED_STREAM beyond it). Default 1000. */
  readonly maxConcurrentStreams?: number | undefined;
  /** Receive window of each stream (SETTINGS_INITIAL_WINDOW_SIZE). Default 1 MiB. */
  readonly initialWindowSize?: number | undefined;
  /** Receive window of the connection (raised by a WINDOW_UPDATE at the start). Default 1 MiB. */
  readonly connectionWindowSize?: number | undefined;
  /** SETTINGS_MAX_FRAME_SIZE we announce and enforce. Default 16384. */
  readonly maxFrameSize?: number | undefined;
  /** SETTINGS_HEADER_TABLE_SIZE for our HPACK decoder. Default 4096. */
  readonly headerTableSize?: number | undefined;
  /**
   * Largest header block accepted, counted as its HEADERS and CONTINUATION frames take on the wire (frame
   * headers included, so it also bounds how many frames a block may span); beyond, ENHANCE_YOUR_CALM. Default 1 MiB.
   */
  readonly maxHeaderBlockSize?: number | undefined;
  /** SETTINGS_MAX_HEADER_LIST_SIZE we announce and enforce (decoded octets + 32 per field; beyond: 431). Default 16 MiB (grpc-go's). */
  readonly maxHeaderListSize?: number | undefined;
  /** Queued response bytes per stream past which write() returns false. Default 64 KiB (grpc-go's write quota). */
  readonly writeQuota?: number | undefined;
  /** Huffman-code header literals we encode. Default false (cheaper; gRPC replies are short). */
  readonly huffman?: boolean | undefined;
  /** Bytes already read from the socket (after sniffing the protocol), processed first. */
  readonly head?: Buffer | undefined;
  /** How often the client may PING; unset: every PING is answered, however often. */
  readonly pingPolicy?: PingPolicy | undefined;
  /** The client's preface and first SETTINGS frame arrived: the handshake is over (a server's deadline on it ends). */
  readonly onHandshake?: (() => void) | undefined;
  /**
   * Runs a function on a later turn of the event loop, where replies resolved outside a read are flushed.
   * Default setImmediate; a server that must keep answering while a test fakes the timers passes one they
   * cannot replace (etcdsim's door passes src/sim's hostNextTurn; this layer imports nothing of the project).
   */
  readonly nextTurn?: ((fn: () => void) => void) | undefined;
  /**
   * Runs a function after `ms` milliseconds of host time: a connection cut off by a connection error lingers
   * so, not reading, before its socket is dropped. Default setTimeout (unref'd); etcdsim's door passes
   * src/sim's afterHostTime, out of fake timers' reach.
   */
  readonly afterMs?: ((ms: number, fn: () => void) => { cancel(): void }) | undefined;
}

/**
 * A server's keepalive enforcement, as grpc-go's transport applies its EnforcementPolicy: a client PING is
 * early when the previous one came less than `minTimeMs` before it — or less than two hours before it while
 * no stream is open, unless `permitWithoutStream`. A response HEADERS or DATA frame sent since the previous
 * PING forgives the early ones so far (a client may ping to estimate bandwidth while it receives). The third
 * early PING in a row is answered, then the connection ends: GOAWAY ENHANCE_YOUR_CALM "too_many_pings".
 */
export interface PingPolicy {
  readonly minTimeMs: number;
  readonly permitWithoutStream: boolean;
  /** The time in milliseconds, to space PINGs by. */
  readonly now: () => number;
}

/** grpc-go's maxPingStrikes: early PINGs tolerated before the next one ends the connection. */
const MAX_PING_STRIKES = 2;
/** grpc-go's defaultPingTimeout: with no stream open (and not permitted), PINGs closer than this are early. */
const IDLE_PING_MIN_MS = 2 * 60 * 60 * 1000;

/** A connection error (RFC 9113 §5.4.1): GOAWAY with `code`, then the connection closes. */
class ConnectionError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Control replies queued in the socket past which the connection stops reading the peer's frames — grpc-go's
 * maxQueuedTransportResponseFrames: a peer that sends PINGs, SETTINGS or frames that earn an RST_STREAM and
 * never reads the answers is throttled instead of growing our write buffer.
 */
const MAX_QUEUED_CONTROL = 50;

/**
 * Control replies a read gathers before they go out while the socket takes all we write: past
 * MAX_QUEUED_CONTROL they are written at once only when the socket already holds output (the throttle above
 * must then see them queued), else once they fill this many octets. Each socket write costs Node a request
 * object and its callbacks; a SETTINGS flood written 50 ACKs at a time filled the young generation with
 * them (the attack bench's growth) before the peer's unread replies stopped the reading.
 */
const CONTROL_BATCH_BYTES = 16 * 1024;

/** Output (batch and socket buffer) past which DATA waits in its stream's queue, under the write quota. */
const OUTPUT_LIMIT = 64 * 1024;

/**
 * Output past which the connection stops reading the peer's frames until the socket drains. DATA stops at
 * OUTPUT_LIMIT, so only what cannot wait in a stream piles up here: response HEADERS and trailers of the
 * calls the peer's own frames keep opening, which a peer that reads nothing would otherwise grow without end.
 */
const OUTPUT_PAUSE = 256 * 1024;

/**
 * How long a connection ended by a connection error waits for the peer to read the GOAWAY and close, reading
 * nothing meanwhile, before the socket is dropped — grpc-go waits up to a second so (issue 5358: a socket
 * closed with unread input sends TCP RST, and the peer may lose the GOAWAY before it).
 */
const GOAWAY_LINGER_MS = 1000;

/** How many ids of streams we reset are remembered, so frames the peer had in flight on them are ignored. */
const RESET_MEMORY = 1024;

/**
 * Closed streams whose server work still runs (H2Stream.busy) past which new streams are refused, whatever
 * SETTINGS_MAX_CONCURRENT_STREAMS says: a peer that resets each call at once (rapid reset, CVE-2023-44487)
 * would otherwise start work without end while its open streams stay at zero.
 */
const MAX_ORPHANS = 1000;

/**
 * New streams one turn of the event loop handles on a connection; then reading waits for the next turn, so
 * that a peer whose every read opens hundreds of calls (rapid reset) does not hold the loop while the
 * other connections' requests wait (their reads come between the turns).
 */
const STREAMS_PER_TURN = 256;

/**
 * Header lists over SETTINGS_MAX_HEADER_LIST_SIZE one connection may send (each answered 431); the next ends
 * it with ENHANCE_YOUR_CALM. RFC 9113 §10.5.1 lets a server close the connection rather than decode such a
 * block: a client that keeps sending them is an HPACK bomb (a few KB of references decoding to 48 MB each),
 * whose every block costs a full decode to keep the table in step.
 */
const MAX_OVERSIZED_LISTS = 16;

/**
 * Client resets of streams not yet answered (no response HEADERS sent), net of the streams answered, past
 * which the connection ends with ENHANCE_YOUR_CALM "too_many_early_resets" — the name and the bound of Go's
 * net/http (x/net 0.17.0 and later: 4 × its 250 concurrent streams queued handlers of reset streams). A
 * client that cancels a call now and then, or whose calls time out while others are answered, never comes
 * near it; one that opens calls only to reset them (rapid reset, CVE-2023-44487) does within a millisecond.
 */
const MAX_EARLY_RESETS = 1000;

/** Connection-specific header fields an HTTP/2 message must not carry (RFC 9113 §8.2.2). */
export const CONNECTION_SPECIFIC: ReadonlySet<string> = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);

/**
 * Regular header names already found valid (clients send the same few on every call): a set lookup instead
 * of a scan per name. Bounded, so odd names cannot grow it without end.
 */
const allowedNames = new Set<string>();
const ALLOWED_NAMES_MEMORY = 1024;

/**
 * Checks a request header list (RFC 9113 §8.2, §8.3.1): lower-case names, pseudo-headers first, known,
 * once each, :method, :scheme and a non-empty :path present, no connection-specific fields, `te` only
 * "trailers". Returns the :path, or undefined when the request is malformed.
 */
function requestPath(h: readonly string[]): string | undefined {
  let path: string | undefined;
  let method = false;
  let scheme = false;
  let authority = false;
  let regular = false;
  for (let i = 0; i < h.length; i += 2) {
    const name = h[i]!;
    if (name.charCodeAt(0) === 0x3a /* : */) {
      if (regular) return undefined;
      switch (name) {
        case ':path':
          if (path !== undefined || h[i + 1] === '') return undefined;
          path = h[i + 1]!;
          break;
        case ':method':
          if (method) return undefined;
          method = true;
          break;
        case ':scheme':
          if (scheme) return undefined;
          scheme = true;
          break;
        case ':authority':
          if (authority) return undefined;
          authority = true;
          break;
        default:
          return undefined;
      }
      continue;
    }
    regular = true;
    if (name === 'te') {
      if (h[i + 1] !== 'trailers') return undefined;
    } else if (!allowedNames.has(name)) {
      if (name === '' || /[A-Z]/.test(name) || CONNECTION_SPECIFIC.has(name)) return undefined;
      if (allowedNames.size < ALLOWED_NAMES_MEMORY) allowedNames.add(name);
    }
  }
  return method && scheme ? path : undefined;
}

/** Whether a trailer list is free of pseudo-headers and upper-case names (RFC 9113 §8.1). */
function validTrailers(h: readonly string[]): boolean {
  for (let i = 0; i < h.length; i += 2) {
    const name = h[i]!;
    if (name.charCodeAt(0) === 0x3a || /[A-Z]/.test(name)) return false;
  }
  return true;
}

/** One server-side HTTP/2 connection; see the top of this file for the design. */
export class Http2ServerConnection {
  private readonly socket: Duplex;
  private readonly writer: FrameWriter;
  private readonly decoder: HpackDecoder;
  private readonly encoder: HpackEncoder;
  private readonly onStream: (stream: H2Stream) => void;
  private readonly nextTurn: (fn: () => void) => void;
  private readonly afterMs: (ms: number, fn: () => void) => { cancel(): void };
  private readonly onCloseCb: (() => void) | undefined;
  private readonly onGoawayCb: ((code: number, lastStreamId: number) => void) | undefined;
  private readonly maxConcurrent: number;
  private readonly streamWindow: number;
  private readonly connWindow: number;
  private readonly maxFrame: number;
  private readonly maxHeaderBlock: number;
  private readonly maxHeaderList: number;
  private readonly writeQuota: number;
  private readonly pingPolicy: PingPolicy | undefined;
  private readonly onHandshakeCb: (() => void) | undefined;

  /**
   * Whether our SETTINGS (and connection WINDOW_UPDATE) went out: once the client's preface is whole (RFC 9113
   * §3.4 asks only that it be the first frame we send). A connection that never completes its preface —
   * 2000 of them, half a preface each, in the attack bench — costs no write, as etcd's cmux hands grpc-go a
   * connection only once its first bytes match.
   */
  private prefaceSent = false;
  private readonly headerTableSize: number;
  /** Unparsed input, and how much of the client preface has been checked. */
  private buf: Buffer = EMPTY;
  private prefaceSeen = 0;
  private settingsSeen = false;
  private readonly streams = new Map<number, H2Stream>();
  /** The highest stream id the client opened (or tried to). */
  private lastStreamId = 0;
  private readonly resetIds = new Set<number>();
  /**
   * The same ids in the order remembered, a ring, so the oldest is forgotten in constant time (taking a
   * Set's first entry walks past every entry deleted before it: a flood of resets made that quadratic).
   * Made on first need: most connections never reset a stream.
   */
  private resetRing: Uint32Array | null = null;
  private resetNext = 0;
  /** Streams opened since the turn began (STREAMS_PER_TURN). */
  private openedThisTurn = 0;
  /** Header lists refused for their size so far (MAX_OVERSIZED_LISTS). */
  private oversizedLists = 0;
  /** Closed streams whose server work still runs (H2Stream.busy): they count against the stream limit. */
  private orphans = 0;
  /** Client resets of unanswered streams, less the streams answered since (MAX_EARLY_RESETS). */
  private earlyResets = 0;
  /**
   * Work the server put off until the frames of the read being handled are parsed (H2Stream.afterRead): the
   * streams and their functions, run in that order unless the stream closed meanwhile.
   */
  private laterStreams: H2Stream[] = [];
  private laterWork: Array<() => void> = [];

  /**
   * A header block being continued: its stream id (0: none), HEADERS flags, its fragments copied into one
   * buffer (a view per fragment would keep each frame's read buffer and an object alive), the octets in it,
   * and the octets its frames took on the wire, frame headers included — what maxHeaderBlock bounds.
   */
  private contId = 0;
  private contFlags = 0;
  private contBlock: Buffer = EMPTY;
  private contBytes = 0;
  private contWire = 0;

  /** Receive: window left on the connection, and bytes consumed since our last connection WINDOW_UPDATE. */
  private recvWindow: number;
  private recvUnacked = 0;
  /** Until the peer ACKs our SETTINGS, what it may still send per stream beyond a window we set below the default. */
  private recvSlack: number;
  /** Send: the connection window the peer grants, its initial stream window and max frame size. */
  private sendWindow = DEFAULT_WINDOW;
  private peerInitialWindow = DEFAULT_WINDOW;
  private peerMaxFrame = DEFAULT_MAX_FRAME_SIZE;
  /**
   * Streams with queued DATA waiting for connection window or a socket drain, in arrival order. A stream
   * leaves it when it closes: a peer that resets streams while not reading would otherwise keep every
   * closed one here until the socket drains (the rapid-reset growth of issue 32).
   */
  private readonly blocked = new Set<H2Stream>();

  private inRead = false;
  private flushScheduled = false;
  /**
   * Control replies (SETTINGS ACK, PING ACK, RST_STREAM) in the batch being built, and those written to the
   * socket but still in its buffer (the peer is not reading them); the epoch voids the count of writes the
   * socket took at once. Past MAX_QUEUED_CONTROL reading pauses (readPaused) until they leave.
   */
  private controlBatch = 0;
  private controlQueued = 0;
  private controlEpoch = 0;
  private readPaused = false;
  /** GOAWAY sent (graceful close or connection error): no new streams; its code, for onClose of the rest. */
  private goawaySent = false;
  private goawayCode: number = ErrorCode.NO_ERROR;
  private goawayReceived = false;
  /** The socket is done with (ended after a connection error, or closed). */
  private dead = false;
  /** Under a ping policy: when the last PING came, early PINGs since, and whether HEADERS or DATA went out since. */
  private lastPingAt = -Infinity;
  private pingStrikes = 0;
  private wroteSincePing = false;

  constructor(socket: Duplex, options: ConnectionOptions) {
    this.socket = socket;
    this.writer = new FrameWriter(socket);
    this.onStream = options.onStream;
    this.nextTurn = options.nextTurn ?? setImmediate;
    this.afterMs = options.afterMs ?? hostTimeout;
    this.onCloseCb = options.onClose;
    this.onGoawayCb = options.onGoaway;
    this.maxConcurrent = options.maxConcurrentStreams ?? 1000;
    this.streamWindow = options.initialWindowSize ?? 1 << 20;
    this.connWindow = options.connectionWindowSize ?? 1 << 20;
    this.maxFrame = options.maxFrameSize ?? DEFAULT_MAX_FRAME_SIZE;
    this.maxHeaderBlock = options.maxHeaderBlockSize ?? 1 << 20;
    this.maxHeaderList = options.maxHeaderListSize ?? 16 << 20;
    this.writeQuota = options.writeQuota ?? 64 * 1024;
    this.pingPolicy = options.pingPolicy;
    this.onHandshakeCb = options.onHandshake;
    if (this.streamWindow > MAX_WINDOW || this.connWindow > MAX_WINDOW || this.connWindow < DEFAULT_WINDOW) throw new RangeError('window size out of range');
    if (this.maxFrame < DEFAULT_MAX_FRAME_SIZE || this.maxFrame > MAX_MAX_FRAME_SIZE) throw new RangeError('maxFrameSize out of range');
    const tableSize = options.headerTableSize ?? 4096;
    this.decoder = new HpackDecoder(tableSize);
    this.encoder = new HpackEncoder(options.huffman ?? false);
    this.recvWindow = this.connWindow;
    this.recvSlack = Math.max(0, DEFAULT_WINDOW - this.streamWindow);

    this.headerTableSize = tableSize;

    const s = socket as Duplex & { setNoDelay?: (noDelay: boolean) => unknown };
    if (typeof s.setNoDelay === 'function') s.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onRead(chunk));
    socket.on('error', () => {}); // 'close' follows
    socket.on('close', () => this.onSocketClose());
    socket.on('drain', () => {
      if (this.dead) return;
      if (this.blocked.size > 0) this.pumpBlocked();
      if (this.readPaused && !this.replyBacklog()) this.resumeReading();
    });
    if (options.head !== undefined && options.head.length > 0) this.onRead(options.head);
    else this.flush();
  }

  /** Streams open now (request or response side not finished). */
  get streamCount(): number {
    return this.streams.size;
  }

  /**
   * Octets this connection holds on the peer's account: unparsed input, a header block being continued,
   * the output batch, the socket's write buffer and the streams' queued DATA (see the top of this file for
   * what bounds each).
   */
  get heldBytes(): number {
    let n = this.buf.length + this.contBlock.length + this.writer.pendingBytes + this.socket.writableLength;
    for (const st of this.streams.values()) n += st.queued;
    return n;
  }

  /**
   * Graceful close: GOAWAY NO_ERROR naming the last stream seen; streams already open finish, new ones are
   * ignored, and the socket ends when none remain.
   */
  close(): void {
    if (this.dead || this.goawaySent) return;
    this.goawaySent = true;
    this.sendPreface();
    this.writer.raw(goawayFrame(this.lastStreamId, ErrorCode.NO_ERROR));
    this.writer.flush();
    if (this.streams.size === 0) this.endSocket();
  }

  /** Closes at once: GOAWAY with `code`, every stream closed with it, the socket ended. */
  fail(code: number, reason = ''): void {
    this.connectionError(new ConnectionError(code, reason));
  }

  /** Drops the socket without a word (streams close with CANCEL). */
  destroy(): void {
    this.socket.destroy();
  }

  // -------------------------------------------------------------------------------------------------
  // Input.

  private onRead(chunk: Buffer): void {
    if (this.dead) return;
    // What follows the frame the unparsed rest began, when this read completes it (see completes()).
    let after: Buffer = EMPTY;
    if (this.buf.length === 0) this.buf = chunk;
    else if (chunk.length > 0) {
      const need = this.readPaused ? -1 : this.completes(chunk);
      if (need < 0) this.buf = Buffer.concat([this.buf, chunk]);
      else {
        this.buf = Buffer.concat([this.buf, chunk.subarray(0, need)]);
        after = chunk.subarray(need);
      }
    }
    if (this.readPaused) return;
    this.inRead = true;
    try {
      this.parse();
      if (after.length > 0 && !this.dead) {
        // The completed frame is parsed; the rest of the read is parsed in place, or kept if reading paused.
        this.buf = this.buf.length === 0 ? after : Buffer.concat([this.buf, after]);
        if (!this.readPaused) this.parse();
      }
      if (this.laterWork.length > 0) this.runLater();
    } catch (e) {
      this.inRead = false;
      this.laterStreams = [];
      this.laterWork = [];
      if (e instanceof ConnectionError) this.connectionError(e);
      else if (e instanceof HpackError) this.connectionError(new ConnectionError(ErrorCode.COMPRESSION_ERROR, e.message));
      else {
        // A callback of the server threw: its bug, but the peer learns no more than INTERNAL_ERROR.
        this.connectionError(new ConnectionError(ErrorCode.INTERNAL_ERROR, 'internal error'));
        throw e;
      }
      return;
    }
    this.inRead = false;
    if (this.dead) return;
    this.flush();
    if (!this.readPaused && this.socket.writableLength >= OUTPUT_PAUSE) this.pauseReading();
  }

  /**
   * How many octets of `chunk` complete the one frame the unparsed rest begins, or -1 when the rest holds
   * more (reading paused), the preface is not through yet, or the chunk does not complete the frame. A
   * frame cut by a socket read is then joined from its two parts alone (at most one frame copied) instead
   * of copying the whole read after it: with 16 KiB frames in 64 KiB reads nearly every read cuts one, and
   * each such copy was a 64 KiB buffer of garbage — a large request or a flood of small frames made the
   * collector run for it.
   */
  private completes(chunk: Buffer): number {
    const rest = this.buf;
    if (this.prefaceSeen < CLIENT_PREFACE.length || rest.length + chunk.length < FRAME_HEADER_LENGTH) return -1;
    const at = (i: number): number => (i < rest.length ? rest[i]! : chunk[i - rest.length]!);
    const need = FRAME_HEADER_LENGTH + ((at(0) << 16) | (at(1) << 8) | at(2)) - rest.length;
    return need > 0 && need < chunk.length ? need : -1;
  }

  private parse(): void {
    const buf = this.buf;
    let p = 0;
    if (this.prefaceSeen < CLIENT_PREFACE.length) {
      const n = Math.min(buf.length, CLIENT_PREFACE.length - this.prefaceSeen);
      if (buf.compare(CLIENT_PREFACE, this.prefaceSeen, this.prefaceSeen + n, 0, n) !== 0) {
        throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'invalid connection preface');
      }
      this.prefaceSeen += n;
      p = n;
      if (this.prefaceSeen === CLIENT_PREFACE.length) this.sendPreface();
    }
    while (buf.length - p >= FRAME_HEADER_LENGTH) {
      const len = (buf[p]! << 16) | (buf[p + 1]! << 8) | buf[p + 2]!;
      if (len > this.maxFrame) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, `frame of ${len} octets over SETTINGS_MAX_FRAME_SIZE ${this.maxFrame}`);
      if (buf.length - p < FRAME_HEADER_LENGTH + len) break;
      const start = p + FRAME_HEADER_LENGTH;
      p = start + len;
      this.onFrame(buf[start - 6]!, buf[start - 5]!, buf.readUInt32BE(start - 4) & 0x7fffffff, buf, start, p);
      if (this.dead) return;
      if (this.openedThisTurn >= STREAMS_PER_TURN) {
        this.pauseReading();
        this.nextTurn(() => {
          this.openedThisTurn = 0;
          if (this.readPaused && !this.replyBacklog()) this.resumeReading();
        });
        break;
      }
      const pending = this.writer.pendingBytes;
      if (pending >= OUTPUT_PAUSE || (this.controlBatch >= MAX_QUEUED_CONTROL && (pending >= CONTROL_BATCH_BYTES || this.socket.writableLength > 0))) {
        this.flush();
        if (this.replyBacklog()) {
          // The peer does not read our replies: read no more of its frames until they are taken.
          this.pauseReading();
          break;
        }
      }
    }
    this.buf = p === buf.length ? EMPTY : buf.subarray(p);
  }

  /**
   * The work put off by afterRead, now that the read's frames are parsed: a call the client reset in the
   * same read is dropped before it started, as grpc-go's handler finds its context cancelled.
   */
  private runLater(): void {
    const streams = this.laterStreams;
    const work = this.laterWork;
    this.laterStreams = [];
    this.laterWork = [];
    for (let i = 0; i < work.length; i++) {
      if (this.dead) return;
      if (!streams[i]!.closed) work[i]!();
    }
  }

  private sendPreface(): void {
    if (this.prefaceSent) return;
    this.prefaceSent = true;
    this.writer.raw(serverPrefaceFor(this.maxConcurrent, this.streamWindow, this.maxHeaderList, this.maxFrame, this.headerTableSize, this.connWindow));
  }

  /** Whether the peer leaves so much of our output unread that its frames wait (see MAX_QUEUED_CONTROL, OUTPUT_PAUSE). */
  private replyBacklog(): boolean {
    return this.controlQueued >= MAX_QUEUED_CONTROL || this.socket.writableLength >= OUTPUT_PAUSE;
  }

  private pauseReading(): void {
    this.readPaused = true;
    this.socket.pause();
  }

  private onFrame(type: number, flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (!this.settingsSeen) {
      // The client's preface ends with a SETTINGS frame (RFC 9113 §3.4).
      if (type !== FrameType.SETTINGS || (flags & Flags.ACK) !== 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'connection preface without SETTINGS');
      this.settingsSeen = true;
      this.onHandshakeCb?.();
    }
    if (this.contId !== 0 && type !== FrameType.CONTINUATION) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'expected CONTINUATION');
    switch (type) {
      case FrameType.DATA:
        return this.onDataFrame(flags, id, buf, start, end);
      case FrameType.HEADERS:
        return this.onHeadersFrame(flags, id, buf, start, end);
      case FrameType.CONTINUATION:
        return this.onContinuation(flags, id, buf, start, end);
      case FrameType.PRIORITY:
        if (id === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'PRIORITY on stream 0');
        if (end - start !== 5) this.streamError(id, ErrorCode.FRAME_SIZE_ERROR);
        return; // priorities are ignored (RFC 9113 §5.3.2 deprecates them)
      case FrameType.RST_STREAM: {
        if (id === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'RST_STREAM on stream 0');
        if (end - start !== 4) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'RST_STREAM length');
        if (id > this.lastStreamId) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'RST_STREAM on an idle stream');
        const st = this.streams.get(id);
        if (st === undefined) return;
        this.closeStream(st, buf.readUInt32BE(start), false);
        if (!st.responded && ++this.earlyResets > MAX_EARLY_RESETS) throw new ConnectionError(ErrorCode.ENHANCE_YOUR_CALM, 'too_many_early_resets');
        return;
      }
      case FrameType.SETTINGS:
        return this.onSettings(flags, id, buf, start, end);
      case FrameType.PUSH_PROMISE:
        throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'PUSH_PROMISE from a client');
      case FrameType.PING:
        if (id !== 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'PING on a stream');
        if (end - start !== 8) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'PING length');
        if ((flags & Flags.ACK) !== 0) return;
        this.writer.frame(FrameType.PING, Flags.ACK, 0, buf, start, end);
        this.controlBatch++;
        if (this.pingPolicy !== undefined) this.enforcePingPolicy(this.pingPolicy);
        return;
      case FrameType.GOAWAY: {
        if (id !== 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'GOAWAY on a stream');
        if (end - start < 8) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'GOAWAY length');
        this.goawayReceived = true;
        this.onGoawayCb?.(buf.readUInt32BE(start + 4), buf.readUInt32BE(start) & 0x7fffffff);
        if (this.streams.size === 0) this.endSocket();
        return;
      }
      case FrameType.WINDOW_UPDATE:
        return this.onWindowUpdate(id, buf, start, end);
      default:
        return; // unknown frame types are ignored (RFC 9113 §4.1)
    }
  }

  private onDataFrame(flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (id === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'DATA on stream 0');
    const len = end - start; // flow control counts the whole payload, padding included
    if (len > this.recvWindow) throw new ConnectionError(ErrorCode.FLOW_CONTROL_ERROR, 'connection receive window exceeded');
    this.recvWindow -= len;
    const st = this.streams.get(id);
    if (st === undefined || st.remoteEnded) {
      if (id > this.lastStreamId) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'DATA on an idle stream');
      this.consumed(len);
      if (st !== undefined) this.streamError(id, ErrorCode.STREAM_CLOSED);
      else if (!this.resetIds.has(id)) this.streamError(id, ErrorCode.STREAM_CLOSED);
      return;
    }
    if (len > st.recvWindow + this.recvSlack) {
      this.consumed(len);
      this.resetStream(st, ErrorCode.FLOW_CONTROL_ERROR);
      return;
    }
    st.recvWindow -= len;
    let s = start;
    let e = end;
    if (flags & Flags.PADDED) {
      if (len === 0) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'PADDED DATA without a pad length');
      e -= buf[s++]!;
      if (e < s) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'padding longer than the frame');
    }
    const ending = (flags & Flags.END_STREAM) !== 0;
    // A response completed from inside onData must know the request is complete too, or it would reset it.
    st.remoteEnding = ending;
    if (e > s && st.onData !== undefined) st.onData(buf.subarray(s, e));
    this.consumed(len);
    if (st.closed) return; // answered (or reset) from onData
    st.remoteEnding = false;
    if (ending) this.remoteEnd(st);
    else {
      st.recvUnacked += len;
      if (st.recvUnacked >= this.streamWindow / 2) {
        this.writer.raw(windowUpdateFrame(id, st.recvUnacked));
        st.recvWindow += st.recvUnacked;
        st.recvUnacked = 0;
      }
    }
  }

  /** `n` received octets are consumed: give the connection window back once half of it is. */
  private consumed(n: number): void {
    this.recvUnacked += n;
    if (this.recvUnacked >= this.connWindow / 2) {
      this.writer.raw(windowUpdateFrame(0, this.recvUnacked));
      this.recvWindow += this.recvUnacked;
      this.recvUnacked = 0;
      this.scheduleFlush();
    }
  }

  private onHeadersFrame(flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (id === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'HEADERS on stream 0');
    let s = start;
    let e = end;
    if (flags & Flags.PADDED) {
      if (e - s < 1) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'PADDED HEADERS without a pad length');
      e -= buf[s++]!;
      if (e < s) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'padding longer than the frame');
    }
    let selfDependent = false;
    if (flags & Flags.PRIORITY) {
      if (e - s < 5) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'HEADERS too short for its priority');
      selfDependent = (buf.readUInt32BE(s) & 0x7fffffff) === id;
      s += 5;
    }
    if (flags & Flags.END_HEADERS) this.onHeaderBlock(id, flags, selfDependent, buf, s, e);
    else {
      this.contId = id;
      this.contFlags = flags | (selfDependent ? 0x100 : 0);
      this.contBytes = 0;
      this.contWire = FRAME_HEADER_LENGTH + end - start;
      if (this.contWire > this.maxHeaderBlock) throw new ConnectionError(ErrorCode.ENHANCE_YOUR_CALM, 'header block too large');
      this.appendFragment(buf, s, e);
    }
  }

  private onContinuation(flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (this.contId === 0 || id !== this.contId) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'unexpected CONTINUATION');
    // Frame headers count: empty CONTINUATION frames carry nothing, yet each one costs the server a parse.
    this.contWire += FRAME_HEADER_LENGTH + end - start;
    if (this.contWire > this.maxHeaderBlock) throw new ConnectionError(ErrorCode.ENHANCE_YOUR_CALM, 'header block too large');
    this.appendFragment(buf, start, end);
    if (flags & Flags.END_HEADERS) {
      const block = this.contBlock;
      const f = this.contFlags;
      this.contId = 0;
      this.contBlock = EMPTY;
      this.onHeaderBlock(id, f & 0xff, (f & 0x100) !== 0, block, 0, this.contBytes);
    }
  }

  /** Copies a header block fragment after the ones so far (the buffer doubles, up to maxHeaderBlock). */
  private appendFragment(buf: Buffer, start: number, end: number): void {
    const n = end - start;
    if (n === 0) return;
    if (this.contBytes + n > this.contBlock.length) {
      const grown = Buffer.allocUnsafe(Math.min(this.maxHeaderBlock, Math.max(this.contBytes + n, 2 * this.contBlock.length, 1024)));
      this.contBlock.copy(grown, 0, 0, this.contBytes);
      this.contBlock = grown;
    }
    buf.copy(this.contBlock, this.contBytes, start, end);
    this.contBytes += n;
  }

  /** A complete header block: a new request, or trailers ending one. */
  private onHeaderBlock(id: number, flags: number, selfDependent: boolean, buf: Buffer, start: number, end: number): void {
    // Decoded whatever becomes of the stream: the dynamic table must stay in step with the client's.
    const decoded = this.decoder.decodeLimited(buf, start, end, this.maxHeaderList);
    const endStream = (flags & Flags.END_STREAM) !== 0;
    const open = this.streams.get(id);
    if (decoded === undefined) {
      // Over SETTINGS_MAX_HEADER_LIST_SIZE: refused with 431 (RFC 9113 §10.5.1) — or, for trailers, a reset.
      if (open !== undefined) return this.resetStream(open, ErrorCode.PROTOCOL_ERROR);
      if ((id & 1) === 0 || id <= this.lastStreamId) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, `HEADERS on stream ${id}`);
      this.lastStreamId = id;
      if (++this.oversizedLists > MAX_OVERSIZED_LISTS) throw new ConnectionError(ErrorCode.ENHANCE_YOUR_CALM, 'too many header lists over SETTINGS_MAX_HEADER_LIST_SIZE');
      this.writer.header(TOO_LARGE_BLOCK.length, FrameType.HEADERS, Flags.END_HEADERS | Flags.END_STREAM, id);
      this.writer.bytes(TOO_LARGE_BLOCK);
      if (!endStream) {
        this.writer.raw(rstStreamFrame(id, ErrorCode.NO_ERROR));
        this.controlBatch++;
      }
      this.remember(id);
      return;
    }
    const headers = decoded;
    if (open !== undefined) {
      // Trailers (RFC 9113 §8.1): only on an open request side, ending it, without pseudo-headers.
      if (open.remoteEnded) this.resetStream(open, ErrorCode.STREAM_CLOSED);
      else if (!endStream || !validTrailers(headers)) this.resetStream(open, ErrorCode.PROTOCOL_ERROR);
      else this.remoteEnd(open);
      return;
    }
    if ((id & 1) === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'HEADERS on a server-initiated stream id');
    if (id <= this.lastStreamId) {
      if (this.resetIds.has(id)) return; // in flight when we reset it
      // A new stream's id must exceed every earlier one (RFC 9113 §5.1.1); lower ids are closed streams.
      throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, `HEADERS on stream ${id}, not above the last stream ${this.lastStreamId}`);
    }
    this.lastStreamId = id;
    if (this.goawaySent || this.goawayReceived) {
      this.remember(id); // after our GOAWAY: ignored (RFC 9113 §6.8)
      return;
    }
    if (selfDependent) return this.streamError(id, ErrorCode.PROTOCOL_ERROR);
    // Calls the peer reset whose work still runs count as open ones (grpc-go 1.58.3's handler quota, CVE-2023-44487).
    if (this.streams.size + this.orphans >= this.maxConcurrent || this.orphans >= MAX_ORPHANS) return this.streamError(id, ErrorCode.REFUSED_STREAM);
    const path = requestPath(headers);
    if (path === undefined) return this.streamError(id, ErrorCode.PROTOCOL_ERROR);
    this.openedThisTurn++;
    const st = new H2Stream(this, id, headers, path, this.streamWindow, this.peerInitialWindow);
    this.streams.set(id, st);
    st.headersEnded = endStream;
    this.onStream(st);
    if (endStream && !st.closed) this.remoteEnd(st);
  }

  private onSettings(flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (id !== 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'SETTINGS on a stream');
    if (flags & Flags.ACK) {
      if (end !== start) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'SETTINGS ACK with a payload');
      this.recvSlack = 0; // the peer now knows our initial window
      return;
    }
    if ((end - start) % 6 !== 0) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'SETTINGS length');
    let grown = false;
    for (let i = start; i < end; i += 6) {
      const key = buf.readUInt16BE(i);
      const v = buf.readUInt32BE(i + 2);
      switch (key) {
        case Setting.HEADER_TABLE_SIZE:
          this.encoder.setPeerTableSize(v);
          break;
        case Setting.ENABLE_PUSH:
          if (v > 1) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'SETTINGS_ENABLE_PUSH not 0 or 1');
          break;
        case Setting.INITIAL_WINDOW_SIZE: {
          if (v > MAX_WINDOW) throw new ConnectionError(ErrorCode.FLOW_CONTROL_ERROR, 'SETTINGS_INITIAL_WINDOW_SIZE over 2^31-1');
          const delta = v - this.peerInitialWindow;
          if (delta === 0) break; // a SETTINGS flood repeating the value walks (and allocates) nothing
          this.peerInitialWindow = v;
          // Every stream's send window moves by the difference (RFC 9113 §6.9.2), possibly below zero.
          for (const st of this.streams.values()) {
            st.sendWindow += delta;
            if (st.sendWindow > MAX_WINDOW) throw new ConnectionError(ErrorCode.FLOW_CONTROL_ERROR, 'stream window over 2^31-1');
          }
          if (delta > 0) grown = true;
          break;
        }
        case Setting.MAX_FRAME_SIZE:
          if (v < DEFAULT_MAX_FRAME_SIZE || v > MAX_MAX_FRAME_SIZE) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'SETTINGS_MAX_FRAME_SIZE out of range');
          this.peerMaxFrame = v;
          break;
        default:
          break; // MAX_CONCURRENT_STREAMS (we push none), MAX_HEADER_LIST_SIZE (advisory), unknown ones
      }
    }
    // The ACK goes before any frame relying on the new values (RFC 9113 §6.5.3): the peer enforces its
    // old window and frame size until it sees the ACK.
    this.writer.raw(SETTINGS_ACK);
    this.controlBatch++;
    if (grown) for (const st of this.streams.values()) if (st.queued > 0) this.pump(st);
  }

  private onWindowUpdate(id: number, buf: Buffer, start: number, end: number): void {
    if (end - start !== 4) throw new ConnectionError(ErrorCode.FRAME_SIZE_ERROR, 'WINDOW_UPDATE length');
    const inc = buf.readUInt32BE(start) & 0x7fffffff;
    if (id === 0) {
      if (inc === 0) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'WINDOW_UPDATE of 0 on the connection');
      this.sendWindow += inc;
      if (this.sendWindow > MAX_WINDOW) throw new ConnectionError(ErrorCode.FLOW_CONTROL_ERROR, 'connection send window over 2^31-1');
      this.pumpBlocked();
      return;
    }
    if (id > this.lastStreamId) throw new ConnectionError(ErrorCode.PROTOCOL_ERROR, 'WINDOW_UPDATE on an idle stream');
    const st = this.streams.get(id);
    if (st === undefined) return; // closed: ignored (RFC 9113 §6.9)
    if (inc === 0) return this.resetStream(st, ErrorCode.PROTOCOL_ERROR);
    st.sendWindow += inc;
    if (st.sendWindow > MAX_WINDOW) return this.resetStream(st, ErrorCode.FLOW_CONTROL_ERROR);
    if (st.queued > 0) this.pump(st);
  }

  /** The request side of `st` ended. */
  private remoteEnd(st: H2Stream): void {
    st.remoteEnded = true;
    st.onEnd?.();
    if (st.localEnded && !st.closed) this.closeStream(st, ErrorCode.NO_ERROR, false);
  }

  // -------------------------------------------------------------------------------------------------
  // Output (called by H2Stream).

  /** @internal */
  respondStream(st: H2Stream, headers: OutgoingHeaders, endStream: boolean): void {
    if (st.closed || this.dead) return;
    if (st.responded) throw new Error(`HTTP/2 stream ${st.id}: response headers already sent`);
    st.responded = true;
    if (this.earlyResets > 0) this.earlyResets--;
    this.sendHeaders(st.id, headers, endStream);
    this.scheduleFlush();
    if (endStream) {
      st.endRequested = true;
      st.localEnded = true;
      this.responseDone(st);
    }
  }

  /** @internal */
  writeStream(st: H2Stream, data: Buffer): boolean {
    if (st.closed || this.dead) return true;
    if (!st.responded) throw new Error(`HTTP/2 stream ${st.id}: write() before respond()`);
    if (st.endRequested) throw new Error(`HTTP/2 stream ${st.id}: write() after end()`);
    const n = data.length;
    if (n === 0) return st.queued < this.writeQuota;
    if (st.queued === 0 && n <= st.sendWindow && n <= this.sendWindow && n <= this.peerMaxFrame && !this.outputFull()) {
      // Fast path: the whole write fits the windows and one frame.
      st.sendWindow -= n;
      this.sendWindow -= n;
      this.writer.frame(FrameType.DATA, 0, st.id, data);
      this.wroteSincePing = true;
      this.scheduleFlush();
      return true;
    }
    (st.queue ??= []).push(data);
    st.queued += n;
    this.pump(st);
    if (st.queued < this.writeQuota) return true;
    st.needDrain = true;
    return false;
  }

  /** @internal */
  endStream(st: H2Stream, trailers: OutgoingHeaders | undefined): void {
    if (st.closed || this.dead) return;
    if (st.endRequested) throw new Error(`HTTP/2 stream ${st.id}: end() twice`);
    if (!st.responded && trailers !== undefined) throw new Error(`HTTP/2 stream ${st.id}: trailers before respond()`);
    st.endRequested = true;
    st.trailers = trailers;
    if (!st.responded) {
      // end() without a response: a bare 200 as the whole answer would be a guess; reset instead.
      this.resetStream(st, ErrorCode.INTERNAL_ERROR);
      return;
    }
    if (st.queued === 0) this.localEnd(st);
    this.scheduleFlush();
  }

  /** @internal Counts `st` as in progress until the returned function runs (see H2Stream.busy). */
  busyStream(st: H2Stream): () => void {
    if (st.closed || this.dead) return NOOP;
    st.working++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      st.working--;
      if (st.working === 0 && st.orphaned) {
        st.orphaned = false;
        this.orphans--;
      }
    };
  }

  /** @internal Runs `fn` once the current read's frames are parsed (see H2Stream.afterRead). */
  afterRead(st: H2Stream, fn: () => void): void {
    if (st.closed || this.dead) return;
    if (!this.inRead) return fn();
    this.laterStreams.push(st);
    this.laterWork.push(fn);
  }

  /** @internal */
  resetStream(st: H2Stream, code: number): void {
    if (st.closed || this.dead) return;
    this.closeStream(st, code, true);
  }

  /** Sends the END_STREAM of `st` (its trailers, or an empty DATA frame), now that its queue is empty. */
  private localEnd(st: H2Stream): void {
    if (st.trailers !== undefined) this.sendHeaders(st.id, st.trailers, true);
    else {
      this.writer.header(0, FrameType.DATA, Flags.END_STREAM, st.id);
      this.wroteSincePing = true;
    }
    st.localEnded = true;
    this.responseDone(st);
  }

  /** The response is complete: the stream closes, and a request still open is told to stop (RST_STREAM NO_ERROR, RFC 9113 §8.1). */
  private responseDone(st: H2Stream): void {
    this.closeStream(st, ErrorCode.NO_ERROR, !st.remoteEnded && !st.remoteEnding);
  }

  /** Writes a header block on stream `id`, split into HEADERS + CONTINUATION frames beyond the peer's max frame size. */
  private sendHeaders(id: number, headers: OutgoingHeaders, endStream: boolean): void {
    this.wroteSincePing = true;
    let block = headers instanceof EncodedHeaders ? headers.bytes : this.encoder.encode(headers);
    const update = this.encoder.takeSizeUpdate();
    if (update !== undefined) block = Buffer.concat([update, block]);
    const es = endStream ? Flags.END_STREAM : 0;
    if (block.length <= this.peerMaxFrame) {
      this.writer.header(block.length, FrameType.HEADERS, Flags.END_HEADERS | es, id);
      this.writer.bytes(block);
      return;
    }
    let at = 0;
    for (let first = true; at < block.length; first = false) {
      const n = Math.min(this.peerMaxFrame, block.length - at);
      const last = at + n === block.length;
      const type = first ? FrameType.HEADERS : FrameType.CONTINUATION;
      this.writer.frame(type, (first ? es : 0) | (last ? Flags.END_HEADERS : 0), id, block, at, at + n);
      at += n;
    }
  }

  /** Counts a client PING against the ping policy; the one too many ends the connection. */
  private enforcePingPolicy(policy: PingPolicy): void {
    const now = policy.now();
    const previous = this.lastPingAt;
    this.lastPingAt = now;
    if (this.wroteSincePing) {
      this.wroteSincePing = false;
      this.pingStrikes = 0;
      return;
    }
    const minGap = this.streams.size === 0 && !policy.permitWithoutStream ? IDLE_PING_MIN_MS : policy.minTimeMs;
    if (previous + minGap > now) this.pingStrikes++;
    if (this.pingStrikes > MAX_PING_STRIKES) throw new ConnectionError(ErrorCode.ENHANCE_YOUR_CALM, 'too_many_pings');
  }

  /** Sends what the windows allow of `st`'s queue; then its end, and onDrain, when due. */
  private pump(st: H2Stream): void {
    const queue = st.queue;
    while (st.queued > 0 && queue !== null) {
      const chunk = queue[st.queueHead]!;
      const off = st.queueOffset;
      const n = Math.min(chunk.length - off, st.sendWindow, this.sendWindow, this.peerMaxFrame);
      const socketFull = this.outputFull();
      if (n <= 0 || socketFull) {
        if ((socketFull || (this.sendWindow <= 0 && st.sendWindow > 0)) && !st.blocked) {
          st.blocked = true;
          this.blocked.add(st);
        }
        break;
      }
      this.writer.frame(FrameType.DATA, 0, st.id, chunk, off, off + n);
      this.wroteSincePing = true;
      st.sendWindow -= n;
      this.sendWindow -= n;
      st.queued -= n;
      if (off + n === chunk.length) {
        queue[st.queueHead++] = EMPTY;
        st.queueOffset = 0;
      } else st.queueOffset = off + n;
    }
    if (st.queued === 0 && st.queueHead > 0) {
      st.queue = null;
      st.queueHead = 0;
    }
    this.scheduleFlush();
    if (st.queued === 0 && st.endRequested && !st.localEnded) this.localEnd(st);
    if (st.needDrain && st.queued < this.writeQuota && !st.closed) {
      st.needDrain = false;
      st.onDrain?.();
    }
  }

  /** Whether the batch and the socket's buffer hold OUTPUT_LIMIT or more: DATA waits (the socket's 'drain' resumes it). */
  private outputFull(): boolean {
    return this.writer.pendingBytes + this.socket.writableLength >= OUTPUT_LIMIT;
  }

  /**
   * The connection window grew, or the socket drained: streams waiting for either go on, first come first.
   * It stops at the first that cannot — the socket full again or the window gone, which holds for every
   * stream after it too — so a drain costs the streams it lets write, not a walk over every stream a slow
   * reader keeps waiting (a stream that blocks again goes to the end, and the next check stops there).
   */
  private pumpBlocked(): void {
    for (const st of this.blocked) {
      if (this.sendWindow <= 0 || this.outputFull()) return;
      this.blocked.delete(st);
      st.blocked = false;
      this.pump(st);
    }
  }

  // -------------------------------------------------------------------------------------------------
  // Closing.

  /** Closes `st` with `code`, sending RST_STREAM when `sendRst`; its onClose runs. */
  private closeStream(st: H2Stream, code: number, sendRst: boolean): void {
    if (st.closed) return;
    st.closed = true;
    this.streams.delete(st.id);
    if (st.working > 0 && !this.dead) {
      st.orphaned = true;
      this.orphans++;
    }
    if (st.blocked) {
      st.blocked = false;
      this.blocked.delete(st);
    }
    if (st.queued > 0) {
      st.queue = null;
      st.queued = 0;
    }
    if (sendRst && !this.dead) {
      this.writer.raw(rstStreamFrame(st.id, code));
      this.controlBatch++;
      this.remember(st.id);
      this.scheduleFlush();
    }
    st.onClose?.(code);
    if ((this.goawaySent || this.goawayReceived) && this.streams.size === 0 && !this.dead) this.endSocket();
  }

  /** A stream error on a stream without a record (refused, malformed, closed): RST_STREAM only. */
  private streamError(id: number, code: number): void {
    const st = this.streams.get(id);
    if (st !== undefined) return this.resetStream(st, code);
    this.writer.raw(rstStreamFrame(id, code));
    this.controlBatch++;
    this.remember(id);
    this.scheduleFlush();
  }

  private remember(id: number): void {
    if (this.resetIds.has(id)) return;
    const ring = (this.resetRing ??= new Uint32Array(RESET_MEMORY));
    if (this.resetIds.size === RESET_MEMORY) this.resetIds.delete(ring[this.resetNext]!);
    this.resetIds.add(id);
    ring[this.resetNext] = id;
    this.resetNext = (this.resetNext + 1) % RESET_MEMORY;
  }

  private connectionError(e: ConnectionError): void {
    if (this.dead) return;
    this.goawaySent = true;
    this.goawayCode = e.code;
    this.sendPreface();
    this.writer.raw(goawayFrame(this.lastStreamId, e.code, e.message));
    // After a connection error nothing more is read, and the socket is dropped a moment later (grpc-go's
    // reader stops, its writer closes the connection): only ending our side would leave the peer free to go
    // on writing — a flood cut off by ENHANCE_YOUR_CALM then read and thrown away for as long as it likes.
    const socket = this.socket;
    socket.pause();
    const linger = this.afterMs(GOAWAY_LINGER_MS, () => socket.destroy());
    socket.once('close', () => linger.cancel());
    this.endSocket();
  }

  /** Flushes what is pending and ends the socket; every stream left closes with the GOAWAY code (or CANCEL). */
  private endSocket(): void {
    if (this.dead) return;
    this.writer.flush();
    this.dead = true;
    this.socket.end();
    this.closeAll(this.goawaySent ? this.goawayCode : ErrorCode.CANCEL);
  }

  private closeAll(code: number): void {
    for (const st of [...this.streams.values()]) this.closeStream(st, code, false);
  }

  private onSocketClose(): void {
    if (!this.dead) {
      this.dead = true;
      this.writer.discard();
      this.closeAll(this.goawaySent ? this.goawayCode : ErrorCode.CANCEL);
    }
    this.onCloseCb?.();
  }

  /** Sends the batch; control replies in it count as queued until the socket has handed them on. */
  private flush(): void {
    const n = this.controlBatch;
    if (n === 0) return this.writer.flush();
    this.controlBatch = 0;
    const epoch = this.controlEpoch;
    this.writer.flush(() => {
      if (epoch !== this.controlEpoch) return;
      this.controlQueued -= n;
      if (this.readPaused && !this.replyBacklog()) this.resumeReading();
    });
    if (this.socket.writableLength === 0) {
      // Everything written so far went to the kernel already: nothing is queued.
      this.controlEpoch++;
      this.controlQueued = 0;
    } else this.controlQueued += n;
  }

  /** The peer took our queued replies: its frames already read are parsed, and reading goes on. */
  private resumeReading(): void {
    if (this.dead) return;
    this.readPaused = false;
    this.socket.resume();
    this.onRead(EMPTY);
  }

  private scheduleFlush(): void {
    if (this.inRead || this.flushScheduled || this.dead) return;
    this.flushScheduled = true;
    this.nextTurn(() => {
      this.flushScheduled = false;
      if (!this.dead) this.flush();
    });
  }
}

const EMPTY = Buffer.alloc(0);

/** Server prefaces built so far, by their settings: every connection of a server sends the same one. */
const serverPrefaces = new Map<string, Buffer>();

/** Our SETTINGS frame for these limits, and the WINDOW_UPDATE raising the connection's receive window. */
function serverPrefaceFor(maxStreams: number, streamWindow: number, maxHeaderList: number, maxFrame: number, tableSize: number, connWindow: number): Buffer {
  const key = `${maxStreams} ${streamWindow} ${maxHeaderList} ${maxFrame} ${tableSize} ${connWindow}`;
  let preface = serverPrefaces.get(key);
  if (preface !== undefined) return preface;
  const settings: Array<[number, number]> = [
    [Setting.MAX_CONCURRENT_STREAMS, maxStreams],
    [Setting.INITIAL_WINDOW_SIZE, streamWindow],
    [Setting.MAX_HEADER_LIST_SIZE, maxHeaderList],
  ];
  if (maxFrame !== DEFAULT_MAX_FRAME_SIZE) settings.push([Setting.MAX_FRAME_SIZE, maxFrame]);
  if (tableSize !== 4096) settings.push([Setting.HEADER_TABLE_SIZE, tableSize]);
  const frames = [settingsFrame(settings)];
  if (connWindow > DEFAULT_WINDOW) frames.push(windowUpdateFrame(0, connWindow - DEFAULT_WINDOW));
  preface = Buffer.concat(frames);
  if (serverPrefaces.size < 16) serverPrefaces.set(key, preface);
  return preface;
}
/** The default of ConnectionOptions.afterMs: a host timer that keeps no process alive. */
function hostTimeout(ms: number, fn: () => void): { cancel(): void } {
  const t = setTimeout(fn, ms);
  t.unref();
  return { cancel: () => clearTimeout(t) };
}
const NOOP = (): void => {};
/** The answer to a request whose header list is over our limit: `:status 431`, encoded once. */
const TOO_LARGE_BLOCK = HpackEncoder.constant([':status', '431']).bytes;

