/**
 * What etcd's Lock and Election services share. etcd serves both (server/etcdserver/api/v3lock,
 * v3election) with its own Go client's `concurrency` package, talking to the member it runs in through an
 * in-process client. So their rules are that package's, made of ordinary KV requests and watches, and
 * this module models the pieces both use:
 *  - the session: a Lock or Campaign without a lease (lease 0) is granted a fresh lease of 60 s
 *    (concurrency's default session TTL) that nobody keeps alive; any other lease ID is taken as given,
 *    unchecked, until a Put with it fails;
 *  - the candidate key: the name, "/", then the lease ID in lowercase hex (Go's %x of the int64);
 *  - waiting for deletes (concurrency's waitDeletes): find the newest key under the prefix created before
 *    ours, watch it from the revision it was read at until it is deleted, repeat until none is left. The
 *    watch is a real watcher of the member's watchable store, started at a past revision as etcd's is, so
 *    it is served by the watch sync step (every 100 ms of the member's clock) until it is synced;
 *  - errors: the in-process client turns etcd's errors into Go errors that etcd's gRPC layer no longer
 *    recognises, so a client sees code 2 (UNKNOWN) with etcd's message (observed on 3.4.23:
 *    `2 UNKNOWN: etcdserver: requested lease not found`).
 *
 * Requests are made through the member's in-process client (ConcurrencyClient): on a single member its
 * services (src/server/kv_service.ts), which answer at once; on a member of a simulated cluster
 * (src/cluster/lock_election.ts) the member's cluster services, whose writes are Raft proposals and
 * whose reads go through ReadIndex, answering later. The rules below are written once for both: a step
 * whose request answered at once continues at once, so a single member behaves as it always did. Requests
 * carry the caller's CallContext, so auth, validation and Raft accounting are the services'. A call's
 * cancellation (the client cancels, its deadline passes, it disconnects) is an AbortSignal in its
 * WaitingCallContext, the part of Go's context that is not a credential.
 */
import { ErrCompacted, prefixEnd } from '../mvcc/index.js';
import { GrpcCode } from '../etcd/index.js';
import type { WatchStream } from '../watch/index.js';
import type { CallContext } from './call_context.js';
import { andThen, isPromiseLike, type Awaitable } from './awaitable.js';
import { int64ToNumber } from './convert.js';
import type { Deliverable } from './delivery.js';
import { cancelledError, grpcError, isGrpcError, toGrpcError, type GrpcError } from './errors.js';
import type * as M from './messages.js';
import type { EtcdServer } from './etcd_server.js';

/** The caller of a call that may wait (Lock, Campaign, Observe), and what ends its wait early. @public */
export interface WaitingCallContext extends CallContext {
  /**
   * Aborted when the client stops waiting (cancel, deadline, disconnect): what etcd releases then is
   * released, and the call rejects with the signal's reason when it is a gRPC error, else with
   * `1 CANCELLED: Cancelled on client`.
   */
  readonly signal?: AbortSignal | undefined;
}

/**
 * The in-process client etcd's v3lock and v3election servers use: the KV and Lease requests of the member
 * they run on, and that member's watchable store for their waits. EtcdServer's own (`memberClient`)
 * answers at once; a cluster member's answers once Raft let it.
 */
export interface ConcurrencyClient {
  /** The member's server now (its watchable store and delivery points serve the waits' watches). */
  readonly server: EtcdServer;
  range(req: M.RangeRequest, ctx?: CallContext): Awaitable<M.RangeResponse>;
  txn(req: M.TxnRequest, ctx?: CallContext): Awaitable<M.TxnResponse>;
  deleteRange(req: M.DeleteRangeRequest, ctx?: CallContext): Awaitable<M.DeleteRangeResponse>;
  leaseGrant(req: M.LeaseGrantRequest, ctx?: CallContext): Awaitable<M.LeaseGrantResponse>;
  /**
   * A cluster member's: `down` runs if the member goes down (crashes) while a wait or stream runs on it —
   * its calls break as their connection does. Returns how to stop listening.
   */
  onDown?(down: (err: GrpcError) => void): () => void;
}

/** A single member's in-process client: its own services, answering at once. */
export function memberClient(server: EtcdServer): ConcurrencyClient {
  return {
    server,
    range: (req, ctx) => server.services.kv.range(req, ctx),
    txn: (req, ctx) => server.services.kv.txn(req, ctx),
    deleteRange: (req, ctx) => server.services.kv.deleteRange(req, ctx),
    leaseGrant: (req, ctx) => server.services.lease.leaseGrant(req, ctx),
  };
}

/** concurrency's defaultSessionTTL: the lease a session grants when the request names none (seconds). */
export const SESSION_TTL = 60;

/** What a request without a lease gets (concurrency.NoLease). */
const NO_LEASE = 0n;

