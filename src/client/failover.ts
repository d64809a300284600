/**
 * Clients over several members of a simulated cluster that fail over as etcd's Go client (clientv3 3.4)
 * does. Failover only chooses which member's ClusterMemberServices a call goes to; every answer, error and
 * wait is the member's own (src/cluster), so no rule of the server is repeated here.
 *
 * What clientv3 3.4 does, and this models (clientv3/balancer, retry.go, retry_interceptor.go, watch.go,
 * lease.go of etcd 3.4):
 *  - one gRPC sub-connection per endpoint; the round-robin picker hands each call the next READY one, in an
 *    order fixed when the set of ready ones changes (Go map order: drawn from the seed here). A crashed member
 *    breaks its connection at once (the kernel closes the socket); grpc-go then reconnects with its backoff
 *    (1 s, ×1.6, ±20 % jitter, at most 120 s) until the member is back. A paused member (SIGSTOP) keeps a
 *    connection made before the pause READY and holds the calls sent there; a dropped link loses them: both
 *    hang until the call's deadline. A connection made while the member is stopped waits for its handshake
 *    (the kernel accepted the socket, the process answers nothing), so no call is sent there until it runs.
 *  - calls wait for a ready connection (clientv3 sets WaitForReady) until their deadline;
 *  - unary calls go through the retry interceptor: up to 100 attempts, a backoff of 25 ms ±10 % after each
 *    round over a quorum of endpoints; a deadline or cancellation ends the call; "repeatable" calls (Range,
 *    Status, LeaseGrant, ... — retry.go's table) are retried on Unavailable (etcd's own Unavailable errors
 *    too: `request timed out`, a member that went down), "non-repeatable" ones (Put, Txn, DeleteRange,
 *    Compact, auth writes, Lock, Election) only when never sent, which with WaitForReady does not happen:
 *    a write in flight on a member that crashed fails with `transport is closing` (the rule itself, shared
 *    with a scenario's etcdctl, is retry_policy.ts);
 *  - a call refused with `invalid auth token` (or `user name is empty` while the client's token is being
 *    refreshed) is sent again after a new Authenticate with the client's credentials — those of the
 *    Authenticate the raw client logged in with — whatever its retry policy; a failed Authenticate (a wrong
 *    password) ends the call with its error;
 *  - a Watch stream broken by Unavailable or Internal reopens on the next ready member after a backoff
 *    (1 ms, +25 % each time, at most 100 ms) and re-creates every watcher from the revision after the last
 *    one it delivered (clientv3's nextRev: the last event's mod revision + 1, or the header revision of a
 *    created response at revision 0 or of a progress notification); any other error, or
 *    `etcdserver: no leader`, ends it;
 *  - a LeaseKeepAlive stream that breaks, whatever the error, reopens after 500 ms (lease.go's
 *    recvKeepAliveLoop and retryConnWait);
 *  - a client with credentials authenticates anew before it opens any stream, first or again (3.4.23's
 *    stream interceptor calls getToken each time).
 *
 * Size: over the 600-line budget for now — retry rules, endpoint balancing and the failover client are still one file; to be split (test/layout/budget.test.ts names it).
 */
import { GrpcCode } from '../mvcc/index.js';
import { toGrpcError, type CallContext, type EtcdServices, type GrpcError, type KeepAliveCall, type WatchCall } from '../server/index.js';
import { clusterErrors, type EtcdCluster, type MemberRef, type MemberState } from '../cluster/index.js';
import type * as M from '../server/messages.js';
import type { SimRandom, TimerHandle } from '../sim/index.js';
import {
  isAuthNotEnabled,
  isContextError,
  isSafeRetry,
  retryBackoffMs,
  retryPolicyOf,
  shouldRefreshToken,
  UNARY_MAX_ATTEMPTS,
  type RetryPolicy,
} from './retry_policy.js';

