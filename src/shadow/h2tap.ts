/**
 * The gRPC calls of one HTTP/2 connection, read off a copy of its bytes: the proxy (proxy.ts) passes every
 * byte between the application and the real etcd unchanged, one TCP connection to etcd per client
 * connection, and this reader follows both directions as a third party would — the frames (RFC 9113), each
 * direction's HPACK table (RFC 7541, kept in step by decoding every header block the peer decodes), and per
 * stream the path and metadata of the call, its request and response messages (frames.ts) and its end: etcd's
 * trailers (grpc-status, grpc-message), or a reset.
 *
 * Reading the bytes, not terminating HTTP/2, keeps everything per connection etcd's own — its SETTINGS,
 * flow control, stream limits, keepalive pings, GOAWAY — and costs the answer path one socket read and one
 * write per direction. The order of the bytes is the order of the call: a stream's trailers come after its
 * last DATA frame, so a call always ends after its last message.
 *
 * Bounded: a frame longer than the tap reads (`maxFrameBytes`), a header block that does not decode (a size
 * update past the 4096 octets HTTP/2 starts with, which a peer announcing a larger table may send) or a
 * malformed frame stops the tap of the whole connection — its open calls end as not compared, its bytes go
 * on flowing — rather than buffering or guessing. A stopped tap still walks the frame headers (nine octets
 * each, payloads skipped unread), so that every call the client opens later on that connection is still
 * counted as one the shadow did not compare, with the reason: a report whose counts stop at the first
 * unreadable frame would say the shadow saw less traffic than it passed on.
 */
import { Buffer } from 'node:buffer';
import { Flags, FrameType, HpackDecoder } from '../h2/index.js';
import { MessageTap } from './frames.js';
import type { TappedCall } from './proxy.js';

/** The client connection preface's length (RFC 9113 §3.4): it precedes the client's first frame. */
const PREFACE_LENGTH = 24;
const FRAME_HEADER = 9;

interface TapStream {
  readonly call: TappedCall;
  readonly req: MessageTap;
  readonly res: MessageTap;
  /** etcd has sent the response headers (a HEADERS frame after them is the trailers). */
  responded: boolean;
}

/** One direction: bytes not yet a whole frame, its HPACK table, and a header block still in CONTINUATIONs. */
class Direction {
  pending: Buffer = Buffer.alloc(0);
  readonly hpack = new HpackDecoder();
  block: { readonly streamId: number; readonly flags: number; readonly parts: Buffer[]; bytes: number; readonly promise: boolean } | undefined;

  constructor(public skip: number) {}
}

export class ConnectionTap {
  private readonly streams = new Map<number, TapStream>();
  private readonly client = new Direction(PREFACE_LENGTH);
  private readonly server = new Direction(0);
  /** Why this connection is no longer read (undefined while it is). */
  stopped: string | undefined;
  /** The highest stream the client began a header block on, and the highest whose call was opened. */
  private lastClientStream = 0;
  private lastOpened = 0;

  constructor(
    /** A new call on the connection; undefined leaves it untapped. */
    private readonly tap: (path: string, headers: TappedCall['headers']) => TappedCall | undefined,
    /** A call the client began after the tap stopped (or whose headers stopped it): its path is not known. */
    private readonly unread: (why: string) => void,
    private readonly maxMessageBytes: number,
    private readonly maxFrameBytes = 1 << 20,
  ) {}

  fromClient(chunk: Buffer): void {
    this.read(this.client, chunk, true);
  }

  fromServer(chunk: Buffer): void {
    this.read(this.server, chunk, false);
  }

  /** The connection closed: every call still open ends unanswered. */
  close(why: string): void {
    for (const [id, s] of this.streams) {
      this.streams.delete(id);
      s.call.onEnd(undefined, why);
    }
  }

  private read(d: Direction, chunk: Buffer, fromClient: boolean): void {
    let buf = d.pending.length === 0 ? chunk : Buffer.concat([d.pending, chunk]);
    if (d.skip > 0) {
      const n = Math.min(d.skip, buf.length);
      d.skip -= n;
      buf = buf.subarray(n);
    }
    let p = 0;
    while (buf.length - p >= FRAME_HEADER) {
      const len = (buf[p]! << 16) | (buf[p + 1]! << 8) | buf[p + 2]!;
      const type = buf[p + 3]!;
      if (this.stopped === undefined && len > this.maxFrameBytes) this.stop(`a frame over ${this.maxFrameBytes} bytes`);
      if (this.stopped !== undefined) {
        // Stopped: only the frame headers are read, a payload is skipped as it passes (nothing buffered).
        const id = buf.readUInt32BE(p + 5) & 0x7fffffff;
        if (fromClient && type === FrameType.HEADERS && id > this.lastClientStream) {
          this.lastClientStream = id;
          this.unread(this.stopped);
        }
        const end = p + FRAME_HEADER + len;
        if (end > buf.length) {
          d.skip = end - buf.length;
          p = buf.length;
        } else p = end;
        continue;
      }
      if (buf.length - p < FRAME_HEADER + len) break;
      const flags = buf[p + 4]!;
      const id = buf.readUInt32BE(p + 5) & 0x7fffffff;
      this.frame(d, fromClient, type, flags, id, buf.subarray(p + FRAME_HEADER, p + FRAME_HEADER + len));
      p += FRAME_HEADER + len;
    }
    // The tail is copied: a chunk's memory is not kept alive by the few bytes of its last frame's start.
    d.pending = p === buf.length ? Buffer.alloc(0) : Buffer.from(buf.subarray(p));
  }