/** An error as it reaches a client through etcd's in-process client: code UNKNOWN, etcd's message. */
export function viaClient(err: unknown): GrpcError {
  const e = toGrpcError(err);
  return e.code === GrpcCode.UNKNOWN ? e : grpcError(GrpcCode.UNKNOWN, e.details, err);
}

/** The error a waiting call rejects with when its signal aborts. */
export function abortReason(signal: AbortSignal): GrpcError {
  const r: unknown = signal.reason;
  return isGrpcError(r) ? r : cancelledError();
}

/** Go's %x of an int64 lease ID: lowercase hex, a minus sign for a negative ID. */
export function leaseHex(id: bigint): string {
  return id.toString(16);
}

/** `a` followed by `b`. */
export function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a, 0);
  out.set(b, a.byteLength);
  return out;
}

const SLASH = Uint8Array.of(0x2f);

/** The prefix of an election's or a lock's keys: its name and "/". */
export function keyPrefix(name: Uint8Array): Uint8Array {
  return concat(name, SLASH);
}

/** The candidate key of a lease: prefix + lease ID in hex. */
export function candidateKey(pfx: Uint8Array, lease: bigint): Uint8Array {
  return concat(pfx, new TextEncoder().encode(leaseHex(lease)));
}

/**
 * concurrency.NewSession with a lease: the lease itself, or for lease 0 a new one of SESSION_TTL seconds
 * (LeaseGrant through the member's Lease service). The session is orphaned at once (no keep-alive).
 */
export function sessionLease(client: ConcurrencyClient, lease: bigint, ctx: WaitingCallContext | undefined): Awaitable<bigint> {
  if (lease !== NO_LEASE) return lease;
  return andThen(request(() => client.leaseGrant({ ID: '0', TTL: String(SESSION_TTL) }, ctx), ctx), (r) => BigInt(r.ID));
}

/** clientv3.WithFirstCreate on a prefix: the oldest key under it (sort by create revision, limit 1). */
export function firstCreate(pfx: Uint8Array): M.RangeRequest {
  return { key: pfx, range_end: prefixEnd(pfx), sort_target: 'CREATE', sort_order: 'ASCEND', limit: 1 };
}

/** The range response of a txn's `i`th response (the ops are ours: it is a range). */
export function rangeOf(r: M.TxnResponse, i: number): M.RangeResponse {
  const op = r.responses[i];
  if (op === undefined || op.response !== 'response_range') throw new Error(`etcdsim: txn response ${i} is not a range`);
  return op.response_range;
}

/** The compare "create_revision(key) == rev". */
export function createRevisionIs(key: Uint8Array, rev: M.Int64Input): M.Compare {
  return { result: 'EQUAL', target: 'CREATE', key, target_union: 'create_revision', create_revision: rev };
}

/**
 * Runs a request of the in-process client: its errors as a client of the Lock / Election service sees them.
 * An answer still to come is given up when the caller's signal aborts first (etcd's request ends with the
 * call's context; what the request did meanwhile stands).
 */
export function request<T>(fn: () => Awaitable<T>, ctx?: WaitingCallContext): Awaitable<T> {
  let v: Awaitable<T>;
  try {
    v = fn();
  } catch (err) {
    throw viaClient(err);
  }
  if (!isPromiseLike(v)) return v;
  const answer = Promise.resolve(v).then(undefined, (err: unknown) => {
    throw viaClient(err);
  });
  const signal = ctx?.signal;
  return signal === undefined ? answer : untilAborted(answer, signal);
}

/**
 * The caller stops waiting when its signal aborts, whether or not the answer could still reach it (a
 * client's own cancel or deadline ends its call locally; what the request did meanwhile stands).
 */