/** grpc-go's reconnect backoff (DefaultConfig): base, multiplier, jitter, cap. */
const RECONNECT_BASE_MS = 1000;
const RECONNECT_MULTIPLIER = 1.6;
const RECONNECT_JITTER = 0.2;
const RECONNECT_MAX_MS = 120_000;
/** How soon a call waiting for a connection sees a stopped member's handshake complete after it resumes. */
const HANDSHAKE_POLL_MS = 10;
/** clientv3 watch.go: the reconnect backoff starts at 1 ms, grows by 25 %, at most maxBackoff (100 ms). */
const WATCH_BACKOFF_START_MS = 1;
const WATCH_BACKOFF_MAX_MS = 100;
/** clientv3 lease.go retryConnWait. */
const KEEPALIVE_RETRY_MS = 500;

/** The unary methods of each service, as EtcdServices names them. */
const UNARY_METHODS: Readonly<Record<string, readonly string[]>> = {
  kv: ['range', 'put', 'deleteRange', 'txn', 'compact'],
  lease: ['leaseGrant', 'leaseRevoke', 'leaseTimeToLive', 'leaseLeases'],
  maintenance: ['status', 'hash', 'hashKV', 'defragment', 'alarm', 'snapshot', 'moveLeader'],
  cluster: ['memberList', 'memberAdd', 'memberRemove', 'memberUpdate', 'memberPromote'],
  auth: [
    'authEnable',
    'authDisable',
    'authStatus',
    'authenticate',
    'userAdd',
    'userGet',
    'userList',
    'userDelete',
    'userChangePassword',
    'userGrantRole',
    'userRevokeRole',
    'roleAdd',
    'roleGet',
    'roleList',
    'roleDelete',
    'roleGrantPermission',
    'roleRevokePermission',
  ],
  lock: ['lock', 'unlock'],
  election: ['campaign', 'proclaim', 'leader', 'resign'],
};

/** How a failover client reaches the cluster: its members, its name on the link levers, its deadline. */
export interface FailoverTarget {
  readonly cluster: EtcdCluster;
  /** The endpoints, in the order the client was given them. */
  readonly endpoints: readonly MemberState[];
  /** The client's name for the link levers. */
  readonly client: string;
  /** The deadline of each call (its context's), in ms. */
  readonly deadlineMs: number | undefined;
  /** The client's own random stream (picker order, jitter): a fork of the cluster's seed. */
  readonly random: SimRandom;
  /** One member's services over this client's link, as the in-process clients take them. */
  open(member: MemberState, deadlineMs: number | undefined): EtcdServices;
}

/** Resolves a client's endpoints (index, name or member ID) to members; duplicates and an empty list are refused. */
export function resolveEndpoints(cluster: EtcdCluster, refs: readonly MemberRef[]): MemberState[] {
  if (refs.length === 0) throw new RangeError('etcdsim: endpoints must name at least one member');
  const out: MemberState[] = [];
  for (const r of refs) {
    const m = cluster.member(r);
    if (out.includes(m)) throw new RangeError(`etcdsim: endpoint ${String(r)} is given twice`);
    out.push(m);
  }
  return out;
}

/**
 * One sub-connection of the balancer: READY; CONNECTING (the member is stopped: the kernel accepts the
 * TCP connection, but the gRPC handshake waits until it runs again); or TRANSIENT_FAILURE (refused: the
 * member is down) until its next reconnect attempt.
 */
interface SubConn {
  readonly member: MemberState;
  state: 'ready' | 'connecting' | 'failure';
  backoffMs: number;
  retry: TimerHandle | undefined;
}

/**
 * clientv3 3.4's balancer: a sub-connection per endpoint and a round-robin picker over the READY ones,
 * rebuilt (order drawn anew, position reset) whenever that set changes. Calls wait for a ready one.
 */
export class FailoverBalancer {
  private readonly conns: SubConn[];
  private order: MemberState[] = [];
  private next = 0;
  private waiters: (() => void)[] = [];
  private closed = false;

  constructor(private readonly t: FailoverTarget) {
    this.conns = t.endpoints.map((member) => ({ member, state: 'connecting', backoffMs: 0, retry: undefined }));
    for (const c of this.conns) this.dial(c);
    this.rebuild();
  }

