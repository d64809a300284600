/**
 * One client port for gRPC and HTTP, as etcd serves both on its client URL (cmux in front of grpc-go and
 * Go's http.Server). Our own net.Server accepts every connection and hands it on:
 *
 * - plaintext: the first bytes decide, as etcd 3.4's cmux matchers do. HTTP/2's prior-knowledge preface
 *   (`PRI * HTTP/2.0...`), all 24 octets of it, goes to the HTTP/2 side (`http2`: the gRPC door; every h2c
 *   stream there is gRPC's, as in etcd 3.4, whose cmux sends all HTTP/2 to grpc-go); a first line that is an
 *   HTTP/1 request line goes to a node:http server (as etcd's cmux sends it to Go's http); anything else is
 *   closed unanswered, as cmux closes a connection no matcher takes. The bytes read to decide go to their new
 *   owner with the socket.
 * - TLS: the handshake is ours (node:tls, ALPN offering h2 and http/1.1, as Go's TLS server of etcd's
 *   client port); a connection that negotiates h2 goes to the HTTP/2 side, marked secure (there etcd answers a
 *   request that is not gRPC with its HTTP handler), any other to the node:http server, as Go's TLS server
 *   does.
 *
 * A connection has a deadline from accept to the end of its handshake (grpc-go's ConnectionTimeout, 120 s by
 * default): the TLS handshake, the bytes that tell the protocol and, for HTTP/2, the client preface and its
 * SETTINGS frame. A connection still short of that then is closed — grpc-go closes a gRPC connection so;
 * etcd's cmux and its TLS HTTP/2 server have no such deadline, and here every connection gets it, since a
 * half-open connection serves nobody. HTTP/1.1 is node:http's from the moment it is known, behind the rules
 * of Go's own server (go_server.ts).
 */
import * as http from 'node:http';
import * as net from 'node:net';
import * as tls from 'node:tls';
import type { Duplex } from 'node:stream';
import { afterHostTime, hostNextTurn, hostNow } from '../sim/index.js';
import type { HttpRequest, HttpResponse } from './gateway.js';
import { HandshakeDeadlines, type HostTimers } from './handshake_deadlines.js';
import { createGoHttpServer } from './go_server.js';

export type { HostTimers } from './handshake_deadlines.js';

/** HTTP/2's connection preface (RFC 9113 §3.4). */
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** The TLS side of a client port: its certificate and key, and how client certificates are asked for. */
export type TlsServerOptions = Pick<tls.TlsOptions, 'cert' | 'key' | 'ca' | 'ciphers' | 'minVersion' | 'maxVersion' | 'requestCert' | 'rejectUnauthorized'> & {
  /** Client certificates (serial numbers, upper-case hex; '*': all) whose connections are dropped (etcd's --client-crl-file). */
  readonly revokedSerials?: ReadonlySet<string> | undefined;
};

export interface ClientPortOptions {
  readonly host: string;
  readonly port: number;
  /** Serve TLS with these options (undefined: plaintext). */
  readonly tls: TlsServerOptions | undefined;
  /**
   * Takes an HTTP/2 connection: the socket (a TLSSocket over TLS), the bytes already read from it (the
   * preface so far, in plaintext), whether it is secure, and what to call once the client's preface and
   * SETTINGS frame arrived (the handshake deadline ends).
   */
  readonly http2: (socket: Duplex, head: Buffer | undefined, secure: boolean, onHandshake: () => void) => void;
  /** Answers an HTTP/1.1 request. */
  readonly handler: (req: HttpRequest, res: HttpResponse) => void;
  /** Time from accept by which a connection's handshake must be done (see the top of this file). Default 120 s. */
  readonly handshakeTimeoutMs?: number | undefined;
  /** Host-time timers for the port's deadlines (default afterHostTime and hostNow); a test passes a virtual clock's. */
  readonly timers?: HostTimers | undefined;
}

/** grpc-go's default ConnectionTimeout: the handshake of a new connection must be done within it. */
export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 120_000;

export interface ClientPort {
  /** The bound port. */
  readonly port: number;
  /** Destroys every connection accepted on this port (a stopping etcd drops them). */
  dropConnections(): void;
  /** Stops accepting connections. */
  close(): Promise<void>;
  /**
   * Stops listening and resets every connection, as a killed process's port does (new connections are
   * refused); `listen()` binds the same port again. Used for a crashed cluster member (serve_cluster.ts).
   */
  refuse(): Promise<void>;
  /** Listens again on the bound port after refuse(); rejects with the listen error (EADDRINUSE, ...). */
  listen(): Promise<void>;
}

