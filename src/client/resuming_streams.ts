/**
 * A failover client's Watch and LeaseKeepAlive streams (clientv3 3.4's watch.go and lease.go): the stream
 * the client sees stays open while the server calls under it break and reopen on another member — a Watch
 * after a growing backoff, re-creating every watcher from the revision after the last one it delivered; a
 * LeaseKeepAlive after 500 ms, whatever broke it (failover.ts has the whole picture).
 */
import { GrpcCode } from '../etcd/index.js';
import { toGrpcError, type CallContext, type EtcdServices, type GrpcError, type KeepAliveCall, type WatchCall } from '../server/index.js';
import type * as M from '../server/messages.js';
import type { MemberState } from '../cluster/index.js';
import type { TimerHandle } from '../sim/index.js';
import { FailoverBalancer, type FailoverTarget } from './balancer.js';

/** clientv3 watch.go: the reconnect backoff starts at 1 ms, grows by 25 %, at most maxBackoff (100 ms). */
const WATCH_BACKOFF_START_MS = 1;
const WATCH_BACKOFF_MAX_MS = 100;
/** clientv3 lease.go retryConnWait. */
const KEEPALIVE_RETRY_MS = 500;

/** clientv3's isHaltErr for streams: anything but Unavailable and Internal ends the stream for good. */
function haltsStream(err: GrpcError): boolean {
  return (err.code !== GrpcCode.UNAVAILABLE && err.code !== GrpcCode.INTERNAL) || err.details === 'etcdserver: no leader';
}

type Listener<R> = (rs: readonly R[]) => void;
type EndFn = (err: GrpcError | undefined) => void;

/**
 * A client stream over successive server calls: the one the client sees, while the calls under it break
 * and are opened again on another member. Shapes the subset of StreamCall the raw client uses.
 */
abstract class ResumingCall<Res> {
  protected call: WatchCall | KeepAliveCall | undefined;
  private listener: Listener<Res> | undefined;
  private readonly endListeners: EndFn[] = [];
  private endedWith: { err: GrpcError | undefined } | undefined;
  private paused = false;
  private timer: TimerHandle | undefined;
  /** Whether a call of this stream was ever open. */
  private opened = false;

  constructor(
    protected readonly t: FailoverTarget,
    private readonly balancer: FailoverBalancer,
    /** The stream's call context at each (re)open: the newest token of the client's credentials. */
    protected readonly ctx: () => CallContext | undefined,
    private readonly onClose: () => void,
    /**
     * What runs before each (re)open: clientv3 3.4.23's stream interceptor authenticates anew (getToken)
     * before it creates a stream of a client with credentials; undefined without credentials.
     */
    private readonly beforeOpen: (() => Promise<void>) | undefined,
  ) {}

  get ended(): boolean {
    return this.endedWith !== undefined;
  }

  onResponse(listener: Listener<Res> | undefined): void {
    this.listener = listener;
  }

  onEnd(listener: EndFn): void {
    if (this.endedWith !== undefined) listener(this.endedWith.err);
    else this.endListeners.push(listener);
  }

  pause(): void {
    this.paused = true;
    this.call?.pause();
  }

  resume(): void {
    this.paused = false;
    this.call?.resume();
  }

  /** The client closes the stream (every call under it ends). */
  end(): void {
    this.finish(undefined);
  }

  cancel(): void {
    this.finish(undefined);
  }

  /** Breaks the stream for good (a fault hook), as an error the client does not retry. */
  abort(err: GrpcError): void {
    this.finish(err);
  }

  protected abstract open(services: EtcdServices): WatchCall | KeepAliveCall;
  /** Responses of the current call, before the client sees them; returns what the client gets. */
  protected abstract seen(rs: readonly Res[]): readonly Res[];
  /** The call is open on a new member (not the first): re-send what the stream needs there. */
  protected abstract reopened(): void;
  /** The first call is open (at once, or once a member was ready and the token fetched): send what waited for it. */
  protected abstract openedFirst(): void;
  /** How long to wait before reopening after `err`. */
  protected abstract backoff(err: GrpcError): number;

  /** Opens the first call: at once on a ready member, or as soon as one is ready. */
  protected start(): void {
    this.connect();
  }

