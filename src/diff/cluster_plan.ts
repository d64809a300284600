/**
 * The cluster differential's seeded plan: the workload's shape and one fault schedule, a pure function of
 * the seed, run the same on the simulated and the real cluster; and the etcd timing both sides use.
 */
import { SimRandom } from '../sim/index.js';

// The seeded plan: workload shape and fault schedule

/** A fault both sides can take: SIGSTOP/SIGCONT, SIGKILL/restart, Maintenance.MoveLeader. */
export interface ClusterFault {
  /** ms after the workload starts. */
  readonly at: number;
  readonly kind: 'pause' | 'kill' | 'moveLeader';
  /** Whom it hits (for moveLeader: who becomes leader, always a follower). */
  readonly target: 'leader' | 'follower';
  /** Which follower, when target is 'follower': the n-th after the leader (1 or 2 of 3). */
  readonly follower: 1 | 2;
  /** pause / kill: how long until resume / restart. */
  readonly holdMs: number;
}

/** What one seed runs, on both sides. */
export interface ClusterPlan {
  readonly seed: number;
  readonly members: number;
  /** Concurrent KV clients; client i talks to member i mod members. */
  readonly clients: number;
  readonly keys: readonly string[];
  /** How long the clients run (ms). */
  readonly durationMs: number;
  readonly faults: readonly ClusterFault[];
  /** The lease's TTL in seconds and the keep-alive period. */
  readonly leaseTtlS: number;
  readonly keepAliveEveryMs: number;
}

/** The etcd timing both sides use (etcd's defaults: --heartbeat-interval 100, --election-timeout 1000). */
export const HEARTBEAT_MS = 100;
export const ELECTION_MS = 1000;
/** Each KV call's deadline: a call to a paused member gives up (an unknown outcome) after it. */
export const CALL_DEADLINE_MS = 1000;
/** etcd's lessor looks for expired leases every 500 ms (lease/lessor.go's expiry loop). */
export const LESSOR_CHECK_MS = 500;
/**
 * Slack on the expiry bound beyond TTL + election timeout + the lessor's check period: the revoke is a
 * proposal (a commit round), and on the real side the host schedules five processes on two busy cores.
 */
export const EXPIRY_SLACK_MS = 1000;
export const LEASE_KEY = 'lease/k';

/**
 * The plan a seed gives: a pure function of the seed, the duration and whether faults are wanted (without
 * them every write's outcome is known, so the revision count is checked exactly).
 */
export function clusterPlan(seed: number, durationMs = 6000, withFaults = true): ClusterPlan {
  const rnd = new SimRandom(seed).fork('cluster-faults');
  const faults: ClusterFault[] = [];
  // One fault at a time, so two members always form a quorum once it heals; none in the last 1.5 s.
  for (let at = rnd.nextInt(500, 1000); withFaults && at < durationMs - 1500; ) {
    const roll = rnd.nextInt(0, 99);
    const kind = roll < 45 ? 'pause' : roll < 75 ? 'kill' : 'moveLeader';
    const target = kind === 'moveLeader' || rnd.nextBool() ? 'follower' : 'leader';
    const holdMs = kind === 'moveLeader' ? 0 : rnd.nextInt(600, 1600);
    faults.push({ at, kind, target, follower: rnd.nextBool() ? 1 : 2, holdMs });
    at += holdMs + rnd.nextInt(800, 1500);
  }
  return { seed, members: 3, clients: 6, keys: ['a', 'b', 'c'], durationMs, faults, leaseTtlS: 4, keepAliveEveryMs: 500 };
}

