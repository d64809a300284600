/**
 * etcd's v3 services on a member of a cluster of processes (process_member.ts), routed as etcd 3.4's
 * EtcdServer routes them (etcdserver/v3_server.go):
 *  - writes (Put, DeleteRange, a Txn that writes, Compact, LeaseGrant, LeaseRevoke, Alarm, every auth
 *    change, Authenticate) are proposed as entries carrying the member's request ID and the caller the
 *    member resolved from its token, and answered with this member's own apply of the entry;
 *  - Range and a read-only Txn are linearizable (ReadIndex through the leader, then served once applied up
 *    to it) unless serializable, which the member's applied state answers at once; auth reads likewise;
 *  - the quota is checked by the member asked before it proposes: over it, NOSPACE is proposed instead and
 *    the call fails with etcd's `database space exceeded`;
 *  - Status is the member's with its Raft node's leader, term, commit and applied index; MemberList is the
 *    membership the member applied; MoveLeader asks the leader's Raft node to transfer leadership;
 *  - LeaseKeepAlive and LeaseTimeToLive are answered by the leader's lessor, a follower forwarding them
 *    (lease_forward.ts);
 *  - Watch, LeaseLeases, Hash, HashKV, Defragment and Snapshot are the member's own;
 *  - Lock and Election are etcd's v3lock / v3election servers over the member's own client (these services),
 *    so their requests take the same Raft path.
 * They are the member view's services (MemberServices, src/server/member_view.ts): the doors call them as
 * they call a single member's.
 */
import { EtcdError } from '../etcd/index.js';
import {
  errBadLeaderTransferee,
  errNoLeader,
  errNotLeader,
  errTimeout,
  requiresLeader,
  txnKind,
  ElectionRules,
  ErrNoSpace,
  LEASE_OVERHEAD,
  LockRules,
  asGrpc,
  costPut,
  costTxn,
  int64ToBigInt,
  noSpaceAlarm,
  overQuota,
  putIn,
  txnIn,
  tryTxnIn,
  uint64ToBigInt,
  type CallContext,
  type ConcurrencyClient,
  type EtcdServer,
  type GrpcError,
  type MemberServices,
  membershipChanges,
} from '../server/index.js';
import { ALARM_FIELD, RAFT_REQUEST_FIELDS, encodeAuthenticate, encodeRaftRequest, type RaftRequestHeader } from '../server/raft_request.js';
import type * as M from '../server/messages.js';
import { NONE } from '../raft/index.js';
import type { ProcessMember } from './process_member.js';
import { ProcessKeepAliveCall, leaseTimeToLive } from './lease_forward.js';

/** The InternalRaftRequest field of each write the services propose. */
const FIELD = RAFT_REQUEST_FIELDS;

/** How a call reaches member `pm`: at once, after ReadIndex, or as an entry (see the module comment). */
interface Paths {
  readonly pm: ProcessMember;
  readonly server: EtcdServer;
  call<T>(f: () => T | PromiseLike<T>, ctx?: CallContext): Promise<T>;
  local<T>(read: (s: EtcdServer) => T, ctx?: CallContext): Promise<T>;
  linearizable<T>(read: (s: EtcdServer) => T, ctx?: CallContext): Promise<T>;
  propose<T>(make: (h: RaftRequestHeader) => Uint8Array, ctx?: CallContext): Promise<T>;
  write<T>(field: number, req: unknown, ctx?: CallContext): Promise<T>;
  quota<T>(cost: () => number, ctx: CallContext | undefined, then: () => Promise<T>): Promise<T>;
}

/** The services of member `pm`, as its member view has them. */
export function processServices(pm: ProcessMember): MemberServices {
  const p = pathsOf(pm);
  const kv = kvOf(p);
  const lease = leaseOf(p);
  return { kv, watch: watchOf(p), lease, cluster: membershipChanges(pm, p.call), maintenance: maintenanceOf(p), auth: authOf(p), ...concurrencyOf(p, kv, lease) };
}