  private connect(picked?: MemberState, authenticated = false): void {
    if (this.ended) return;
    if (this.beforeOpen !== undefined && !authenticated) {
      // A failed Authenticate fails the stream's creation: the stream's own rule then reopens or ends it.
      this.beforeOpen().then(
        () => this.connect(undefined, true),
        (err: unknown) => {
          if (!this.ended) this.broke(toGrpcError(err));
        },
      );
      return;
    }
    const m = picked ?? this.balancer.pickNow();
    if (m === undefined) {
      // No member is ready: the stream waits for one (WaitForReady), as clientv3's openWatchClient does.
      void this.balancer.pick(undefined).then(
        (ready) => this.connect(ready, true),
        (err: unknown) => this.finish(toGrpcError(err)),
      );
      return;
    }
    let call: WatchCall | KeepAliveCall;
    try {
      call = this.open(this.t.open(m, undefined));
    } catch (e) {
      this.broke(toGrpcError(e));
      return;
    }
    this.call = call;
    if (this.paused) call.pause();
    (call as WatchCall).onResponse((rs) => {
      if (this.call !== call || this.ended) return;
      const out = this.seen(rs as unknown as readonly Res[]);
      if (out.length > 0) this.listener?.(out);
    });
    call.onEnd((err) => {
      if (this.call !== call || this.ended) return;
      this.call = undefined;
      if (err === undefined) this.finish(undefined);
      else this.broke(err);
    });
    // A first open that failed and is retried is still a first open: nothing to re-create yet.
    if (this.opened) this.reopened();
    else {
      this.opened = true;
      this.openedFirst();
    }
  }

  /** Whether `err` ends the stream for good instead of reopening it (default: watch.go's isHaltErr rule). */
  protected halts(err: GrpcError): boolean {
    return haltsStream(err);
  }

  private broke(err: GrpcError): void {
    if (this.halts(err)) {
      this.finish(err);
      return;
    }
    const clock = this.t.cluster.clock;
    this.timer = clock.setTimer(clock.now() + this.backoff(err), () => {
      this.timer = undefined;
      this.connect();
    }, 'client.stream-retry');
  }

  private finish(err: GrpcError | undefined): void {
    if (this.endedWith !== undefined) return;
    this.endedWith = { err };
    if (this.timer !== undefined) this.t.cluster.clock.cancel(this.timer);
    const call = this.call;
    this.call = undefined;
    call?.end();
    this.onClose();
    for (const l of this.endListeners.splice(0)) l(err);
  }
}

/** A watcher the stream keeps for resuming: its create request and clientv3's nextRev. */
interface Resumable {
  readonly req: M.WatchCreateRequest;
  /** The revision to resume from (clientv3's initReq.rev); 0 until known. */
  rev: bigint;
}

/**
 * A Watch stream that resumes on another member (clientv3's watchGrpcStream): watchers keep their IDs
 * (re-created with the same watch_id) and start again after the last revision they saw; the `created`
 * answers of those re-creations are not passed on.
 */
export class ResumingWatchCall extends ResumingCall<M.WatchResponse> {
  private readonly watchers = new Map<string, Resumable>();
  /** Creates sent on the current call and not answered yet, in order; `resume` marks re-creations. */
  private creates: { req: M.WatchCreateRequest; resume: boolean }[] = [];
  /** Client creates made while reconnecting, sent once a call is open. */
  private queued: M.WatchCreateRequest[] = [];

  constructor(t: FailoverTarget, balancer: FailoverBalancer, ctx: () => CallContext | undefined, onClose: () => void, beforeOpen: (() => Promise<void>) | undefined) {
    super(t, balancer, ctx, onClose, beforeOpen);
    this.start();
  }

  write(req: M.WatchRequest): void {
    if (this.ended) return;
    const kind = req.request_union ?? (req.create_request != null ? 'create_request' : req.cancel_request != null ? 'cancel_request' : undefined);
    const create = kind === 'create_request' ? req.create_request : undefined;
    if (create !== undefined && create !== null) {
      if (this.call === undefined) this.queued.push(create);
      else this.send(create, false);
      return;
    }
    const cancel = kind === 'cancel_request' ? req.cancel_request : undefined;
    if (cancel !== undefined && cancel !== null) this.watchers.delete(String(cancel.watch_id ?? 0));
    (this.call as WatchCall | undefined)?.write(req);
  }

