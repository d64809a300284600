/**
 * etcd's services on one member of a simulated cluster, in message form (the same messages EtcdServices
 * takes and gives), asynchronous because an answer may wait for Raft: a write answers once the member
 * applied it, a linearizable read once the member applied up to the leader's read index. Every answer is
 * the member's own: its header names the member, its raft term and its store's revision.
 *
 * Routing as etcd 3.4 does it (etcdserver/v3_server.go): writes, compactions, lease grants and revokes and
 * every auth request are Raft proposals; Range and read-only Txn are linearizable (ReadIndex) unless
 * serializable; LeaseTimeToLive and LeaseKeepAlive go to the leader; every Alarm request is a proposal
 * too; LeaseLeases, Status, MemberList and the rest of Maintenance are the member's own. A front door
 * serving the cluster (gRPC, a client adapter) calls these instead of a single member's EtcdServices.
 */
import {
  requiresLeader,
  errBadLeaderTransferee,
  errNoLeader,
  errNotLeader,
  errNotSupportedForLearner,
  errTimeout,
  txnKind,
  tryTxnIn,
  header,
  int64ToBigInt,
  putIn,
  uint64ToBigInt,
  ErrNoSpace,
  LEASE_OVERHEAD,
  costPut,
  costTxn,
  noSpaceAlarm,
  overQuota,
  type CallContext,
  type Promised,
  type AuthService,
  type KVService,
  memberCalls,
  type AppliedCallContext,
  type EtcdServer,
  type KeepAliveCall,
  type SnapshotStreamOptions,
  type WatchCall,
  type StreamCall,
  type StreamHold,
} from '../server/index.js';
import type * as M from '../server/messages.js';
import type { TxnRequest } from '../mvcc/index.js';
import { EtcdError } from '../etcd/index.js';
import { errMemberDown } from './errors.js';
import { ClusterKeepAliveCall } from './keep_alive.js';
import { leaderMonitor } from './require_leader.js';
import { heldOverClientLink, overClientLink } from './stream_link.js';
import { clusterConcurrency, type ClusterElection, type ClusterLock } from './lock_election.js';
import { clusterMembership } from './membership.js';
import type { EtcdCluster } from './cluster.js';
import type { ConnectOptions, MemberState, Reply } from './member_state.js';

/** KV on a cluster member: KVService's methods, answering once Raft (or ReadIndex) let them. @public */
export type ClusterKV = Promised<KVService>;

/** Lease on a cluster member. @public */
export interface ClusterLease {
  leaseGrant(req: M.LeaseGrantRequest, ctx?: CallContext): Promise<M.LeaseGrantResponse>;
  leaseRevoke(req: M.LeaseRevokeRequest, ctx?: CallContext): Promise<M.LeaseRevokeResponse>;
  leaseTimeToLive(req: M.LeaseTimeToLiveRequest, ctx?: CallContext): Promise<M.LeaseTimeToLiveResponse>;
  leaseLeases(req?: M.LeaseLeasesRequest, ctx?: CallContext): Promise<M.LeaseLeasesResponse>;
  /**
   * Opens a keep-alive stream on the member; each renewal goes to the leader it reaches at that moment
   * (etcd's follower forwards it), so the stream survives leader changes. See keep_alive.ts.
   */
  leaseKeepAlive(ctx?: CallContext): KeepAliveCall;
}

/** Maintenance on a cluster member (Status reports the member's Raft state). @public */
export interface ClusterMaintenance {
  status(req?: M.StatusRequest, ctx?: CallContext): Promise<M.StatusResponse>;
  moveLeader(req?: M.MoveLeaderRequest, ctx?: CallContext): Promise<M.MoveLeaderResponse>;
  hashKV(req?: M.HashKVRequest, ctx?: CallContext): Promise<M.HashKVResponse>;
  hash(req?: M.HashRequest, ctx?: CallContext): Promise<M.HashResponse>;
  defragment(req?: M.DefragmentRequest, ctx?: CallContext): Promise<M.DefragmentResponse>;
  alarm(req?: M.AlarmRequest, ctx?: CallContext): Promise<M.AlarmResponse>;
  snapshot(req?: M.SnapshotRequest, ctx?: CallContext): Promise<M.SnapshotResponse[]>;
  /** @internal snapshot() as MaintenanceService.snapshotStream: the member's backend once the call reaches it, its file written as the responses are asked for. */
  snapshotStream(req?: M.SnapshotRequest, ctx?: CallContext, opts?: SnapshotStreamOptions): Promise<Iterable<M.SnapshotResponse | StreamHold>>;
}

