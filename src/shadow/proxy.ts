/**
 * The shadow's client port: a proxy in front of a real etcd. Each HTTP/2 connection a client opens is one
 * TCP (or TLS) connection to the etcd, and its bytes are passed on unchanged both ways, before anything else
 * is done with them: the application talks HTTP/2 with etcd itself — etcd's SETTINGS, flow control, stream
 * limits, keepalive and a dropped connection cancelling its calls — and its answers are etcd's own bytes. The
 * shadow reads a copy of them (h2tap.ts: frames, HPACK, gRPC messages per call): a request once it went on,
 * etcd's answers on the host's next turn.
 *
 * Terminating HTTP/2 here (node:http2 in, node:http2 out, a stream object per call on each side) cost the
 * answer path more than the whole comparison: reading the bytes as a bystander costs it one socket read and
 * one write per direction (docs/performance.md, "The shadow's overhead").
 *
 * The port is etcd's one client port for both protocols (src/http/port.ts tells them apart as etcd's cmux
 * does): HTTP/2 is gRPC, passed through here; HTTP/1.1 — the JSON gateway, /health, /metrics — goes to etcd's
 * client port as HTTP/1.1 (gateway.ts).
 */
import * as net from 'node:net';
import * as tls from 'node:tls';
import * as http from 'node:http';
import type { Buffer } from 'node:buffer';
import type { Duplex } from 'node:stream';
import { listenClientPort } from '../http/index.js';
import { hostNextTurn } from '../sim/index.js';
import { ConnectionTap } from './h2tap.js';
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
  /**
   * A direction could not be read (a compressed or oversized message, bytes that do not decode, a connection
   * no longer read): the call is not compared. `why` is one of a few fixed reasons — the report counts by it.
   */
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
  /** Called for each call on a connection the tap no longer reads (h2tap.ts): not compared, its path unknown. */
  readonly unread: (why: string) => void;
  /** Called for each HTTP/1.1 request (`url` as sent: path and query); undefined leaves it untapped. */
  readonly tapGateway: (url: string, method: string, headers: TappedCall['headers']) => GatewayTap | undefined;
}

export interface Proxy {
  readonly port: number;
  close(): Promise<void>;
}

export async function startProxy(o: ProxyOptions): Promise<Proxy> {
  const sockets = new Set<Duplex>();
  const u = o.etcdTls;
  const { host, port: etcdPort } = hostPort(o.etcd);
  const upstream = gatewayUpstream(o.etcd, u);
  const t = o.tls;
  const port = await listenClientPort({
    host: o.host,
    port: o.port,
    // As etcd: a trusted CA requires every client to present a certificate it signed.
    tls: t === undefined ? undefined : { cert: t.cert, key: t.key, ca: t.ca, requestCert: t.ca !== undefined, rejectUnauthorized: t.ca !== undefined },
    http2: (socket, head, _secure, onHandshake) => {
      onHandshake();
      const up = u === undefined ? net.connect({ host, port: etcdPort, noDelay: true }) : tls.connect({ host, port: etcdPort, ca: u.ca, cert: u.cert, key: u.key, ALPNProtocols: ['h2'] });
      passThrough(socket, head, up, new ConnectionTap((path, headers) => guarded(o.tap(path, headers)), o.unread, o.maxMessageBytes), sockets);
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
      for (const s of sockets) s.destroy();
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

/**
 * One client connection and its connection to etcd: bytes go on first (pipe: backpressure end to end, so a
 * client that does not read slows etcd's writes to it as without the shadow), then the tap reads a copy.
 * Either side closing or failing closes both, as a dropped connection would.
 */
function passThrough(down: Duplex, head: Buffer | undefined, up: net.Socket, tap: ConnectionTap, sockets: Set<Duplex>): void {
  sockets.add(down);
  sockets.add(up);
  // Each side's writes go out as they come, as etcd's and its client's own do: with Nagle's algorithm a small
  // write waits for the peer's delayed acknowledgement (tens of milliseconds) behind an unacknowledged one.
  if (down instanceof net.Socket) down.setNoDelay(true);
  up.setNoDelay(true);
  // The bytes read to tell the protocol go back into the paused socket, to flow on first.
  if (head !== undefined) {
    down.pause();
    down.unshift(head);
  }
  down.pipe(up);
  up.pipe(down);
  // A request is read as soon as it went on (after the write to etcd, so not in its way): the shadow must know
  // a write is in flight before its own watch on etcd can bring the revision the write makes (follower.ts).
  // Read on a later turn, etcd's event came first now and then, and the simulator applied the write twice.
  down.on('data', (chunk: Buffer) => tap.fromClient(chunk));
  up.on('data', (chunk: Buffer) => later(() => tap.fromServer(chunk)));
  let closed = false;
  const close = (why: string): void => {
    if (closed) return;
    closed = true;
    sockets.delete(down);
    sockets.delete(up);
    down.destroy();
    up.destroy();
    later(() => tap.close(why));
  };
  down.on('close', () => close('closed by the client'));
  up.on('close', () => close('reset by etcd'));
  down.on('error', () => close('closed by the client'));
  up.on('error', () => close('reset by etcd'));
}

/** `host:port` (an IPv6 host in brackets) as net.connect takes it. */
function hostPort(address: string): { host: string; port: number } {
  const url = new URL(`http://${address}`);
  return { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(url.port || 2379) };
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
      } catch {
        broken = true;
        call.onUntapped('not decodable');
      }
    };
  return { path: call.path, headers: call.headers, onRequest: safe(call.onRequest), onResponse: safe(call.onResponse), onEnd: call.onEnd, onUntapped: call.onUntapped };
}
