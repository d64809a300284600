/**
 * etcdserverpb.Lease over one member's Lessor, message form in and out (v3rpc/lease.go's answers):
 * KeepAlive of an unknown or expired lease answers TTL "0" (not an error), TimeToLive of an unknown lease
 * TTL "-1", Leases lists every lease ID. Headers carry the current store revision (a revoke's: the
 * revision after its deletes).
 *
 * Auth (while enabled; server/etcdserver/v3_server.go and apply/auth.go): LeaseRevoke needs WRITE on
 * every attached key, LeaseKeepAlive too (a refusal ends the stream with the error), LeaseTimeToLive READ
 * on them; root may do all three. KeepAlive and TimeToLive without a token are ErrUserEmpty. etcd 3.4.23
 * checks neither KeepAlive nor TimeToLive (AuthStore.checksLeaseAccess).
 */
import { checkLeaseKeysAuth, ErrUserEmpty } from '../auth/index.js';
import { keyBytes } from '../mvcc/index.js';
import { fail } from '../etcd/index.js';
import type { CallContext } from './call_context.js';
import { bytesOut, header, int64ToBigInt, int64ToNumber } from './convert.js';
import { asGrpc, toGrpcError } from './errors.js';
import { refuseUnderAlarm } from './alarms.js';
import { LEASE_OVERHEAD, checkQuota } from './quota.js';
import { StreamCall, type BidiStream } from './stream_call.js';
import type * as M from './messages.js';
import type { EtcdServer } from './etcd_server.js';

/** @public */
export class LeaseService {
  private readonly open = new Set<KeepAliveCall>();

  /** @internal */
  constructor(private readonly server: EtcdServer) {}

  /** Lease.LeaseGrant: ID "0" lets the server pick a positive 63-bit ID (from the seeded PRNG). */
  leaseGrant(req: M.LeaseGrantRequest, ctx?: CallContext): M.LeaseGrantResponse {
    const server = this.server;
    const g = asGrpc(() => {
      const id = int64ToBigInt(req.ID, 'ID');
      const ttl = int64ToNumber(req.TTL, 'TTL');
      checkQuota(server, LEASE_OVERHEAD, ctx); // etcd's quota lease server, in front of everything
      server.authInfo(ctx); // an invalid token fails before the proposal
      refuseUnderAlarm(server, 'leaseGrant'); // before the lessor's own checks (etcd's capped applier)
      return server.lessor.grant(id, ttl);
    });
    server.noteRaftEntry();
    return { header: header(server.identity, server.mvcc.currentRevision), ID: String(g.id), TTL: String(g.ttl), error: '' };
  }

  /** Lease.LeaseRevoke: deletes the attached keys in one revision. */
  leaseRevoke(req: M.LeaseRevokeRequest, ctx?: CallContext): M.LeaseRevokeResponse {
    const server = this.server;
    const before = server.mvcc.currentRevision;
    asGrpc(() => {
      const id = int64ToBigInt(req.ID, 'ID');
      const ai = server.auth.checksTokens ? server.authInfo(ctx) : undefined; // an invalid token fails before the proposal
      refuseUnderAlarm(server, 'leaseRevoke'); // CORRUPT's applier, outside the auth applier
      if (server.auth.checksTokens) {
        try {
          checkLeaseKeysAuth(server.auth, ai, leaseKeys(server, id));
        } catch (err) {
          server.noteRaftEntry(); // refused at apply time: proposed all the same
          throw err;
        }
      }
      server.lessor.revoke(id);
    });
    if (server.mvcc.currentRevision === before) server.noteRaftEntry();
    return { header: header(server.identity, server.mvcc.currentRevision) };
  }

  /** Lease.LeaseTimeToLive: unknown lease → TTL "-1", grantedTTL "0", no error. */
  leaseTimeToLive(req: M.LeaseTimeToLiveRequest, ctx?: CallContext): M.LeaseTimeToLiveResponse {
    const server = this.server;
    const t = asGrpc(() => {
      const id = int64ToBigInt(req.ID, 'ID');
      checkLeaseAccess(server, ctx, id, 'READ');
      return server.lessor.timeToLive(id, req.keys === true);
    });
    return {
      header: header(server.identity, server.mvcc.currentRevision),
      ID: String(t.id),
      TTL: String(t.ttl),
      grantedTTL: String(t.grantedTTL),
      keys: t.keys.map(bytesOut),
    };
  }