  private frame(d: Direction, fromClient: boolean, type: number, flags: number, id: number, payload: Buffer): void {
    if (d.block !== undefined && type !== FrameType.CONTINUATION) {
      this.stop('a header block interrupted');
      return;
    }
    switch (type) {
      case FrameType.DATA: {
        const s = this.streams.get(id);
        const body = unpadded(flags, payload, 0);
        if (body === undefined) return this.stop('a malformed DATA frame');
        if (s !== undefined) {
          const t = fromClient ? s.req : s.res;
          t.push(body);
          if (t.stopped !== undefined) s.call.onUntapped(t.stopped);
        }
        if ((flags & Flags.END_STREAM) !== 0 && !fromClient) this.end(id, undefined, 'etcd ended the stream without trailers');
        return;
      }
      case FrameType.HEADERS:
      case FrameType.PUSH_PROMISE: {
        const promise = type === FrameType.PUSH_PROMISE;
        if (fromClient && !promise && id > this.lastClientStream) this.lastClientStream = id;
        const fragment = unpadded(flags, payload, promise ? 4 : (flags & Flags.PRIORITY) !== 0 ? 5 : 0);
        if (fragment === undefined) return this.stop('a malformed header block');
        d.block = { streamId: id, flags, parts: [fragment], bytes: fragment.length, promise };
        if ((flags & Flags.END_HEADERS) !== 0) this.headerBlock(d, fromClient);
        return;
      }
      case FrameType.CONTINUATION: {
        const b = d.block;
        if (b === undefined || b.streamId !== id) return this.stop('a CONTINUATION out of place');
        b.parts.push(payload);
        b.bytes += payload.length;
        if (b.bytes > this.maxFrameBytes) return this.stop(`a header block over ${this.maxFrameBytes} bytes`);
        if ((flags & Flags.END_HEADERS) !== 0) this.headerBlock(d, fromClient);
        return;
      }
      case FrameType.RST_STREAM:
        this.end(id, undefined, fromClient ? 'closed by the client' : `reset by etcd (${payload.length >= 4 ? payload.readUInt32BE(0) : 0})`);
        return;
      default:
      // SETTINGS, PING, WINDOW_UPDATE, PRIORITY, GOAWAY: the connection's own, nothing of a call.
    }
  }

  private headerBlock(d: Direction, fromClient: boolean): void {
    const b = d.block!;
    d.block = undefined;
    const block = b.parts.length === 1 ? b.parts[0]! : Buffer.concat(b.parts);
    let fields: string[];
    try {
      fields = d.hpack.decode(block, 0, block.length);
    } catch (err) {
      // The decoder's words (a table index, a size) stay out of the reason: the report counts calls by it.
      this.stop('a header block that does not decode');
      return;
    }
    if (b.promise) return; // a pushed request: gRPC has none, but its block kept the table in step
    const endStream = (b.flags & Flags.END_STREAM) !== 0;
    if (fromClient) {
      if (!this.streams.has(b.streamId)) this.open(b.streamId, fields);
      return;
    }
    const s = this.streams.get(b.streamId);
    if (s === undefined) return;
    const status = field(fields, 'grpc-status');
    if (s.responded || status !== undefined || endStream) {
      // Trailers, or a trailers-only answer (an error before any message).
      this.end(b.streamId, status === undefined ? undefined : Number(status), decodeMessage(field(fields, 'grpc-message') ?? ''));
      return;
    }
    s.responded = true;
  }

  private open(id: number, fields: readonly string[]): void {
    this.lastOpened = id;
    const headers: Record<string, string | string[]> = {};
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const k = fields[i]!;
      const prev = headers[k];
      headers[k] = prev === undefined ? fields[i + 1]! : [...(Array.isArray(prev) ? prev : [prev]), fields[i + 1]!];
    }
    const call = this.tap(String(headers[':path'] ?? ''), headers);
    if (call === undefined) return;
    this.streams.set(id, {
      call,
      req: new MessageTap((m) => call.onRequest(m), this.maxMessageBytes),
      res: new MessageTap((m) => call.onResponse(m), this.maxMessageBytes),
      responded: false,
    });
  }

  private end(id: number, status: number | undefined, message: string): void {
    const s = this.streams.get(id);
    if (s === undefined) return;
    this.streams.delete(id);
    s.call.onEnd(status, message);
  }

  /**
   * The connection is no longer read: its open calls end not compared, as does a call whose header block
   * was begun and not read; the bytes of each direction go on being walked frame by frame (read above),
   * from the frame boundary each stands at.
   */
  private stop(why: string): void {
    if (this.stopped !== undefined) return;
    const reason = `connection no longer read: ${why}`;
    this.stopped = reason;
    this.client.block = undefined;
    this.server.block = undefined;
    if (this.lastClientStream > this.lastOpened) this.unread(reason);
    for (const s of this.streams.values()) s.call.onUntapped(reason);
    this.close(reason);
  }
}

/** A frame's payload without its padding and the `skip` octets after the pad length; undefined when malformed. */
function unpadded(flags: number, payload: Buffer, skip: number): Buffer | undefined {
  const padded = (flags & Flags.PADDED) !== 0;
  const start = (padded ? 1 : 0) + skip;
  const pad = padded ? (payload[0] ?? 0) : 0;
  if (payload.length < start + pad) return undefined;
  return payload.subarray(start, payload.length - pad);
}

function field(fields: readonly string[], name: string): string | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}

/** grpc-message is percent-encoded (gRPC over HTTP/2). */
function decodeMessage(v: string | string[] | undefined): string {
  const s = Array.isArray(v) ? v.join(',') : (v ?? '');
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
