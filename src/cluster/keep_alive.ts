/**
 * LeaseKeepAlive on a member of a cluster: the stream stays with the member the client opened it on, and
 * each renewal is forwarded to the leader that member reaches (etcd's LeaseRenew: a follower's lessor is not
 * primary, so it forwards the renewal to the leader over the peer HTTP endpoint, waiting for a leader up to
 * the request timeout). The renewal runs through the leader's own LeaseService keep-alive path — the same
 * rules as a single member's — and the answer carries the receiving member's header, as etcd fills it there.
 */
import type { TimerHandle } from '../sim/index.js';
import { errNoLeader, type CallContext, header, int64ToBigInt, toGrpcError, type GrpcError, KeepAliveCall } from '../server/index.js';
import type * as M from '../server/messages.js';
import type { EtcdCluster } from './cluster.js';
import type { MemberState } from './member_state.js';

/** A keep-alive stream on one member whose renewals go to the leader; a KeepAliveCall to its users. */
export class ClusterKeepAliveCall extends KeepAliveCall {
  private answers: M.LeaseKeepAliveResponse[] = [];
  private waiting: M.LeaseKeepAliveRequest[] = [];
  private retry: TimerHandle | undefined;
  private giveUpAt = 0;

  constructor(
    private readonly cluster: EtcdCluster,
    private readonly member: MemberState,
    private readonly callCtx: CallContext | undefined,
  ) {
    super(member.server, (call) => member.keepAlives.delete(call), callCtx);
    member.keepAlives.add(this);
  }

  override get pending(): number {
    return this.answers.length;
  }

  override write(req: M.LeaseKeepAliveRequest): void {
    if (this.ended) return;
    try {
      int64ToBigInt(req.ID, 'ID');
    } catch (err) {
      throw toGrpcError(err);
    }
    this.arrive(() => {
      if (this.waiting.length === 0) this.giveUpAt = this.cluster.clock.now() + this.cluster.requestTimeoutMs;
      this.waiting.push(req);
      this.drain();
    });
  }

  override take(): M.LeaseKeepAliveResponse[] {
    const q = this.answers;
    if (q.length === 0) return [];
    this.answers = [];
    return q;
  }

  protected override release(): void {
    this.answers = [];
    this.waiting = [];
    if (this.retry !== undefined) this.cluster.clock.cancel(this.retry);
    this.retry = undefined;
  }

  /** Forwards the waiting renewals, in order, while a leader is reachable. */
  private drain(): void {
    const c = this.cluster;
    while (!this.ended && this.waiting.length > 0) {
      const leader = c.reachableLeader(this.member);
      if (leader === undefined) {
        this.waitForLeader();
        return;
      }
      const req = this.waiting.shift()!;
      const hop = leader.server.services.lease.leaseKeepAlive(this.callCtx);
      let failed: GrpcError | undefined;
      hop.onEnd((err) => {
        failed = err;
      });
      hop.write(req);
      const rs = hop.take();
      hop.end();
      if (failed !== undefined) {
        this.abort(failed);
        return;
      }
      const s = this.member.server;
      for (const r of rs) this.answers.push({ ...r, header: header(s.identity, s.mvcc.currentRevision) });
      s.delivery.poke();
      if (this.waiting.length > 0) this.giveUpAt = c.clock.now() + c.requestTimeoutMs;
    }
  }

  /** etcd's waitLeader: look again every election timeout; at the request timeout the stream fails. */
  private waitForLeader(): void {
    if (this.retry !== undefined) return;
    const c = this.cluster;
    const now = c.clock.now();
    if (now >= this.giveUpAt) {
      this.abort(errNoLeader());
      return;
    }
    this.retry = c.clock.setTimer(Math.min(now + c.electionTimeoutMs, this.giveUpAt), () => {
      this.retry = undefined;
      this.drain();
    }, 'cluster.keepalive-wait-leader');
  }
}
