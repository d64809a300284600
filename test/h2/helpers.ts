/**
 * Test support for src/http/h2: a net.Server whose connections run on Http2ServerConnection, a
 * frame-watching TCP proxy (to check from outside what each side sent: flow-control windows, CONTINUATION,
 * WINDOW_UPDATE), and a raw-socket client that sends hand-made frames and collects the server's.
 */
import * as net from 'node:net';
import * as tls from 'node:tls';
import { Http2ServerConnection, type ConnectionOptions } from '../../src/h2/connection.js';
import { CLIENT_PREFACE, Flags, FrameType, SETTINGS_ACK, parseFrames, settingsFrame, type ParsedFrame } from '../../src/h2/frames.js';
import { HpackEncoder } from '../../src/h2/hpack.js';
import type { H2Stream } from '../../src/h2/stream.js';

export interface TestServer {
  readonly port: number;
  readonly connections: Http2ServerConnection[];
  /** Runs a connection with this server's options on a socket accepted elsewhere (a test watching the socket). */
  accept(socket: net.Socket): void;
  close(): Promise<void>;
}

/** Listens on a free loopback port; each connection gets `onStream` (and the other options). */
export async function startServer(onStream: (s: H2Stream) => void, options: Omit<ConnectionOptions, 'onStream'> = {}): Promise<TestServer> {
  const connections: Http2ServerConnection[] = [];
  const sockets = new Set<net.Socket>();
  const accept = (socket: net.Socket): void => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    connections.push(new Http2ServerConnection(socket, { ...options, onStream }));
  };
  const server = net.createServer(accept);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    connections,
    accept,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A frame seen by the proxy, with the direction it went. */
export interface SeenFrame extends ParsedFrame {
  readonly from: 'client' | 'server';
}

export interface FrameProxy {
  readonly port: number;
  readonly frames: SeenFrame[];
  /** Called on every frame as the proxy forwards it (after `frames` holds it). */
  onFrame: ((f: SeenFrame) => void) | undefined;
  close(): Promise<void>;
}

