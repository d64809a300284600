/**
 * One client port for gRPC and HTTP, as etcd serves both on its client URL (cmux in front of grpc-go and
 * Go's http.Server). Our own net.Server accepts every connection and hands it on:
 *
 * - plaintext: the first bytes decide. HTTP/2's prior-knowledge preface (`PRI * HTTP/2.0...`) goes to
 *   grpc-js's http2 server (every h2c stream there is gRPC's, as in etcd 3.4, whose cmux sends all HTTP/2
 *   to grpc-go), anything else to a node:http server (HTTP/1.1, as etcd's cmux sends it to Go's http).
 *   The bytes read to decide are put back (unshift) before the owner reads the socket; Node's http2
 *   session takes bytes already buffered on a socket.
 * - TLS: every connection goes to grpc-js's https2 server, whose ALPN also offers `http/1.1`; a
 *   connection that negotiates HTTP/1.1 (or no protocol) is handed to the node:http server after the
 *   handshake, as Go's TLS server does, and on h2 a request that is not gRPC is answered by the HTTP
 *   handler, as etcd's secure listener (grpcHandlerFunc) does.
 *
 * grpc-js is given the connections through its connection injector (grpc-js 1.10+; here its variant that
 * registers the bound port in channelz, as bindAsync does); the http2 server it creates for it is found in
 * its `http2Servers` map (the field the gRPC front door reads too).
 */
import * as http from 'node:http';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import type { TLSSocket } from 'node:tls';
import type * as grpc from '@grpc/grpc-js';
import type { HttpRequest, HttpResponse } from './gateway.js';

type AnyHttp2Server = http2.Http2Server | http2.Http2SecureServer;

/** HTTP/2's connection preface (RFC 9113 §3.4). */
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export interface ClientPortOptions {
  readonly host: string;
  readonly port: number;
  readonly grpcServer: grpc.Server;
  /** The gRPC credentials; with TLS they are told to offer HTTP/1.1 by ALPN as well. */
  readonly credentials: grpc.ServerCredentials;
  readonly tls: boolean;
  /** Answers an HTTP request (HTTP/1.1, or non-gRPC HTTP/2 over TLS). */
  readonly handler: (req: HttpRequest, res: HttpResponse) => void;
}

export interface ClientPort {
  /** The bound port. */
  readonly port: number;
  /** grpc-js's http2 server that gets this port's HTTP/2 connections. */
  readonly http2Server: AnyHttp2Server;
  /**
   * Over TLS, routes HTTP/2 requests that are not gRPC to the HTTP handler. Call after every other
   * 'stream' listener is in place (after the gRPC front door): it wraps them.
   */
  serveHttpOverH2(): void;
  /** Destroys every connection accepted on this port (a stopping etcd drops them). */
  dropConnections(): void;
  /** Stops accepting connections. */
  close(): Promise<void>;
  /**
   * Stops listening and resets every connection, as a killed process's port does (new connections are
   * refused); `listen()` binds the same port again. Used for a crashed cluster member (cluster_serve.ts).
   */
  refuse(): Promise<void>;
  /** Listens again on the bound port after refuse(); rejects with the listen error (EADDRINUSE, ...). */
  listen(): Promise<void>;
}

