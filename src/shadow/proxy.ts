/**
 * The shadow's client port: a gRPC proxy in front of a real etcd. Every HTTP/2 stream a client opens is
 * opened on the etcd (one upstream connection per client connection, so per-connection behaviour — stream
 * limits, keepalive, a dropped connection cancelling its calls — stays the real etcd's), its bytes passed
 * on unchanged both ways, with the response headers and trailers as etcd wrote them: the application's
 * answers are etcd's own. A tap reads the gRPC messages of each direction for the shadow (frames.ts).
 *
 * Node's HTTP/2 (not src/h2, our model of grpc-go's server) carries the proxy: here the bytes on the wire
 * are etcd's, so only a faithful transport is needed, not a model of one.
 *
 * The port is etcd's one client port for both protocols (src/http/port.ts tells them apart as etcd's cmux
 * does): HTTP/2 is gRPC, proxied here; HTTP/1.1 — the JSON gateway, /health, /metrics — goes to etcd's
 * client port as HTTP/1.1 (gateway.ts).
 */
import http2 from 'node:http2';
import * as http from 'node:http';
import type { Buffer } from 'node:buffer';
import { listenClientPort } from '../http/index.js';
import { hostNextTurn } from '../sim/index.js';
import { MessageTap } from './frames.js';
import { gatewayUpstream, proxyGatewayRequest, type GatewayTap } from './gateway.js';

/** What the shadow learns of one call. */
export interface TappedCall {
  /** `/etcdserverpb.KV/Range`. */
  readonly path: string;
  /** The request headers (metadata: `token`, `authorization`, `hasleader`, ...). */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  onRequest(message: Buffer): void;
  onResponse(message: Buffer): void;
  /** The call ended: etcd's grpc-status and grpc-message, or a reset/cancel (status undefined). */
  onEnd(status: number | undefined, message: string): void;
  /** A direction could not be read (compressed or oversized message): the call is not compared. */
  onUntapped(why: string): void;
}

/** PEM files' contents for one side of a TLS connection. */
export interface TlsFiles {
  readonly cert?: string | Buffer | undefined;
  readonly key?: string | Buffer | undefined;
  /** Listener: client certificates must be signed by it (etcd's --trusted-ca-file). Upstream: the etcd's CA. */
  readonly ca?: string | Buffer | undefined;
}

export interface ProxyOptions {
  /** host:port of the real etcd. */
  readonly etcd: string;
  /** The client port over TLS (cert and key required). */
  readonly tls?: TlsFiles | undefined;
  /** The etcd over TLS: its CA, and the client certificate the shadow presents to it. */
  readonly etcdTls?: TlsFiles | undefined;
  readonly host: string;
  readonly port: number;
  /** Largest message the tap reads (bigger ones pass through unread). */
  readonly maxMessageBytes: number;
  /** Called for each new call; undefined leaves the call untapped. */
  readonly tap: (path: string, headers: TappedCall['headers']) => TappedCall | undefined;
  /** Called for each HTTP/1.1 request (`url` as sent: path and query); undefined leaves it untapped. */
  readonly tapGateway: (url: string, method: string, headers: TappedCall['headers']) => GatewayTap | undefined;
}

export interface Proxy {
  readonly port: number;
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'http2-settings']);

function forwardable(h: http2.IncomingHttpHeaders, keepStatus: boolean, scheme?: string): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = scheme === undefined ? {} : { ':scheme': scheme };
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined || HOP_BY_HOP.has(k)) continue;
    if (k.startsWith(':') && !(keepStatus && k === ':status') && !(!keepStatus && (k === ':method' || k === ':path' || (k === ':scheme' && scheme === undefined) || k === ':authority'))) continue;
    out[k] = v;
  }
  return out;
}

export async function startProxy(o: ProxyOptions): Promise<Proxy> {
  const sessions = new Set<http2.ServerHttp2Session>();
  const server = http2.createServer({ settings: { maxConcurrentStreams: 1000 } });
  const u = o.etcdTls;
  server.on('session', (down) => {
    sessions.add(down);
    const up = u === undefined ? http2.connect(`http://${o.etcd}`) : http2.connect(`https://${o.etcd}`, { ca: u.ca, cert: u.cert, key: u.key });
    up.on('error', () => down.destroy());
    up.on('close', () => down.destroy());
    down.on('close', () => {
      sessions.delete(down);
      up.close();
    });
    down.on('error', () => up.destroy());
    down.on('stream', (ds, headers) => proxyStream(ds, headers, up, o, u === undefined ? 'http' : 'https'));
  });
  const upstream = gatewayUpstream(o.etcd, u);
  const t = o.tls;
  const port = await listenClientPort({
    host: o.host,
    port: o.port,
    // As etcd: a trusted CA requires every client to present a certificate it signed.
    tls: t === undefined ? undefined : { cert: t.cert, key: t.key, ca: t.ca, requestCert: t.ca !== undefined, rejectUnauthorized: t.ca !== undefined },
    http2: (socket, head, _secure, onHandshake) => {
      // The bytes read to tell the protocol go back into the paused socket, where node:http2's session
      // takes them when it starts; resumed here, they would be emitted to nobody first.
      if (head !== undefined) {
        socket.pause();
        socket.unshift(head);
      }
      server.emit('connection', socket);
      onHandshake();
    },
    handler: (req, res) => {
      // listenClientPort's HTTP/1.1 server is node:http's: these are its request and response.
      if (!(req instanceof http.IncomingMessage) || !(res instanceof http.ServerResponse)) throw new Error('etcdsim: not a node:http request');
      const tap = o.tapGateway(req.url ?? '/', req.method ?? 'GET', req.headers);
      proxyGatewayRequest(req, res, upstream, tap && { ...tap, call: guarded(tap.call)! }, o.maxMessageBytes);
    },
  });
  return {
    port: port.port,
    async close() {
      for (const s of sessions) s.destroy();
      upstream.close();
      await port.close();
    },
  };
}

