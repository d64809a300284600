/**
 * HTTP/2 framing (RFC 9113 §4, §6): frame types, flags, error codes, settings, the client connection
 * preface, and frame serialization. The connection reads frame headers inline (no object per frame); the
 * `parseFrames` helper is for tools and tests that watch a byte stream.
 */

/** Frame types (RFC 9113 §6). */
export const FrameType = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

/** Frame flags; which apply depends on the type. */
export const Flags = {
  END_STREAM: 0x1,
  ACK: 0x1,
  END_HEADERS: 0x4,
  PADDED: 0x8,
  PRIORITY: 0x20,
} as const;

/** Error codes of RST_STREAM and GOAWAY (RFC 9113 §7). */
export const ErrorCode = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  SETTINGS_TIMEOUT: 0x4,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  CONNECT_ERROR: 0xa,
  ENHANCE_YOUR_CALM: 0xb,
  INADEQUATE_SECURITY: 0xc,
  HTTP_1_1_REQUIRED: 0xd,
} as const;

/** SETTINGS parameters (RFC 9113 §6.5.2). */
export const Setting = {
  HEADER_TABLE_SIZE: 0x1,
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
  MAX_HEADER_LIST_SIZE: 0x6,
} as const;

/** What every client connection starts with (RFC 9113 §3.4), before its SETTINGS frame. */
export const CLIENT_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export const FRAME_HEADER_LENGTH = 9;
/** The initial flow-control window of a stream and of the connection (RFC 9113 §6.9.2). */
export const DEFAULT_WINDOW = 65535;
/** The largest a flow-control window may get (RFC 9113 §6.9.1). */
export const MAX_WINDOW = 0x7fffffff;
/** SETTINGS_MAX_FRAME_SIZE's initial value, also its lower bound; the upper bound (RFC 9113 §6.5.2). */
export const DEFAULT_MAX_FRAME_SIZE = 16384;
export const MAX_MAX_FRAME_SIZE = 0xffffff;

/** Writes a 9-octet frame header at buf[at]. */
export function writeFrameHeader(buf: Buffer, at: number, length: number, type: number, flags: number, streamId: number): void {
  buf[at] = length >>> 16;
  buf[at + 1] = (length >>> 8) & 0xff;
  buf[at + 2] = length & 0xff;
  buf[at + 3] = type;
  buf[at + 4] = flags;
  buf.writeUInt32BE(streamId >>> 0, at + 5);
}

/** One whole frame as a new buffer (for rare frames and tests; the connection's hot path writes in place). */
export function frame(type: number, flags: number, streamId: number, payload: Uint8Array = EMPTY): Buffer {
  const b = Buffer.allocUnsafe(FRAME_HEADER_LENGTH + payload.length);
  writeFrameHeader(b, 0, payload.length, type, flags, streamId);
  b.set(payload, FRAME_HEADER_LENGTH);
  return b;
}

const EMPTY = Buffer.alloc(0);

function u32(n: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32BE(n >>> 0, 0);
  return b;
}

/** A SETTINGS frame of (id, value) pairs. */
export function settingsFrame(pairs: ReadonlyArray<readonly [number, number]>): Buffer {
  const p = Buffer.allocUnsafe(6 * pairs.length);
  pairs.forEach(([id, v], i) => {
    p.writeUInt16BE(id, 6 * i);
    p.writeUInt32BE(v >>> 0, 6 * i + 2);
  });
  return frame(FrameType.SETTINGS, 0, 0, p);
}

export const SETTINGS_ACK = frame(FrameType.SETTINGS, Flags.ACK, 0);

export function windowUpdateFrame(streamId: number, increment: number): Buffer {
  return frame(FrameType.WINDOW_UPDATE, 0, streamId, u32(increment));
}

export function rstStreamFrame(streamId: number, code: number): Buffer {
  return frame(FrameType.RST_STREAM, 0, streamId, u32(code));
}

export function goawayFrame(lastStreamId: number, code: number, debug = ''): Buffer {
  const d = Buffer.from(debug, 'utf8');
  const p = Buffer.allocUnsafe(8 + d.length);
  p.writeUInt32BE(lastStreamId >>> 0, 0);
  p.writeUInt32BE(code >>> 0, 4);
  d.copy(p, 8);
  return frame(FrameType.GOAWAY, 0, 0, p);
}

/** A frame read from a byte stream by `parseFrames`. */
export interface ParsedFrame {
  readonly type: number;
  readonly flags: number;
  readonly streamId: number;
  readonly payload: Buffer;
}

/** Splits `buf` into whole frames; `rest` is the incomplete tail (a frame still arriving). */
export function parseFrames(buf: Buffer): { frames: ParsedFrame[]; rest: Buffer } {
  const frames: ParsedFrame[] = [];
  let p = 0;
  while (buf.length - p >= FRAME_HEADER_LENGTH) {
    const len = (buf[p]! << 16) | (buf[p + 1]! << 8) | buf[p + 2]!;
    if (buf.length - p < FRAME_HEADER_LENGTH + len) break;
    frames.push({
      type: buf[p + 3]!,
      flags: buf[p + 4]!,
      streamId: buf.readUInt32BE(p + 5) & 0x7fffffff,
      payload: buf.subarray(p + FRAME_HEADER_LENGTH, p + FRAME_HEADER_LENGTH + len),
    });
    p += FRAME_HEADER_LENGTH + len;
  }
  return { frames, rest: buf.subarray(p) };
}
