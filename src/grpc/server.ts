/**
 * Server mode: etcd's v3 gRPC API on a real port over one member, as etcd's v3rpc serves it. This file is
 * the server object, which owns the lifecycle — the port (gRPC and etcd's HTTP endpoints on one listener,
 * TLS), the door (door.ts: grpc-go's transport rules, keepalive policy, receive limit), the member (a new
 * EtcdServer, or a cluster member attached by serve_cluster.ts) and close(). What it serves is elsewhere,
 * one file per service as etcd's v3rpc has it (kv_server.ts, watch_server.ts, lease_server.ts,
 * maintenance_server.ts, cluster_server.ts, auth_server.ts, lock_server.ts, election_server.ts), put
 * together by method_table.ts; how a call runs — decoding, the caller, etcd's token wait, streams — is
 * handlers.ts, and how a request is decoded request_decoding.ts. Grpc-js and node:http2 cost most of a
 * request's CPU, so the door is our own on our own HTTP/2 (src/h2; docs/performance.md).
 *
 * Every method answers in proto-loader's message form (keepCase, longs and enums as strings, defaults,
 * oneofs; KV's and Watch's responses by codec.ts), so the services' answers go on the wire unchanged and any
 * etcd client — etcdctl, etcd3, Go's clientv3, jetcd — talks to the simulator as to an etcd member. Wire
 * errors are etcd's (docs/observed-etcd-3.4.23.md, "Wire errors"): the door answers what grpc-go answers
 * before a method runs; close() drops the connections as a stopping etcd does, so open streams end
 * UNAVAILABLE on the client.
 */
import { isIP } from 'node:net';
import { EtcdServer, type EtcdServerOptions, type EtcdServerView, type MemberView, serverCompat } from '../server/index.js';
import { DEFAULT_MAX_REQUEST_BYTES } from '../mvcc/index.js';
import { GrpcCode, DEFAULT_ETCD_VERSION, type EtcdVersion } from '../etcd/index.js';
import { hostMicrotask, RealClock, type Clock } from '../sim/index.js';
import {
  canonicalSerial,
  createClientHttp,
  listenClientPort,
  serveHttpOverH2,
  type ClientHttp,
  type ClientPort,
  type HttpRequest,
  type HttpResponse,
  type TlsServerOptions,
} from '../http/index.js';
import { contextOf } from './caller.js';
import { createGrpcDoor, type GrpcDoor } from './door.js';
import { Handlers, type StreamEndInfo } from './handlers.js';
import { methodTable } from './method_table.js';
import { requestDecodingOf } from './request_decoding.js';
import type { AttachedMember, PortSwitch } from './attached_member.js';

/** etcd's default --max-request-bytes (1.5 MiB, defined by mvcc's validation) and the gRPC overhead etcd adds to its receive limit. */
export { DEFAULT_MAX_REQUEST_BYTES };
export const GRPC_OVERHEAD_BYTES = 512 * 1024;

/** @public */
export interface TlsOptions {
  /** PEM server certificate chain. */
  readonly cert: string | Buffer;
  /** PEM private key. */
  readonly key: string | Buffer;
  /**
   * PEM CA bundle (etcd's --trusted-ca-file). As in etcd (3.4 through 3.7), giving it alone already makes
   * clients present a certificate it signed: a client without one fails the TLS handshake.
   */
  readonly ca?: string | Buffer | undefined;
  /**
   * etcd's --client-cert-auth: require a client certificate even without `ca` (then verified against the
   * system's roots, as etcd verifies against Go's), and, while auth is enabled, take a call without a token
   * as made by the user its certificate's Common Name names (EtcdServerOptions.clientCertAuth). With `ca`
   * alone the certificate is required but its CN is ignored, as in etcd.
   */
  readonly clientCertAuth?: boolean | undefined;
  /**
   * etcd's --client-crl-file, as the serial numbers (hex) its CRL revokes: a connection whose client
   * certificates include one is dropped after the handshake, as etcd's listener drops it ('*': every one).
   */
  readonly revokedSerials?: readonly string[] | undefined;
  /** etcd's --cipher-suites, as an OpenSSL cipher list (default: Node's). */
  readonly ciphers?: string | undefined;
  /** etcd's --tls-min-version / --tls-max-version (default: TLS 1.2 up to TLS 1.3, as etcd). */
  readonly minVersion?: 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3' | undefined;
  readonly maxVersion?: 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3' | undefined;
}

