/**
 * The sides of the cluster differential behind one surface: the simulated cluster (src/cluster) on a
 * virtual clock seeded by the plan, with its Raft invariant checker run after every tick; a real cluster
 * of etcd processes on loopback (etcd_cluster.ts) in real time; and etcdsim as the etcd binary in three
 * processes, started and hurt by signals through the same launcher as the real etcd (issue 31).
 */
import type { EtcdGrpcClient } from '../grpc/index.js';
import type * as M from '../server/messages.js';
import { EtcdCluster as SimCluster, checkRaftEveryTick } from '../cluster/index.js';
import { afterHostTime, hostNow, VirtualClock } from '../sim/index.js';
import { etcdsimCommand, startEtcdCluster, type EtcdCluster as RealCluster, type EtcdCommand } from './etcd_cluster.js';
import type { HistoryKv } from './kv_history.js';
import { CALL_DEADLINE_MS, ELECTION_MS, HEARTBEAT_MS, type ClusterPlan } from './cluster_plan.js';

/** A bidirectional stream as both sides give it (the server's StreamCall, grpc-js's call). */
export interface Stream<Req, Res> {
  write(req: Req): void;
  onResponse(listener: ((responses: Res[]) => void) | undefined): void;
  onEnd(listener: (err: unknown) => void): void;
  cancel(): void;
}

/** The services of one member that the differential uses, in etcd's message form. */
export interface MemberApi {
  readonly kv: HistoryKv;
  leaseGrant(req: M.LeaseGrantRequest): Promise<M.LeaseGrantResponse>;
  leaseKeepAlive(): Stream<M.LeaseKeepAliveRequest, M.LeaseKeepAliveResponse>;
  watch(): Stream<M.WatchRequest, M.WatchResponse>;
  status(): Promise<M.StatusResponse>;
  memberList(): Promise<M.MemberListResponse>;
}

/** One side of the differential. */
export interface ClusterSide {
  /** The in-process simulated cluster, the real etcd's processes, or etcdsim's processes. */
  readonly name: 'simulator' | 'etcd' | 'processes';
  readonly size: number;
  /** The side's time in ms (virtual or host). */
  now(): number;
  /** Lets `ms` pass (the one loop that drives the side's time calls it). */
  sleep(ms: number): Promise<void>;
  /** Runs `fn` after `ms` of the side's time (for timeouts inside the workload). */
  after(ms: number, fn: () => void): void;
  member(i: number): MemberApi;
  leader(): Promise<number | undefined>;
  pause(i: number): void;
  resume(i: number): void;
  kill(i: number): Promise<void>;
  restart(i: number): Promise<void>;
  moveLeader(to: number): Promise<void>;
  /**
   * What the side's own Raft invariant checker found (the simulator runs src/cluster/checker.ts after
   * every tick); absent on a side that has none to run (a real cluster's Raft is etcd's own).
   */
  raftViolations?(): readonly string[];
  close(): Promise<void>;
}

/** What a test may change on the simulated side (never on the real one). */
export interface SimSideOptions {
  /** Each member's apply lag (EtcdCluster's applyLagMs): a slow follower. */
  readonly applyLagMs?: number | readonly number[] | undefined;
  /** Wraps member i's KV as the clients see it: a test plants a bug here (e.g. reads served locally). */
  readonly wrapKv?: ((member: number, kv: HistoryKv) => HistoryKv) | undefined;
  /** The clients' link delay to every member, each way (default 5 ms). */
  readonly linkDelayMs?: number | undefined;
}

const SIM_CLIENT = 'diff';

