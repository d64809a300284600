/**
 * A raw gRPC-over-HTTP/2 client for wire tests (node:http2): requests with hand-made frames (5-byte prefix +
 * bytes, any flag byte, any length claim), no DATA at all, unknown paths, odd headers — and what came back:
 * the status and message from the trailers (or a trailers-only HEADERS frame), the RST_STREAM code, timing.
 */
import * as http2 from 'node:http2';
import { Buffer } from 'node:buffer';

export interface WireAnswer {
  /** grpc-status, undefined when none arrived (the stream was reset or timed out). */
  readonly code: number | undefined;
  /** grpc-message, percent-decoded. */
  readonly message: string | undefined;
  /** Whether status and message came in the response's only HEADERS frame. */
  readonly trailersOnly: boolean;
  /** The RST_STREAM code the stream closed with (0: none / NO_ERROR). */
  readonly rstCode: number;
  /** The response's HTTP :status, undefined when no HEADERS came. */
  readonly httpStatus: number | undefined;
  /** The response's content-type, undefined when no HEADERS came. */
  readonly contentType: string | undefined;
  /** DATA bytes received. */
  readonly dataBytes: number;
  readonly elapsedMs: number;
  /** The client gave up after `timeoutMs` without an answer. */
  readonly timedOut: boolean;
}

export interface WireRequest {
  readonly path: string;
  /** DATA to send; undefined: the HEADERS frame ends the request (no DATA frame at all). */
  readonly body?: readonly Buffer[] | undefined;
  /** Extra request headers (token, grpc-timeout, grpc-encoding, content-type, ...). */
  readonly headers?: Readonly<Record<string, string>> | undefined;
  /** Keep the request side open after the body (default: half-close). */
  readonly keepOpen?: boolean | undefined;
  /** Give up (cancel) after this long (default 3 s). */
  readonly timeoutMs?: number | undefined;
  /** Resolve as soon as a status arrives instead of waiting for the stream to close. */
  readonly untilStatus?: boolean | undefined;
  /** Wait this long between the body's chunks (each then goes out in a DATA frame of its own). */
  readonly gapMs?: number | undefined;
  /** Called with each response message (its bytes, without the prefix) as it arrives; `cancel()` ends the call there (RST_STREAM CANCEL). */
  readonly onMessage?: ((message: Buffer, index: number, cancel: () => void) => void) | undefined;
}

/** A gRPC message frame: flag byte, 4-byte big-endian length, bytes. */
export function frame(msg: Buffer | string, flag = 0): Buffer {
  const bytes = typeof msg === 'string' ? Buffer.from(msg.replace(/\s+/g, ''), 'hex') : msg;
  const b = Buffer.alloc(5 + bytes.length);
  b[0] = flag;
  b.writeUInt32BE(bytes.length, 1);
  bytes.copy(b, 5);
  return b;
}

export const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

/** Bytes handed to the stream per write() of a large body. */
const WRITE_CHUNK = 16 * 1024;

/** Resolves on the stream's next 'drain', or when it closes (then nothing more is written). */
function waitDrain(stream: http2.ClientHttp2Stream, resolve: () => void): void {
  const done = (): void => {
    stream.off('drain', done);
    stream.off('close', done);
    resolve();
  };
  stream.once('drain', done);
  stream.once('close', done);
}

/** One HTTP/2 connection to `address` (host:port) for many raw calls. */
export class WireClient {
  private readonly session: http2.ClientHttp2Session;
  constructor(address: string) {
    this.session = http2.connect(`http://${address}`);
    this.session.on('error', () => {});
  }