/**
 * What the shadow does with a call's bytes (framing, decoding, asking the simulator, comparing) runs off the
 * answer path: the proxy forwards the bytes first, and the tap's work for everything that arrived in one turn
 * runs on the host's next turn, in arrival order. An answer's trailers no longer wait for the comparison.
 */
const pending: Array<() => void> = [];

function later(fn: () => void): void {
  pending.push(fn);
  if (pending.length === 1) hostNextTurn(drain);
}

function drain(): void {
  for (const fn of pending.splice(0)) fn();
}

function proxyStream(ds: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, up: http2.ClientHttp2Session, o: ProxyOptions, scheme: string): void {
  const path = String(headers[':path'] ?? '');
  const call = guarded(o.tap(path, headers));
  let ended = false;
  const end = (status: number | undefined, message: string): void => {
    if (ended) return;
    ended = true;
    if (call !== undefined) later(() => call.onEnd(status, message));
  };
  const reqTap = call && new MessageTap((m) => call.onRequest(m), o.maxMessageBytes);
  const resTap = call && new MessageTap((m) => call.onResponse(m), o.maxMessageBytes);
  let us: http2.ClientHttp2Stream;
  try {
    us = up.request(forwardable(headers, false, scheme), { endStream: false });
  } catch {
    ds.close(http2.constants.NGHTTP2_REFUSED_STREAM);
    end(undefined, 'refused');
    return;
  }
  let trailers: http2.OutgoingHttpHeaders = {};
  ds.on('data', (chunk: Buffer) => {
    if (reqTap !== undefined) {
      later(() => {
        reqTap.push(chunk);
        if (reqTap.stopped !== undefined) call?.onUntapped(reqTap.stopped);
      });
    }
  });
  ds.pipe(us);
  us.on('response', (h) => {
    const status = h['grpc-status'];
    if (status !== undefined) {
      // Trailers-only: etcd answered with an error before any message.
      ds.respond(forwardable(h, true), { endStream: true });
      end(Number(status), decodeMessage(h['grpc-message']));
      return;
    }
    ds.respond(forwardable(h, true), { waitForTrailers: true });
  });
  us.on('data', (chunk: Buffer) => {
    if (resTap !== undefined) {
      later(() => {
        resTap.push(chunk);
        if (resTap.stopped !== undefined) call?.onUntapped(resTap.stopped);
      });
    }
  });
  // etcd's trailers can arrive while its last messages still wait in `us` (the client reads slower than etcd
  // writes, so the pipe paused it): the call ends for the tap only once every message has been read.
  let status: [number | undefined, string] | undefined;
  us.on('trailers', (t) => {
    trailers = forwardable(t, false);
    status = [t['grpc-status'] === undefined ? undefined : Number(t['grpc-status']), decodeMessage(t['grpc-message'])];
  });
  ds.on('wantTrailers', () => ds.sendTrailers(trailers));
  us.on('end', () => {
    if (status !== undefined) end(...status);
    if (!ds.headersSent) ds.respond({ ':status': 200 }, { endStream: true });
    else if (!ds.writableEnded) ds.end();
  });
  us.pipe(ds, { end: false });
  us.on('close', () => {
    if (!ds.closed && us.rstCode !== undefined && us.rstCode !== http2.constants.NGHTTP2_NO_ERROR) ds.close(us.rstCode);
    end(undefined, `reset by etcd (${us.rstCode ?? 0})`);
  });
  ds.on('close', () => {
    if (!us.closed) us.close(http2.constants.NGHTTP2_CANCEL);
    end(undefined, 'closed by the client');
  });
  ds.on('error', () => undefined);
  us.on('error', () => undefined);
}

/**
 * The tap never breaks the proxying: a message the shadow cannot decode (the application sent bytes etcd
 * will refuse) stops the tap of that call, and the bytes still go to etcd, which answers as it does.
 */
function guarded(call: TappedCall | undefined): TappedCall | undefined {
  if (call === undefined) return undefined;
  let broken = false;
  const safe =
    <A extends unknown[]>(f: (...a: A) => void) =>
    (...a: A): void => {
      if (broken) return;
      try {
        f(...a);
      } catch (err) {
        broken = true;
        call.onUntapped(`not decodable: ${err instanceof Error ? err.message : String(err)}`);
      }
    };
  return { path: call.path, headers: call.headers, onRequest: safe(call.onRequest), onResponse: safe(call.onResponse), onEnd: call.onEnd, onUntapped: call.onUntapped };
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