  /** The next ready member (round robin), or undefined when none is ready. */
  pickNow(): MemberState | undefined {
    this.observe();
    if (this.order.length === 0) return undefined;
    const m = this.order[this.next]!;
    this.next = (this.next + 1) % this.order.length;
    return m;
  }

  /** The next ready member, waiting for one (WaitForReady) until `deadlineAt` (then DeadlineExceeded). */
  async pick(deadlineAt: number | undefined): Promise<MemberState> {
    for (;;) {
      const m = this.pickNow();
      if (m !== undefined) return m;
      if (this.closed) throw clusterErrors.errTransportClosing();
      const clock = this.t.cluster.clock;
      await waitUntil(this.t.cluster, deadlineAt, (wake) => {
        this.waiters.push(wake);
        // A handshake pending on a stopped member completes when it runs again: look again shortly.
        if (this.conns.some((c) => c.state === 'connecting')) clock.setTimer(clock.now() + HANDSHAKE_POLL_MS, wake, 'client.handshake');
      });
    }
  }

  /** Stops reconnecting (the client closed). */
  close(): void {
    this.closed = true;
    for (const c of this.conns) if (c.retry !== undefined) this.t.cluster.clock.cancel(c.retry);
    this.wake();
  }

  /**
   * What the client's transport sees when it looks: a crash closes the member's sockets (READY or
   * CONNECTING → TRANSIENT_FAILURE); a stopped member that runs again completes its handshake (CONNECTING
   * → READY). A stop after the handshake leaves the connection READY: its calls hang.
   */
  private observe(): void {
    let changed = false;
    for (const c of this.conns) {
      if (c.state !== 'failure' && c.member.crashed) {
        c.state = 'failure';
        c.backoffMs = 0;
        this.failed(c);
        changed = true;
      } else if (c.state === 'connecting' && c.member.up) {
        c.state = 'ready';
        changed = true;
      }
    }
    if (changed) this.rebuild();
  }

  /** One connection attempt: refused by a down member, pending on a stopped one, else READY. */
  private dial(c: SubConn): void {
    if (c.member.crashed) {
      c.state = 'failure';
      this.failed(c);
      return;
    }
    c.backoffMs = 0;
    c.state = c.member.paused ? 'connecting' : 'ready';
  }

  /** The connection attempt was refused: try again after grpc-go's backoff. */
  private failed(c: SubConn): void {
    const clock = this.t.cluster.clock;
    c.backoffMs = c.backoffMs === 0 ? RECONNECT_BASE_MS : Math.min(c.backoffMs * RECONNECT_MULTIPLIER, RECONNECT_MAX_MS);
    const wait = Math.round(c.backoffMs * (1 + RECONNECT_JITTER * (this.t.random.nextFloat() * 2 - 1)));
    c.retry = clock.setTimer(clock.now() + wait, () => {
      c.retry = undefined;
      if (this.closed) return;
      this.dial(c);
      if (c.state === 'failure') return;
      this.rebuild();
      this.wake();
    }, 'client.reconnect');
  }

  /** A new picker over the ready connections: Go's map order (seeded here), starting at the first. */
  private rebuild(): void {
    const ready = this.conns.filter((c) => c.state === 'ready').map((c) => c.member);
    for (let i = ready.length - 1; i > 0; i--) {
      const j = this.t.random.nextInt(0, i);
      [ready[i], ready[j]] = [ready[j]!, ready[i]!];
    }
    this.order = ready;
    this.next = 0;
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}

/**
 * Waits until `register`'s wake-up is called, or fails with DeadlineExceeded at `deadlineAt` (on the
 * cluster's clock).
 */
function waitUntil(cluster: EtcdCluster, deadlineAt: number | undefined, register: (wake: () => void) => void): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let done = false;
    let timer: TimerHandle | undefined;
    if (deadlineAt !== undefined) {
      timer = cluster.clock.setTimer(deadlineAt, () => {
        if (done) return;
        done = true;
        reject(clusterErrors.errDeadlineExceeded());
      }, 'client.deadline');
    }
    register(() => {
      if (done) return;
      done = true;
      if (timer !== undefined) cluster.clock.cancel(timer);
      resolve();
    });
  });
}