/** Cluster (membership) on a cluster member: every change a conf change through Raft, answered once this member applied it (membership.ts). @public */
export interface ClusterMembership {
  memberList(req?: M.MemberListRequest, ctx?: CallContext): Promise<M.MemberListResponse>;
  memberAdd(req?: M.MemberAddRequest, ctx?: CallContext): Promise<M.MemberAddResponse>;
  memberRemove(req?: M.MemberRemoveRequest, ctx?: CallContext): Promise<M.MemberRemoveResponse>;
  memberUpdate(req?: M.MemberUpdateRequest, ctx?: CallContext): Promise<M.MemberUpdateResponse>;
  memberPromote(req?: M.MemberPromoteRequest, ctx?: CallContext): Promise<M.MemberPromoteResponse>;
}

/** Auth on a cluster member: every request is a Raft proposal (etcd 3.4's raftRequest), reads included. @public */
export type ClusterAuth = Promised<AuthService>;

/** One client's view of one member: its services, over the client's link to it. @public */
export class ClusterMemberServices {
  readonly kv: ClusterKV;
  readonly lease: ClusterLease;
  readonly maintenance: ClusterMaintenance;
  readonly cluster: ClusterMembership;
  readonly auth: ClusterAuth;
  /** v3lock on the member: its requests are the member's own, through Raft (cluster/lock_election.ts). */
  readonly lock: ClusterLock;
  /** v3election on the member, likewise. */
  readonly election: ClusterElection;

  /** @internal Made by the cluster (EtcdCluster.connect), not by a user. */
  constructor(
    private readonly c: EtcdCluster,
    private readonly m: MemberState,
    private readonly opts: ConnectOptions,
  ) {
    this.kv = this.kvService();
    this.lease = this.leaseService();
    ({ lock: this.lock, election: this.election } = clusterConcurrency(c, m, opts));
    this.maintenance = this.maintenanceService();
    this.cluster = clusterMembership(c, m, (handle, ctx) => this.send(handle, ctx));
    this.auth = this.authService();
  }

  /** KV: reads served locally or after ReadIndex as their consistency asks; writes through Raft, refused over the quota. */
  private kvService(): ClusterKV {
    const write = this.write.bind(this);
    const local = this.local.bind(this);
    return {
      range: (req, ctx) =>
        req.serializable === true ? local((s) => s.services.kv.range(req, ctx), ctx, LEARNER_SERVES) : this.linearizable((s) => s.services.kv.range(req, ctx), ctx),
      put: (req, ctx) => this.refusedByQuota(() => costPut(putIn(req)), ctx) ?? write('put', ctx, (s, a) => s.services.kv.put(req, a)),
      deleteRange: (req, ctx) => write('deleteRange', ctx, (s, a) => s.services.kv.deleteRange(req, a)),
      txn: (req, ctx) => {
        // Converted once: its kind, the quota's cost and every member's apply read that form (the entry carries it).
        const t = tryTxnIn(req);
        const kind = txnKind(req, t);
        if (kind === 'write') {
          return (t === undefined ? undefined : this.refusedByQuota(() => costTxn(t), ctx)) ?? write('txn', ctx, (s, a) => s.services.kv.txn(req, a), t);
        }
        const read = (s: EtcdServer): M.TxnResponse => s.services.kv.txn(req, ctx);
        return kind === 'serializable' ? local(read, ctx) : this.linearizable(read, ctx);
      },
      compact: (req, ctx) => write('compact', ctx, (s, a) => s.services.kv.compact(req, a)),
    };
  }

