/**
 * What the server's two bidirectional calls (Watch, LeaseKeepAlive) share: responses taken by the client
 * or pushed to a listener at delivery points (delivery.ts), and one way of ending. `end()` is the client
 * half-closing, `cancel()` the client canceling ("1 CANCELLED: Cancelled on client"), `abort(err)` the
 * server or the network breaking the call (fault injection, UNAVAILABLE by default). The end listeners
 * fire once; nothing is delivered after the end and writes are ignored.
 */
import { GrpcCode } from '../etcd/index.js';
import { cancelledError, grpcError, toGrpcError, type GrpcError } from './errors.js';
import type { EtcdServer } from './etcd_server.js';

/** @public */
export type ResponseListener<T> = (responses: T[]) => void;
/** @public */
export type EndListener = (err: GrpcError | undefined) => void;

/**
 * The one shape of a streaming gRPC call as its client side sees it, whoever serves it: a member's call in
 * process (WatchCall, KeepAliveCall, ObserveCall), a call over gRPC to etcd or etcdsim (grpc/client.ts).
 * Responses come out to the listener, in arrays as a transport batch brings them; the call ends once,
 * cleanly (undefined) or with the error that ended it.
 * @public
 */
export interface ResponseStream<Res> {
  readonly ended: boolean;
  onResponse(listener: ResponseListener<Res> | undefined): void;
  onEnd(listener: EndListener): void;
  /** Half-closes: etcd then ends a LeaseKeepAlive call (OK), but a Watch goes on sending until cancel(). */
  end(): void;
  /** Cancels the call ("Cancelled on client"). */
  cancel(): void;
}

/** A bidirectional call (Watch, LeaseKeepAlive): a ResponseStream the client also writes requests to. @public */
export interface BidiStream<Req, Res> extends ResponseStream<Res> {
  write(req: Req): void;
}

/**
 * A client's reading of a server-side call: pause() when it stops reading, resume() when it reads again —
 * what front doors and in-process clients use to give a slow client etcd's flow control.
 * @public
 */
export interface FlowControl {
  pause(): void;
  resume(): void;
  readonly isPaused: boolean;
}

/**
 * The network between a call's client and the member serving it, as a simulated cluster's client-link
 * levers and a stopped member shape it. Each direction is an ordered byte stream, as the call's TCP
 * connection is: a dropped link or a stopped process loses nothing; what is sent meanwhile waits and goes
 * on, in order, once the link is back (TCP retransmits) or the process runs again. A delayed link carries
 * each message after its delay, still in order. While nothing moves, responses stay queued on the member,
 * where they fill the stream's window and channel as a client that does not read fills them.
 */
export interface StreamLink {
  /** Nothing moves now: the link is dropped, or the member is stopped. */
  readonly blocked: boolean;
  /** Carries `fn` (the member reading a request of the client) over the link, in order. */
  toMember(fn: () => void): void;
  /** Carries `fn` (responses, or the end of the call, reaching the client) over the link, in order. */
  toClient(fn: () => void): void;
}

/**
 * A Deliverable too (the member's Delivery takes it, which checks its shape there): not named here, so the
 * published types keep the delivery queue's interface out.
 * @public
 */
export abstract class StreamCall<Res> implements FlowControl {
  private responseListener: ResponseListener<Res> | undefined;
  private paused = false;
  /**
   * @internal Responses handed to the listener per call (default: a whole transport batch). A front door whose own
   * transport pushes back per message (gRPC's write()) takes them one at a time, so that it stops taking
   * the moment the transport is full and the rest stays in the stream's window and channel, as in etcd.
   */
  listenerBatch = Number.POSITIVE_INFINITY;
  private readonly endListeners: EndListener[] = [];
  private endedWith: { err: GrpcError | undefined } | undefined;
  /** How the call ended for its client (it canceled, or the end reached it): nothing more reaches it. */
  private endedForClient: { err: GrpcError | undefined } | undefined;
  /** The link the call runs over, on a cluster member (undefined: the client is in the member's process). */
  private link: StreamLink | undefined;

  /** @internal */
  protected constructor(
    /** @internal */
    protected readonly server: EtcdServer,
    private readonly onClose: (call: StreamCall<Res>) => void,
    /** Details of the default abort error, naming the stream. */
    private readonly brokenDetails: string,
  ) {
    server.delivery.add(this);
  }

  /** Number of responses queued and not yet taken or delivered. */
  abstract get pending(): number;

  /** Takes every queued response, in order, in message form. */
  abstract take(): Res[];

  /** What one read of the transport gives, at most `max` responses (default: everything queued). */
  protected readBatch(_max: number): Res[] {
    return this.take();
  }

  /** Drops what the call holds once it ended (its stream, its queue). */
  protected abstract release(): void;

  /** True once the call ended (end, cancel or abort), on either side of its link. */
  get ended(): boolean {
    return this.endedWith !== undefined || this.endedForClient !== undefined;
  }

  /**
   * @internal Puts the call on a link (a cluster member's client link): from now on the member reads the
   * client's requests, and the client's listeners get responses and the call's end, as the link carries
   * them. `take()` still reads the member's queue as it is (a test looking inside the member).
   */
  attachLink(link: StreamLink): void {
    this.link = link;
  }