export function untilAborted<T>(answer: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    answer.catch(() => undefined); // given up: its error is nobody's
    return Promise.reject(abortReason(signal));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    answer.then(
      (r) => {
        signal.removeEventListener('abort', onAbort);
        resolve(r);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

/** Fires a request whose answer nobody waits for (a release after the call ended); its errors are ignored, as etcd ignores them. */
export function fireAndForget(fn: () => Awaitable<unknown>): void {
  try {
    const v = fn();
    if (isPromiseLike(v)) Promise.resolve(v).catch(() => undefined);
  } catch {
    // ignored
  }
}

/** How a wait for deletes ended: every older key is gone (with the header of the read that saw it), or an error. */
export type WaitResult = { readonly header: M.ResponseHeader; readonly error?: undefined } | { readonly error: GrpcError };

/**
 * concurrency's waitDeletes(prefix, maxCreateRev): resolves once no key under the prefix has a create
 * revision ≤ maxCreateRev. Each round reads the newest such key (Range, sort by create revision
 * descending, limit 1, max_create_revision) and watches it from the revision of that read until a DELETE
 * event comes. Watch responses are handled at the member's delivery points (delivery.ts), never inside
 * the write that caused them. A watch canceled by compaction ends the wait with ErrCompacted. On a cluster
 * member the read goes through ReadIndex (it answers later) and the watch is on that member's own store.
 */
export class DeletesWait implements Deliverable {
  private stream: WatchStream | undefined;
  private watchId: number | undefined;
  private ended = false;
  private offDown: (() => void) | undefined;
  /** The member's server the wait watches (a cluster member's is replaced by a restart, which ends the wait first). */
  private readonly server: EtcdServer;

  constructor(
    private readonly client: ConcurrencyClient,
    private readonly pfx: Uint8Array,
    private readonly maxCreateRevision: number,
    private readonly ctx: CallContext | undefined,
    private readonly done: (r: WaitResult) => void,
  ) {
    this.server = client.server;
  }

  /** Starts waiting (the first round runs now). */
  start(): void {
    this.server.delivery.add(this);
    this.offDown = this.client.onDown?.((error) => this.finish({ error }));
    this.round();
  }

  /** Stops waiting without an answer (the caller went away); its watcher is canceled. */
  cancel(): void {
    this.release();
  }

  /** @internal Delivery point: handles what the watcher received. */
  deliver(): number {
    const stream = this.stream;
    if (this.ended || stream === undefined) return 0;
    for (const r of stream.take()) {
      if (r.watchId !== this.watchId) continue;
      if (r.compactRevision !== 0) {
        this.finish({ error: grpcError(GrpcCode.UNKNOWN, ErrCompacted.message) });
        return 0;
      }
      if (r.events.some((ev) => ev.type === 'DELETE')) {
        this.round();
        return 0;
      }
    }
    return 0;
  }

  private round(): void {
    // The key watched so far is gone: its watcher goes before the next read (which may answer later).
    if (this.watchId !== undefined) this.stream?.cancel(this.watchId);
    this.watchId = undefined;
    let res: Awaitable<M.RangeResponse>;
    try {
      res = this.client.range(
        {
          key: this.pfx,
          range_end: prefixEnd(this.pfx),
          sort_target: 'CREATE',
          sort_order: 'DESCEND',
          limit: 1,
          max_create_revision: this.maxCreateRevision,
        },
        this.ctx,
      );
    } catch (err) {
      this.finish({ error: viaClient(err) });
      return;
    }
    if (isPromiseLike(res)) {
      res.then(
        (r) => this.afterRead(r),
        (err: unknown) => this.finish({ error: viaClient(err) }),
      );
    } else this.afterRead(res);
  }

  private afterRead(res: M.RangeResponse): void {
    if (this.ended) return;
    const last = res.kvs[0];
    if (last === undefined) {
      this.finish({ header: res.header });
      return;
    }
    const stream = (this.stream ??= this.openStream());
    this.watchId = stream.watch({ key: last.key, startRevision: int64ToNumber(res.header.revision, 'revision') }).watchId;
  }

  private openStream(): WatchStream {
    const stream = this.server.watchable.newWatchStream();
    stream.onSend = () => this.server.delivery.poke(this);
    return stream;
  }

  private finish(r: WaitResult): void {
    if (this.ended) return;
    this.release();
    this.done(r);
  }

  private release(): void {
    if (this.ended) return;
    this.ended = true;
    this.offDown?.();
    this.stream?.close();
    this.server.delivery.remove(this);
  }
}

/**
 * Runs one wait for deletes as a Promise: resolves with the final header, or rejects with the wait's
 * error; when `signal` aborts first, the watcher is dropped, `onAbort` runs (what etcd releases) and the
 * promise rejects with the abort reason. `onError` runs before a rejection by the wait's own error.
 */
export function waitDeletes(
  client: ConcurrencyClient,
  pfx: Uint8Array,
  maxCreateRevision: number,
  ctx: WaitingCallContext | undefined,
  hooks: { onAbort(): void; onError(): void },
): Promise<M.ResponseHeader> {
  const signal = ctx?.signal;
  return new Promise<M.ResponseHeader>((resolve, reject) => {
    const onAbortSignal = (): void => {
      wait.cancel();
      hooks.onAbort();
      reject(abortReason(signal!));
    };
    const wait = new DeletesWait(client, pfx, maxCreateRevision, ctx, (r) => {
      signal?.removeEventListener('abort', onAbortSignal);
      if (r.error !== undefined) {
        hooks.onError();
        reject(r.error);
      } else resolve(r.header);
    });
    if (signal?.aborted === true) {
      onAbortSignal();
      return;
    }
    signal?.addEventListener('abort', onAbortSignal, { once: true });
    wait.start();
  });
}
