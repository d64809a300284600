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
 * Here: the unary calls' retries and the token refresh; which member a call goes to is balancer.ts, the
 * streams that reopen resuming_streams.ts, the retry rules retry_policy.ts.
 */
import { SERVICE_CLASSES, errTransportClosing, serviceMethods, toGrpcError, type CallContext, type EtcdServices, type GrpcError } from '../server/index.js';
import type * as M from '../server/messages.js';
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
import { FailoverBalancer, sleep, type FailoverTarget } from './balancer.js';
import { ResumingWatchCall, ResumingKeepAliveCall } from './resuming_streams.js';

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
  // Every call of the member's service classes (src/server/service_classes.ts; test/server/member_calls.test.ts
  // holds it to etcd's list), picked onto a member and retried — but the stream calls, below: Watch and
  // LeaseKeepAlive reopen elsewhere, Election.Observe stays on the member it opened on.
  const door: Record<string, Record<string, unknown>> = {};
  for (const [service, cls] of Object.entries(SERVICE_CLASSES)) {
    const svc = service.toLowerCase();
    const s: Record<string, unknown> = (door[svc] = {});
    for (const method of serviceMethods(cls)) {
      const policy = retryPolicyOf(svc, method);
      s[method] = (req: unknown, ctx?: CallContext) =>
        unary(policy, ctx, (services, sent) => {
          const target = (services as unknown as Record<string, Record<string, (req: unknown, ctx?: CallContext) => unknown>>)[svc]!;
          return target[method]!.call(target, req, sent);
        });
    }
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
    if (m === undefined) throw errTransportClosing();
    return t.open(m, undefined).election.observe(req as M.LeaderRequest, ctx);
  };
  return {
    // The one place the shapes differ: promises and resuming streams where EtcdServices has plain results.
    services: door as unknown as EtcdServices,
    close: () => balancer.close(),
  };
}