/** @public */
export interface ServeOptions extends Omit<EtcdServerOptions, 'clock' | 'clientCertAuth'> {
  /** Interface to bind (default 127.0.0.1). Anything but loopback needs `allowNonLoopback`. */
  readonly host?: string | undefined;
  /** Port (default 2379; 0 picks a free port). */
  readonly port?: number | undefined;
  readonly allowNonLoopback?: boolean | undefined;
  /** Time source (default: the wall clock, accelerated by `clockSpeed`). Pass a VirtualClock to drive time from a test. */
  readonly clock?: Clock | undefined;
  /** Simulated seconds per wall-clock second (default 1). Ignored when `clock` is given. */
  readonly clockSpeed?: number | undefined;
  readonly tls?: TlsOptions | undefined;
  /**
   * etcd's --grpc-keepalive-min-time in ms (default 5000): a client on a plain connection that pings more
   * often sees its connection end (GOAWAY ENHANCE_YOUR_CALM "too_many_pings"), as grpc-go enforces it.
   */
  readonly grpcKeepAliveMinTimeMs?: number | undefined;
  /**
   * etcd's --max-concurrent-streams: the streams one client connection may have open (HTTP/2's
   * SETTINGS_MAX_CONCURRENT_STREAMS); the gRPC gateway's calls share one such connection, as etcd's gateway
   * dials the member once. Default: no limit.
   */
  readonly maxConcurrentStreams?: number | undefined;
}

/** etcd's default --grpc-keepalive-min-time. */
export const DEFAULT_GRPC_KEEPALIVE_MIN_TIME_MS = 5000;

export type { StreamMethod, StreamEndReason, StreamEndInfo } from './handlers.js';

/** @public */
export interface ServeHandle {
  /** `http://host:port` (or https with TLS): what to give a client as its endpoint. */
  readonly endpoint: string;
  /** `host:port`, for clients that take an address. */
  readonly address: string;
  readonly port: number;
  /** The simulated member: its clock, store, lessor, watchable store and services (fault hooks: services.watch.calls()). */
  readonly server: EtcdServerView;
  /** Watch and keep-alive calls currently open over the network. */
  readonly openStreams: number;
  /**
   * HTTP/2 streams open on the port's gRPC connections: calls not yet answered or still being answered
   * (every one ends once its client or the server is done with it; a leak would show here).
   */
  readonly openHttp2Streams: number;
  /** Calls `listener` whenever a stream call ends (after its watchers / keep-alives are released); returns an unsubscribe. */
  onStreamEnd(listener: (info: StreamEndInfo) => void): () => void;
  /** Ends every open stream, stops listening and stops the member's timers. Idempotent. */
  close(): Promise<void>;
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

/** Whether `host` names only the local machine (localhost, 127.0.0.0/8, ::1). */
export function isLoopback(host: string): boolean {
  if (LOOPBACK_NAMES.has(host)) return true;
  return isIP(host) === 4 && host.startsWith('127.');
}

/** Starts a simulated etcd member on a gRPC port; resolves once it accepts connections. @public */
export function serve(opts: ServeOptions = {}): Promise<ServeHandle> {
  return serveMember(opts, undefined);
}

/** @internal How serveMember builds its member from the options serve() takes (a new EtcdServer by default). */
export type MakeServer = (opts: EtcdServerOptions) => EtcdServer;

/**
 * @internal serve(), or with `attach` a member made elsewhere (a cluster member: serve_cluster.ts) instead of
 * a new EtcdServer: `attach` is called once the port is bound, with its endpoint; the member's options then
 * come from its maker, and close() stops only the port. `make` builds the EtcdServer serve() serves (a member
 * on a data dir is restored and kept there: src/server/kept_member.ts); a member it fails to make unbinds the port.
 */
export async function serveMember(
  opts: ServeOptions,
  attach: ((endpoint: string, port: PortSwitch) => Promise<AttachedMember>) | undefined,
  make: MakeServer = (o) => new EtcdServer(o),
): Promise<ServeHandle> {
  const host = opts.host ?? '127.0.0.1';
  const port = opts.port ?? 2379;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new RangeError(`serve: port must be 0..65535, got ${port}`);
  if (!isLoopback(host) && opts.allowNonLoopback !== true) {
    throw new Error(`serve: refusing to bind ${host}: not a loopback address (allow it explicitly with allowNonLoopback / --allow-non-loopback)`);
  }
  const server = new GrpcServer(opts);
  await server.start(host, port, attach, make);
  return server;
}

/**
 * @internal The EtcdServer behind `handle.server`, with the wiring EtcdServerView leaves out of the published
 * types (the delivery queue, the applied-index waits, TLS settings): for the floors above and the tests that
 * reach into the member, as serverOf is for `sim.server`.
 */
export function servedServerOf(handle: ServeHandle): EtcdServer {
  if (!(handle instanceof GrpcServer)) throw new TypeError('servedServerOf: not a handle made by serve()');
  return handle.server;
}

/** One client port serving one member: the port, the door, the member and their close, in that order. */
class GrpcServer implements ServeHandle {
  readonly #opts: ServeOptions;
  readonly #clock: Clock;
  readonly #ownClock: boolean;
  readonly #handlers: Handlers;
  readonly #door: GrpcDoor;
  readonly #endListeners = new Set<(info: StreamEndInfo) => void>();
  /** The member this server made (serve()), or undefined when one is attached. */
  #server: EtcdServer | undefined;
  #attached: AttachedMember | undefined;
  #clientPort: ClientPort | undefined;
  #clientHttp: ClientHttp | undefined;
  #endpoint = '';
  #address = '';
  #shuttingDown = false;
  #closing: Promise<void> | undefined;