/** Sleeps `ms` on the cluster's clock; fails with DeadlineExceeded if the deadline comes first. */
async function sleep(cluster: EtcdCluster, ms: number, deadlineAt: number | undefined): Promise<void> {
  if (ms <= 0) return;
  const clock = cluster.clock;
  const at = clock.now() + ms;
  if (deadlineAt !== undefined && deadlineAt < at) {
    await waitUntil(cluster, deadlineAt, () => undefined);
    return;
  }
  await new Promise<void>((resolve) => clock.setTimer(at, resolve, 'client.backoff'));
}

/** A client's credentials (clientv3's Config.Username and Password) and the token sent for them. */
interface Credentials {
  readonly name: string;
  readonly password: string;
  /** The token its calls carry; undefined while a refresh runs (clientv3's refreshToken clears it first). */
  token: string | undefined;
}

/**
 * clientv3 3.4's auth token bundle, for a failover client. The raw client logs in with an Authenticate
 * through this client and sends the token it got with every call; that Authenticate gives the client its
 * credentials, as clientv3's Username and Password would. A call carrying a token of those credentials is sent
 * with their newest token, and when etcd refuses it (a member that restarted forgot its simple tokens, a
 * token that expired there, a password change) the interceptor authenticates again and sends the call once
 * more (retry_interceptor.go's shouldRefreshToken / refreshToken). Calls with a token this client did not
 * get have no credentials: they are sent again as they are, which is what clientv3 does without them.
 */
class ClientTokens {
  private readonly byToken = new Map<string, Credentials>();
  private readonly known: Credentials[] = [];

  constructor(private readonly t: FailoverTarget) {}

  /** An Authenticate through this client answered `token`: the credentials it names, and their token now. */
  learn(req: M.AuthenticateRequest, token: string): void {
    const name = req.name ?? '';
    const password = req.password ?? '';
    let c = this.known.find((k) => k.name === name && k.password === password);
    if (c === undefined) {
      c = { name, password, token };
      this.known.push(c);
    } else {
      c.token = token;
    }
    this.byToken.set(token, c);
  }

  /** The credentials behind the token a call was made with, if this client got that token. */
  credentialsOf(ctx: CallContext | undefined): Credentials | undefined {
    const token = ctx?.token;
    return token === undefined ? undefined : this.byToken.get(token);
  }

  /** The context to send now: the credentials' newest token (none while it is being refreshed). */
  current(ctx: CallContext | undefined, creds: Credentials | undefined): CallContext | undefined {
    return creds === undefined ? ctx : { ...ctx, token: creds.token };
  }

  /**
   * clientv3's refreshToken → getToken: clears the token, then one Authenticate per endpoint, in the order
   * the client was given them, on a connection of its own to that endpoint (not the balancer's: a member
   * that is down refuses it at once), until one succeeds; `authentication is not enabled` or the call's
   * deadline ends it at once, else the last error (a wrong password: `authentication failed`) is the
   * call's. Observed on a real 3-member 3.4.23: one Authenticate per endpoint in that order, then the error.
   */
  async refresh(creds: Credentials, deadlineAt: number | undefined): Promise<void> {
    creds.token = undefined;
    await this.getToken(creds, deadlineAt);
  }

  /**
   * clientv3 3.4.23's stream interceptor: before it creates a stream of a client with credentials, a new
   * token (getToken, without clearing the one calls are using). Undefined for a stream without credentials.
   */
  beforeStream(ctx: CallContext | undefined): (() => Promise<void>) | undefined {
    const creds = this.credentialsOf(ctx);
    return creds === undefined ? undefined : () => this.getToken(creds, undefined);
  }