  protected open(services: EtcdServices): WatchCall {
    return services.watch.watch(this.ctx());
  }

  protected reopened(): void {
    const pending = this.creates.filter((c) => !c.resume).map((c) => c.req);
    this.creates = [];
    for (const [id, w] of this.watchers) this.send({ ...w.req, watch_id: id, start_revision: String(w.rev) }, true);
    for (const req of [...pending, ...this.queued.splice(0)]) this.send(req, false);
  }

  protected openedFirst(): void {
    for (const req of this.queued.splice(0)) this.send(req, false);
  }

  /** watch.go's backoffIfUnavailable: kept for the stream's life, +25 % per Unavailable, at most 100 ms. */
  private backoffMs = WATCH_BACKOFF_START_MS;

  protected backoff(err: GrpcError): number {
    if (err.code !== GrpcCode.UNAVAILABLE) return 0;
    this.backoffMs = Math.min(this.backoffMs * 1.25, WATCH_BACKOFF_MAX_MS);
    return Math.round(this.backoffMs);
  }

  protected seen(rs: readonly M.WatchResponse[]): readonly M.WatchResponse[] {
    const out: M.WatchResponse[] = [];
    for (const r of rs) {
      const id = String(r.watch_id);
      if (r.created) {
        const c = this.creates.shift();
        if (c !== undefined && !r.canceled) {
          const asked = BigInt(String(c.req.start_revision ?? 0));
          // clientv3: a watcher at revision 0 resumes at the revision it was created at (watch.go, serveSubstream).
          this.watchers.set(id, { req: c.req, rev: asked === 0n ? BigInt(r.header.revision) : asked });
        }
        if (r.canceled) this.watchers.delete(id);
        // A re-creation's answer stays here; one the new member refused (compacted) reaches the client.
        if (c?.resume === true && !r.canceled) continue;
        out.push(r);
        continue;
      }
      const targets = id === '-1' ? [...this.watchers.values()] : [this.watchers.get(id)].filter((w) => w !== undefined);
      for (const w of targets) {
        w.rev = r.events.length > 0 ? BigInt(r.events[r.events.length - 1]!.kv!.mod_revision) + 1n : BigInt(r.header.revision);
      }
      if (r.canceled) this.watchers.delete(id);
      out.push(r);
    }
    return out;
  }

  private send(req: M.WatchCreateRequest, resume: boolean): void {
    this.creates.push({ req, resume });
    (this.call as WatchCall).write({ create_request: req });
  }
}

/** A LeaseKeepAlive stream that reopens on another member 500 ms after it broke (clientv3 lease.go). */
export class ResumingKeepAliveCall extends ResumingCall<M.LeaseKeepAliveResponse> {
  /** Renewals written before the first call opened (clientv3 creates the stream before it sends any). */
  private early: M.LeaseKeepAliveRequest[] | undefined = [];

  constructor(t: FailoverTarget, balancer: FailoverBalancer, ctx: () => CallContext | undefined, onClose: () => void, beforeOpen: (() => Promise<void>) | undefined) {
    super(t, balancer, ctx, onClose, beforeOpen);
    this.start();
  }

  /** Sends a renewal on the current call; while the stream reconnects there is none, and it is lost. */
  write(req: M.LeaseKeepAliveRequest): void {
    if (this.ended) return;
    if (this.call === undefined && this.early !== undefined) this.early.push(req);
    else (this.call as KeepAliveCall | undefined)?.write(req);
  }

  protected openedFirst(): void {
    const early = this.early ?? [];
    this.early = undefined;
    for (const req of early) (this.call as KeepAliveCall).write(req);
  }

  protected open(services: EtcdServices): KeepAliveCall {
    return services.lease.leaseKeepAlive(this.ctx());
  }

  protected reopened(): void {}

  /** lease.go's recvKeepAliveLoop reopens after any error (only the client's own close ends it). */
  protected override halts(): boolean {
    return false;
  }

  protected backoff(): number {
    return KEEPALIVE_RETRY_MS;
  }

  protected seen(rs: readonly M.LeaseKeepAliveResponse[]): readonly M.LeaseKeepAliveResponse[] {
    return rs;
  }
}
