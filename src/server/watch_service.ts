/**
 * etcdserverpb.Watch: one `watch()` is one bidirectional Watch call. Requests go in with `write()`;
 * responses come out in message form, pulled with `take()` or pushed to an `onResponse` listener at the
 * delivery points described in delivery.ts. All watch semantics are the WatchStream's (src/watch).
 *
 * Ending: `closeSend()` is the client half-closing its side: etcd's receive loop sees EOF and returns, but
 * the call goes on — its watchers keep sending events until the client cancels (observed on 3.4.23: etcd's
 * Watch handler waits for the call's context, not for the receive loop). `cancel()` is the client canceling
 * the call, `abort(err)` the server or the network breaking it (fault injection, a deadline), and `end()`
 * an in-process client being done with the call (it ends cleanly; a gRPC client can only cancel). Each of
 * these three closes the WatchStream — every watcher is canceled, nothing leaks — and fires the `onEnd`
 * listeners once: with undefined after end(), a CANCELLED error after cancel(), the given error after
 * abort(). Writes after closeSend() or the end are ignored.
 */
import { INVALID_WATCH_ID, type WatchResponse as DWatchResponse, type WatchStream } from '../watch/index.js';
import { isEtcdError } from '../etcd/index.js';
import { bytesIn, eventOut, eventView, header, int64ToBigInt, int64ToExactNumber, watchCreateIn } from './convert.js';
import type { CallContext } from './call_context.js';
import { toGrpcError } from './errors.js';
import { StreamCall, type BidiStream } from './stream_call.js';
import type * as M from './messages.js';
import type { EtcdServer } from './etcd_server.js';
import { serverCompat } from './compat.js';
import { ErrInvalidAuthToken, ErrPermissionDenied, ErrUserEmpty } from '../auth/index.js';

export type { EndListener, ResponseListener } from './stream_call.js';

/** @public */
export class WatchService {
  private readonly open = new Set<WatchCall>();

  /** @internal */
  constructor(private readonly server: EtcdServer) {}

  /** Watch: opens one bidirectional stream; `ctx` is the caller (checked on every create while auth is on). */
  watch(ctx?: CallContext): WatchCall {
    const call = new WatchCall(this.server, (c) => this.open.delete(c), ctx);
    this.open.add(call);
    return call;
  }

  /** @internal The open Watch calls, oldest first (fault hooks break them). */
  calls(): WatchCall[] {
    return [...this.open];
  }
}

/** @public */
export class WatchCall extends StreamCall<M.WatchResponse> implements BidiStream<M.WatchRequest, M.WatchResponse> {
  readonly stream: WatchStream;
  /**
   * Watch IDs beyond ±2^53 cannot be the stream's numbers; each gets a fractional stand-in (the stream
   * only compares IDs, and a client can never send a fraction), mapped back on the way out.
   */
  private readonly bigIds = new Map<bigint, number>();
  private readonly bigIdOf = new Map<number, bigint>();
  /**
   * Responses already taken from the stream, in order, ahead of one the call answered itself (a create
   * refused by auth): every response keeps the order of etcd's control stream.
   */
  private early: M.WatchResponse[] = [];
  /** The client half-closed (closeSend): no more requests, the watchers go on. */
  private sendClosed = false;
  /**
   * @internal Responses carry views of the store's keys and values, not copies (convert.ts's eventView): set by
   * a reader that encodes each response as it takes it and keeps none (the gRPC door), so that an event sent
   * to many watchers is copied once per watcher, into its encoding, not twice.
   */
  viewsOut = false;
  /**
   * Requests the receive loop has not read yet because it waits in the token check of a create (see
   * applied_wait.ts), the create first; undefined while it reads. `wait` cancels that wait.
   */
  private held: { readonly requests: M.WatchRequest[]; readonly wait: { cancel(): void } } | undefined;

  /** @internal */
  constructor(
    server: EtcdServer,
    onClose: (call: WatchCall) => void,
    private readonly ctx?: CallContext,
  ) {
    super(server, onClose as (call: StreamCall<M.WatchResponse>) => void, 'etcdsim: watch stream broken');
    this.stream = server.watchable.newWatchStream();
    // Responses a timer step sends (catch-up, victims, progress) must reach the client too, not only
    // those caused by a request or a commit.
    this.stream.onSend = () => server.delivery.poke(this);
  }

