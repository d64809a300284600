/**
 * etcd's Lock and Election services (v3lock, v3election) on a member of a simulated cluster.
 *
 * etcd runs both on every member as clients of that member's own etcdserver (v3client: an in-process
 * client calling the member's KV, Lease and Watch servers). So on a cluster their requests take the paths
 * every request of that member takes: the candidate key's Txn, the session's LeaseGrant and the release's
 * delete are Raft proposals, answered once the member applied them; the reads (the wait's "newest older
 * key", Election.Leader, Observe's leader) are linearizable, through ReadIndex; the waits watch the
 * member's own store, so on a lagging follower they see a release late. The rules are the single member's
 * (LockRules, ElectionRules over a ConcurrencyClient, src/server/lock_service.ts and election_service.ts):
 * only the client they talk through differs.
 *
 * The client's call itself reaches the member over the client's link (EtcdCluster.call): dropped, delayed,
 * held while the member is paused, refused while it is down. The member's in-process client needs no
 * network, so its requests use a link of their own (`MEMBER_INTERNAL_CLIENT`) no lever acts on. A member
 * that crashes breaks the calls waiting on it (`transport is closing`); what they wrote stays (the keys go
 * with their leases, as in etcd).
 */
import {
  errNoLeader,
  type CallContext,
  type ConcurrencyClient,
  type WaitingCallContext,
  untilAborted,
  type Awaitable,
  ElectionRules,
  type ObserveCall,
  LockRules,
  requiresLeader,
} from '../server/index.js';
import type * as M from '../server/messages.js';
import type { EtcdCluster } from './cluster.js';
import type { ConnectOptions, MemberState, Reply } from './member_state.js';
import { errMemberDown } from './errors.js';
import { leaderMonitor } from './require_leader.js';
import { overClientLink } from './stream_link.js';

/** The link name of a member's own in-process client (etcd's v3client): no link lever is meant to act on it. */
export const MEMBER_INTERNAL_CLIENT = 'etcdsim:v3client';

/** v3lockpb.Lock on a cluster member: LockService's methods, answering once Raft let them. @public */
export interface ClusterLock {
  /** Lock.Lock: resolves once the lock is held; `ctx.signal` stops waiting (the key is then released). */
  lock(req: M.LockRequest, ctx?: WaitingCallContext): Promise<M.LockResponse>;
  /** Lock.Unlock: a delete of the key, through Raft. */
  unlock(req: M.UnlockRequest, ctx?: CallContext): Promise<M.UnlockResponse>;
}

/** v3electionpb.Election on a cluster member: ElectionService's methods, answering once Raft let them. @public */
export interface ClusterElection {
  /** Election.Campaign: resolves once this candidate leads; `ctx.signal` stops waiting (it then resigns). */
  campaign(req: M.CampaignRequest, ctx?: WaitingCallContext): Promise<M.CampaignResponse>;
  proclaim(req: M.ProclaimRequest, ctx?: CallContext): Promise<M.ProclaimResponse>;
  resign(req: M.ResignRequest, ctx?: CallContext): Promise<M.ResignResponse>;
  leader(req: M.LeaderRequest, ctx?: CallContext): Promise<M.LeaderResponse>;
  /** Election.Observe: a stream of the leader's key-value, served by the member (its reads through ReadIndex). */
  observe(req: M.LeaderRequest, ctx?: CallContext): ObserveCall;
}

/** One member's v3lock and v3election servers (one pair per member, whichever client calls them). */
interface MemberConcurrency {
  readonly lock: LockRules;
  readonly election: ElectionRules;
}

const perMember = new WeakMap<MemberState, MemberConcurrency>();

/**
 * What the member's in-process client sends of a caller's context: its credentials. etcd's v3client calls
 * the member's servers directly, past the gRPC interceptors, so a caller's leader requirement was checked
 * once, on the call itself, and is not checked again on these requests.
 */
function inner(ctx: CallContext | undefined): CallContext | undefined {
  return ctx?.requireLeader === true ? { ...ctx, requireLeader: false } : ctx;
}

/** The member's own in-process client: its cluster services, on a link of its own. */
function memberClient(c: EtcdCluster, m: MemberState): ConcurrencyClient {
  const own = c.connect(m, { client: MEMBER_INTERNAL_CLIENT });
  return {
    get server() {
      return m.server;
    },
    range: (req, ctx) => own.kv.range(req, inner(ctx)),
    txn: (req, ctx) => own.kv.txn(req, inner(ctx)),
    deleteRange: (req, ctx) => own.kv.deleteRange(req, inner(ctx)),
    leaseGrant: (req, ctx) => own.lease.leaseGrant(req, inner(ctx)),
    onDown: (down) => {
      m.onCrash.add(down);
      return () => m.onCrash.delete(down);
    },
  };
}

function concurrencyOf(c: EtcdCluster, m: MemberState): MemberConcurrency {
  let mc = perMember.get(m);
  if (mc === undefined) {
    const client = memberClient(c, m);
    mc = { lock: new LockRules(client), election: new ElectionRules(client) };
    perMember.set(m, mc);
  }
  return mc;
}

/**
 * The Lock and Election services of member `m` as one client reaches them (over `opts`' link): each call
 * travels to the member, runs the member's v3lock / v3election server there, and its answer travels back.
 */
export function clusterConcurrency(c: EtcdCluster, m: MemberState, opts: ConnectOptions): { lock: ClusterLock; election: ClusterElection } {
  const mc = (): MemberConcurrency => concurrencyOf(c, m);
  /**
   * One call: to the member, run there, answered back; a waiting call also ends when its signal aborts. A
   * call that requires a leader fails at once on a member without one (etcd's unary interceptor).
   */
  const call = <T>(run: () => Awaitable<T>, ctx: WaitingCallContext | undefined): Promise<T> => {
    const signal = ctx?.signal;
    const answer = c.call<T>(m, opts, (reply: Reply<T>) => {
      if (requiresLeader(ctx) && c.knownLeader(m) === undefined) return reply.fail(errNoLeader());
      let v: Awaitable<T>;
      try {
        v = run();
      } catch (err) {
        reply.fail(err);
        return;
      }
      Promise.resolve(v).then(
        (r) => reply.ok(r),
        (err: unknown) => reply.fail(err),
      );
    });
    return signal === undefined ? answer : untilAborted(answer, signal);
  };
  return {
    lock: {
      lock: (req, ctx) => call(() => mc().lock.lock(req, ctx), ctx),
      unlock: (req, ctx) => call(() => mc().lock.unlock(req, ctx), ctx),
    },
    election: {
      campaign: (req, ctx) => call(() => mc().election.campaign(req, ctx), ctx),
      proclaim: (req, ctx) => call(() => mc().election.proclaim(req, ctx), ctx),
      resign: (req, ctx) => call(() => mc().election.resign(req, ctx), ctx),
      leader: (req, ctx) => call(() => mc().election.leader(req, ctx), ctx),
      observe: (req, ctx) => {
        // A stream opens at once, as Watch does; a member that is down refuses it. One that requires a
        // leader is refused without one, and ends with `no leader` as a watch does (etcd's Observe returns
        // its stream context's error).
        if (m.crashed) throw errMemberDown(m.name);
        if (!requiresLeader(ctx)) return overClientLink(c, m, opts, mc().election.observe(req, ctx));
        if (c.knownLeader(m) === undefined) throw errNoLeader();
        const o = overClientLink(c, m, opts, mc().election.observe(req, ctx));
        leaderMonitor(c, m).add(o);
        return o;
      },
    },
  };
}
