/**
 * etcdserverpb.Watch: one `watch()` is one bidirectional Watch call. Requests go in with `write()`;
 * responses come out in message form, pulled with `take()` or pushed to an `onResponse` listener at the
 * delivery points described in delivery.ts. All watch semantics are the WatchStream's (src/watch).
 *
 * Ending: `end()` is the client half-closing its side (etcd's recv loop sees EOF and closes the stream),
 * `cancel()` the client canceling the call, `abort(err)` the server or the network breaking it (fault
 * injection). Each closes the WatchStream — every watcher is canceled, nothing leaks — and fires the
 * `onEnd` listeners once: with undefined after end(), a CANCELLED error after cancel(), the given
 * error after abort(). Writes after the end are ignored.
 */
import { INVALID_WATCH_ID, type WatchResponse as DWatchResponse, type WatchStream } from '../watch/index.js';
import { eventOut, header, int64ToBigInt, int64ToExactNumber, watchCreateIn } from './convert.js';
import { toGrpcError } from './errors.js';
import { StreamCall } from './stream_call.js';
import type * as M from './messages.js';
import type { EtcdServer } from './etcd_server.js';

export type { EndListener, ResponseListener } from './stream_call.js';

export class WatchService {
  private readonly open = new Set<WatchCall>();

  constructor(private readonly server: EtcdServer) {}

  /** Watch: opens one bidirectional stream. */
  watch(): WatchCall {
    const call = new WatchCall(this.server, (c) => this.open.delete(c));
    this.open.add(call);
    return call;
  }

  /** The open Watch calls, oldest first (fault hooks break them). */
  calls(): WatchCall[] {
    return [...this.open];
  }
}

export class WatchCall extends StreamCall<M.WatchResponse> {
  readonly stream: WatchStream;
  /**
   * Watch IDs beyond ±2^53 cannot be the stream's numbers; each gets a fractional stand-in (the stream
   * only compares IDs, and a client can never send a fraction), mapped back on the way out.
   */
  private readonly bigIds = new Map<bigint, number>();
  private readonly bigIdOf = new Map<number, bigint>();

  constructor(server: EtcdServer, onClose: (call: WatchCall) => void) {
    super(server, onClose as (call: StreamCall<M.WatchResponse>) => void, 'etcdsim: watch stream broken');
    this.stream = server.watchable.newWatchStream();
    // Responses a timer step queues (catch-up, victims, progress) must reach the client too, not only
    // those caused by a request or a commit.
    this.stream.onQueue = () => server.delivery.poke();
  }

  /** Number of responses queued and not yet taken or delivered. */
  get pending(): number {
    return this.stream.pending;
  }

  /**
   * Sends one WatchRequest: create, cancel or progress. A request with no member set is ignored, as etcd
   * ignores it. Throws only for a message no protobuf decoder would produce (INVALID_ARGUMENT).
   */
  write(req: M.WatchRequest): void {
    if (this.ended) return;
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
        this.stream.watch(watchCreateIn(c, this.idIn(c.watch_id)));
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

  /** Takes every queued response, in order, in message form. */
  take(): M.WatchResponse[] {
    const rs = this.stream.take();
    return rs.length === 0 ? [] : rs.map((r) => this.responseOut(r));
  }

  protected release(): void {
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
      events: r.events.map(eventOut),
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