  /** Number of responses queued and not yet taken or delivered. */
  get pending(): number {
    return this.early.length + this.stream.pending;
  }

  /**
   * Sends one WatchRequest: create, cancel or progress. A request with no member set is ignored, as etcd
   * ignores it. Throws only for a message no protobuf decoder would produce (INVALID_ARGUMENT).
   */
  write(req: M.WatchRequest): void {
    if (this.ended || this.sendClosed) return;
    this.arrive(() => {
      if (this.held !== undefined) this.held.requests.push(req);
      else this.read(req, false);
    });
  }

  /** The receive loop reads one request; `checked`: its token wait is over (a held create). */
  private read(req: M.WatchRequest, checked: boolean): void {
    const which =
      req.request_union ??
      (req.create_request != null
        ? 'create_request'
        : req.cancel_request != null
          ? 'cancel_request'
          : req.progress_request != null
            ? 'progress_request'
            : undefined);
    try {
      if (which === 'create_request' && req.create_request != null) {
        const c = req.create_request;
        // etcd's receive loop checks the caller's token on every create; a simple token naming a raft index
        // not applied yet holds the loop — this create and all that follows — until the member applies it
        // (observed on 3.4.23: the create is never answered while it waits).
        const index = checked ? undefined : this.server.tokenWaitIndex(this.ctx);
        if (index !== undefined) {
          const requests = [req];
          this.held = { requests, wait: this.server.appliedWait.wait(index, () => this.readHeld(requests)) };
          return;
        }
        const refused = this.authRefusal(c);
        if (refused !== undefined) this.answerRefused(refused);
        else this.stream.watch(watchCreateIn(c, this.idIn(c.watch_id)));
      } else if (which === 'cancel_request' && req.cancel_request != null) {
        const id = this.knownIdIn(req.cancel_request.watch_id);
        if (id !== undefined) this.stream.cancel(id);
      } else if (which === 'progress_request') {
        this.stream.requestProgress();
      }
    } catch (err) {
      throw toGrpcError(err);
    }
  }

  /**
   * The client half-closes its side of the call. etcd's receive loop returns at EOF, but its Watch handler
   * ends only with the call's context (the client cancels, or the deadline passes), and its send loop goes
   * on meanwhile: every watcher of the call keeps sending events, progress notifications and catch-up
   * batches. Only further requests are over.
   */
  closeSend(): void {
    this.sendClosed = true;
  }

  /** Whether the client half-closed the call (closeSend). */
  get sendIsClosed(): boolean {
    return this.sendClosed;
  }

  /** Whether the receive loop waits in a token check (see write). */
  get waitsForToken(): boolean {
    return this.held !== undefined;
  }

  /** The index a held create waits for is applied: the receive loop reads on, the held requests in order. */
  private readHeld(requests: M.WatchRequest[]): void {
    this.held = undefined;
    for (let i = 0; i < requests.length; i++) {
      if (this.ended) return;
      if (this.held !== undefined) {
        // Held again (a later create waits for a later index): what is left waits behind it.
        (this.held as { requests: M.WatchRequest[] }).requests.push(...requests.slice(i));
        return;
      }
      this.readOne(requests[i]!, i === 0);
    }
  }

  /**
   * Reads one held request as write() would (the first, the held create, without waiting again); one that
   * fails breaks the call, as the front doors break a call whose write throws.
   */
  private readOne(req: M.WatchRequest, first: boolean): void {
    try {
      if (first) this.read(req, true);
      else this.write(req);
    } catch (err) {
      this.abort(toGrpcError(err));
    }
  }

  /** Takes every queued response, in order, in message form. */
  take(): M.WatchResponse[] {
    return this.withEarly(this.stream.take());
  }

  /** One read of the transport: what its window holds now, or at most `max` responses. */
  protected override readBatch(max: number): M.WatchResponse[] {
    return this.withEarly(max === Number.POSITIVE_INFINITY ? this.stream.readWindow() : this.stream.read(max));
  }

