import { Buffer } from 'node:buffer';
import * as grpc from '@grpc/grpc-js';
import { serve, type ServeHandle, type ServeOptions, type StreamEndInfo } from '../../src/grpc/server.js';
import { etcdService } from '../../src/grpc/index.js';

export const B = (s: string): Buffer => Buffer.from(s, 'utf8');

export type Msg = Record<string, unknown>;
type ServiceName = 'KV' | 'Watch' | 'Lease' | 'Cluster' | 'Maintenance' | 'Auth';
type UnaryFn = (req: Msg, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: Msg) => void) => void;
type BidiFn = () => grpc.ClientDuplexStream<Msg, Msg>;
type ServerStreamFn = (req: Msg) => grpc.ClientReadableStream<Msg>;

/** A raw @grpc/grpc-js client of one etcd service, built from etcdsim's own protos. */
export class RawClient {
  readonly client: grpc.Client;
  constructor(address: string, service: ServiceName) {
    const Ctor = etcdService(service);
    this.client = new Ctor(address, grpc.credentials.createInsecure());
  }
  private fn<T>(method: string): T {
    const f = (this.client as unknown as Record<string, unknown>)[method];
    if (typeof f !== 'function') throw new Error(`no method ${method}`);
    return (f as (...a: unknown[]) => unknown).bind(this.client) as T;
  }
  unary(method: string, req: Msg): Promise<Msg> {
    return new Promise((resolve, reject) => {
      this.fn<UnaryFn>(method)(req, new grpc.Metadata(), {}, (err, res) => (err ? reject(err) : resolve(res ?? {})));
    });
  }
  bidi(method: string): grpc.ClientDuplexStream<Msg, Msg> {
    return this.fn<BidiFn>(method)();
  }
  serverStream(method: string, req: Msg): grpc.ClientReadableStream<Msg> {
    return this.fn<ServerStreamFn>(method)(req);
  }
  close(): void {
    this.client.close();
  }
}

/** Resolves with the next `n` messages of a stream (rejects on error/end first). */
export function nextMessages(stream: grpc.ClientDuplexStream<Msg, Msg> | grpc.ClientReadableStream<Msg>, n: number): Promise<Msg[]> {
  return new Promise((resolve, reject) => {
    const got: Msg[] = [];
    const onData = (m: Msg): void => {
      got.push(m);
      if (got.length === n) {
        cleanup();
        resolve(got);
      }
    };
    const onError = (e: Error): void => {
      cleanup();
      reject(e);
    };
    const onEnd = (): void => {
      cleanup();
      reject(new Error(`stream ended after ${got.length} of ${n} messages`));
    };
    const cleanup = (): void => {
      stream.off('data', onData);
      stream.off('error', onError);
      stream.off('end', onEnd);
    };
    stream.on('data', onData);
    stream.on('error', onError);
    stream.on('end', onEnd);
  });
}

/** Resolves with the error that ends a stream. */
export function streamError(stream: grpc.ClientDuplexStream<Msg, Msg> | grpc.ClientReadableStream<Msg>): Promise<grpc.ServiceError> {
  return new Promise((resolve, reject) => {
    stream.on('data', () => {});
    stream.on('error', (e: grpc.ServiceError) => resolve(e));
    stream.on('end', () => reject(new Error('stream ended without an error')));
  });
}

/** Resolves at the next server-side end of a stream call. */
export function nextStreamEnd(h: ServeHandle): Promise<StreamEndInfo> {
  return new Promise((resolve) => {
    const off = h.onStreamEnd((info) => {
      off();
      resolve(info);
    });
  });
}

export async function withServer(opts: ServeOptions, fn: (h: ServeHandle) => Promise<void>): Promise<void> {
  const h = await serve({ port: 0, ...opts });
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}