  constructor(opts: ServeOptions) {
    this.#opts = opts;
    const etcdVersion: EtcdVersion = opts.etcdVersion ?? DEFAULT_ETCD_VERSION;
    this.#ownClock = opts.clock === undefined;
    this.#clock = opts.clock ?? new RealClock({ unref: true, speed: opts.clockSpeed ?? 1 });
    // The certificate is read only when its CN can matter (the member ignores it otherwise anyway).
    const readCommonName = opts.tls?.clientCertAuth === true;
    this.#handlers = new Handlers({
      member: () => this.#member(),
      callContext: (call) => contextOf(call, readCommonName),
      shuttingDown: () => this.#shuttingDown,
      streamUnmarshalPrefix: streamUnmarshalPrefix(etcdVersion),
      streamEnded: (info) => {
        for (const l of [...this.#endListeners]) l(info);
      },
    });
    // Requests are checked as the release's Go decoder checks them (gogo's, or protobuf-go's from 3.7).
    const { methods, services } = methodTable(this.#handlers, requestDecodingOf(etcdVersion, opts.seed));
    const compat = serverCompat(etcdVersion);
    this.#door = createGrpcDoor({
      methods,
      services,
      maxReceiveBytes: (opts.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES) + GRPC_OVERHEAD_BYTES,
      malformedMethodCode: compat.malformedMethodResourceExhausted ? GrpcCode.RESOURCE_EXHAUSTED : GrpcCode.UNIMPLEMENTED,
      headerErrorsAnswered: compat.headerErrorsAnswered,
      keepAliveMinTimeMs: opts.grpcKeepAliveMinTimeMs ?? DEFAULT_GRPC_KEEPALIVE_MIN_TIME_MS,
      maxConcurrentStreams: opts.maxConcurrentStreams,
    });
  }

