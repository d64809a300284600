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
 * Requests are made through the member's services (src/server/kv_service.ts), with the caller's
 * CallContext, so auth, validation and Raft accounting are theirs. A call's cancellation (the client
 * cancels, its deadline passes, it disconnects) is an AbortSignal in its WaitingCallContext, the part of
 * Go's context that is not a credential.
 */
import { ErrCompacted, GrpcCode, prefixEnd } from '../mvcc/index.js';
import type { WatchStream } from '../watch/index.js';
import type { CallContext } from './call_context.js';
import { int64ToNumber } from './convert.js';
import type { Deliverable } from './delivery.js';
import { cancelledError, grpcError, isGrpcError, toGrpcError, type GrpcError } from './errors.js';
import type * as M from './messages.js';
import type { EtcdServer } from './etcd_server.js';

/** The caller of a call that may wait (Lock, Campaign, Observe), and what ends its wait early. */
export interface WaitingCallContext extends CallContext {
  /**
   * Aborted when the client stops waiting (cancel, deadline, disconnect): what etcd releases then is
   * released, and the call rejects with the signal's reason when it is a gRPC error, else with
   * `1 CANCELLED: Cancelled on client`.
   */
  readonly signal?: AbortSignal | undefined;
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
export function sessionLease(server: EtcdServer, lease: bigint, ctx: CallContext | undefined): bigint {
  if (lease !== NO_LEASE) return lease;
  try {
    return BigInt(server.services.lease.leaseGrant({ ID: '0', TTL: String(SESSION_TTL) }, ctx).ID);
  } catch (err) {
    throw viaClient(err);
  }
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

/** Runs a request of the in-process client: its errors as a client of the Lock / Election service sees them. */
export function request<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw viaClient(err);
  }
}

/** How a wait for deletes ended: every older key is gone (with the header of the read that saw it), or an error. */
export type WaitResult = { readonly header: M.ResponseHeader; readonly error?: undefined } | { readonly error: GrpcError };

/**
 * concurrency's waitDeletes(prefix, maxCreateRev): resolves once no key under the prefix has a create
 * revision ≤ maxCreateRev. Each round reads the newest such key (Range, sort by create revision
 * descending, limit 1, max_create_revision) and watches it from the revision of that read until a DELETE
 * event comes. Watch responses are handled at the member's delivery points (delivery.ts), never inside
 * the write that caused them. A watch canceled by compaction ends the wait with ErrCompacted.
 */
export class DeletesWait implements Deliverable {
  private stream: WatchStream | undefined;
  private watchId: number | undefined;
  private ended = false;

  constructor(
    private readonly server: EtcdServer,
    private readonly pfx: Uint8Array,
    private readonly maxCreateRevision: number,
    private readonly ctx: CallContext | undefined,
    private readonly done: (r: WaitResult) => void,
  ) {}

  /** Starts waiting (the first round runs now). */
  start(): void {
    this.server.delivery.add(this);
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
    let res: M.RangeResponse;
    try {
      res = this.server.services.kv.range(
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
    const last = res.kvs[0];
    if (last === undefined) {
      this.finish({ header: res.header });
      return;
    }
    const stream = (this.stream ??= this.openStream());
    if (this.watchId !== undefined) stream.cancel(this.watchId);
    this.watchId = stream.watch({ key: last.key, startRevision: int64ToNumber(res.header.revision, 'revision') }).watchId;
  }

  private openStream(): WatchStream {
    const stream = this.server.watchable.newWatchStream();
    stream.onSend = () => this.server.delivery.poke();
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
  server: EtcdServer,
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
    const wait = new DeletesWait(server, pfx, maxCreateRevision, ctx, (r) => {
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
