/**
 * etcd's JSON gateway through the shadow: an HTTP/1.1 request on the shadow's client port (etcd's `/v3/...`
 * paths, `/health`, `/metrics`, anything) is sent to the real etcd's client port as it came, and etcd's
 * answer goes back to the client — status, headers, body and trailers as etcd wrote them, so the
 * application's answers are etcd's own. Only the framing is the shadow's: node:http re-frames both hops
 * (a chunked body stays chunked, a length stays a length) and writes its own `Connection` header.
 *
 * The tap reads the gateway's JSON in both directions, bounded as the gRPC tap is (frames.ts): a unary
 * request or answer is one JSON value; a stream's requests are JSON values one after another (as etcd's
 * gateway reads them), its responses one `{"result":...}` line each, a `{"error":...}` line its end. An
 * error answer (any status but 200) is `{"code":N,"message":M,...}`: the call's gRPC status. What is not
 * such JSON (a 404 page, a 405) is not compared.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { Buffer } from 'node:buffer';
import { readJsonValue } from '../http/index.js';
import type { TappedCall, TlsFiles } from './proxy.js';

/** What the shadow taps of one gateway call. */
export interface GatewayTap {
  readonly call: TappedCall;
  /** The request body is a stream of messages (Watch, LeaseKeepAlive). */
  readonly requestStream: boolean;
  /** The answer is a stream of `{"result":...}` lines (Watch, LeaseKeepAlive, Snapshot, Observe). */
  readonly responseStream: boolean;
}

/** The shadow's HTTP/1.1 connections to the real etcd's client port. */
export interface Upstream {
  request(path: string, method: string, headers: http.OutgoingHttpHeaders): http.ClientRequest;
  close(): void;
}

export function gatewayUpstream(etcd: string, tls: TlsFiles | undefined): Upstream {
  const u = new URL(`http://${etcd}`);
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = Number(u.port || 2379);
  const agent = tls === undefined ? new http.Agent({ keepAlive: true }) : new https.Agent({ keepAlive: true, ca: tls.ca, cert: tls.cert, key: tls.key });
  const send = tls === undefined ? http.request : https.request;
  return {
    request: (path, method, headers) => send({ host, port, path, method, headers, agent, setHost: false }),
    close: () => agent.destroy(),
  };
}

/** Headers that belong to one hop (RFC 9110 §7.6.1), and `Expect`, which node:http already answered. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'expect']);

/**
 * Raw header pairs (as node:http lists them) without the hop-by-hop ones. `Connection: close` stays: etcd's
 * Go server reads a keep-alive request's body to its end before it answers, but not a closing one's — a
 * watch whose client sends `Connection: close` is answered while its body is open, and one that does not
 * waits — and etcd closing after its answer (a body over its limit) closes the client's connection too.
 */
function endToEnd(raw: readonly string[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const k = raw[i]!;
    const v = raw[i + 1]!;
    const lower = k.toLowerCase();
    if (HOP_BY_HOP.has(lower) && !(lower === 'connection' && v.toLowerCase() === 'close')) continue;
    out.push([k, v]);
  }
  return out;
}

export function proxyGatewayRequest(req: http.IncomingMessage, res: http.ServerResponse, up: Upstream, tap: GatewayTap | undefined, maxBytes: number): void {
  const call = tap?.call;
  let ended = false;
  let untapped = false;
  const end = (status: number | undefined, message: string): void => {
    if (ended) return;
    ended = true;
    call?.onEnd(status, message);
  };
  const stop = (why: string): void => {
    if (untapped) return;
    untapped = true;
    call?.onUntapped(why);
  };
  const headers: http.OutgoingHttpHeaders = {};
  for (const [k, v] of endToEnd(req.rawHeaders)) {
    const prev = headers[k];
    headers[k] = prev === undefined ? v : `${String(prev)}, ${v}`;
  }
  let ureq: http.ClientRequest;
  try {
    ureq = up.request(req.url ?? '/', req.method ?? 'GET', headers);
  } catch {
    res.destroy();
    end(undefined, 'etcd unreachable');
    return;
  }
  // A stream's request body stays open: etcd must see the call before the client's first message ends.
  ureq.flushHeaders();

  const reqReader = call === undefined ? undefined : tap!.requestStream ? new JsonValues((v) => call.onRequest(v), maxBytes, stop) : new Whole(maxBytes, stop);
  req.on('data', (chunk: Buffer) => reqReader?.push(chunk));
  req.on('end', () => {
    if (reqReader instanceof Whole && !untapped) call?.onRequest(reqReader.take());
  });
  req.pipe(ureq);

  ureq.on('response', (ur) => {
    const status = ur.statusCode ?? 502;
    res.sendDate = false; // etcd's Date header is forwarded
    res.writeHead(status, ur.statusMessage, endToEnd(ur.rawHeaders).flat());
    const streamed = status === 200 && tap?.responseStream === true;
    const resReader =
      call === undefined
        ? undefined
        : streamed
          ? new JsonLines((line) => (line.startsWith('{"error"') ? streamError(line, end, stop) : call.onResponse(Buffer.from(line))), maxBytes, stop)
          : new Whole(maxBytes, stop);
    ur.on('data', (chunk: Buffer) => resReader?.push(chunk));
    ur.pipe(res, { end: false });
    ur.on('end', () => {
      if (resReader instanceof JsonLines) resReader.finish();
      if (resReader instanceof Whole && !untapped) {
        const body = resReader.take();
        if (status === 200) {
          call?.onResponse(body);
          end(0, '');
        } else {
          errorAnswer(body.toString('utf8'), end, stop);
        }
      }
      end(0, '');
      const trailers = endToEnd(ur.rawTrailers);
      if (trailers.length > 0) res.addTrailers(trailers);
      res.end();
    });
    ur.on('error', () => res.destroy());
  });
  ureq.on('error', () => {
    res.destroy();
    end(undefined, 'reset by etcd');
  });
  res.on('close', () => {
    if (!ureq.destroyed) ureq.destroy();
    end(undefined, 'closed by the client');
  });
  req.on('error', () => ureq.destroy());
}