  /** getToken: one Authenticate per endpoint until one succeeds (see refresh). */
  private async getToken(creds: Credentials, deadlineAt: number | undefined): Promise<void> {
    const clock = this.t.cluster.clock;
    let last: GrpcError | undefined;
    for (const m of this.t.endpoints) {
      const left = deadlineAt === undefined ? undefined : deadlineAt - clock.now();
      try {
        const r = await this.t.open(m, left).auth.authenticate({ name: creds.name, password: creds.password });
        creds.token = r.token;
        this.byToken.set(r.token, creds);
        return;
      } catch (e) {
        last = toGrpcError(e);
        if (isAuthNotEnabled(last) || isContextError(last)) throw last;
      }
    }
    throw last!;
  }
}

/** clientv3's isHaltErr for streams: anything but Unavailable and Internal ends the stream for good. */
function haltsStream(err: GrpcError): boolean {
  return (err.code !== GrpcCode.UNAVAILABLE && err.code !== GrpcCode.INTERNAL) || err.details === 'etcdserver: no leader';
}

/**
 * The services of a client over several members, in the shape the raw client (EtcdClient) takes: each
 * unary call is picked onto a member and retried as clientv3's interceptor retries it; Watch and
 * LeaseKeepAlive are streams that reopen on another member. Election.Observe stays on the member it opened on.
 */
export function failoverServices(t: FailoverTarget): { services: EtcdServices; close(): void } {
  const balancer = new FailoverBalancer(t);
  const clock = t.cluster.clock;
  const tokens = new ClientTokens(t);
  const unary = async (policy: RetryPolicy, ctx: CallContext | undefined, run: (s: EtcdServices, ctx: CallContext | undefined) => unknown): Promise<unknown> => {
    const deadlineAt = t.deadlineMs === undefined ? undefined : clock.now() + t.deadlineMs;
    const creds = tokens.credentialsOf(ctx);
    let last: GrpcError | undefined;
    for (let attempt = 0; attempt < UNARY_MAX_ATTEMPTS; attempt++) {
      // roundRobinQuorumBackoff: a pause after each round over a quorum of endpoints, none in between.
      const wait = retryBackoffMs(attempt, t.endpoints.length, t.random);
      if (wait > 0) await sleep(t.cluster, wait, deadlineAt);
      const m = await balancer.pick(deadlineAt);
      const left = deadlineAt === undefined ? undefined : deadlineAt - clock.now();
      try {
        return await run(t.open(m, left), tokens.current(ctx, creds));
      } catch (e) {
        last = toGrpcError(e);
        if (isContextError(last)) throw last;
        if (shouldRefreshToken(last, creds !== undefined)) {
          // retry_interceptor.go: a new token (when the client has credentials; a failed Authenticate ends
          // the call with its error), then the call again, whatever its retry policy.
          if (creds !== undefined) await tokens.refresh(creds, deadlineAt);
          continue;
        }
        if (!isSafeRetry(policy, last)) throw last;
      }
    }
    throw last!;
  };
  const door: Record<string, Record<string, unknown>> = {};
  for (const [svc, methods] of Object.entries(UNARY_METHODS)) {
    const s: Record<string, unknown> = {};
    for (const method of methods) {
      const policy = retryPolicyOf(svc, method);
      s[method] = (req: unknown, ctx?: CallContext) =>
        unary(policy, ctx, (services, sent) => {
          const target = (services as unknown as Record<string, Record<string, (req: unknown, ctx?: CallContext) => unknown>>)[svc]!;
          return target[method]!.call(target, req, sent);
        });
    }
    door[svc] = s;
  }
  // An Authenticate through this client gives it credentials, as clientv3's Username and Password: the calls
  // that carry the token it got are sent with the newest token of those credentials, refreshed when etcd
  // refuses it.
  door['auth']!['authenticate'] = async (req: M.AuthenticateRequest, ctx?: CallContext) => {
    const r = (await unary('nonRepeatable', ctx, (services, sent) => services.auth.authenticate(req, sent))) as M.AuthenticateResponse;
    tokens.learn(req, r.token);
    return r;
  };
  const watches = new Set<ResumingWatchCall>();
  const keepAlives = new Set<ResumingKeepAliveCall>();
  door['watch'] = {
    watch: (ctx?: CallContext) => {
      const w = new ResumingWatchCall(t, balancer, () => tokens.current(ctx, tokens.credentialsOf(ctx)), () => watches.delete(w), tokens.beforeStream(ctx));
      watches.add(w);
      return w;
    },
    calls: () => [...watches],
  };
  door['lease']!['leaseKeepAlive'] = (ctx?: CallContext) => {
    const k = new ResumingKeepAliveCall(t, balancer, () => tokens.current(ctx, tokens.credentialsOf(ctx)), () => keepAlives.delete(k), tokens.beforeStream(ctx));
    keepAlives.add(k);
    return k;
  };
  door['lease']!['calls'] = () => [...keepAlives];
  door['election']!['observe'] = (req: unknown, ctx?: CallContext) => {
    const m = balancer.pickNow();
    if (m === undefined) throw clusterErrors.errTransportClosing();
    return t.open(m, undefined).election.observe(req as M.LeaderRequest, ctx);
  };
  return {
    // The one place the shapes differ: promises and resuming streams where EtcdServices has plain results.
    services: door as unknown as EtcdServices,
    close: () => balancer.close(),
  };
}