/** The simulated cluster on a virtual clock, seeded by the plan's seed. */
export function simSide(plan: ClusterPlan, opts: SimSideOptions = {}): ClusterSide {
  const clock = new VirtualClock();
  const c = new SimCluster({
    members: plan.members,
    clock,
    seed: plan.seed,
    heartbeatIntervalMs: HEARTBEAT_MS,
    electionTicks: ELECTION_MS / HEARTBEAT_MS,
    applyLagMs: opts.applyLagMs,
  });
  // The clients' network: without a delay a write through the leader would answer in the same virtual
  // instant and a client loop would never yield. Real loopback answers in about a millisecond; a slower
  // link keeps the number of operations (and the checker's work) near what the real side records.
  for (let i = 0; i < plan.members; i++) c.delayLink(SIM_CLIENT, i, opts.linkDelayMs ?? 5);
  const raft = checkRaftEveryTick(c);
  const api = (i: number): MemberApi => {
    const s = c.connect(i, { client: SIM_CLIENT, deadlineMs: CALL_DEADLINE_MS });
    const kv: HistoryKv = { range: (r) => s.kv.range(r), put: (r) => s.kv.put(r), deleteRange: (r) => s.kv.deleteRange(r), txn: (r) => s.kv.txn(r) };
    return {
      kv: opts.wrapKv?.(i, kv) ?? kv,
      leaseGrant: (r) => s.lease.leaseGrant(r),
      leaseKeepAlive: () => s.lease.leaseKeepAlive(),
      watch: () => s.watch(),
      status: () => s.maintenance.status({}),
      memberList: () => s.cluster.memberList({}),
    };
  };
  const members = Array.from({ length: plan.members }, (_, i) => api(i));
  return {
    name: 'simulator',
    size: plan.members,
    now: () => clock.now(),
    sleep: (ms) => c.advance(ms),
    after: (ms, fn) => void clock.setTimer(clock.now() + ms, fn, 'cluster-diff'),
    member: (i) => members[i]!,
    leader: () => Promise.resolve(c.leader?.index),
    pause: (i) => c.pause(i),
    resume: (i) => c.resume(i),
    kill: (i) => Promise.resolve(c.crash(i)),
    restart: (i) => Promise.resolve(c.restart(i)),
    moveLeader: async (to) => {
      if (!c.moveLeader(to)) throw new Error(`move-leader to member ${to} did not complete`);
    },
    raftViolations: () => raft.found.map((v) => `at ${v.at} ms: ${v.invariant}: ${v.detail}`),
    close: () => Promise.resolve(c.close()),
  };
}

/** A real cluster of `plan.members` etcd processes on loopback (etcd_cluster.ts), in real time. */
export function etcdSide(plan: ClusterPlan, opts: { readonly bin?: string | undefined } = {}): Promise<ClusterSide> {
  return processSide('etcd', plan, opts.bin);
}

/**
 * etcdsim as the etcd binary, `plan.members` processes on loopback (as etcd 3.4, the release the real
 * side runs), in real time: the same launcher, flags and signals as the real etcd's side. Its Raft
 * invariants are checked inside each process by its own tests, not here (it has no raftViolations).
 */
export function etcdsimProcessSide(plan: ClusterPlan): Promise<ClusterSide> {
  return processSide('processes', plan, etcdsimCommand('3.4'));
}

async function processSide(name: 'etcd' | 'processes', plan: ClusterPlan, bin: string | EtcdCommand | undefined): Promise<ClusterSide> {
  const c: RealCluster = await startEtcdCluster({ size: plan.members, bin, heartbeatMs: HEARTBEAT_MS, electionMs: ELECTION_MS, deadlineMs: CALL_DEADLINE_MS });
  // The member's client changes on restart: resolve it at every call.
  const cl = (i: number): EtcdGrpcClient => c.client(i);
  const api = (i: number): MemberApi => ({
    kv: { range: (r) => cl(i).kv.range(r), put: (r) => cl(i).kv.put(r), deleteRange: (r) => cl(i).kv.deleteRange(r), txn: (r) => cl(i).kv.txn(r) },
    leaseGrant: (r) => cl(i).lease.leaseGrant(r),
    leaseKeepAlive: () => cl(i).lease.leaseKeepAlive(),
    watch: () => cl(i).watch.watch(),
    status: () => cl(i).maintenance.status({}),
    memberList: () => cl(i).cluster.memberList({}),
  });
  const members = Array.from({ length: plan.members }, (_, i) => api(i));
  return {
    name,
    size: plan.members,
    now: hostNow,
    sleep: (ms) => new Promise((resolve) => afterHostTime(ms, resolve)),
    after: (ms, fn) => void afterHostTime(ms, fn),
    member: (i) => members[i]!,
    leader: () => c.leader(),
    pause: (i) => c.pause(i),
    resume: (i) => c.resume(i),
    kill: (i) => c.kill(i),
    restart: (i) => c.restart(i),
    moveLeader: (to) => c.moveLeader(to),
    close: () => c.stop(),
  };
}