  /**
   * @internal Runs `read` (the member reading one request of the client) at once, or when the link brings it. A
   * request the member cannot read ends the call with its error, as a front door ends it.
   */
  protected arrive(read: () => void): void {
    const link = this.link;
    if (link === undefined) {
      read();
      return;
    }
    link.toMember(() => {
      if (this.ended) return;
      try {
        read();
      } catch (err) {
        this.abort(toGrpcError(err));
      }
    });
  }

  /**
   * Sets the listener that receives responses at delivery points (replacing any previous one; undefined
   * removes it). Responses already queued are delivered at the next delivery point.
   */
  onResponse(listener: ResponseListener<Res> | undefined): void {
    this.responseListener = listener;
    if (listener !== undefined) this.server.delivery.poke(this);
  }

  /** @internal Delivers this call's queued responses to its listener now. */
  flush(): number {
    return this.deliver();
  }

  /**
   * The client stops reading (its receive buffer is full, or its transport pushes back): nothing reaches
   * the listener until resume(), and the stream's window and channel fill as they would in etcd.
   */
  pause(): void {
    this.paused = true;
  }

  /** The client reads again: queued responses go out at the next delivery point. */
  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.server.delivery.poke(this);
  }

  /** Whether the client has stopped reading (see pause()). */
  get isPaused(): boolean {
    return this.paused;
  }

  /**
   * @internal Delivery point: pushes queued responses to the listener, one transport batch at a time,
   * until none is left or the listener pauses the call.
   */
  deliver(): number {
    const listener = this.responseListener;
    const link = this.link;
    let n = 0;
    while (listener !== undefined && listener === this.responseListener && !this.paused && !this.ended && this.pending > 0) {
      if (link !== undefined && link.blocked) break;
      const rs = this.readBatch(this.listenerBatch);
      if (rs.length === 0) break;
      n += rs.length;
      if (link === undefined) listener(rs);
      else link.toClient(() => this.endedForClient !== undefined || listener(rs));
    }
    return n;
  }

  /** Registers a listener for the end of the call (called at once if its end already reached the client). */
  onEnd(listener: EndListener): void {
    if (this.endedForClient !== undefined) listener(this.endedForClient.err);
    else this.endListeners.push(listener);
  }

  /** The client half-closes: the call ends cleanly (once the member reads the half-close). */
  end(): void {
    if (this.link === undefined) this.finish(undefined);
    else if (!this.ended) this.link.toMember(() => this.finish(undefined));
  }

  /**
   * The client cancels the call: it is over for the client at once (grpc cancels locally); the member
   * lets its watchers go when the cancel reaches it.
   */
  cancel(): void {
    if (this.link === undefined) {
      this.finish(cancelledError());
      return;
    }
    if (this.ended) return;
    this.endForClient(cancelledError());
    this.link.toMember(() => this.finish(cancelledError()));
  }

  /** @internal The server or the network breaks the call, e.g. to inject a fault. */
  abort(err: GrpcError = grpcError(GrpcCode.UNAVAILABLE, this.brokenDetails)): void {
    this.finish(err);
  }

  /** The member's side ends; its end reaches the client over the link. */
  private finish(err: GrpcError | undefined): void {
    if (this.endedWith !== undefined) return;
    this.endedWith = { err };
    this.release();
    this.server.delivery.remove(this);
    this.onClose(this);
    this.responseListener = undefined;
    if (this.link === undefined) this.endForClient(err);
    else this.link.toClient(() => this.endForClient(err));
  }

  private endForClient(err: GrpcError | undefined): void {
    if (this.endedForClient !== undefined) return;
    this.endedForClient = { err };
    for (const l of this.endListeners.splice(0)) l(err);
  }
}

/**
 * A pause among a server stream's responses (Maintenance.Snapshot on a cluster member): the member cannot
 * send now — it is stopped, or its link to the client is down — and `until` calls back once it can go on,
 * as a stopped etcd's send loop sends nothing until SIGCONT.
 */
export class StreamHold {
  constructor(readonly until: (resume: () => void) => void) {}
}

/** Where a front door writes a server stream's responses: its transport for one call. */
export interface ResponseSink<R> {
  /** Writes one response; false: the transport holds enough, wait for `onDrain` before the next. */
  write(r: R): boolean;
  onDrain(resume: () => void): void;
  /** Every response is written: the call ends OK. */
  end(): void;
  /** The client went away (cancelled, connection gone): nothing more is asked of the responses. */
  readonly gone: boolean;
}

/**
 * Writes a server stream's responses as the sink takes them — the next one is asked for only once the
 * transport took the one before (a snapshot's file is written as it is sent, and a client that stops
 * reading holds the writer back) — waiting out each StreamHold, then ends the call.
 */
export function sendResponses<R>(responses: Iterable<R | StreamHold>, sink: ResponseSink<R>): void {
  const it = responses[Symbol.iterator]();
  const pump = (): void => {
    for (;;) {
      if (sink.gone) return;
      const r = it.next();
      if (r.done === true) return void sink.end();
      const v = r.value;
      if (v instanceof StreamHold) return void v.until(pump);
      if (!sink.write(v)) return void sink.onDrain(pump);
    }
  };
  pump();
}