type Listener<R> = (rs: readonly R[]) => void;
type EndFn = (err: GrpcError | undefined) => void;

/**
 * A client stream over successive server calls: the one the client sees, while the calls under it break
 * and are opened again on another member. Shapes the subset of StreamCall the raw client uses.
 */
abstract class ResumingCall<Res> {
  protected call: WatchCall | KeepAliveCall | undefined;
  private listener: Listener<Res> | undefined;
  private readonly endListeners: EndFn[] = [];
  private endedWith: { err: GrpcError | undefined } | undefined;
  private paused = false;
  private timer: TimerHandle | undefined;
  /** Whether a call of this stream was ever open. */
  private opened = false;

  constructor(
    protected readonly t: FailoverTarget,
    private readonly balancer: FailoverBalancer,
    /** The stream's call context at each (re)open: the newest token of the client's credentials. */
    protected readonly ctx: () => CallContext | undefined,
    private readonly onClose: () => void,
    /**
     * What runs before each (re)open: clientv3 3.4.23's stream interceptor authenticates anew (getToken)
     * before it creates a stream of a client with credentials; undefined without credentials.
     */
    private readonly beforeOpen: (() => Promise<void>) | undefined,
  ) {}

  get ended(): boolean {
    return this.endedWith !== undefined;
  }

  onResponse(listener: Listener<Res> | undefined): void {
    this.listener = listener;
  }

  onEnd(listener: EndFn): void {
    if (this.endedWith !== undefined) listener(this.endedWith.err);
    else this.endListeners.push(listener);
  }

  pause(): void {
    this.paused = true;
    this.call?.pause();
  }

  resume(): void {
    this.paused = false;
    this.call?.resume();
  }

  /** The client closes the stream (every call under it ends). */
  end(): void {
    this.finish(undefined);
  }

  cancel(): void {
    this.finish(undefined);
  }

  /** Breaks the stream for good (a fault hook), as an error the client does not retry. */
  abort(err: GrpcError): void {
    this.finish(err);
  }

  protected abstract open(services: EtcdServices): WatchCall | KeepAliveCall;
  /** Responses of the current call, before the client sees them; returns what the client gets. */
  protected abstract seen(rs: readonly Res[]): readonly Res[];
  /** The call is open on a new member (not the first): re-send what the stream needs there. */
  protected abstract reopened(): void;
  /** The first call is open (at once, or once a member was ready and the token fetched): send what waited for it. */
  protected abstract openedFirst(): void;
  /** How long to wait before reopening after `err`. */
  protected abstract backoff(err: GrpcError): number;

  /** Opens the first call: at once on a ready member, or as soon as one is ready. */
  protected start(): void {
    this.connect();
  }