/** Binds the client port; rejects with the listen error (EADDRINUSE, ...) as net reports it. */
export async function listenClientPort(opts: ClientPortOptions): Promise<ClientPort> {
  // Made at the first HTTP/1.1 connection: a member whose clients all speak gRPC (etcdctl, every client
  // library) never makes node:http's server (~5 ms of CPU the etcd command's start-up snapshot cannot hold).
  let httpServer: http.Server | undefined;
  const http1 = (): http.Server => (httpServer ??= createGoHttpServer(opts.handler));
  const sockets = new Set<net.Socket>();
  const deadlines = new HandshakeDeadlines<net.Socket>(opts.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS, opts.timers ?? { after: afterHostTime, now: hostNow });
  // A TLSSocket is known only once its handshake is done: its TCP socket (whose deadline it is) is found by
  // the connection's remote address and port, the same on both.
  const tcpOfTls = new Map<string, net.Socket>();
  const connKey = (s: net.Socket): string => `${s.remoteAddress}|${s.remotePort}`;
  // A TLS port's sockets are all TLSSockets, a plain one's none (asking `instanceof tls.TLSSocket` would load
  // node:tls on a plain port's first connection).
  const tcpOf = (s: net.Socket): net.Socket | undefined => (tlsServer === undefined ? s : tcpOfTls.get(connKey(s)));
  const handshaken = (socket: net.Socket): void => {
    const tcp = tcpOf(socket);
    if (tcp !== undefined) deadlines.done(tcp);
  };
  const toHttp2 = (socket: net.Socket, head: Buffer | undefined, secure: boolean): void => {
    opts.http2(socket, head, secure, () => handshaken(socket));
  };
  const toHttp1 = (socket: net.Socket): void => {
    handshaken(socket);
    // node:http's own server accepts its sockets half-open (its net.Server's allowHalfOpen), and answers a peer
    // that sent FIN itself; ours are not, so a write after the FIN would fail and be a second error (an EPIPE
    // made, its stack formatted, per connection). Go's server writes that answer too (400 for a cut request).
    socket.allowHalfOpen = true;
    http1().emit('connection', socket);
  };
  // Shared by every connection (this: its TCP socket), rather than a closure each.
  function forget(this: net.Socket): void {
    sockets.delete(this);
    deadlines.done(this);
    if (tlsServer !== undefined) tcpOfTls.delete(connKey(this));
  }
  function destroyOnError(this: net.Socket): void {
    this.destroy();
  }
  const { firstBytes, tlsHttp1 } = firstBytesListeners((socket, head) => toHttp2(socket, head, false), toHttp1, handshaken);
  const tlsServer =
    opts.tls === undefined
      ? undefined
      : tls.createServer({ ...opts.tls, ALPNProtocols: ['h2', 'http/1.1'] }, (socket: tls.TLSSocket) => {
          if (revoked(socket, opts.tls?.revokedSerials)) {
            socket.destroy();
            return;
          }
          if (socket.alpnProtocol === 'h2') toHttp2(socket, undefined, true);
          else tlsHttp1(socket);
        });
  // A failed handshake (no client certificate, an untrusted one) just closes that connection.
  tlsServer?.on('tlsClientError', (_err, socket) => socket.destroy());

  const server = net.createServer((socket) => {
    sockets.add(socket);
    deadlines.add(socket);
    socket.on('close', forget); // 'close' comes once: no once() wrapper made per connection
    socket.on('error', destroyOnError);
    if (tlsServer !== undefined) {
      tcpOfTls.set(connKey(socket), socket);
      tlsServer.emit('connection', socket);
      return;
    }
    socket.on('data', firstBytes);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // Go's net.Listen binds one address of a host name, an IPv4 one first: etcd on localhost listens on 127.0.0.1.
    server.listen({ host: opts.host === 'localhost' ? '127.0.0.1' : opts.host, port: opts.port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const a = server.address();
  const port = typeof a === 'object' && a !== null ? a.port : opts.port;
  const listenHost = opts.host === 'localhost' ? '127.0.0.1' : opts.host;

  return {
    port,
    dropConnections() {
      for (const s of sockets) s.destroy();
      httpServer?.closeAllConnections();
    },
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
        deadlines.clear();
      });
    },
    refuse() {
      if (!server.listening) return Promise.resolve();
      // The listener closes now (new connections are refused at once); the open connections go on the next
      // turn, so that an answer already written on one (the crash lever's own, on this port) leaves first.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      const dropped = new Promise<void>((resolve) =>
        hostNextTurn(() => {
          deadlines.clear();
          for (const s of sockets) s.destroy();
          httpServer?.closeAllConnections();
          resolve();
        }),
      );
      return Promise.all([closed, dropped]).then(() => undefined);
    },
    listen() {
      return new Promise<void>((resolve, reject) => {
        if (server.listening) return resolve();
        server.once('error', reject);
        server.listen({ host: listenHost, port }, () => {
          server.off('error', reject);
          resolve();
        });
      });
    },
  };
}