  private withEarly(rs: readonly DWatchResponse[]): M.WatchResponse[] {
    const out = rs.length === 0 ? [] : rs.map((r) => this.responseOut(r));
    if (this.early.length === 0) return out;
    const early = this.early;
    this.early = [];
    return out.length === 0 ? early : [...early, ...out];
  }

  /**
   * isWatchPermitted (v3rpc/watch.go): while auth is enabled the caller must be able to READ the whole
   * watched range; if not, the cancel reason etcd gives: the Go text of its gRPC status error
   * (`rpctypes.ErrGRPCPermissionDenied.Error()`), "rpc error: code = PermissionDenied desc = ...".
   */
  private authRefusal(c: M.WatchCreateRequest): string | undefined {
    const server = this.server;
    if (!server.auth.checksTokens) return undefined;
    try {
      const ai = server.authInfo(this.ctx);
      let key = bytesIn(c.key, 'key');
      let end = c.range_end === undefined ? undefined : bytesIn(c.range_end, 'range_end');
      if (serverCompat(server.etcdVersion).watchAuthAfterRewrite) {
        // 3.4's watch server rewrites the create first (empty key → "\0"; range_end "\0" → empty) and
        // then checks an empty range_end as a single key: a from-key watch needs READ on its key only
        // (observed on 3.4.23: READ on prefix "\0" permits watching every key).
        if (key.length === 0) key = Uint8Array.of(0);
        if (end !== undefined && end.length === 1 && end[0] === 0) end = undefined;
      }
      server.auth.checkOp(ai, 'READ', key, end);
      return undefined;
    } catch (err) {
      if (isEtcdError(err, ErrInvalidAuthToken)) return `rpc error: code = Unauthenticated desc = ${ErrInvalidAuthToken.message}`;
      if (isEtcdError(err, ErrUserEmpty)) return `rpc error: code = InvalidArgument desc = ${ErrUserEmpty.message}`;
      return `rpc error: code = PermissionDenied desc = ${ErrPermissionDenied.message}`;
    }
  }

  /** A refused create: created+canceled, watch_id -1, queued after everything the stream queued before it. */
  private answerRefused(cancelReason: string): void {
    const before = this.stream.take().map((r) => this.responseOut(r));
    this.early.push(...before, {
      header: header(this.server.identity, this.server.mvcc.currentRevision),
      watch_id: '-1',
      created: true,
      canceled: true,
      compact_revision: '0',
      cancel_reason: cancelReason,
      fragment: false,
      events: [],
    });
    this.server.delivery.poke(this);
  }

  protected release(): void {
    this.held?.wait.cancel();
    this.held = undefined;
    this.early = [];
    this.stream.close();
  }

  private responseOut(r: DWatchResponse): M.WatchResponse {
    return {
      header: header(this.server.identity, r.revision),
      watch_id: this.idOut(r.watchId),
      created: r.created,
      canceled: r.canceled,
      compact_revision: String(r.compactRevision),
      cancel_reason: r.cancelReason,
      fragment: r.fragment,
      events: r.events.map(this.viewsOut ? eventView : eventOut),
    };
  }

  /** A create's watch_id as the stream's number (0 = let the stream choose). */
  private idIn(v: M.Int64Input | undefined): number {
    const exact = int64ToExactNumber(v, 'watch_id');
    if (exact !== undefined) return exact;
    const big = int64ToBigInt(v, 'watch_id');
    let id = this.bigIds.get(big);
    if (id === undefined) {
      id = this.bigIds.size + 0.5;
      this.bigIds.set(big, id);
      this.bigIdOf.set(id, big);
    }
    return id;
  }

  /** A cancel's watch_id: undefined when it names no ID this call ever used (etcd: no reply). */
  private knownIdIn(v: M.Int64Input | undefined): number | undefined {
    const exact = int64ToExactNumber(v, 'watch_id');
    return exact ?? this.bigIds.get(int64ToBigInt(v, 'watch_id'));
  }

  private idOut(id: number): string {
    if (Number.isInteger(id)) return String(id);
    return String(this.bigIdOf.get(id) ?? BigInt(INVALID_WATCH_ID));
  }
}