function pathsOf(pm: ProcessMember): Paths {
  const server = pm.server;
  /** A call that may answer later: errors thrown while it starts reject it, as a failed call. */
  const call = <T>(f: () => T | PromiseLike<T>, ctx?: CallContext): Promise<T> => {
    try {
      if (requiresLeader(ctx) && pm.leader === NONE) throw errNoLeader();
      return Promise.resolve(f());
    } catch (err) {
      return Promise.reject(err);
    }
  };
  const local = <T>(read: (s: EtcdServer) => T, ctx?: CallContext): Promise<T> => call(() => read(server), ctx);
  const linearizable = <T>(read: (s: EtcdServer) => T, ctx?: CallContext): Promise<T> => call(() => pm.linearizableRead().then(() => read(server)), ctx);
  /** The caller as the entry's header names it; an invalid token fails here, before proposing. */
  const headerOf = (ctx: CallContext | undefined, id: bigint): RaftRequestHeader => {
    const ai = asGrpc(() => server.authInfo(ctx));
    return { username: ai?.username ?? '', authRevision: ai?.revision ?? 0, id };
  };
  const propose = <T>(make: (h: RaftRequestHeader) => Uint8Array, ctx?: CallContext): Promise<T> =>
    call(() => {
      const id = pm.nextRequestId();
      return pm.propose(id, make(headerOf(ctx, id))) as Promise<T>;
    }, ctx);
  const write = <T>(field: number, req: unknown, ctx?: CallContext): Promise<T> => propose<T>((h) => encodeRaftRequest(field, req ?? {}, h), ctx);
  /** etcd's quota check before proposing: over it, NOSPACE goes through Raft and the call fails. */
  const quota = <T>(cost: () => number, ctx: CallContext | undefined, then: () => Promise<T>): Promise<T> => {
    let c: number;
    try {
      c = cost();
    } catch {
      return then(); // a malformed request fails as it would anyway, when applied
    }
    if (!overQuota(server, c)) return then();
    const alarm = noSpaceAlarm(server);
    const refuse = (): never => {
      throw new EtcdError(ErrNoSpace);
    };
    return call(() => pm.propose(pm.nextRequestId(), encodeRaftRequest(ALARM_FIELD, alarm, undefined)).then(refuse, refuse), ctx);
  };
  return { pm, server, call, local, linearizable, propose, write, quota };
}

function kvOf({ local, linearizable, write, quota }: Paths) {
  return {
    range: (req: M.RangeRequest, ctx?: CallContext) => (req.serializable === true ? local((s) => s.services.kv.range(req, ctx), ctx) : linearizable((s) => s.services.kv.range(req, ctx), ctx)),
    put: (req: M.PutRequest, ctx?: CallContext) => quota(() => costPut(putIn(req)), ctx, () => write<M.PutResponse>(FIELD.put, req, ctx)),
    deleteRange: (req: M.DeleteRangeRequest, ctx?: CallContext) => write<M.DeleteRangeResponse>(FIELD.deleteRange, req, ctx),
    txn: (req: M.TxnRequest, ctx?: CallContext): Promise<M.TxnResponse> => {
      const t = tryTxnIn(req); // converted once for its kind and the quota's cost (the entry carries the message)
      const kind = txnKind(req, t);
      if (kind === 'write') return quota(() => costTxn(t ?? txnIn(req)), ctx, () => write<M.TxnResponse>(FIELD.txn, req, ctx));
      const read = (s: EtcdServer): M.TxnResponse => s.services.kv.txn(req, ctx);
      return kind === 'serializable' ? local(read, ctx) : linearizable(read, ctx);
    },
    compact: (req: M.CompactionRequest, ctx?: CallContext) => write<M.CompactionResponse>(FIELD.compact, req, ctx),
  };
}

function leaseOf({ pm, call, local, write, quota }: Paths) {
  return {
    leaseGrant: (req: M.LeaseGrantRequest, ctx?: CallContext): Promise<M.LeaseGrantResponse> =>
      quota(() => LEASE_OVERHEAD, ctx, () => {
        // The member asked picks a generated ID before proposing (etcd's reqIDGen), so every member grants the same lease.
        let asked: bigint;
        try {
          asked = int64ToBigInt(req.ID ?? 0, 'ID');
        } catch {
          asked = -1n; // not an int64: every member's apply answers it
        }
        return write<M.LeaseGrantResponse>(FIELD.leaseGrant, asked === 0n ? { ...req, ID: String(newLeaseId(pm)) } : req, ctx);
      }),
    leaseRevoke: (req: M.LeaseRevokeRequest, ctx?: CallContext) => write<M.LeaseRevokeResponse>(FIELD.leaseRevoke, req, ctx),
    // The leader's lessor answers, at a follower too (lease_forward.ts).
    leaseTimeToLive: (req: M.LeaseTimeToLiveRequest, ctx?: CallContext) => call(() => leaseTimeToLive(pm, req, ctx), ctx),
    leaseLeases: (req?: M.LeaseLeasesRequest, ctx?: CallContext) => local((s) => s.services.lease.leaseLeases(req ?? {}, ctx), ctx),
    leaseKeepAlive: (ctx?: CallContext) => {
      if (requiresLeader(ctx) && pm.leader === NONE) throw errNoLeader();
      return new ProcessKeepAliveCall(pm, ctx);
    },
  };
}