  /** Lease.LeaseLeases: every lease, in ascending ID order. etcd checks no permission here: `_ctx` is unused. */
  leaseLeases(_req: M.LeaseLeasesRequest = {}, _ctx?: CallContext): M.LeaseLeasesResponse {
    const server = this.server;
    return {
      header: header(server.identity, server.mvcc.currentRevision),
      leases: server.lessor.leases().map((id) => ({ ID: String(id) })),
    };
  }

  /** Lease.LeaseKeepAlive: opens one bidirectional keep-alive stream. */
  leaseKeepAlive(ctx?: CallContext): KeepAliveCall {
    const call = new KeepAliveCall(this.server, (c) => this.open.delete(c), ctx);
    this.open.add(call);
    return call;
  }

  /** @internal The open keep-alive calls, oldest first (fault hooks break them). */
  calls(): KeepAliveCall[] {
    return [...this.open];
  }
}

/**
 * One LeaseKeepAlive call. Each `write({ID})` renews the lease and queues one response {ID, TTL}: the
 * lease's TTL, or "0" when it is unknown or already expired. Responses are taken or delivered like a
 * WatchCall's (delivery.ts); end/cancel/abort/onEnd behave as there. A lessor that is not primary makes
 * etcd fail the stream: the call is aborted with that error.
 * @public
 */
export class KeepAliveCall extends StreamCall<M.LeaseKeepAliveResponse> implements BidiStream<M.LeaseKeepAliveRequest, M.LeaseKeepAliveResponse> {
  private queue: M.LeaseKeepAliveResponse[] = [];

  /** @internal */
  constructor(
    server: EtcdServer,
    onClose: (call: KeepAliveCall) => void,
    private readonly ctx?: CallContext,
  ) {
    super(server, onClose as (call: StreamCall<M.LeaseKeepAliveResponse>) => void, 'etcdsim: keep-alive stream broken');
  }

  get pending(): number {
    return this.queue.length;
  }

  write(req: M.LeaseKeepAliveRequest): void {
    if (this.ended) return;
    let id: bigint;
    try {
      id = int64ToBigInt(req.ID, 'ID');
    } catch (err) {
      throw toGrpcError(err);
    }
    this.arrive(() => this.received(id));
  }

  /** The member reads one renewal: here its own lessor renews it (a process member's follower forwards it). */
  protected received(id: bigint): void {
    this.renew(id);
  }

  /** Queues the answer to one renewal, with this member's header. */
  protected answer(id: bigint, ttl: number): void {
    const server = this.server;
    this.queue.push({ header: header(server.identity, server.mvcc.currentRevision), ID: String(id), TTL: String(ttl) });
    server.delivery.poke(this);
  }

  /** The member renews one lease. */
  private renew(id: bigint): void {
    if (this.ended) return;
    const server = this.server;
    let ttl: number;
    try {
      checkLeaseAccess(server, this.ctx, id, 'WRITE');
      ttl = server.lessor.keepAlive(id);
    } catch (err) {
      this.abort(toGrpcError(err));
      return;
    }
    this.answer(id, ttl);
  }

  take(): M.LeaseKeepAliveResponse[] {
    const q = this.queue;
    if (q.length === 0) return [];
    this.queue = [];
    return q;
  }

  protected release(): void {
    this.queue = [];
  }
}

function leaseKeys(server: EtcdServer, id: bigint): Uint8Array[] {
  return server.lessor.keyStringsOf(id).map(keyBytes);
}

/**
 * checkLeaseRenew / checkLeaseTimeToLive: a token is required; root passes; others need `kind` on every key.
 * Done by the member asked, also where the leader's lessor answers (a process member's follower).
 */
export function checkLeaseAccess(server: EtcdServer, ctx: CallContext | undefined, id: bigint, kind: 'READ' | 'WRITE'): void {
  if (!server.auth.enabled || !server.auth.checksLeaseAccess) return; // 3.4.23: no check at all
  const ai = server.authInfo(ctx);
  if (ai === undefined) fail(ErrUserEmpty);
  if (server.auth.isAdmin(ai)) return;
  for (const k of leaseKeys(server, id)) server.auth.checkOp(ai, kind, k);
}
