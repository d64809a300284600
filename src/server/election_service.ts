/**
 * v3electionpb.Election over one member (etcd's v3election server, which runs concurrency.Election on an
 * in-process client): Campaign, Proclaim, Leader, Observe, Resign in message form. See concurrency_rules.ts for
 * the session, key and waiting rules. The leader is the key under `name/` with the lowest create revision.
 *
 *  - Campaign(name, lease, value): one Txn puts `name/<lease hex>` = value bound to the lease if it was
 *    never created, else reads it (a campaign resumed by the same lease; a different value is then
 *    proclaimed). Then it waits until every key created before it is deleted. The answer is the Txn's
 *    header and the LeaderKey {name, key, rev = the key's create revision, lease}. If the client stops
 *    waiting the key is deleted when its create revision is still `rev` (Resign); a wait that fails for
 *    another reason leaves it.
 *  - Proclaim(leader, value): puts value on leader.key, bound to leader.lease, if its create revision is
 *    still leader.rev; else `election: not leader`. It does not check that the key is the oldest.
 *  - Resign(leader): deletes leader.key if its create revision is still leader.rev; never an error.
 *  - Leader(name): the oldest key, or `election: no leader`.
 *  - Observe(name): a stream of the leader's key-value: the current one (or the first one put, if there
 *    is none), then each value it proclaims, then the next leader once its key is deleted.
 * A request without `leader` fails with `"leader" field must be provided`. Proclaim and Resign, like
 * Campaign, open a session on the given lease: a lease of 0 is granted a fresh 60 s lease (for Proclaim
 * the key is then bound to it). Every error is code 2 (UNKNOWN) with etcd's message (3.4.23).
 */
import { bytesEqual, prefixEnd } from '../mvcc/index.js';
import { GrpcCode, type EtcdErrorKind } from '../etcd/index.js';
import type { WatchStream } from '../watch/index.js';
import type { CallContext } from './call_context.js';
import {
  abortReason,
  candidateKey,
  createRevisionIs,
  fireAndForget,
  firstCreate,
  keyPrefix,
  memberClient,
  rangeOf,
  request,
  sessionLease,
  waitDeletes,
  type ConcurrencyClient,
  type WaitingCallContext,
} from './concurrency_rules.js';
import { andThen, isPromiseLike, now, type Awaitable } from './awaitable.js';
import { bytesIn, bytesOut, header, int64ToBigInt, int64ToNumber, kvOut } from './convert.js';
import { asGrpc, grpcError, type GrpcError } from './errors.js';
import { StreamCall } from './stream_call.js';
import type * as M from './messages.js';
import type { EtcdServer } from './etcd_server.js';

/** concurrency.ErrElectionNotLeader, as a client sees it. */
export const ErrElectionNotLeader: EtcdErrorKind = Object.freeze({ code: GrpcCode.UNKNOWN, message: 'election: not leader' });
/** concurrency.ErrElectionNoLeader, as a client sees it. */
export const ErrElectionNoLeader: EtcdErrorKind = Object.freeze({ code: GrpcCode.UNKNOWN, message: 'election: no leader' });
/** v3election.ErrMissingLeaderKey, as a client sees it. */
export const ErrMissingLeaderKey: EtcdErrorKind = Object.freeze({ code: GrpcCode.UNKNOWN, message: '"leader" field must be provided' });

const fail = (kind: EtcdErrorKind): GrpcError => grpcError(kind.code, kind.message);

/** A LeaderKey of a request, read. */
interface Leadership {
  readonly key: Uint8Array;
  readonly rev: number;
  readonly lease: bigint;
}

/**
 * The rules of the Election service, once, over a member's in-process client: a single member's (answers
 * at once, ElectionService) or a cluster member's (answers once Raft let it, src/cluster/lock_election.ts).
 */
export class ElectionRules {
  private readonly open = new Set<ObserveCall>();

  constructor(private readonly client: ConcurrencyClient) {}