function maintenanceOf({ pm, server, call, local, write }: Paths) {
  return {
    status: (req?: M.StatusRequest, ctx?: CallContext) =>
      local((s) => {
        const r = s.services.maintenance.status(req ?? {}, ctx);
        const st = pm.node.status();
        return {
          ...r,
          leader: String(st.leader),
          raftIndex: String(st.commit),
          raftAppliedIndex: String(st.applied),
          raftTerm: String(st.term),
          isLearner: pm.members.get(pm.id)?.isLearner === true,
          errors: [...(st.leader === NONE ? ['etcdserver: no leader'] : []), ...s.services.maintenance.alarmErrors()],
        };
      }, ctx),
    hash: (req?: M.HashRequest, ctx?: CallContext) => local((s) => s.services.maintenance.hash(req ?? {}, ctx), ctx),
    hashKV: (req?: M.HashKVRequest, ctx?: CallContext) => local((s) => s.services.maintenance.hashKV(req ?? {}, ctx), ctx),
    defragment: (req?: M.DefragmentRequest, ctx?: CallContext) => local((s) => s.services.maintenance.defragment(req ?? {}, ctx), ctx),
    snapshot: (req?: M.SnapshotRequest, ctx?: CallContext) => local((s) => s.services.maintenance.snapshot(req ?? {}, ctx), ctx),
    snapshotStream: (req?: M.SnapshotRequest, ctx?: CallContext, opts?: Parameters<EtcdServer['services']['maintenance']['snapshotStream']>[2]) =>
      local((s) => s.services.maintenance.snapshotStream(req ?? {}, ctx, opts), ctx),
    // Every Alarm request, GET too, is an entry (etcd's raftRequestOnce); the caller is checked before proposing.
    alarm: (req?: M.AlarmRequest, ctx?: CallContext) =>
      call(() => {
        server.services.maintenance.checkAlarmCaller(req ?? {}, ctx);
        return write<M.AlarmResponse>(ALARM_FIELD, req ?? {}, ctx);
      }, ctx),
    moveLeader: (req?: M.MoveLeaderRequest, ctx?: CallContext) => call(() => moveLeader(pm, req ?? {}), ctx),
  };
}

function authOf({ server, linearizable, propose, write }: Paths) {
  const authRead = <T>(read: (s: EtcdServer) => T, ctx?: CallContext): Promise<T> => linearizable(read, ctx);
  return {
    authEnable: (req?: M.AuthEnableRequest, ctx?: CallContext) => write<M.AuthHeaderResponse>(FIELD.authEnable, req, ctx),
    authDisable: (req?: M.AuthDisableRequest, ctx?: CallContext) => write<M.AuthHeaderResponse>(FIELD.authDisable, req, ctx),
    authStatus: (req?: M.AuthStatusRequest, ctx?: CallContext) => authRead((s) => s.services.auth.authStatus(req ?? {}, ctx), ctx),
    // The password is checked by the member asked; the token is assigned by every member's apply, the same.
    authenticate: (req: M.AuthenticateRequest, ctx?: CallContext) =>
      propose<M.AuthenticateResponse>((h) => {
        asGrpc(() => server.auth.checkPassword(req.name ?? '', req.password ?? ''));
        return encodeAuthenticate({ name: req.name ?? '', simpleToken: server.auth.tokenPrefix() }, { ...h, username: '', authRevision: 0 });
      }, withoutToken(ctx)),
    userAdd: (req: M.AuthUserAddRequest, ctx?: CallContext) => write<M.AuthHeaderResponse>(FIELD.userAdd, req, ctx),
    userGet: (req: M.AuthUserGetRequest, ctx?: CallContext) => authRead((s) => s.services.auth.userGet(req, ctx), ctx),
    userList: (req?: M.AuthUserListRequest, ctx?: CallContext) => authRead((s) => s.services.auth.userList(req ?? {}, ctx), ctx),
    userDelete: (req: M.AuthUserDeleteRequest, ctx?: CallContext) => write<M.AuthHeaderResponse>(FIELD.userDelete, req, ctx),
    userChangePassword: (req: M.AuthUserChangePasswordRequest, ctx?: CallContext) => write<M.AuthHeaderResponse>(FIELD.userChangePassword, req, ctx),
    userGrantRole: (req: M.AuthUserGrantRoleRequest, ctx?: CallContext) => write<M.AuthHeaderResponse>(FIELD.userGrantRole, req, ctx),
    userRevokeRole: (req: M.AuthUserRevokeRoleRequest, ctx?: CallContext) => write<M.AuthHeaderResponse>(FIELD.userRevokeRole, req, ctx),
    roleAdd: (req: M.AuthRoleAddRequest, ctx?: CallContext) => write<M.AuthHeaderResponse>(FIELD.roleAdd, req, ctx),
    roleGet: (req: M.AuthRoleGetRequest, ctx?: CallContext) => authRead((s) => s.services.auth.roleGet(req, ctx), ctx),
    roleList: (req?: M.AuthRoleListRequest, ctx?: CallContext) => authRead((s) => s.services.auth.roleList(req ?? {}, ctx), ctx),
    roleDelete: (req: M.AuthRoleDeleteRequest, ctx?: CallContext) => write<M.AuthHeaderResponse>(FIELD.roleDelete, req, ctx),
    roleGrantPermission: (req: M.AuthRoleGrantPermissionRequest, ctx?: CallContext) => write<M.AuthHeaderResponse>(FIELD.roleGrantPermission, req, ctx),
    roleRevokePermission: (req: M.AuthRoleRevokePermissionRequest, ctx?: CallContext) => write<M.AuthHeaderResponse>(FIELD.roleRevokePermission, req, ctx),
  };
}