  /** Lease: a grant's ID chosen by the leader, TimeToLive answered by the leader, KeepAlive over a stream that needs one. */
  private leaseService(): ClusterLease {
    const { c, m } = this;
    const write = this.write.bind(this);
    const local = this.local.bind(this);
    return {
      leaseGrant: (req, ctx) =>
        this.refusedByQuota(() => LEASE_OVERHEAD, ctx) ??
        this.send<M.LeaseGrantResponse>((reply) => {
          const a = this.caller(ctx);
          c.propose(
            m,
            (leader) => {
              // The leader picks a generated ID before proposing, so every member grants the same lease.
              const asked = req.ID === undefined ? 0n : safeBigInt(req.ID);
              const ID = asked === 0n ? String(c.newLeaseId(leader)) : req.ID;
              const r = { ...req, ID };
              return { kind: 'request', label: `leaseGrant ${String(ID)}`, apply: (s) => s.services.lease.leaseGrant(r, a) };
            },
            reply as Reply<unknown>,
          );
        }, ctx),
      leaseRevoke: (req, ctx) => write('leaseRevoke', ctx, (s, a) => s.services.lease.leaseRevoke(req, a)),
      leaseTimeToLive: (req, ctx) =>
        this.send<M.LeaseTimeToLiveResponse>((reply) =>
          this.atLeader(reply, (leader) => {
            const r = leader.server.services.lease.leaseTimeToLive(req, ctx);
            // The member the client asked fills the header (v3rpc's header filler runs there).
            return { ...r, header: header(m.server.identity, m.server.mvcc.currentRevision) };
          }),
          ctx,
        ),
      leaseLeases: (req, ctx) => local((s) => s.services.lease.leaseLeases(req ?? {}), ctx),
      leaseKeepAlive: (ctx) => {
        if (m.crashed) throw errMemberDown(m.name);
        return this.leaderRequired<M.LeaseKeepAliveResponse, KeepAliveCall>(ctx, () => new ClusterKeepAliveCall(c, m, ctx));
      },
    };
  }

  /** Maintenance: the member's own Status with the cluster's Raft view, MoveLeader, and Alarm through Raft. */
  private maintenanceService(): ClusterMaintenance {
    const { c, m, opts } = this;
    const local = this.local.bind(this);
    return {
      status: (req, ctx) =>
        local((s) => {
          const r = s.services.maintenance.status(req ?? {}, ctx);
          const st = c.status(m);
          return {
            ...r,
            leader: String(st.leader),
            raftIndex: String(st.raftIndex),
            raftAppliedIndex: String(st.raftAppliedIndex),
            raftTerm: String(st.term),
            errors: [...(st.leader === 0n ? ['etcdserver: no leader'] : []), ...s.services.maintenance.alarmErrors()],
          };
        }, ctx, LEARNER_SERVES),
      moveLeader: (req, _ctx) =>
        this.send<M.MoveLeaderResponse>((reply) => {
          let target: bigint;
          try {
            target = uint64ToBigInt(req?.targetID ?? 0, 'targetID');
          } catch (err) {
            return reply.fail(err);
          }
          if (m.role !== 'leader') return reply.fail(errNotLeader());
          const t = c.members.find((x) => x.id === target);
          if (t === undefined || m.members.get(target)?.isLearner === true) return reply.fail(errBadLeaderTransferee());
          // etcd's maintenance server answers a done transfer with an empty response (no header).
          if (t === m || c.moveLeader(t)) reply.ok({ header: null });
          else reply.fail(errTimeout());
        }),
      hashKV: (req, ctx) => local((s) => s.services.maintenance.hashKV(req ?? {}, ctx), ctx),
      hash: (req, ctx) => local((s) => s.services.maintenance.hash(req ?? {}, ctx), ctx),
      defragment: (req, ctx) => local((s) => s.services.maintenance.defragment(req ?? {}, ctx), ctx),
      // Every Alarm request, GET too, is a Raft proposal (etcd's raftRequestOnce) that every member applies to
      // its own alarm store; the caller is checked by the member asked, before proposing.
      alarm: (req, ctx) =>
        this.send<M.AlarmResponse>((reply) => {
          const r = req ?? {};
          try {
            m.server.services.maintenance.checkAlarmCaller(r, ctx);
          } catch (err) {
            return reply.fail(err);
          }
          c.propose(m, () => ({ kind: 'request', label: 'alarm', apply: (s) => s.services.maintenance.applyAlarm(r) }), reply as Reply<unknown>);
        }, ctx),
      snapshot: (req, ctx) => local((s) => s.services.maintenance.snapshot(req ?? {}, ctx), ctx),
      // Held, before each piece, while the member is stopped or the client's link is down (a SIGSTOPped etcd sends nothing more).
      snapshotStream: (req, ctx, so) => local((s) => heldOverClientLink(c, m, opts, s.services.maintenance.snapshotStream(req ?? {}, ctx, so)), ctx),
    };
  }

