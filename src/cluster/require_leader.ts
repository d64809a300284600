/**
 * Calls that require a leader (clientv3's WithRequireLeader: gRPC metadata `hasleader: true`, here
 * `CallContext.requireLeader`, read by src/server's requiresLeader), as etcd 3.4.23's v3rpc interceptors treat them:
 *  - a unary call or a stream opened on a member that knows no leader is refused at once with
 *    `Unavailable: etcdserver: no leader` (ErrGRPCNoLeader);
 *  - an open stream (Watch, LeaseKeepAlive) that required a leader is canceled once its member has gone
 *    without a leader for 3 election timeouts in a row (monitorLeader: every election timeout the member
 *    looks at its leader; at the third look in a row without one it cancels every such stream). The watch
 *    and keep-alive servers end the stream with the cancel's reason, `Unavailable: etcdserver: no leader`.
 *    Streams opened without the requirement are left alone.
 *
 * The monitor's looks fall on the cluster clock's grid of election timeouts (etcd's starts with the
 * server). It looks only while such streams are open, so its count starts with the first of them (etcd's
 * may already be 1 or 2 if the member found its leader between two looks); a member that is down or
 * stopped does not look (its process does not run), and its count starts over after a crash.
 */
import type { TimerHandle } from '../sim/index.js';
import { errNoLeader, type GrpcError, type StreamCall } from '../server/index.js';
import type { EtcdCluster } from './cluster.js';
import type { MemberState } from './member_state.js';

/** etcd's maxNoLeaderCnt: election timeouts in a row without a leader before require-leader streams are canceled. */
export const MAX_NO_LEADER_COUNT = 3;

/** One member's monitorLeader: the streams that required a leader, canceled after too long without one. */
class LeaderMonitor {
  private readonly streams = new Set<{ abort(err: GrpcError): void }>();
  private noLeaderCount = 0;
  private ticker: TimerHandle | undefined;
  private incarnation: number;

  constructor(
    private readonly c: EtcdCluster,
    private readonly m: MemberState,
  ) {
    this.incarnation = m.incarnation;
  }

  /** Follows a stream that required a leader until it ends. */
  add<R>(call: StreamCall<R>): void {
    this.streams.add(call);
    call.onEnd(() => {
      this.streams.delete(call);
      if (this.streams.size === 0) this.stop();
    });
    this.ticker ??= this.c.clock.every(this.c.electionTimeoutMs, () => this.look(), { name: 'cluster.monitor-leader' });
  }

  private stop(): void {
    if (this.ticker !== undefined) this.c.clock.cancel(this.ticker);
    this.ticker = undefined;
    this.noLeaderCount = 0;
  }

  /** One look, every election timeout. */
  private look(): void {
    const m = this.m;
    if (m.incarnation !== this.incarnation) {
      // It crashed (and perhaps restarted) since: a new process, a new count.
      this.incarnation = m.incarnation;
      this.noLeaderCount = 0;
    }
    if (!m.up) return;
    if (this.c.knownLeader(m) === undefined) this.noLeaderCount++;
    else this.noLeaderCount = 0;
    if (this.noLeaderCount < MAX_NO_LEADER_COUNT) return;
    const streams = [...this.streams];
    this.streams.clear();
    this.stop();
    for (const s of streams) s.abort(errNoLeader());
  }
}

const monitors = new WeakMap<MemberState, LeaderMonitor>();

/** The member's monitor (made on first use). */
export function leaderMonitor(c: EtcdCluster, m: MemberState): { add<R>(call: StreamCall<R>): void } {
  let mon = monitors.get(m);
  if (mon === undefined) {
    mon = new LeaderMonitor(c, m);
    monitors.set(m, mon);
  }
  return mon;
}
