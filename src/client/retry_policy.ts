/**
 * etcd's Go client's rule for sending a unary call again (clientv3 3.4: retry.go's table, retry_interceptor.go's
 * isSafeRetry and shouldRefreshToken, client.go's roundRobinQuorumBackoff) — the one copy, shared by every
 * client here that follows clientv3: the failover raw client (failover.ts, which awaits) and a scenario's
 * etcdctl on a cluster (scenario/run/cluster.ts, which steps the virtual clock itself). Only the rule lives
 * here — the table, the predicates and the wait; each caller keeps its own loop.
 */
import { ErrAuthNotEnabled, ErrInvalidAuthToken, ErrUserEmpty } from '../auth/index.js';
import { GrpcCode } from '../etcd/index.js';
import type { GrpcError } from '../server/index.js';
import type { SimRandom } from '../sim/index.js';

/** clientv3's retry policy of a call (retry.go): may it be sent again after an Unavailable answer? */
export type RetryPolicy = 'repeatable' | 'nonRepeatable';

/** clientv3's defaultUnaryMaxRetries: attempts of one unary call. */
export const UNARY_MAX_ATTEMPTS = 100;
/** clientv3's defaultBackoffWaitBetween: the wait after each round over a quorum of endpoints. */
export const RETRY_WAIT_MS = 25;
/** clientv3's defaultBackoffJitterFraction: the wait varies by up to ±10 %. */
export const RETRY_JITTER = 0.1;

/**
 * retry.go's table: the calls clientv3 marks repeatable, as `service.method` in EtcdServices' names. Every
 * other unary call has the interceptor's default, nonRepeatable (Put, DeleteRange, Txn — a read-only one
 * too —, Compact, Defragment, membership changes, auth writes, Authenticate, and the Lock and Election
 * services, which have no retry wrapper).
 */
const REPEATABLE: ReadonlySet<string> = new Set([
  'kv.range',
  'lease.leaseGrant',
  'lease.leaseRevoke',
  'lease.leaseTimeToLive',
  'lease.leaseLeases',
  'cluster.memberList',
  'maintenance.alarm',
  'maintenance.status',
  'maintenance.hash',
  'maintenance.hashKV',
  'maintenance.snapshot',
  'maintenance.moveLeader',
  'auth.userList',
  'auth.userGet',
  'auth.roleGet',
  'auth.roleList',
]);

/** Whether clientv3 3.4 sends `service.method` again after an Unavailable answer (retry.go's repeatable calls). */
export function isRepeatable(service: string, method: string): boolean {
  return REPEATABLE.has(`${service}.${method}`);
}

/** The retry policy clientv3 3.4 gives `service.method`. */
export function retryPolicyOf(service: string, method: string): RetryPolicy {
  return isRepeatable(service, method) ? 'repeatable' : 'nonRepeatable';
}

/** clientv3's isContextError: the call's own deadline or cancellation, which ends it whatever its policy. */
export function isContextError(err: GrpcError): boolean {
  return err.code === GrpcCode.DEADLINE_EXCEEDED || err.code === GrpcCode.CANCELLED;
}

/**
 * clientv3's isSafeRetry: never after a deadline or cancellation; a repeatable call on Unavailable (etcd's
 * own Unavailable answers too: `leader changed`, `request timed out`, a connection that broke); a
 * non-repeatable one only when it was never sent ("there is no address/connection available").
 */
export function isSafeRetry(policy: RetryPolicy, err: GrpcError): boolean {
  if (isContextError(err)) return false;
  if (policy === 'repeatable') return err.code === GrpcCode.UNAVAILABLE;
  // A call that waits for a ready connection (WaitForReady, as clientv3 sets it) never gets these.
  return err.code === GrpcCode.UNAVAILABLE && (err.details === 'there is no address available' || err.details === 'there is no connection available');
}

/** etcd's ErrAuthOldRevision (rpctypes), which clientv3 answers by refreshing its token too. */
const AUTH_OLD_REVISION = 'etcdserver: revision of auth store is old';

/**
 * clientv3's shouldRefreshToken (retry_interceptor.go, with its default retryAuth): `invalid auth token` and
 * `revision of auth store is old` always — the call is then sent again, after a new Authenticate when the
 * client has credentials, as it is without (refreshToken has nothing to do then); `user name is empty` only
 * when the client has credentials (its token was cleared meanwhile). Safe for any call: etcd refused it
 * before proposing anything.
 */
export function shouldRefreshToken(err: GrpcError, hasCredentials: boolean): boolean {
  if (err.details === ErrUserEmpty.message) return hasCredentials;
  return err.details === ErrInvalidAuthToken.message || err.details === AUTH_OLD_REVISION;
}

/** getToken's one answer that ends it at once, before trying the other endpoints: auth is not enabled. */
export function isAuthNotEnabled(err: GrpcError): boolean {
  return err.details === ErrAuthNotEnabled.message;
}

/**
 * How long clientv3 waits before attempt `attempt` (0: the first, no wait) of a unary call, for a client of
 * `endpoints` endpoints: roundRobinQuorumBackoff waits only after each round over a quorum of them
 * (etcdctl pinned to one endpoint: before every retry), for backoffLinearWithJitter's 25 ms ±10 % (jitterUp),
 * drawn from `random` — the caller's seeded stream, so the same seed waits the same — and rounded to the
 * virtual clock's milliseconds. Draws only when it waits.
 */
export function retryBackoffMs(attempt: number, endpoints: number, random: SimRandom): number {
  if (attempt <= 0) return 0;
  const quorum = Math.floor(endpoints / 2) + 1;
  if (attempt % quorum !== 0) return 0;
  return Math.round(RETRY_WAIT_MS * (1 + RETRY_JITTER * (random.nextFloat() * 2 - 1)));
}