  /**
   * Auth: every request through Raft, each member checking the caller the proposer resolved — every call
   * of etcd's Auth service the member's AuthService answers, none listed by hand: memberCalls() reads the
   * protos' generated declarations only (no loader), so this runs in the playground's browser bundle too.
   */
  private authService(): ClusterAuth {
    type AuthCall = (req: unknown, ctx: AppliedCallContext) => unknown;
    const out: Record<string, unknown> = {};
    for (const { call } of memberCalls().filter((c) => c.service === 'Auth')) {
      out[call] = (req: unknown, ctx?: CallContext) =>
        this.write(call, ctx, (s, a) => {
          const auth = s.services.auth as unknown as Record<string, AuthCall>;
          return auth[call]!.call(auth, req, a);
        });
    }
    // Authenticate carries no caller; each member draws the token from its seeded generator in the
    // same order (the same entries), so the token is valid on every member, as etcd's is.
    out['authenticate'] = (req: M.AuthenticateRequest) => this.write('authenticate', undefined, (s) => s.services.auth.authenticate(req));
    return out as ClusterAuth;
  }

  /** @internal The member this view talks to (the cluster's own state of it). */
  get member(): MemberState {
    return this.m;
  }

  /**
   * Opens a watch stream on the member: it sees the member's applied history, so it lags as the member does.
   * With `ctx.requireLeader` it is refused without a leader and canceled after the member stayed without one
   * (require_leader.ts).
   */
  watch(ctx?: CallContext): WatchCall {
    if (this.m.crashed) throw errMemberDown(this.m.name);
    return this.leaderRequired<M.WatchResponse, WatchCall>(ctx, () => this.m.server.services.watch.watch(ctx));
  }

  /** A stream that may require a leader (etcd's stream interceptor): refused without one, else followed by the member's monitor. */
  private leaderRequired<R, S extends StreamCall<R>>(ctx: CallContext | undefined, open: () => S): S {
    // etcd's stream interceptor: a learner serves no stream.
    if (isLearner(this.m)) throw errNotSupportedForLearner();
    if (!requiresLeader(ctx)) return overClientLink(this.c, this.m, this.opts, open());
    if (this.c.knownLeader(this.m) === undefined) throw errNoLeader();
    const call = overClientLink(this.c, this.m, this.opts, open());
    leaderMonitor(this.c, this.m).add(call);
    return call;
  }

  /**
   * Carries a call to the member. A simple token names the raft index that issued it: a member that has
   * not applied that index yet holds the call until it has (etcd's token check; EtcdServer.tokenWaitIndex).
   */
  private send<T>(handle: (reply: Reply<T>) => void, ctx?: CallContext, learnerServes = false): Promise<T> {
    const m = this.m;
    return this.c.call<T>(m, this.opts, (reply) => {
      // etcd's unary interceptor: a learner answers only Status and serializable Range (isRPCSupportedForLearner),
      if (!learnerServes && isLearner(m)) return reply.fail(errNotSupportedForLearner());
      // and a call that requires a leader fails at once on a member without one.
      if (requiresLeader(ctx) && this.c.knownLeader(m) === undefined) return reply.fail(errNoLeader());
      const index = ctx === undefined ? undefined : m.server.tokenWaitIndex(ctx);
      if (index === undefined) return handle(reply);
      const server = m.server;
      server.appliedWait.wait(index, () => {
        if (m.server !== server) return reply.fail(errMemberDown(m.name)); // it crashed meanwhile
        try {
          handle(reply);
        } catch (err) {
          reply.fail(err);
        }
      });
    });
  }