/** How much of a connection cmux reads to match HTTP/1 (its maxHTTPRead): the first line must end within it. */
const FIRST_LINE_MAX = 4096;
const SP = 0x20;
const LF = 0x0a;
const CR = 0x0d;
const HTTP_SLASH = Buffer.from('HTTP/', 'latin1');
const PRI_SP = Buffer.from('PRI ', 'latin1');
const PUT_SP = Buffer.from('PUT ', 'latin1');
/**
 * The methods llhttp reads (node:http's METHODS); any other it refuses. Made at the first connection's first
 * line, not when this module loads: the etcd command's start-up snapshot is built with node:http untouched.
 */
let knownMethods: ReadonlySet<string> | undefined;
const isKnownMethod = (method: string): boolean => (knownMethods ??= new Set(http.METHODS)).has(method);
/** RFC 9110's token, what Go's validMethod takes as a method. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * cmux's HTTP1 matcher, which etcd 3.4's plaintext client port applies before Go's http.Server sees a
 * connection: the first line (its CR before the LF dropped once) split at its first two spaces into method,
 * request URI and protocol, the protocol read as Go's ParseHTTPVersion reads it — exactly `HTTP/d.d` — with
 * major version 1. etcd 3.4.23 closed unanswered "GARBAGE", "GET /", "GET / HTTP/2.0", "GET / x HTTP/1.1",
 * "GET /a HTTP/1.10", a lower-case "http/1.1", a leading empty line; it answered "GET /a HTTP/1.9".
 * Returns where the protocol's minor digit is, or -1 when the line is no HTTP/1 request line.
 */
function http1MinorAt(line: Buffer): number {
  const end = line.length > 0 && line[line.length - 1] === CR ? line.length - 1 : line.length;
  const s1 = line.indexOf(SP);
  const s2 = s1 < 0 ? -1 : line.indexOf(SP, s1 + 1);
  if (s2 < 0 || s2 >= end) return -1;
  const v = s2 + 1;
  const minor = line[v + 7];
  const ok = end - v === 8 && line.compare(HTTP_SLASH, 0, 5, v, v + 5) === 0 && line[v + 5] === 0x31 && line[v + 6] === 0x2e && minor !== undefined && minor >= 0x30 && minor <= 0x39;
  return ok ? v + 7 : -1;
}

type DataListener = (this: net.Socket, chunk: Buffer) => void;

/**
 * A port's listeners of a connection's first bytes, plaintext and HTTP/1.1 over TLS (known by its ALPN): read until they tell the
 * protocol (firstLine), then the socket goes to its owner — `toHttp2` with the bytes read, or `toHttp1`, whose
 * 'data' listener then gets them. One listener for every connection (this: its socket), no closures made per
 * connection: under slowloris a connection's opening is this port's whole cost over node:http's own (issue
 * 32's tenth pass). The bytes of a first line still under way wait in a WeakMap (rare: a first read nearly
 * always holds the line).
 */
function firstBytesListeners(
  toHttp2: (socket: net.Socket, head: Buffer) => void,
  toHttp1: (socket: net.Socket) => void,
  handshaken: (socket: net.Socket) => void,
): { firstBytes: DataListener; tlsHttp1: (socket: net.Socket) => void } {
  const held = new WeakMap<net.Socket, Buffer>();
  const firstRead = (socket: net.Socket, chunk: Buffer, http2: boolean, listener: DataListener): FirstBytes => {
    const before = held.get(socket);
    const seen = before === undefined ? chunk : Buffer.concat([before, chunk]);
    const got = firstLine(seen, http2);
    if (got === WAIT) held.set(socket, seen);
    else {
      if (before !== undefined) held.delete(socket);
      socket.removeListener('data', listener);
    }
    return got;
  };
  function firstBytes(this: net.Socket, chunk: Buffer): void {
    const got = firstRead(this, chunk, true, firstBytes);
    if (got === WAIT) return;
    if (got.to === 'refuse') return void this.destroy();
    if (got.to === 'http2') return toHttp2(this, got.bytes);
    // node:http reads the socket natively from here on (its parser consumes the handle); the bytes read so
    // far go to the 'data' listener it has just added, before any later read can. Unshifting them instead
    // (pause, unshift, resume) sent them through the stream's buffer and a tick: a third of what this port
    // added per connection to node:http's own cost under slowloris (issue 32's fifth pass).
    toHttp1(this);
    this.emit('data', got.bytes);
  }
  function firstTlsBytes(this: net.Socket, chunk: Buffer): void {
    const got = firstRead(this, chunk, false, firstTlsBytes);
    if (got === WAIT) return;
    // A line that is no HTTP/1 request line goes on to node:http too (its 400 is Go's).
    toHttp1(this);
    this.emit('data', got.bytes);
  }
  // HTTP/1.1 over TLS: Go's server reads it with no cmux in front, and the handshake is over (the first line
  // has no deadline: Go's TLS server has none). The first line's rewrites still apply.
  const tlsHttp1 = (socket: net.Socket): void => {
    handshaken(socket);
    socket.on('data', firstTlsBytes);
  };
  return { firstBytes, tlsHttp1 };
}