/** A TCP proxy to `targetPort` that parses the HTTP/2 frames going each way (the client's preface skipped). */
export async function startFrameProxy(targetPort: number): Promise<FrameProxy> {
  const sockets = new Set<net.Socket>();
  const proxy: FrameProxy = {
    port: 0,
    frames: [],
    onFrame: undefined,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  const watch = (from: 'client' | 'server', skip: number): ((d: Buffer) => void) => {
    let rest = Buffer.alloc(0);
    let toSkip = skip;
    return (d) => {
      let b = Buffer.concat([rest, d]);
      if (toSkip > 0) {
        const n = Math.min(toSkip, b.length);
        toSkip -= n;
        b = b.subarray(n);
      }
      const { frames, rest: r } = parseFrames(b);
      rest = Buffer.from(r);
      for (const f of frames) {
        const seen = { ...f, payload: Buffer.from(f.payload), from };
        proxy.frames.push(seen);
        proxy.onFrame?.(seen);
      }
    };
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, '127.0.0.1');
    sockets.add(client);
    sockets.add(upstream);
    const fromClient = watch('client', CLIENT_PREFACE.length);
    const fromServer = watch('server', 0);
    client.on('data', (d: Buffer) => {
      fromClient(d);
      upstream.write(d);
    });
    upstream.on('data', (d: Buffer) => {
      fromServer(d);
      client.write(d);
    });
    client.on('end', () => upstream.end());
    upstream.on('end', () => client.end());
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  (proxy as { port: number }).port = (server.address() as net.AddressInfo).port;
  return proxy;
}

/** A raw HTTP/2 client socket: send bytes, await frames from the server until a condition or the socket's end. */
export class RawClient {
  readonly frames: ParsedFrame[] = [];
  ended = false;
  private rest = Buffer.alloc(0);
  private waiters: Array<() => void> = [];
  private constructor(readonly socket: net.Socket) {
    socket.on('data', (d: Buffer) => {
      const { frames, rest } = parseFrames(Buffer.concat([this.rest, d]));
      this.rest = Buffer.from(rest);
      for (const f of frames) {
        this.frames.push({ ...f, payload: Buffer.from(f.payload) });
        // As every client does: acknowledge the server's SETTINGS.
        if (f.type === FrameType.SETTINGS && (f.flags & Flags.ACK) === 0 && !socket.destroyed) socket.write(SETTINGS_ACK);
      }
      this.wake();
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      this.ended = true;
      this.wake();
    });
  }

  /**
   * Connects to `port` (over TLS when `secure`); with `preface` (default) sends the client preface and an empty SETTINGS frame, and
   * waits for the server's SETTINGS (which it acknowledges, so frames sent next meet the server's settings).
   */
  static async connect(port: number, preface = true, secure = false): Promise<RawClient> {
    // Over TLS: h2 by ALPN, the server's certificate taken as it comes (these tests look at frames, not trust).
    const socket = secure ? tls.connect({ port, host: '127.0.0.1', ALPNProtocols: ['h2'], rejectUnauthorized: false }) : net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => {
      socket.once(secure ? 'secureConnect' : 'connect', resolve);
      socket.once('error', reject);
    });
    const c = new RawClient(socket);
    if (preface) {
      socket.write(Buffer.concat([CLIENT_PREFACE, settingsFrame([])]));
      await c.waitFor((f) => f.type === FrameType.SETTINGS && (f.flags & Flags.ACK) === 0);
    }
    return c;
  }

  send(...bufs: Buffer[]): void {
    this.socket.write(Buffer.concat(bufs));
  }

  /**
   * Resolves with the first frame matching `pred` (from the start, or from frame index `from`), or undefined
   * once the socket closed without one.
   */
  async waitFor(pred: (f: ParsedFrame) => boolean, from = 0): Promise<ParsedFrame | undefined> {
    for (;;) {
      for (let i = from; i < this.frames.length; i++) if (pred(this.frames[i]!)) return this.frames[i];
      if (this.ended) return undefined;
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }

  /** The GOAWAY the server sent (waiting for it): last stream id, error code, debug text. */
  async goaway(): Promise<{ lastStreamId: number; code: number; debug: string } | undefined> {
    const f = await this.waitFor((x) => x.type === FrameType.GOAWAY);
    if (f === undefined) return undefined;
    return { lastStreamId: f.payload.readUInt32BE(0), code: f.payload.readUInt32BE(4), debug: f.payload.subarray(8).toString() };
  }

  /** Resolves when the server closed the socket. */
  async closed(): Promise<void> {
    while (!this.ended) await new Promise<void>((r) => this.waiters.push(r));
  }

  destroy(): void {
    this.socket.destroy();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const r of w) r();
  }
}

/** A gRPC-shaped request header list. */
export const REQUEST: readonly string[] = [':method', 'POST', ':scheme', 'http', ':path', '/p.S/M', ':authority', 'localhost', 'content-type', 'application/grpc'];

/** A header list as a block of its own (literals only: it leaves no trace in the server's HPACK table). */
export const requestBlock = (h: readonly string[] = REQUEST): Buffer => new HpackEncoder().encode(h);

/**
 * When a test server's streams answer: at the end of the request, synchronously from its first DATA frame
 * (as the gRPC door answers a unary call), or never.
 */
export type AnswerAt = 'end' | 'data' | 'never';

/**
 * A server whose streams answer `at` that moment with 200, `body` as a DATA frame when given, and
 * trailers; and one raw client connected to it. `streams` holds every stream handed over.
 */
export async function serverWithClient(at: AnswerAt, body?: Buffer): Promise<{ client: RawClient; streams: H2Stream[]; close(): Promise<void> }> {
  const streams: H2Stream[] = [];
  const srv = await startServer((st) => {
    streams.push(st);
    const answer = (): void => {
      st.respond([':status', '200']);
      if (body !== undefined) st.write(body);
      st.end(['grpc-status', '0']);
    };
    st.onData = at === 'data' ? answer : () => {};
    if (at === 'end') st.onEnd = answer;
  });
  const client = await RawClient.connect(srv.port);
  return {
    client,
    streams,
    close: async () => {
      client.destroy();
      await srv.close();
    },
  };
}