  private connect(picked?: MemberState, authenticated = false): void {
    if (this.ended) return;
    if (this.beforeOpen !== undefined && !authenticated) {
      // A failed Authenticate fails the stream's creation: the stream's own rule then reopens or ends it.
      this.beforeOpen().then(
        () => this.connect(undefined, true),
        (err: unknown) => {
          if (!this.ended) this.broke(toGrpcError(err));
        },
      );
      return;
    }
    const m = picked ?? this.balancer.pickNow();
    if (m === undefined) {
      // No member is ready: the stream waits for one (WaitForReady), as clientv3's openWatchClient does.
      void this.balancer.pick(undefined).then(
        (ready) => this.connect(ready, true),
        (err: unknown) => this.finish(toGrpcError(err)),
      );
      return;
    }
    let call: WatchCall | KeepAliveCall;
    try {
      call = this.open(this.t.open(m, undefined));
    } catch (e) {
      this.broke(toGrpcError(e));
      return;
    }
    this.call = call;
    if (this.paused) call.pause();
    (call as WatchCall).onResponse((rs) => {
      if (this.call !== call || this.ended) return;
      const out = this.seen(rs as unknown as readonly Res[]);
      if (out.length > 0) this.listener?.(out);
    });
    call.onEnd((err) => {
      if (this.call !== call || this.ended) return;
      this.call = undefined;
      if (err === undefined) this.finish(undefined);
      else this.broke(err);
    });
    // A first open that failed and is retried is still a first open: nothing to re-create yet.
    if (this.opened) this.reopened();
    else {
      this.opened = true;
      this.openedFirst();
    }
  }

  /** Whether `err` ends the stream for good instead of reopening it (default: watch.go's isHaltErr rule). */
  protected halts(err: GrpcError): boolean {
    return haltsStream(err);
  }

  private broke(err: GrpcError): void {
    if (this.halts(err)) {
      this.finish(err);
      return;
    }
    const clock = this.t.cluster.clock;
    this.timer = clock.setTimer(clock.now() + this.backoff(err), () => {
      this.timer = undefined;
      this.connect();
    }, 'client.stream-retry');
  }

  private finish(err: GrpcError | undefined): void {
    if (this.endedWith !== undefined) return;
    this.endedWith = { err };
    if (this.timer !== undefined) this.t.cluster.clock.cancel(this.timer);
    const call = this.call;
    this.call = undefined;
    call?.end();
    this.onClose();
    for (const l of this.endListeners.splice(0)) l(err);
  }
}

/** A watcher the stream keeps for resuming: its create request and clientv3's nextRev. */
interface Resumable {
  readonly req: M.WatchCreateRequest;
  /** The revision to resume from (clientv3's initReq.rev); 0 until known. */
  rev: bigint;
}

/**
 * A Watch stream that resumes on another member (clientv3's watchGrpcStream): watchers keep their IDs
 * (re-created with the same watch_id) and start again after the last revision they saw; the `created`
 * answers of those re-creations are not passed on.
 */
class ResumingWatchCall extends ResumingCall<M.WatchResponse> {
  private readonly watchers = new Map<string, Resumable>();
  /** Creates sent on the current call and not answered yet, in order; `resume` marks re-creations. */
  private creates: { req: M.WatchCreateRequest; resume: boolean }[] = [];
  /** Client creates made while reconnecting, sent once a call is open. */
  private queued: M.WatchCreateRequest[] = [];

  constructor(t: FailoverTarget, balancer: FailoverBalancer, ctx: () => CallContext | undefined, onClose: () => void, beforeOpen: (() => Promise<void>) | undefined) {
    super(t, balancer, ctx, onClose, beforeOpen);
    this.start();
  }

  write(req: M.WatchRequest): void {
    if (this.ended) return;
    const kind = req.request_union ?? (req.create_request != null ? 'create_request' : req.cancel_request != null ? 'cancel_request' : undefined);
    const create = kind === 'create_request' ? req.create_request : undefined;
    if (create !== undefined && create !== null) {
      if (this.call === undefined) this.queued.push(create);
      else this.send(create, false);
      return;
    }
    const cancel = kind === 'cancel_request' ? req.cancel_request : undefined;
    if (cancel !== undefined && cancel !== null) this.watchers.delete(String(cancel.watch_id ?? 0));
    (this.call as WatchCall | undefined)?.write(req);
  }

  protected open(services: EtcdServices): WatchCall {
    return services.watch.watch(this.ctx());
  }