  /** Election.Campaign (see the module comment). */
  campaign(req: M.CampaignRequest, ctx?: WaitingCallContext): Awaitable<M.CampaignResponse> {
    const client = this.client;
    const { name, value, leaseIn } = asGrpc(() => ({
      name: bytesIn(req.name, 'name'),
      value: bytesIn(req.value, 'value'),
      leaseIn: int64ToBigInt(req.lease, 'lease'),
    }));
    if (ctx?.signal?.aborted === true) throw abortReason(ctx.signal);
    return andThen(sessionLease(client, leaseIn, ctx), (lease) => {
      const pfx = keyPrefix(name);
      const key = candidateKey(pfx, lease);
      const txn = request(
        () =>
          client.txn(
            {
              compare: [createRevisionIs(key, 0)],
              success: [{ request_put: { key, value, lease: String(lease) } }],
              failure: [{ request_range: { key } }],
            },
            ctx,
          ),
        ctx,
      );
      return andThen(txn, (txn) => {
        let rev = int64ToNumber(txn.header.revision, 'revision');
        let resumed: Awaitable<unknown> = undefined;
        if (!txn.succeeded) {
          const kv = rangeOf(txn, 0).kvs[0];
          rev = int64ToNumber(kv?.create_revision, 'create_revision');
          if (kv !== undefined && !bytesEqual(kv.value, value)) {
            // A resumed campaign with a new value proclaims it; if that fails, it resigns and fails.
            const l = { key, rev, lease };
            const resignThrow = (err: unknown): never => {
              fireAndForget(() => this.resignAs(l, ctx));
              throw err;
            };
            try {
              const p = this.proclaimAs(l, value, ctx);
              resumed = isPromiseLike(p) ? Promise.resolve(p).catch(resignThrow) : p;
            } catch (err) {
              resignThrow(err);
            }
          }
        }
        return andThen(resumed, () => {
          // A client that stops waiting resigns (with the in-process client's own context: no caller token).
          const resign = (): void => fireAndForget(() => this.resignAs({ key, rev, lease }, {}));
          return waitDeletes(client, pfx, rev - 1, ctx, { onAbort: resign, onError: () => {} }).then(() => ({
            header: txn.header,
            leader: { name: bytesOut(name), key: bytesOut(key), rev: String(rev), lease: String(lease) },
          }));
        });
      });
    });
  }

  /** Election.Proclaim: the leader's new value; `election: not leader` once its key was deleted or re-created. */
  proclaim(req: M.ProclaimRequest, ctx?: CallContext): Awaitable<M.ProclaimResponse> {
    const { leader, value } = asGrpc(() => ({ leader: leadershipIn(req.leader), value: bytesIn(req.value, 'value') }));
    return andThen(sessionLease(this.client, leader.lease, ctx), (lease) =>
      andThen(this.proclaimAs({ ...leader, lease }, value, ctx), (header) => ({ header })),
    );
  }

  /** Election.Resign: deletes the leader key if it is still that leadership's. */
  resign(req: M.ResignRequest, ctx?: CallContext): Awaitable<M.ResignResponse> {
    const leader = asGrpc(() => leadershipIn(req.leader));
    return andThen(sessionLease(this.client, leader.lease, ctx), (lease) =>
      andThen(this.resignAs({ ...leader, lease }, ctx), (header) => ({ header })),
    );
  }

  /** Election.Leader: the oldest candidate's key-value. */
  leader(req: M.LeaderRequest, ctx?: CallContext): Awaitable<M.LeaderResponse> {
    const pfx = keyPrefix(asGrpc(() => bytesIn(req.name, 'name')));
    return andThen(
      request(() => this.client.range(firstCreate(pfx), ctx)),
      (r) => {
        const kv = r.kvs[0];
        if (kv === undefined) throw fail(ErrElectionNoLeader);
        return { header: r.header, kv };
      },
    );
  }

  /** Election.Observe: opens one server stream of leader changes (see ObserveCall). */
  observe(req: M.LeaderRequest, ctx?: CallContext): ObserveCall {
    const name = asGrpc(() => bytesIn(req.name, 'name'));
    const call = new ObserveCall(this.client, keyPrefix(name), (c) => this.open.delete(c), ctx);
    this.open.add(call);
    call.start();
    return call;
  }

