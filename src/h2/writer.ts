/**
 * The connection's output batch: frames are written into a staging buffer (headers, control frames and
 * small payloads copied in place) or referenced (large DATA payloads), and go to the socket together in
 * one write (or one corked series of writes) when the connection flushes — once per socket read, or once
 * per tick for frames produced outside a read. So one read that completes ten calls costs one syscall.
 */
import { FRAME_HEADER_LENGTH, writeFrameHeader } from './frames.js';

/** The socket side of a connection: a net.Socket, a TLSSocket, or any Duplex. */
export interface FrameSink {
  write(chunk: Buffer, callback?: (error?: Error | null) => void): boolean;
  cork(): void;
  uncork(): void;
}

/** Payloads at most this long are copied into the staging buffer; longer ones are referenced. */
const COPY_LIMIT = 1024;
/** Payloads at most this long are copied byte by byte. */
const SMALL_COPY = 64;
const STAGE_SIZE = 64 * 1024;
/**
 * The first staging buffer: enough for the server preface (SETTINGS, WINDOW_UPDATE) and the first answers, and
 * small enough to come from Node's shared buffer pool. A connection that sends its preface and then little or
 * nothing (an idle client, or thousands of connections opened to hold the server) so holds no 64 KiB of its own,
 * whose external memory alone would drive V8's collector once per few hundred connections.
 */
const FIRST_STAGE_SIZE = 1024;
/** A flush of several segments totalling at most this much is concatenated into one buffer for one write. */
const CONCAT_LIMIT = 64 * 1024;
const NO_STAGE = Buffer.alloc(0);

export class FrameWriter {
  /** Sealed segments of this batch, in order. */
  private segments: Buffer[] = [];
  private segmentBytes = 0;
  /**
   * Staging buffer and the span [start, pos) of it in this batch. Once a span is handed to the socket it is
   * never written again: later frames go after it, and a full stage is replaced, not reused. Made on the
   * first frame (FIRST_STAGE_SIZE), then STAGE_SIZE each.
   */
  private stage: Buffer = NO_STAGE;
  private start = 0;
  private pos = 0;

  constructor(private readonly sink: FrameSink) {}

  /** Octets waiting for flush(). */
  get pendingBytes(): number {
    return this.segmentBytes + this.pos - this.start;
  }

  /** Whether anything waits for flush(). */
  get pending(): boolean {
    return this.pos > this.start || this.segments.length > 0;
  }

  /** Appends a frame: its header and payload (copied when small, referenced otherwise). */
  frame(type: number, flags: number, streamId: number, payload: Buffer, payloadStart = 0, payloadEnd = payload.length): void {
    const len = payloadEnd - payloadStart;
    this.header(len, type, flags, streamId);
    if (len > 0) this.bytes(payload, payloadStart, payloadEnd);
  }

  /** Appends a frame header only (its payload follows through bytes()). */
  header(length: number, type: number, flags: number, streamId: number): void {
    this.room(FRAME_HEADER_LENGTH);
    writeFrameHeader(this.stage, this.pos, length, type, flags, streamId);
    this.pos += FRAME_HEADER_LENGTH;
  }

  /** Appends payload octets buf[start, end). */
  bytes(buf: Buffer, start = 0, end = buf.length): void {
    const n = end - start;
    if (n <= COPY_LIMIT) {
      this.room(n);
      if (n <= SMALL_COPY) {
        // A byte loop beats Buffer#copy's call overhead for the few octets of a constant header block.
        const stage = this.stage;
        let at = this.pos;
        for (let i = start; i < end; i++) stage[at++] = buf[i]!;
      } else buf.copy(this.stage, this.pos, start, end);
      this.pos += n;
      return;
    }
    this.seal();
    this.segments.push(start === 0 && end === buf.length ? buf : buf.subarray(start, end));
    this.segmentBytes += n;
  }

  /** Appends an already serialized frame (or frames). */
  raw(buf: Buffer): void {
    this.bytes(buf, 0, buf.length);
  }

  /**
   * Sends the batch: one write, or a corked series of writes when it holds large payloads. `written`, when
   * given, runs once the socket has handed the batch on (its write callback).
   */
  flush(written?: () => void): void {
    this.seal();
    const segs = this.segments;
    if (segs.length === 0) return;
    this.segments = [];
    const total = this.segmentBytes;
    this.segmentBytes = 0;
    if (segs.length === 1) this.sink.write(segs[0]!, written);
    else if (total <= CONCAT_LIMIT) this.sink.write(Buffer.concat(segs, total), written);
    else {
      this.sink.cork();
      const last = segs.length - 1;
      for (let i = 0; i < last; i++) this.sink.write(segs[i]!);
      this.sink.write(segs[last]!, written);
      this.sink.uncork();
    }
  }

  /** Drops whatever is pending (the connection is gone). */
  discard(): void {
    this.segments = [];
    this.segmentBytes = 0;
    this.start = this.pos;
  }

  private seal(): void {
    if (this.pos > this.start) {
      this.segments.push(this.stage.subarray(this.start, this.pos));
      this.segmentBytes += this.pos - this.start;
      this.start = this.pos;
    }
  }

  private room(n: number): void {
    if (this.pos + n <= this.stage.length) return;
    this.seal();
    this.stage = Buffer.allocUnsafe(Math.max(this.stage === NO_STAGE ? FIRST_STAGE_SIZE : STAGE_SIZE, n));
    this.start = 0;
    this.pos = 0;
  }
}