  /**
   * A Raft proposal applied on every member through `apply`; the answer is this member's. The caller is
   * resolved here, before proposing (an invalid token fails at once, as in etcd), and every member applies
   * the request as that user — a Txn in the form this member converted it to (`appliedTxn`), once for all.
   */
  private write<T>(label: string, ctx: CallContext | undefined, apply: (s: EtcdServer, ctx: AppliedCallContext) => T, appliedTxn?: TxnRequest): Promise<T> {
    return this.send<T>((reply) => {
      const a: AppliedCallContext = appliedTxn === undefined ? this.caller(ctx) : { ...this.caller(ctx), appliedTxn };
      this.c.propose(this.m, () => ({ kind: 'request', label, apply: (s) => apply(s, a) }), reply as Reply<unknown>);
    }, ctx);
  }

  /**
   * etcd's quota check, made by the member asked before it proposes: a request whose cost does not fit that
   * member's quota proposes NOSPACE instead, and fails with ErrNoSpace once the alarm went through (or did
   * not). Undefined when the request fits — or cannot be costed: a malformed one fails as it would anyway.
   */
  private refusedByQuota<T>(cost: () => number, ctx: CallContext | undefined): Promise<T> | undefined {
    let c: number;
    try {
      c = cost();
    } catch {
      return undefined;
    }
    const m = this.m;
    if (!overQuota(m.server, c)) return undefined;
    const alarm = noSpaceAlarm(m.server);
    return this.send<T>((reply) => {
      const refuse = (): void => reply.fail(new EtcdError(ErrNoSpace));
      this.c.propose(m, () => ({ kind: 'request', label: 'alarm', apply: (s) => s.services.maintenance.applyAlarm(alarm) }), { ok: refuse, fail: refuse });
    }, ctx);
  }

  /** The user a request of this member's caller runs as on every member (etcd's RequestHeader username). */
  private caller(ctx: CallContext | undefined): AppliedCallContext {
    return { appliedAuthInfo: this.m.server.authInfo(ctx) };
  }

  /** Served from the member's own state, at once. */
  private local<T>(read: (s: EtcdServer) => T, ctx?: CallContext, learnerServes = false): Promise<T> {
    return this.send<T>((reply) => reply.ok(read(this.m.server)), ctx, learnerServes);
  }

  /** ReadIndex, then served from the member's own state. */
  private linearizable<T>(read: (s: EtcdServer) => T, ctx?: CallContext): Promise<T> {
    return this.send<T>((reply) => this.c.readIndex(this.m, () => reply.ok(read(this.m.server)), reply as Reply<unknown>), ctx);
  }

  /**
   * Forwards to the leader (etcd's waitLeader, then the leader's HTTP lease endpoint): answered by the
   * leader the member reaches; without one, retried every election timeout until the request timeout,
   * then ErrNoLeader.
   */
  private atLeader<T>(reply: Reply<T>, serve: (leader: MemberState) => T): void {
    const c = this.c;
    const m = this.m;
    const incarnation = m.incarnation;
    const giveUpAt = c.clock.now() + c.requestTimeoutMs;
    const attempt = (): void => {
      if (m.incarnation !== incarnation) return;
      const l = c.reachableLeader(m);
      if (l !== undefined) {
        try {
          reply.ok(serve(l));
        } catch (err) {
          reply.fail(err);
        }
        return;
      }
      const next = c.clock.now() + c.electionTimeoutMs;
      if (next > giveUpAt) {
        c.clock.setTimer(giveUpAt, () => reply.fail(errNoLeader()), 'cluster.wait-leader');
        return;
      }
      c.clock.setTimer(next, attempt, 'cluster.wait-leader');
    };
    attempt();
  }
}

/** What a learner serves (send's flag). */
const LEARNER_SERVES = true;

/** Whether the member lists itself as a learner (etcd's IsLearner, from its RaftCluster). */
function isLearner(m: MemberState): boolean {
  return m.members.get(m.id)?.isLearner === true;
}

function safeBigInt(v: M.Int64Input): bigint {
  try {
    return int64ToBigInt(v, 'ID');
  } catch {
    return -1n; // not an int64: the member's own check answers when it applies the request
  }
}