  /** The open Observe calls, oldest first. */
  calls(): ObserveCall[] {
    return [...this.open];
  }

  /** concurrency.Election.Proclaim: a Txn putting the value if the key's create revision is unchanged. */
  private proclaimAs(l: Leadership, value: Uint8Array, ctx: CallContext | undefined): Awaitable<M.ResponseHeader> {
    const r = request(() =>
      this.client.txn(
        { compare: [createRevisionIs(l.key, l.rev)], success: [{ request_put: { key: l.key, value, lease: String(l.lease) } }] },
        ctx,
      ),
    );
    return andThen(r, (r) => {
      if (!r.succeeded) throw fail(ErrElectionNotLeader);
      return r.header;
    });
  }

  /** concurrency.Election.Resign: a Txn deleting the key if its create revision is unchanged. */
  private resignAs(l: Leadership, ctx: CallContext | undefined): Awaitable<M.ResponseHeader> {
    const r = request(() =>
      this.client.txn({ compare: [createRevisionIs(l.key, l.rev)], success: [{ request_delete_range: { key: l.key } }] }, ctx),
    );
    return andThen(r, (r) => r.header);
  }
}

/** v3electionpb.Election on a single member: its requests answer at once, so Proclaim, Resign and Leader do too. @public */
export class ElectionService {
  private readonly rules: ElectionRules;

  /** @internal */
  constructor(server: EtcdServer) {
    this.rules = new ElectionRules(memberClient(server));
  }

  /**
   * Election.Campaign: resolves once this candidate is the leader; `ctx.signal` ends the wait early
   * (the candidate then resigns, as etcd's does).
   */
  async campaign(req: M.CampaignRequest, ctx?: WaitingCallContext): Promise<M.CampaignResponse> {
    return this.rules.campaign(req, ctx);
  }

  /** Election.Proclaim: the leader's new value; `election: not leader` once its key was deleted or re-created. */
  proclaim(req: M.ProclaimRequest, ctx?: CallContext): M.ProclaimResponse {
    return now(this.rules.proclaim(req, ctx));
  }

  /** Election.Resign: deletes the leader key if it is still that leadership's. */
  resign(req: M.ResignRequest, ctx?: CallContext): M.ResignResponse {
    return now(this.rules.resign(req, ctx));
  }

  /** Election.Leader: the oldest candidate's key-value. */
  leader(req: M.LeaderRequest, ctx?: CallContext): M.LeaderResponse {
    return now(this.rules.leader(req, ctx));
  }

  /** Election.Observe: opens one server stream of leader changes (see ObserveCall). */
  observe(req: M.LeaderRequest, ctx?: CallContext): ObserveCall {
    return this.rules.observe(req, ctx);
  }

  /** @internal The open Observe calls, oldest first. */
  calls(): ObserveCall[] {
    return this.rules.calls();
  }
}

function leadershipIn(l: M.LeaderKeyInput | null | undefined): Leadership {
  if (l == null) throw fail(ErrMissingLeaderKey);
  return { key: bytesIn(l.key, 'leader.key'), rev: int64ToNumber(l.rev, 'leader.rev'), lease: int64ToBigInt(l.lease, 'leader.lease') };
}

/**
 * One Observe call (concurrency.Election.Observe): reads the leader (the oldest key under the prefix);
 * with none, watches the prefix from the revision of that read for the first PUT, answered with the
 * header revision set to that key's mod revision. Then it watches the leader's key from the next
 * revision: each PUT (a proclaim) is answered with the watch response's header; a DELETE starts over with
 * a new read. Responses are taken or delivered like a WatchCall's (delivery.ts); end/cancel/abort behave
 * as there. A read that fails, or a watch canceled by compaction, ends the stream without an error, as
 * etcd's does.
 * @public
 */
