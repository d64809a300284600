/**
 * The JSON gateway's request body, read as etcd's grpc-gateway reads it: Go's json.Decoder decodes while it
 * reads, so etcd answers as soon as the body's first octets decide the answer — a syntax error (400) or a
 * complete first value (the call; nothing after it is read) — and reads a valid body whole before its gRPC
 * server fails a message past its limit (429 RESOURCE_EXHAUSTED). Observed on 3.4.23 (issue 32): 200 MiB of
 * `A` got 400 at its first octet, with or without Content-Length; a valid 12 MiB put was read whole and got
 * 429 naming its encoded size; a body that declared 200 MiB but held a complete value in its first MiB got
 * 200; each early answer carried `Connection: close`.
 *
 * Here the text read so far is scanned once it is 64 KiB (a socket read's worth: a smaller body is judged
 * whole) and again each time it has doubled, so the scans cost at most twice the body and an error is seen
 * by the time at most twice as much as etcd read has arrived. Reading stops past a bound — etcd has none (a
 * 200 MiB valid body cost it 845 MB) — or at once when the declared Content-Length passes it. What one
 * request holds is its text, at most the bound plus one chunk; no Buffer of the socket's is kept.
 */
import { StringDecoder } from 'node:string_decoder';
import type { HttpRequest } from './gateway.js';
import { readJsonValue } from './json.js';

/**
 * The largest request body the gateway reads: four times what the gRPC door takes of a message (JSON spells
 * bytes in base64 and names every field, so a message at the door's limit is well within it).
 */
export function gatewayBodyLimit(maxRequestBytes: number): number {
  return 4 * (maxRequestBytes + GRPC_GO_OVERHEAD_BYTES);
}
/** What grpc-go's limit adds to --max-request-bytes in etcd (its grpcOverheadBytes). */
const GRPC_GO_OVERHEAD_BYTES = 512 * 1024;

/**
 * What reading a body came to: its text (`whole` when the body ended; otherwise a prefix that already
 * decides the answer: a syntax error or a complete first value, and the rest goes unread), or, past the
 * bound, the octets read when reading stopped (or the length the request declared).
 */
export type BodyRead = { readonly text: string; readonly whole: boolean } | { readonly over: number };

/** Counts the octets bodies being read hold, now and at most (a test passes one to check the bound). */
export interface BodyMeter {
  held: number;
  peak: number;
}

/**
 * Reads `req`'s body, at most `limit` octets. A request whose client goes before its body ends never
 * resolves: Go's gateway fails the body read and calls nothing (read as empty, it would grant a lease or
 * enable auth for a client that is gone).
 */
export function readBody(req: HttpRequest, limit: number, meter?: BodyMeter): Promise<BodyRead> {
  return new Promise((resolve) => {
    // node:http has checked the header: a decimal length, or none (chunked).
    const cl = req.headers['content-length'];
    const declared = typeof cl === 'string' ? Number(cl) : undefined;
    const decoder = new StringDecoder('utf8');
    let text = '';
    let n = 0;
    let scanned = 0;
    let done = false;
    const hold = (octets: number): void => {
      if (meter === undefined) return;
      meter.held += octets;
      meter.peak = Math.max(meter.peak, meter.held);
    };
    const finish = (read: BodyRead): void => {
      done = true;
      hold(-n);
      resolve(read);
    };
    req.on('data', (c: Buffer) => {
      if (done) return;
      n += c.length;
      hold(c.length);
      text += decoder.write(c);
      const over = Math.max(n, declared ?? 0);
      // A body that has all arrived is judged whole (its 'end' follows); one past the bound is judged now.
      const scan = over > limit || (text.length >= Math.max(SCAN_FROM, 2 * scanned) && n !== declared);
      if (scan && decides(text)) return finish({ text, whole: false });
      if (scan) scanned = text.length;
      if (over > limit) finish({ over });
    });
    req.on('end', () => {
      if (!done) finish({ text: text + decoder.end(), whole: true });
    });
    req.on('error', () => {});
  });
}

/**
 * Whether the start of a body already decides how it is answered: Go's decoder has met a syntax error in
 * it or read a complete first value. A number cut off at the end of the text (`1.`, `-`, `1e`) reads as an
 * error or a shorter value, so the text is judged without its trailing run of number characters.
 */
function decides(text: string): boolean {
  let end = text.length;
  while (end > 0 && NUMBER_CHARS.includes(text[end - 1]!)) end--;
  return !('incomplete' in readJsonValue(end === text.length ? text : text.slice(0, end), 0));
}
const SCAN_FROM = 64 * 1024;
const NUMBER_CHARS = '0123456789.eE+-';