  protected reopened(): void {
    const pending = this.creates.filter((c) => !c.resume).map((c) => c.req);
    this.creates = [];
    for (const [id, w] of this.watchers) this.send({ ...w.req, watch_id: id, start_revision: String(w.rev) }, true);
    for (const req of [...pending, ...this.queued.splice(0)]) this.send(req, false);
  }

  protected openedFirst(): void {
    for (const req of this.queued.splice(0)) this.send(req, false);
  }

  /** watch.go's backoffIfUnavailable: kept for the stream's life, +25 % per Unavailable, at most 100 ms. */
  private backoffMs = WATCH_BACKOFF_START_MS;

  protected backoff(err: GrpcError): number {
    if (err.code !== GrpcCode.UNAVAILABLE) return 0;
    this.backoffMs = Math.min(this.backoffMs * 1.25, WATCH_BACKOFF_MAX_MS);
    return Math.round(this.backoffMs);
  }

  protected seen(rs: readonly M.WatchResponse[]): readonly M.WatchResponse[] {
    const out: M.WatchResponse[] = [];
    for (const r of rs) {
      const id = String(r.watch_id);
      if (r.created) {
        const c = this.creates.shift();
        if (c !== undefined && !r.canceled) {
          const asked = BigInt(String(c.req.start_revision ?? 0));
          // clientv3: a watcher at revision 0 resumes at the revision it was created at (watch.go, serveSubstream).
          this.watchers.set(id, { req: c.req, rev: asked === 0n ? BigInt(r.header.revision) : asked });
        }
        if (r.canceled) this.watchers.delete(id);
        // A re-creation's answer stays here; one the new member refused (compacted) reaches the client.
        if (c?.resume === true && !r.canceled) continue;
        out.push(r);
        continue;
      }
      const targets = id === '-1' ? [...this.watchers.values()] : [this.watchers.get(id)].filter((w) => w !== undefined);
      for (const w of targets) {
        w.rev = r.events.length > 0 ? BigInt(r.events[r.events.length - 1]!.kv!.mod_revision) + 1n : BigInt(r.header.revision);
      }
      if (r.canceled) this.watchers.delete(id);
      out.push(r);
    }
    return out;
  }

  private send(req: M.WatchCreateRequest, resume: boolean): void {
    this.creates.push({ req, resume });
    (this.call as WatchCall).write({ create_request: req });
  }
}

/** A LeaseKeepAlive stream that reopens on another member 500 ms after it broke (clientv3 lease.go). */
class ResumingKeepAliveCall extends ResumingCall<M.LeaseKeepAliveResponse> {
  /** Renewals written before the first call opened (clientv3 creates the stream before it sends any). */
  private early: M.LeaseKeepAliveRequest[] | undefined = [];

  constructor(t: FailoverTarget, balancer: FailoverBalancer, ctx: () => CallContext | undefined, onClose: () => void, beforeOpen: (() => Promise<void>) | undefined) {
    super(t, balancer, ctx, onClose, beforeOpen);
    this.start();
  }

  /** Sends a renewal on the current call; while the stream reconnects there is none, and it is lost. */
  write(req: M.LeaseKeepAliveRequest): void {
    if (this.ended) return;
    if (this.call === undefined && this.early !== undefined) this.early.push(req);
    else (this.call as KeepAliveCall | undefined)?.write(req);
  }

  protected openedFirst(): void {
    const early = this.early ?? [];
    this.early = undefined;
    for (const req of early) (this.call as KeepAliveCall).write(req);
  }

  protected open(services: EtcdServices): KeepAliveCall {
    return services.lease.leaseKeepAlive(this.ctx());
  }

  protected reopened(): void {}

  /** lease.go's recvKeepAliveLoop reopens after any error (only the client's own close ends it). */
  protected override halts(): boolean {
    return false;
  }

  protected backoff(): number {
    return KEEPALIVE_RETRY_MS;
  }

  protected seen(rs: readonly M.LeaseKeepAliveResponse[]): readonly M.LeaseKeepAliveResponse[] {
    return rs;
  }
}