type End = (status: number | undefined, message: string) => void;

/** An answer other than 200: the gateway's error body names the call's gRPC code and message. */
function errorAnswer(body: string, end: End, stop: (why: string) => void): void {
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch {
    v = undefined;
  }
  const e = v as { code?: unknown; message?: unknown } | undefined;
  if (e === undefined || e === null || typeof e.code !== 'number') {
    stop('not a gateway answer');
    end(undefined, 'not a gateway answer');
    return;
  }
  end(e.code, String(e.message ?? ''));
}

/** A stream's error line: grpc-gateway v1's `{"error":{"grpc_code":N,...}}` (3.4, 3.5), v2's `{"error":{"code":N,...}}`. */
function streamError(line: string, end: End, stop: (why: string) => void): void {
  try {
    const e = (JSON.parse(line) as { error: { grpc_code?: unknown; code?: unknown; message?: unknown } }).error;
    const code = e.grpc_code ?? e.code;
    if (typeof code === 'number') {
      end(code, String(e.message ?? ''));
      return;
    }
  } catch {
    // below
  }
  stop('not a gateway answer');
}

/** A whole body, up to `max` bytes (past that the tap stops: the call is not compared). */
class Whole {
  private chunks: Buffer[] = [];
  private bytes = 0;
  constructor(
    private readonly max: number,
    private readonly stop: (why: string) => void,
  ) {}

  push(chunk: Buffer): void {
    if (this.bytes > this.max) return;
    this.bytes += chunk.length;
    if (this.bytes > this.max) {
      this.chunks = [];
      this.stop(`a body over ${this.max} bytes`);
      return;
    }
    this.chunks.push(chunk);
  }

  take(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

/** Newline-ended lines (a stream's responses), each at most `max` bytes. */
class JsonLines {
  private pending = '';
  private stopped = false;
  constructor(
    private readonly onLine: (line: string) => void,
    private readonly max: number,
    private readonly stop: (why: string) => void,
  ) {}

  push(chunk: Buffer): void {
    if (this.stopped) return;
    this.pending += chunk.toString('utf8');
    let nl: number;
    while ((nl = this.pending.indexOf('\n')) >= 0) {
      const line = this.pending.slice(0, nl).trim();
      this.pending = this.pending.slice(nl + 1);
      if (line !== '') this.onLine(line);
    }
    if (this.pending.length > this.max) {
      this.stopped = true;
      this.pending = '';
      this.stop(`a response over ${this.max} bytes`);
    }
  }

  /** The answer ended: a stream's error chunk has no newline after it. */
  finish(): void {
    if (this.stopped) return;
    const line = this.pending.trim();
    this.pending = '';
    if (line !== '') this.onLine(line);
  }
}

/** JSON values one after another (a stream's requests, read as etcd's gateway decodes them: json.ts), each at most `max` bytes. */
class JsonValues {
  private text = '';
  private stopped = false;
  constructor(
    private readonly onValue: (value: Buffer) => void,
    private readonly max: number,
    private readonly stop: (why: string) => void,
  ) {}

  push(chunk: Buffer): void {
    if (this.stopped) return;
    this.text += chunk.toString('utf8');
    for (;;) {
      const r = readJsonValue(this.text, 0);
      if ('incomplete' in r) break;
      if ('error' in r) {
        this.halt('a request that is not JSON');
        return;
      }
      this.onValue(Buffer.from(this.text.slice(0, r.end)));
      this.text = this.text.slice(r.end);
    }
    if (this.text.length > this.max) this.halt(`a request over ${this.max} bytes`);
  }

  private halt(why: string): void {
    this.stopped = true;
    this.text = '';
    this.stop(why);
  }
}