function concurrencyOf({ pm, server, call }: Paths, kv: ReturnType<typeof kvOf>, lease: ReturnType<typeof leaseOf>) {
  // etcd's v3lock / v3election servers run on the member as clients of its own services.
  const own: ConcurrencyClient = {
    server,
    range: (req, ctx) => kv.range(req, inner(ctx)),
    txn: (req, ctx) => kv.txn(req, inner(ctx)),
    deleteRange: (req, ctx) => kv.deleteRange(req, inner(ctx)),
    leaseGrant: (req, ctx) => lease.leaseGrant(req, inner(ctx)),
  };
  const lockRules = new LockRules(own);
  const electionRules = new ElectionRules(own);
  const lock = {
    lock: (req: M.LockRequest, ctx?: Parameters<LockRules['lock']>[1]) => call(() => lockRules.lock(req, ctx), ctx),
    unlock: (req: M.UnlockRequest, ctx?: CallContext) => call(() => lockRules.unlock(req, ctx), ctx),
  };
  const election = {
    campaign: (req: M.CampaignRequest, ctx?: Parameters<ElectionRules['campaign']>[1]) => call(() => electionRules.campaign(req, ctx), ctx),
    proclaim: (req: M.ProclaimRequest, ctx?: CallContext) => call(() => electionRules.proclaim(req, ctx), ctx),
    resign: (req: M.ResignRequest, ctx?: CallContext) => call(() => electionRules.resign(req, ctx), ctx),
    leader: (req: M.LeaderRequest, ctx?: CallContext) => call(() => electionRules.leader(req, ctx), ctx),
    observe: (req: M.LeaderRequest, ctx?: CallContext) => {
      if (requiresLeader(ctx) && pm.leader === NONE) throw errNoLeader();
      return electionRules.observe(req, ctx);
    },
  };
  return { lock, election };
}

function watchOf({ pm, server }: Paths) {
  return {
    watch: (ctx?: CallContext) => {
      if (requiresLeader(ctx) && pm.leader === NONE) throw errNoLeader();
      return server.services.watch.watch(ctx);
    },
  };
}

/** What the member's own client sends of a caller's context: its credentials, not its leader requirement. */
function inner(ctx: CallContext | undefined): CallContext | undefined {
  return ctx?.requireLeader === true ? { ...ctx, requireLeader: false } : ctx;
}

/** Authenticate carries no caller (a stale token in the call must not fail it). */
function withoutToken(ctx: CallContext | undefined): CallContext | undefined {
  if (ctx?.token === undefined) return ctx;
  const { token: _t, ...rest } = ctx;
  return rest;
}

/** A positive 63-bit lease ID no lease of the member has. */
function newLeaseId(pm: ProcessMember): bigint {
  let id: bigint;
  do id = pm.nextRequestId() & 0x7fffffffffffffffn;
  while (id === 0n || pm.server.lessor.exists(id));
  return id;
}

/** MoveLeader on the leader: Raft's leader transfer, answered once the target leads (etcd waits up to its request timeout). */
function moveLeader(pm: ProcessMember, req: M.MoveLeaderRequest): Promise<M.MoveLeaderResponse> {
  const target = uint64ToBigInt(req.targetID ?? 0, 'targetID');
  if (pm.node.role !== 'leader') throw errNotLeader();
  if (!pm.members.has(target) || pm.members.get(target)!.isLearner) throw errBadLeaderTransferee();
  if (target === pm.id) return Promise.resolve({ header: null } as unknown as M.MoveLeaderResponse);
  pm.loop.act((n) => n.transferLeadership(target));
  const clock = pm.server.clock;
  const deadline = clock.now() + pm.requestTimeoutMs;
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (pm.node.leader === target) return resolve({ header: null } as unknown as M.MoveLeaderResponse);
      if (clock.now() >= deadline) return reject(errTimeout() as GrpcError);
      clock.setTimer(clock.now() + 10, check, 'peer.move-leader');
    };
    check();
  });
}