  /** The member's engine now (a cluster member's crash and restart replace it). */
  #engine(): EtcdServer {
    const s = this.#attached?.server ?? this.#server;
    if (s === undefined) throw new Error('etcdsim: request before the member started');
    return s;
  }

  /** Whom the handlers call: the EtcdServer, or an attached member whose services may answer later. */
  #member(): MemberView {
    return this.#attached?.member ?? this.#engine();
  }

  /** Binds the port, then makes the member (or asks `attach` for it, with the port's endpoint). */
  async start(host: string, port: number, attach: ((endpoint: string, port: PortSwitch) => Promise<AttachedMember>) | undefined, make: MakeServer): Promise<void> {
    const opts = this.#opts;
    const door = this.#door;
    // One port for gRPC and etcd's HTTP endpoints, as etcd's client URL serves both (src/http/port.ts).
    const handler = (req: HttpRequest, res: HttpResponse): void => this.#clientHttp?.handle(req, res);
    const clientPort = await listenClientPort({
      host,
      port,
      tls: opts.tls === undefined ? undefined : tlsServerOptions(opts.tls),
      handler,
      http2: (socket, head, secure, onHandshake) =>
        // Over TLS, etcd's listener answers an HTTP/2 request that is not gRPC with its HTTP handler.
        door.accept(socket, { head, secure, onHandshake, http: secure ? (st, s) => serveHttpOverH2(st, s, handler) : undefined }),
    });
    this.#clientPort = clientPort;
    this.#address = `${isIP(host) === 6 ? `[${host}]` : host}:${clientPort.port}`;
    this.#endpoint = `${opts.tls === undefined ? 'http' : 'https'}://${this.#address}`;

    if (attach !== undefined) {
      try {
        this.#attached = await attach(this.#endpoint, {
          refuse: () => {
            // As close() does: the calls etcd would keep waiting are forgotten. The gRPC connections drop now,
            // before the answers the crash gave their streams go out (a killed etcd sends none: its clients see
            // the connection go); the port's other connections go a turn later (clientPort.refuse).
            door.forgetHeld();
            door.dropConnections();
            return clientPort.refuse();
          },
          listen: () => clientPort.listen(),
        });
      } catch (err) {
        door.dropConnections();
        clientPort.dropConnections();
        await clientPort.close();
        throw err;
      }
      this.#clientHttp = this.#attached.http;
      return;
    }
    const { host: _h, port: _p, allowNonLoopback: _a, clock: _c, clockSpeed: _s, tls: _t, grpcKeepAliveMinTimeMs: _k, maxConcurrentStreams: _m, ...serverOpts } = opts;
    let server: EtcdServer;
    try {
      server = make({
        ...serverOpts,
        clock: this.#clock,
        clientUrls: opts.clientUrls ?? [this.#endpoint],
        clientCertAuth: opts.tls?.clientCertAuth === true,
      });
    } catch (err) {
      clientPort.dropConnections();
      await clientPort.close();
      throw err;
    }
    server.delivery.setScheduler((flush) => hostMicrotask(flush));
    this.#server = server;
    this.#clientHttp = createClientHttp(server, undefined, { maxConcurrentStreams: this.#opts.maxConcurrentStreams });
  }

  get endpoint(): string {
    return this.#endpoint;
  }

  get address(): string {
    return this.#address;
  }

  get port(): number {
    return this.#clientPort?.port ?? 0;
  }

  get server(): EtcdServer {
    return this.#engine();
  }

  get openStreams(): number {
    return this.#handlers.open.size;
  }

  get openHttp2Streams(): number {
    return this.#door.openStreams;
  }

  onStreamEnd(listener: (info: StreamEndInfo) => void): () => void {
    this.#endListeners.add(listener);
    return () => this.#endListeners.delete(listener);
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      // A stopping etcd drops its client connections (observed on 3.4.23: no GOAWAY, no trailers; a client
      // sees UNAVAILABLE — grpc-js: `14 Connection dropped`). So: sockets first, then the calls are
      // released here without answering anyone.
      this.#shuttingDown = true;
      this.#door.dropConnections();
      this.#clientPort?.dropConnections();
      this.#clientHttp?.close();
      this.#door.forgetHeld();
      this.#handlers.release();
      await this.#clientPort?.close();
      this.#server?.delivery.setScheduler(undefined);
      this.#server?.close();
      if (this.#ownClock && this.#clock instanceof RealClock) this.#clock.close();
    })();
    return this.#closing;
  }
}

/**
 * The TLS server options of etcd's client port: its certificate, and client certificates required when a CA
 * is given or --client-cert-auth is on (verified against that CA, or against the system's roots as Go's
 * are); ALPN offers h2 for gRPC and http/1.1 for etcd's HTTP endpoints.
 */
function tlsServerOptions(t: TlsOptions): TlsServerOptions {
  const requireCert = t.ca !== undefined || t.clientCertAuth === true;
  return {
    cert: t.cert,
    key: t.key,
    ...(t.ca === undefined ? {} : { ca: t.ca }),
    ...(t.revokedSerials === undefined ? {} : { revokedSerials: new Set(t.revokedSerials.map(canonicalSerial)) }),
    ...(t.ciphers === undefined ? {} : { ciphers: t.ciphers }),
    ...(t.minVersion === undefined ? {} : { minVersion: t.minVersion }),
    ...(t.maxVersion === undefined ? {} : { maxVersion: t.maxVersion }),
    requestCert: requireCert,
    rejectUnauthorized: requireCert,
  };
}

/**
 * grpc-go's text for a stream request it cannot decode; the colon came with grpc-go 1.53 (etcd 3.5.17 uses
 * 1.59; 3.4.23 as observed, 1.33).
 */
function streamUnmarshalPrefix(v: EtcdVersion): string {
  return v === '3.4' ? 'grpc: failed to unmarshal the received message ' : 'grpc: failed to unmarshal the received message: ';
}