export class ObserveCall extends StreamCall<M.LeaderResponse> {
  private queue: M.LeaderResponse[] = [];
  private stream: WatchStream | undefined;
  private watchId: number | undefined;
  /** Waiting for a first leader (a prefix watch) or following one leader's key. */
  private phase: 'awaitLeader' | 'follow' = 'follow';

  private offDown: (() => void) | undefined;

  /** @internal */
  constructor(
    private readonly client: ConcurrencyClient,
    private readonly pfx: Uint8Array,
    onClose: (call: ObserveCall) => void,
    private readonly ctx?: CallContext,
  ) {
    super(client.server, onClose as (call: StreamCall<M.LeaderResponse>) => void, 'etcdsim: observe stream broken');
  }

  /** @internal Reads the current leader (called once, by ElectionRules.observe). */
  start(): void {
    // On a cluster member that goes down, the stream breaks as its connection does.
    this.offDown = this.client.onDown?.((err) => this.abort(err));
    this.readLeader();
  }

  get pending(): number {
    return this.queue.length + (this.stream?.pending ?? 0);
  }

  take(): M.LeaderResponse[] {
    this.pump();
    const q = this.queue;
    if (q.length === 0) return [];
    this.queue = [];
    return q;
  }

  /** @internal Delivery point: follows what the watches saw, then pushes responses to the listener. */
  override deliver(): number {
    this.pump();
    return super.deliver();
  }

  protected release(): void {
    this.offDown?.();
    this.queue = [];
    this.stream?.close();
  }

  private readLeader(): void {
    // The key followed so far is gone: its watcher goes before the read (which may answer later).
    if (this.watchId !== undefined) this.stream?.cancel(this.watchId);
    this.watchId = undefined;
    let r: Awaitable<M.RangeResponse>;
    try {
      r = this.client.range(firstCreate(this.pfx), this.ctx);
    } catch {
      this.end();
      return;
    }
    if (isPromiseLike(r)) {
      r.then(
        (res) => this.afterRead(res),
        () => this.end(),
      );
    } else this.afterRead(r);
  }

  private afterRead(r: M.RangeResponse): void {
    if (this.ended) return;
    const kv = r.kvs[0];
    if (kv === undefined) {
      this.phase = 'awaitLeader';
      this.watch({ key: this.pfx, rangeEnd: prefixEnd(this.pfx), startRevision: int64ToNumber(r.header.revision, 'revision') });
      return;
    }
    this.emit({ header: r.header, kv });
    this.follow(kv, int64ToNumber(r.header.revision, 'revision'));
  }

  private follow(kv: M.KeyValue, rev: number): void {
    this.phase = 'follow';
    this.watch({ key: kv.key, startRevision: rev + 1 });
  }

  private watch(req: { key: Uint8Array; rangeEnd?: Uint8Array; startRevision: number }): void {
    if (this.stream === undefined) {
      this.stream = this.server.watchable.newWatchStream();
      this.stream.onSend = () => this.server.delivery.poke(this);
    }
    if (this.watchId !== undefined) this.stream.cancel(this.watchId);
    this.watchId = this.stream.watch(req).watchId;
  }

  private emit(r: M.LeaderResponse): void {
    this.queue.push(r);
    this.server.delivery.poke(this);
  }

  /** Handles every watch response received so far. */
  private pump(): void {
    const stream = this.stream;
    if (this.ended || stream === undefined) return;
    for (let batch = stream.take(); batch.length > 0 && !this.ended; batch = stream.take()) {
      for (const r of batch) {
        if (r.watchId !== this.watchId || this.ended) continue;
        if (r.canceled) {
          this.end();
          return;
        }
        for (const ev of r.events) {
          const kv = kvOut(ev.kv);
          if (this.phase === 'awaitLeader') {
            if (ev.type !== 'PUT') continue;
            this.emit({ header: header(this.server.identity, ev.kv.modRevision), kv });
            this.follow(kv, ev.kv.modRevision);
            break;
          }
          if (ev.type === 'DELETE') {
            this.readLeader();
            break;
          }
          this.emit({ header: header(this.server.identity, r.revision), kv });
        }
      }
    }
  }
}