/** Binds the client port; rejects with the listen error (EADDRINUSE, ...) as net reports it. */
export async function listenClientPort(opts: ClientPortOptions): Promise<ClientPort> {
  const credentials = opts.credentials;
  if (opts.tls) {
    const base = credentials._getConstructorOptions.bind(credentials);
    credentials._getConstructorOptions = () => {
      const o = base();
      return o === null ? null : { ...o, allowHTTP1: true };
    };
  }
  // Go's http.Server as etcd configures it: no idle, request or body timeouts (a watch's request body may stay open).
  const httpServer = http.createServer({ keepAliveTimeout: 0, requestTimeout: 0 }, opts.handler);
  const sockets = new Set<net.Socket>();
  // grpc-js's http2 server, made once the port is bound (channelz lists it under the bound address).
  let h2: AnyHttp2Server | undefined;

  const server = net.createServer((socket) => {
    const target = h2;
    if (target === undefined) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    if (opts.tls) {
      target.emit('connection', socket);
      return;
    }
    let seen: Buffer | undefined;
    const onData = (chunk: Buffer): void => {
      seen = seen === undefined ? chunk : Buffer.concat([seen, chunk]);
      const n = Math.min(seen.length, PREFACE.length);
      const isH2 = seen.subarray(0, n).equals(PREFACE.subarray(0, n));
      // Wait while the bytes so far could still be the preface but are too few to tell it from "PUT ".
      if (isH2 && n < 4) return;
      socket.removeListener('data', onData);
      socket.pause();
      socket.unshift(seen);
      if (isH2) {
        target.emit('connection', socket);
      } else {
        httpServer.emit('connection', socket);
        socket.resume();
      }
    };
    socket.on('data', onData);
  });

  const grpcHttp2 = await new Promise<AnyHttp2Server>((resolve, reject) => {
    server.once('error', reject);
    // Go's net.Listen binds one address of a host name, an IPv4 one first: etcd on localhost listens on 127.0.0.1.
    server.listen({ host: opts.host === 'localhost' ? '127.0.0.1' : opts.host, port: opts.port }, () => {
      server.off('error', reject);
      const a = server.address();
      const bound = typeof a === 'object' && a !== null ? { host: a.address, port: a.port } : { host: opts.host, port: opts.port };
      const made = injectorServer(opts.grpcServer, credentials, bound);
      if (opts.tls) divertHttp1(made as http2.Http2SecureServer, httpServer);
      h2 = made;
      resolve(made);
    });
  });
  const a = server.address();
  const port = typeof a === 'object' && a !== null ? a.port : opts.port;
  const listenHost = opts.host === 'localhost' ? '127.0.0.1' : opts.host;

  return {
    port,
    http2Server: grpcHttp2,
    serveHttpOverH2() {
      if (opts.tls) divertNonGrpcStreams(grpcHttp2, opts.handler);
    },
    dropConnections() {
      for (const s of sockets) s.destroy();
      httpServer.closeAllConnections();
    },
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
    },
    refuse() {
      if (!server.listening) return Promise.resolve();
      // The listener closes now (new connections are refused at once); the open connections go on the next
      // turn, so that an answer already written on one (the crash lever's own, on this port) leaves first.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      const dropped = new Promise<void>((resolve) =>
        setImmediate(() => {
          for (const s of sockets) s.destroy();
          httpServer.closeAllConnections();
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

/** The channelz hooks grpc-js gives servers that listen on their own (protected, for subclasses such as its xDS server). */
interface ChannelzListener {
  experimentalRegisterListenerToChannelz(address: { host: string; port: number }): unknown;
  experimentalCreateConnectionInjectorWithChannelzRef(credentials: grpc.ServerCredentials, ref: unknown, ownsChannelzRef: boolean): unknown;
}

/**
 * grpc-js's http2 server behind a new connection injector, registered in channelz as a listener on
 * `address` (as bindAsync registers the ports it binds), so channelz shows the server on its port.
 */
function injectorServer(grpcServer: grpc.Server, credentials: grpc.ServerCredentials, address: { host: string; port: number }): AnyHttp2Server {
  const before = new Set(http2ServersOf(grpcServer));
  const hooks = grpcServer as unknown as ChannelzListener;
  hooks.experimentalCreateConnectionInjectorWithChannelzRef(credentials, hooks.experimentalRegisterListenerToChannelz(address), true);
  const created = http2ServersOf(grpcServer).filter((s) => !before.has(s));
  if (created.length !== 1) throw new Error('etcdsim: could not find the http2 server of grpc-js connection injector');
  return created[0]!;
}

function http2ServersOf(server: grpc.Server): AnyHttp2Server[] {
  const map = (server as unknown as { http2Servers?: unknown }).http2Servers;
  if (!(map instanceof Map)) throw new Error('etcdsim: this @grpc/grpc-js has no Server.http2Servers map (needs grpc-js 1.14)');
  return [...(map.keys() as IterableIterator<AnyHttp2Server>)];
}

/**
 * Node's https2 server handles a connection in its first 'secureConnection' listener; a connection that
 * negotiated HTTP/1.1 (or nothing) goes to our HTTP server instead, every other one to that listener.
 */
function divertHttp1(h2: http2.Http2SecureServer, httpServer: http.Server): void {
  const listeners = h2.listeners('secureConnection') as Array<(socket: TLSSocket) => void>;
  const nodeListener = listeners[0];
  if (nodeListener === undefined) throw new Error("etcdsim: no 'secureConnection' listener on the https2 server");
  h2.removeListener('secureConnection', nodeListener);
  h2.prependListener('secureConnection', (socket: TLSSocket) => {
    if (socket.alpnProtocol === 'h2') nodeListener.call(h2, socket);
    else httpServer.emit('connection', socket);
  });
}

type StreamListener = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, flags: number, rawHeaders: string[]) => void;

/** Wraps the server's 'stream' listeners: an HTTP/2 request that is not gRPC goes to the HTTP handler. */
function divertNonGrpcStreams(h2: AnyHttp2Server, handler: (req: HttpRequest, res: HttpResponse) => void): void {
  const listeners = h2.listeners('stream') as StreamListener[];
  for (const l of listeners) h2.removeListener('stream', l);
  h2.on('stream', (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, flags: number, rawHeaders: string[]) => {
    const ct = headers['content-type'];
    if (typeof ct === 'string' && ct.startsWith('application/grpc')) {
      for (const l of listeners) l.call(h2, stream, headers, flags, rawHeaders);
      return;
    }
    stream.on('error', () => stream.destroy());
    const req = new http2.Http2ServerRequest(stream, headers, {}, rawHeaders);
    const res = new http2.Http2ServerResponse(stream);
    handler(req, res);
  });
}