  call(req: WireRequest): Promise<WireAnswer> {
    const t0 = Date.now();
    return new Promise((resolve) => {
      let headers: http2.IncomingHttpHeaders | undefined;
      let trailers: http2.IncomingHttpHeaders | undefined;
      let dataBytes = 0;
      let timedOut = false;
      let done = false;
      const stream = this.session.request(
        { ':method': 'POST', ':path': req.path, 'content-type': 'application/grpc', te: 'trailers', ...req.headers },
        { endStream: req.body === undefined },
      );
      const finish = (): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        const src = trailers ?? headers ?? {};
        const status = src['grpc-status'];
        const message = src['grpc-message'];
        resolve({
          code: status === undefined ? undefined : Number(status),
          message: message === undefined ? undefined : decodeURIComponent(String(message)),
          trailersOnly: trailers === undefined && headers?.['grpc-status'] !== undefined,
          rstCode: stream.rstCode ?? 0,
          httpStatus: headers?.[':status'] === undefined ? undefined : Number(headers[':status']),
          contentType: headers?.['content-type'] === undefined ? undefined : String(headers['content-type']),
          dataBytes,
          elapsedMs: Date.now() - t0,
          timedOut,
        });
        if (!stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
      };
      const timer = setTimeout(() => {
        timedOut = true;
        finish();
      }, req.timeoutMs ?? 3000);
      stream.on('response', (h) => {
        headers = h;
        if (req.untilStatus === true && h['grpc-status'] !== undefined) finish();
      });
      stream.on('trailers', (t) => {
        trailers = t;
        if (req.untilStatus === true) finish();
      });
      let unread = Buffer.alloc(0);
      let messages = 0;
      stream.on('data', (d: Buffer) => {
        dataBytes += d.length;
        if (req.onMessage === undefined) return;
        unread = Buffer.concat([unread, d]);
        while (unread.length >= 5 && unread.length >= 5 + unread.readUInt32BE(1)) {
          const end = 5 + unread.readUInt32BE(1);
          const m = unread.subarray(5, end);
          unread = unread.subarray(end);
          req.onMessage(m, messages++, finish);
        }
      });
      stream.on('error', () => {});
      stream.on('close', finish);
      if (req.body !== undefined) {
        const body = req.body;
        void (async () => {
          for (const [i, b] of body.entries()) {
            if (i > 0 && req.gapMs !== undefined) await new Promise((r) => setTimeout(r, req.gapMs));
            // A big body goes out a chunk at a time, each once the last is flushed, and stops when the
            // stream ends: a client that queues megabytes on a stream the server has closed keeps them
            // charged to its session (node:http2's maxSessionMemory, 10 MB) and after a few such calls its
            // session refuses new streams (ENHANCE_YOUR_CALM) — the client would stall, not the server.
            for (let at = 0; at === 0 || at < b.length; at += WRITE_CHUNK) {
              if (done || stream.closed || stream.destroyed) return;
              const chunk = b.subarray(at, at + WRITE_CHUNK);
              if (!stream.write(chunk)) await new Promise<void>((r) => waitDrain(stream, r));
            }
          }
          if (req.keepOpen !== true && !done && !stream.closed) stream.end();
        })();
      }
    });
  }

  close(): void {
    this.session.close();
  }
}

/** SnapshotResponse fields 2 (remaining_bytes), 3 (blob) and 4 (version) of a message; fails on any other field. */
export function snapshotResponseFields(m: Buffer): { remaining: number; blob: Buffer; version: string | undefined } {
  let i = 0;
  const varint = (): number => {
    let v = 0;
    let mul = 1;
    for (;;) {
      const b = m[i++]!;
      v += (b & 0x7f) * mul;
      if (b < 0x80) return v;
      mul *= 128;
    }
  };
  let remaining = 0;
  let blob: Buffer = Buffer.alloc(0);
  let version: string | undefined;
  while (i < m.length) {
    const t = varint();
    if (t === 0x10) remaining = varint();
    else if (t === 0x1a || t === 0x22) {
      const len = varint();
      const bytes = m.subarray(i, i + len);
      i += len;
      if (t === 0x1a) blob = bytes;
      else version = bytes.toString();
    } else throw new Error(`unexpected field tag ${t} in a SnapshotResponse`);
  }
  return { remaining, blob, version };
}