/** What a connection's first bytes tell: wait for more, or whose it is, with the bytes its owner gets. */
const WAIT = 0;
type FirstBytes = typeof WAIT | { readonly to: 'http2' | 'http1' | 'refuse'; readonly bytes: Buffer };

/**
 * Reads a connection's first bytes (all read so far) as etcd's cmux does: HTTP/2's whole preface goes to
 * `http2` (when `http2`), an HTTP/1 request line to `http1` — rewritten as below — and anything else is
 * refused (no matcher of etcd's cmux would take it); WAIT while the bytes could still be the preface, or a
 * first line still under way within cmux's read. Without `http2` (an HTTP/1.1 connection over TLS, known by
 * its ALPN) only the first line is read.
 */
function firstLine(seen: Buffer, http2: boolean): FirstBytes {
  const n = Math.min(seen.length, PREFACE.length);
  const isH2 = http2 && seen.compare(PREFACE, 0, n, 0, n) === 0;
  // Wait while the bytes so far could still be the preface: a connection stalled inside its preface holds
  // only these bytes, no HTTP/2 connection state.
  if (isH2) return n < PREFACE.length ? WAIT : { to: 'http2', bytes: seen };
  const lf = seen.indexOf(LF);
  // A first line still under way within cmux's read: wait for its end.
  if (lf < 0 && seen.length < FIRST_LINE_MAX) return WAIT;
  const minorAt = lf < 0 || lf >= FIRST_LINE_MAX ? -1 : http1MinorAt(seen.subarray(0, lf));
  if (minorAt < 0) return { to: 'refuse', bytes: seen };
  // Go serves any HTTP/1.d at least 1.1 as 1.1; node:http's parser refuses minor versions past 1.
  if (seen[minorAt]! > 0x31) seen[minorAt] = 0x31;
  // A PRI request line that is no HTTP/2 preface: llhttp takes PRI for the start of one and waits for the
  // rest forever, where Go serves PRI as any method no handler allows. PUT, which none of etcd's `*` or
  // routes takes from a PRI either, gets the same answers (405 with Allow, 404, `*`'s 400). So does a
  // method llhttp does not know (a lower-case `get`, `FOO`), which llhttp refuses with 400 where Go, for
  // which a method is any token, hands it to etcd's handlers (etcd 3.4.23: 405 on /health, 404 elsewhere).
  if (seen.compare(PRI_SP, 0, 4, 0, 4) === 0) PUT_SP.copy(seen, 0);
  else {
    const sp = seen.indexOf(SP);
    const method = seen.toString('latin1', 0, sp);
    if (!isKnownMethod(method) && TOKEN.test(method)) return { to: 'http1', bytes: Buffer.concat([PUT_SP, seen.subarray(sp + 1)]) };
  }
  return { to: 'http1', bytes: seen };
}

/**
 * A certificate serial number as the revoked set holds it: upper-case hex without leading zeros, since a CRL
 * (read by @peculiar/x509 or Go) and Node's peer certificate spell the same number differently.
 */
export function canonicalSerial(hex: string): string {
  return hex.toUpperCase().replace(/^0+(?=.)/, '');
}

/** Whether a client certificate of the connection (its own, or one up its chain) is in `serials` (etcd's checkCRL). */
function revoked(socket: tls.TLSSocket, serials: ReadonlySet<string> | undefined): boolean {
  if (serials === undefined || serials.size === 0) return false;
  // '*': the CRL could not be read, and etcd's listener then drops every connection.
  if (serials.has('*')) return true;
  const seen = new Set<string>();
  for (let c: tls.DetailedPeerCertificate | undefined = socket.getPeerCertificate(true); c !== undefined && c.serialNumber !== undefined && !seen.has(c.fingerprint256); c = c.issuerCertificate) {
    seen.add(c.fingerprint256);
    if (serials.has(canonicalSerial(c.serialNumber))) return true;
  }
  return false;
}
