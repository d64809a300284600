/**
 * The raw client's streams (Watch, LeaseKeepAlive, Election.Observe) as a gRPC client stream behaves:
 * responses to `data` listeners or async iteration, `error` then `end` when the call breaks, and grpc-js's
 * flow control — a client that stops reading stops the server's sends (etcd's slow-watcher handling then
 * applies).
 */
import type { BidiStream, ResponseStream, FlowControl, GrpcError } from '../server/index.js';
import type * as M from '../server/messages.js';
import { encode, type Req } from './text_keys.js';

/** grpc-js's readable high-water mark for a client stream (Node's object-mode default). */
const STREAM_HIGH_WATER_MARK = 16;

/** Events of a stream: each response, the error that broke the stream, the end (always, once, last). @public */
export interface StreamEvents<Res> {
  data: (response: Res) => void;
  error: (err: GrpcError) => void;
  end: () => void;
}

/**
 * The client side of one stream call (Watch, LeaseKeepAlive, or the server stream Observe). Responses go to the `data`
 * listeners when there are any; otherwise they are kept, in order, for async iteration (`for await`),
 * which ends when the call ends and throws the error that broke it, if any. A call broken by the server
 * or a fault hook fires `error`, then `end`; `close()` ends it cleanly (`end` only). Responses not yet
 * delivered when the call ends are dropped, as on a canceled gRPC call.
 *
 * Flow control as a gRPC client stream has it: without `data` listeners, at most `highWaterMark` (16,
 * grpc-js's) responses wait here; then the stream stops reading, and the server's window and watch channel
 * fill — a client that does not iterate is a slow consumer, and etcd's victim handling applies. Iterating
 * (or adding a `data` listener) reads again.
 * @public
 */
export abstract class EtcdStream<Res> implements AsyncIterable<Res> {
  private readonly listeners: { [E in keyof StreamEvents<Res>]: StreamEvents<Res>[E][] } = { data: [], error: [], end: [] };
  private readonly buffer: Res[] = [];
  private waiters: (() => void)[] = [];
  private endedWith: { err: GrpcError | undefined } | undefined;
  /** Responses kept for iteration before the stream stops reading. */
  readonly highWaterMark = STREAM_HIGH_WATER_MARK;

  protected constructor(private readonly call: ResponseStream<Res> & FlowControl) {
    call.onResponse((rs) => this.receive(rs));
    call.onEnd((err) => this.finish(err));
  }

  /** True once the call has ended (closed by the client, or broken). */
  get ended(): boolean {
    return this.endedWith !== undefined;
  }

  /** The error that broke the call, if it was broken. */
  get error(): GrpcError | undefined {
    return this.endedWith?.err;
  }

  on<E extends keyof StreamEvents<Res>>(event: E, listener: StreamEvents<Res>[E]): this {
    if (event === 'end' && this.endedWith !== undefined) {
      (listener as StreamEvents<Res>['end'])();
      return this;
    }
    this.listeners[event].push(listener);
    if (event === 'data') this.call.resume();
    return this;
  }

  off<E extends keyof StreamEvents<Res>>(event: E, listener: StreamEvents<Res>[E]): this {
    const ls = this.listeners[event];
    const i = ls.indexOf(listener);
    if (i >= 0) ls.splice(i, 1);
    return this;
  }

  /** Ends the call from the client side (etcd closes its side of the stream); `end` fires. */
  close(): void {
    this.call.end();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Res> {
    for (;;) {
      const next = this.buffer.shift();
      if (next !== undefined) {
        if (this.buffer.length < this.highWaterMark) this.call.resume();
        yield next;
        continue;
      }
      if (this.endedWith !== undefined) {
        if (this.endedWith.err !== undefined) throw this.endedWith.err;
        return;
      }
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  private receive(rs: Res[]): void {
    const data = this.listeners.data;
    if (data.length > 0) {
      for (const r of rs) for (const l of [...data]) l(r);
    } else {
      for (const r of rs) this.buffer.push(r);
      if (this.buffer.length >= this.highWaterMark) this.call.pause();
      this.wake();
    }
  }

  private finish(err: GrpcError | undefined): void {
    this.endedWith = { err };
    if (err !== undefined) for (const l of this.listeners.error.splice(0)) l(err);
    for (const l of this.listeners.end.splice(0)) l();
    this.listeners.data.length = 0;
    this.wake();
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}

/** One Watch call (etcd's Watch_WatchClient): create, cancel and progress requests in, WatchResponses out. @public */
export class EtcdWatchStream extends EtcdStream<M.WatchResponse> {
  /** @internal Use `client.watch()`. */
  constructor(private readonly bidi: BidiStream<M.WatchRequest, M.WatchResponse> & FlowControl) {
    super(bidi);
  }

  /** Writes one request; a message no protobuf decoder would produce throws INVALID_ARGUMENT here. */
  private write(req: M.WatchRequest): void {
    this.bidi.write(req);
  }

  /** Sends a WatchRequest as it is. */
  send(req: Req<M.WatchRequest>): void {
    this.write(encode<M.WatchRequest>(req));
  }

  /** Creates a watcher (a WatchCreateRequest); its `created` response, or its refusal, comes as a response. */
  create(req: Req<M.WatchCreateRequest>): void {
    this.write({ create_request: encode<M.WatchCreateRequest>(req) });
  }

  /** Cancels a watcher by its ID (etcd answers `canceled: true`; an unknown ID gets no answer). */
  cancel(watchId: M.Int64Input): void {
    this.write({ cancel_request: { watch_id: watchId } });
  }

  /** Asks for a progress notification (a response with no events, watch_id -1, once all watchers are synced). */
  progress(): void {
    this.write({ progress_request: {} });
  }
}

/** One LeaseKeepAlive call (etcd's Lease_LeaseKeepAliveClient): each send({ID}) renews and is answered {ID, TTL}. @public */
export class EtcdKeepAliveStream extends EtcdStream<M.LeaseKeepAliveResponse> {
  /** @internal Use `client.lease.leaseKeepAlive()`. */
  constructor(private readonly bidi: BidiStream<M.LeaseKeepAliveRequest, M.LeaseKeepAliveResponse> & FlowControl) {
    super(bidi);
  }

  /** Renews the lease `ID` once; the answer's TTL is "0" when the lease is unknown or expired. */
  send(req: M.LeaseKeepAliveRequest): void {
    this.bidi.write(req);
  }
}

/** One Election.Observe call: LeaderResponses out; close() stops observing. @public */
export class EtcdObserveStream extends EtcdStream<M.LeaderResponse> {
  /** @internal Use `client.election.observe()`. */
  constructor(call: ResponseStream<M.LeaderResponse> & FlowControl) {
    super(call);
  }
}
