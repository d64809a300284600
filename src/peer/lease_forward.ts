/**
 * LeaseKeepAlive and LeaseTimeToLive on a member of a cluster of processes, as etcd 3.4's EtcdServer serves
 * them (etcdserver/v3_server.go LeaseRenew and LeaseTimeToLive, lease/leasehttp): only the leader's lessor
 * is primary — it alone counts expiries — so the leader answers from its own lessor and a follower forwards
 * the call to its leader over the peer URLs (a `lease?` question on the leader's peer port, codec.ts; etcd
 * POSTs to /leases and /leases/internal there). The answer carries the follower's own header, as etcd fills
 * it on the member asked.
 *
 * The follower's loop is etcd's, bounded by the request timeout (5 s + 2 election timeouts) from the call:
 *  - without a leader it looks again every election timeout (etcd's waitLeader); none by the timeout:
 *    `etcdserver: no leader`;
 *  - a leader that does not answer (a SIGSTOPped process) holds the call until the timeout:
 *    `etcdserver: request timed out` (observed on etcd 3.4.23: 7 s, both at a follower);
 *  - a lease the leader does not know is not an error here: KeepAlive answers TTL 0, TimeToLive TTL -1;
 *  - a refused or failed question (not a primary lessor, a closed port) is asked again. etcd asks again at
 *    once; here after a heartbeat, so a refused connection does not spin the process.
 * LeaseLeases stays the member's own, as in etcd.
 */
import { EtcdError } from '../etcd/index.js';
import { ErrLeaseNotFound } from '../mvcc/index.js';
import { ErrNotPrimary } from '../lease/index.js';
import { errNoLeader, errTimeout, KeepAliveCall, bytesOut, checkLeaseAccess, header, int64ToBigInt, toGrpcError, type CallContext, type GrpcError } from '../server/index.js';
import type * as M from '../server/messages.js';
import { NONE } from '../raft/index.js';
import type { LeaseAnswer, LeaseQuery } from './codec.js';
import { peerAddressOf, type ProcessMember } from './process_member.js';
import { PeerTransport } from './transport.js';

/**
 * Renewals one keep-alive stream holds while one is forwarded. etcd reads a stream's next request only
 * after the previous renewal is answered, so gRPC's flow-control window (64 KiB, some 4000 requests) holds
 * the rest; past this bound a renewal is dropped, as a client blocked by that window would not send it.
 */
const MAX_WAITING = 4096;

/** The leader's side (etcd's leasehttp handler): a question answered from this member's lessor. */
export function answerLease(pm: ProcessMember, q: LeaseQuery): LeaseAnswer {
  // etcd first waits for its apply to reach its commit index; this member applies each Ready's committed
  // entries before it reads anything else, so between events it has applied all it committed.
  const lessor = pm.server.lessor;
  try {
    if (q.op === 'renew') {
      const ttl = lessor.renew(q.id);
      return { kind: 'lease', status: 'ok', ttl, grantedTTL: ttl, keys: [] };
    }
    if (!lessor.exists(q.id)) return { kind: 'lease', status: 'notFound' };
    const t = lessor.timeToLive(q.id, q.keys);
    return { kind: 'lease', status: 'ok', ttl: t.ttl, grantedTTL: t.grantedTTL, keys: t.keys };
  } catch (err) {
    if (err instanceof EtcdError && err.kind === ErrLeaseNotFound) return { kind: 'lease', status: 'notFound' };
    if (err instanceof EtcdError && err.kind === ErrNotPrimary) return { kind: 'lease', status: 'refused', reason: ErrNotPrimary.message };
    return { kind: 'lease', status: 'refused', reason: err instanceof Error ? err.message : String(err) };
  }
}

/**
 * The member's answer to `q`: its own lessor's while it leads and the lessor is primary, else its leader's.
 * Rejects with etcd's no-leader or timeout error (see the module comment).
 */
export async function askLeader(pm: ProcessMember, q: LeaseQuery): Promise<LeaseAnswer & { status: 'ok' | 'notFound' }> {
  const clock = pm.server.clock;
  const deadline = clock.now() + pm.requestTimeoutMs;
  const pause = (ms: number): Promise<void> => new Promise((res) => clock.setTimer(Math.min(clock.now() + ms, deadline), res, 'peer.lease-forward'));
  for (;;) {
    const leader = pm.leader;
    const member = pm.members.get(leader);
    if (leader === pm.id) {
      const a = answerLease(pm, q);
      if (a.status !== 'refused') return a;
    } else if (leader === NONE || member === undefined || member.peerUrls.length === 0) {
      // etcd's waitLeader: an election timeout later, look again.
      if (clock.now() >= deadline) throw errNoLeader();
      await pause(pm.electionMs);
      continue;
    } else {
      for (const url of member.peerUrls) {
        const left = deadline - clock.now();
        if (left <= 0) break;
        const a = await PeerTransport.ask(peerAddressOf(url), clock, left, q, pm.peerTls);
        if (a?.kind === 'lease' && a.status !== 'refused') return a;
      }
    }
    if (clock.now() >= deadline) throw errTimeout();
    await pause(pm.heartbeatMs);
  }
}

/** LeaseTimeToLive at the member: checked here (the caller's token), answered by the leader's lessor. */
export async function leaseTimeToLive(pm: ProcessMember, req: M.LeaseTimeToLiveRequest, ctx?: CallContext): Promise<M.LeaseTimeToLiveResponse> {
  const s = pm.server;
  let id: bigint;
  try {
    id = int64ToBigInt(req.ID, 'ID');
    checkLeaseAccess(s, ctx, id, 'READ');
  } catch (err) {
    throw toGrpcError(err);
  }
  const a = await askLeader(pm, { kind: 'lease?', op: 'timeToLive', id, keys: req.keys === true });
  const h = header(s.identity, s.mvcc.currentRevision);
  if (a.status === 'notFound') return { header: h, ID: String(id), TTL: '-1', grantedTTL: '0', keys: [] };
  return { header: h, ID: String(id), TTL: String(a.ttl), grantedTTL: String(a.grantedTTL), keys: a.keys.map(bytesOut) };
}

/**
 * One LeaseKeepAlive stream at the member: its renewals answered in order, each by the leader's lessor
 * (askLeader), one at a time, as etcd's stream handler reads the next request once the last is answered.
 * A renewal the leader cannot be reached for ends the stream with etcd's error.
 */
export class ProcessKeepAliveCall extends KeepAliveCall {
  private waiting: bigint[] = [];
  private busy = false;

  constructor(
    private readonly pm: ProcessMember,
    private readonly callCtx: CallContext | undefined,
  ) {
    super(pm.server, () => undefined, callCtx);
  }

  protected override received(id: bigint): void {
    if (this.waiting.length >= MAX_WAITING) return;
    this.waiting.push(id);
    void this.drain();
  }

  protected override release(): void {
    super.release();
    this.waiting = [];
  }

  /** Forwards the waiting renewals, one after the other. */
  private async drain(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      while (!this.ended && this.waiting.length > 0) {
        const id = this.waiting.shift()!;
        checkLeaseAccess(this.pm.server, this.callCtx, id, 'WRITE');
        const a = await askLeader(this.pm, { kind: 'lease?', op: 'renew', id, keys: false });
        if (this.ended) return;
        this.answer(id, a.status === 'ok' ? a.ttl : 0);
      }
    } catch (err) {
      this.abort(toGrpcError(err) as GrpcError);
    } finally {
      this.busy = false;
    }
  }
}
