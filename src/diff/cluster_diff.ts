/**
 * The cluster differential (issue 18, item 5): one seeded client workload and one seeded fault schedule,
 * run against the simulated cluster (src/cluster, virtual time, deterministic) and against a real
 * 3-member etcd (etcd_cluster.ts, real time), each checked for what etcd promises of a cluster:
 *
 *  - KV: the history of concurrent clients spread over the members (puts, linearizable gets, deletes,
 *    compare-and-swap txns) is linearizable (linearizability.ts);
 *  - watches: one watch per member (re-opened after a restart, from the revision after its last event),
 *    each stream judged by the watch-guarantee checker (src/watch/guarantees.ts: ordered, unique, no gaps
 *    within the revisions it vouched for, ...) against the committed history read back at the end;
 *  - leases: a key attached to a lease kept alive is never deleted while keep-alives succeed (every gap
 *    between successful renewals shorter than the TTL), and once the renewals stop it is gone within
 *    TTL + election slack, never before TTL;
 *  - exact agreement where etcd is deterministic: after the workload settles and every member caught up,
 *    every member holds the same keys and values (and revisions); when no write had an unknown outcome
 *    the final revision is 1 + the number of writes that changed something; the committed history replays
 *    to the final keyspace; 3 members, one leader all members name.
 *
 * The faults are those expressible on both sides: pause / resume a member (SIGSTOP / SIGCONT), kill /
 * restart it (SIGKILL, then etcd on the same data dir), MoveLeader. A fault names a role ("the leader", "a
 * follower"), resolved when it fires, because which member leads is decided by each side's elections.
 *
 * Time: a side is driven by one loop (`Side.sleep`): on the simulator that moves the virtual clock, so the
 * same seed gives the same run; on etcd it waits real time. Timeouts inside the workload use the side's
 * timers (`Side.after`), never the host's directly.
 */
import { Buffer } from 'node:buffer';
import type { EtcdGrpcClient } from '../grpc/client.js';
import type * as M from '../server/messages.js';
import { watchResponseIn } from '../server/convert.js';
import { EtcdCluster as SimCluster, checkRaftEveryTick } from '../cluster/index.js';
import { afterHostTime, hostNow, SimRandom, VirtualClock } from '../sim/index.js';
import { checkWatch, formatViolations, type CommittedHistory, type HistoryRevision } from '../watch/guarantees.js';
import type { WatchCreateRequest, WatchResponse } from '../watch/types.js';
import type { Event } from '../mvcc/index.js';
import { startEtcdCluster, type EtcdCluster as RealCluster, type StartClusterOptions } from './etcd_cluster.js';
import { KvHistory, runKvClients, type HistoryKv } from './kv_history.js';
import { checkLinearizable, type KvOperation } from './linearizability.js';

// ---------------------------------------------------------------------------------------------------
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
const HEARTBEAT_MS = 100;
const ELECTION_MS = 1000;
/** Each KV call's deadline: a call to a paused member gives up (an unknown outcome) after it. */
const CALL_DEADLINE_MS = 1000;
/** etcd's lessor looks for expired leases every 500 ms (lease/lessor.go's expiry loop). */
const LESSOR_CHECK_MS = 500;
/**
 * Slack on the expiry bound beyond TTL + election timeout + the lessor's check period: the revoke is a
 * proposal (a commit round), and on the real side the host schedules five processes on two busy cores.
 */
const EXPIRY_SLACK_MS = 1000;
const LEASE_KEY = 'lease/k';

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

// ---------------------------------------------------------------------------------------------------
// A side: the simulated cluster or the real one, behind one surface

/** A bidirectional stream as both sides give it (the server's StreamCall, grpc-js's call). */
interface Stream<Req, Res> {
  write(req: Req): void;
  onResponse(listener: ((responses: Res[]) => void) | undefined): void;
  onEnd(listener: (err: unknown) => void): void;
  cancel(): void;
}

/** The services of one member that the differential uses, in etcd's message form. */
interface MemberApi {
  readonly kv: HistoryKv;
  leaseGrant(req: M.LeaseGrantRequest): Promise<M.LeaseGrantResponse>;
  leaseKeepAlive(): Stream<M.LeaseKeepAliveRequest, M.LeaseKeepAliveResponse>;
  watch(): Stream<M.WatchRequest, M.WatchResponse>;
  status(): Promise<M.StatusResponse>;
  memberList(): Promise<M.MemberListResponse>;
}

/** One side of the differential. */
export interface ClusterSide {
  readonly name: 'simulator' | 'etcd';
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
   * What the side's own Raft invariant checker found (the simulator runs src/cluster/raft_checker.ts after
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
export async function etcdSide(plan: ClusterPlan, opts: Pick<StartClusterOptions, 'bin'> = {}): Promise<ClusterSide> {
  const c: RealCluster = await startEtcdCluster({ size: plan.members, bin: opts.bin, heartbeatMs: HEARTBEAT_MS, electionMs: ELECTION_MS, deadlineMs: CALL_DEADLINE_MS });
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
    name: 'etcd',
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

// ---------------------------------------------------------------------------------------------------
// The run

/** One check's outcome on one side. */
export interface ClusterCheck {
  readonly name: 'linearizable' | 'watch' | 'lease' | 'keyspace' | 'revision' | 'members' | 'raft';
  /** 'skipped': the check's premise did not hold this run (said in detail), so it promises nothing. */
  readonly status: 'ok' | 'failed' | 'skipped';
  readonly detail: string;
}

/** What one side did and how it fared. */
export interface ClusterSideResult {
  readonly side: ClusterSide['name'];
  readonly seed: number;
  readonly checks: readonly ClusterCheck[];
  /** The faults as they fired (member resolved), or why one was skipped. */
  readonly faultLog: readonly string[];
  readonly operations: number;
  readonly unknownWrites: number;
  readonly finalRevision: number | undefined;
  /** The settled keyspace (identical on every member when 'keyspace' passed): key -> value. */
  readonly keyspace: ReadonlyMap<string, string>;
  readonly members: number;
  readonly leaders: number;
  readonly watchStreams: number;
}

/** Both sides of one seed and what differs between them. */
export interface ClusterDiffResult {
  readonly seed: number;
  readonly plan: ClusterPlan;
  readonly sides: readonly ClusterSideResult[];
  /** Failed checks (with their side) and cross-side disagreements where etcd is deterministic. */
  readonly divergences: readonly string[];
  /** The command that replays this seed. */
  readonly replay: string;
}

const bytes = (s: string): Buffer => Buffer.from(s, 'latin1');
const text = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');
const ALL = { key: Buffer.from([0]), range_end: Buffer.from([0]) };

/** A watch stream's record: its request and every response it received, until it ended. */
interface WatchRecord {
  readonly member: number;
  readonly request: WatchCreateRequest;
  readonly responses: WatchResponse[];
  stream: Stream<M.WatchRequest, M.WatchResponse>;
  ended: boolean;
  lastRevision: number;
}

/** A renewal: when it was sent and when a positive answer came (undefined: it failed or timed out). */
interface Renewal {
  readonly invoke: number;
  ret: number | undefined;
}

/** Runs the plan on one side and checks it. The side is closed afterwards. */
export async function runClusterSide(side: ClusterSide, plan: ClusterPlan): Promise<ClusterSideResult> {
  try {
    return await runOn(side, plan);
  } finally {
    await side.close();
  }
}

async function runOn(side: ClusterSide, plan: ClusterPlan): Promise<ClusterSideResult> {
  const checks: ClusterCheck[] = [];
  const faultLog: string[] = [];
  const n = side.size;
  const state: Array<'running' | 'paused' | 'killed'> = Array.from({ length: n }, () => 'running');
  /** Resolvers waiting for a killed member's restart. */
  const backUp: Array<Array<() => void>> = Array.from({ length: n }, () => []);
  const timeout = <T>(p: Promise<T>, ms: number): Promise<T | undefined> =>
    new Promise((resolve) => {
      let done = false;
      side.after(ms, () => {
        if (!done) resolve(undefined);
        done = true;
      });
      p.then(
        (v) => {
          if (!done) resolve(v);
          done = true;
        },
        () => {
          if (!done) resolve(undefined);
          done = true;
        },
      );
    });

  // What the driving loop does after each step besides letting time pass (the lease's renewals, once
  // they start): a real restart takes a second or two, and renewals must not pause for it.
  let onStep: () => void = () => undefined;
  /** Runs `task` while driving the side's time in `stepMs` steps, until it settles. */
  const drive = async <T>(task: Promise<T>, stepMs = 20): Promise<T> => {
    let settled = false;
    const t = task.finally(() => (settled = true));
    while (!settled) {
      await side.sleep(stepMs);
      onStep();
    }
    return t;
  };
  /** Retries `fn` on any member that runs until it answers (setup and settle-phase requests). */
  const anyMember = async <T>(fn: (m: MemberApi) => Promise<T>, what: string): Promise<T> => {
    for (let attempt = 0; attempt < 60; attempt++) {
      const i = attempt % n;
      if (state[i] !== 'running') continue;
      const r = await drive(timeout(fn(side.member(i)), 1500));
      if (r !== undefined) return r;
      await side.sleep(100);
    }
    throw new Error(`${side.name}: ${what}: no member answered`);
  };

  // Watches first, one per member, from revision 2 (the first a write makes): every event of the run is
  // theirs to report.
  const watches: WatchRecord[] = [];
  const openWatch = (member: number, startRevision: number): void => {
    const create = { ...ALL, start_revision: String(startRevision) };
    const request: WatchCreateRequest = { key: new Uint8Array([0]), rangeEnd: new Uint8Array([0]), startRevision };
    const stream = side.member(member).watch();
    const rec: WatchRecord = { member, request, responses: [], stream, ended: false, lastRevision: startRevision - 1 };
    stream.onResponse((rs) => {
      for (const r of rs) {
        const d = watchResponseIn(r);
        rec.responses.push(d);
        const last = d.events.at(-1);
        if (last !== undefined) rec.lastRevision = last.kv.modRevision;
      }
    });
    stream.onEnd(() => (rec.ended = true));
    stream.write({ create_request: create });
    watches.push(rec);
  };
  for (let i = 0; i < n; i++) openWatch(i, 2);

  // The lease and its key.
  const ttl = plan.leaseTtlS;
  // The grant starts the TTL no earlier than its call: it counts as the first renewal.
  const granted = side.now();
  const grant = await anyMember((m) => m.leaseGrant({ TTL: String(ttl), ID: '0' }), 'LeaseGrant');
  const leaseId = grant.ID;
  await anyMember((m) => m.kv.put({ key: bytes(LEASE_KEY), value: bytes('leased'), lease: leaseId }), 'Put with lease');
  const renewals: Renewal[] = [{ invoke: granted, ret: side.now() }];
  let renewing = true;
  let renewer = 0;
  const renew = (): void => {
    // Like a client balancer: the next member the harness knows to be running.
    for (let k = 0; k < n && state[renewer % n] !== 'running'; k++) renewer++;
    const i = renewer++ % n;
    if (state[i] !== 'running') return;
    const r: Renewal = { invoke: side.now(), ret: undefined };
    renewals.push(r);
    let ka: Stream<M.LeaseKeepAliveRequest, M.LeaseKeepAliveResponse>;
    try {
      ka = side.member(i).leaseKeepAlive();
    } catch {
      return;
    }
    let open = true;
    const close = (): void => {
      if (!open) return;
      open = false;
      ka.cancel();
    };
    ka.onResponse((rs) => {
      if (rs.some((x) => x.ID === leaseId && BigInt(x.TTL) > 0n) && r.ret === undefined) r.ret = side.now();
      close();
    });
    ka.onEnd(() => (open = false));
    ka.write({ ID: leaseId });
    side.after(CALL_DEADLINE_MS, close);
  };

  // The KV clients, each pinned to a member; a client of a killed member waits for its restart (its
  // operation's call time is already recorded, so the wait only widens its interval).
  const history = new KvHistory(() => side.now());
  const kvFor = (client: number): HistoryKv => {
    const i = client % n;
    const gate = async (): Promise<void> => {
      if (state[i] === 'killed') await new Promise<void>((resolve) => backUp[i]!.push(resolve));
    };
    const kv = (): HistoryKv => side.member(i).kv;
    return {
      range: async (r) => (await gate(), kv().range(r)),
      put: async (r) => (await gate(), kv().put(r)),
      deleteRange: async (r) => (await gate(), kv().deleteRange(r)),
      txn: async (r) => (await gate(), kv().txn(r)),
    };
  };
  let stopClients = false;
  const clients = runKvClients({ history, clients: plan.clients, kvFor, seed: plan.seed, keys: plan.keys, stop: () => stopClients });

  // Faults and renewals on the side's time, in one loop.
  const heal: Array<{ at: number; run: () => Promise<void> }> = [];
  const t0 = side.now();
  let nextRenewal = t0 + plan.keepAliveEveryMs;
  onStep = () => {
    if (renewing && side.now() >= nextRenewal) {
      nextRenewal = side.now() + plan.keepAliveEveryMs;
      renew();
    }
  };
  let nextFault = 0;
  const restartMember = async (i: number): Promise<void> => {
    await side.restart(i);
    state[i] = 'running';
    for (const w of backUp[i]!.splice(0)) w();
    // A new watch on the restarted member, resuming after the last event its broken stream delivered.
    const old = watches.filter((w) => w.member === i).at(-1);
    openWatch(i, (old?.lastRevision ?? 1) + 1);
  };
  const fire = async (f: ClusterFault): Promise<void> => {
    const leader = await side.leader();
    if (leader === undefined) {
      faultLog.push(`+${side.now() - t0}ms ${f.kind} ${f.target}: skipped (no leader)`);
      return;
    }
    const target = f.target === 'leader' ? leader : (leader + f.follower) % n;
    faultLog.push(`+${side.now() - t0}ms ${f.kind} member ${target} (${f.target === 'leader' ? 'the leader' : 'a follower'})`);
    if (f.kind === 'moveLeader') {
      await side.moveLeader(target).catch((err: unknown) => faultLog.push(`  move-leader failed: ${String(err)}`));
    } else if (f.kind === 'pause') {
      side.pause(target);
      state[target] = 'paused';
      const run = async (): Promise<void> => {
        side.resume(target);
        state[target] = 'running';
        faultLog.push(`+${side.now() - t0}ms resume member ${target}`);
      };
      heal.push({ at: side.now() + f.holdMs, run });
    } else {
      state[target] = 'killed';
      await side.kill(target);
      const run = async (): Promise<void> => {
        await restartMember(target);
        faultLog.push(`+${side.now() - t0}ms restarted member ${target}`);
      };
      heal.push({ at: side.now() + f.holdMs, run });
    }
  };
  const healDue = async (all: boolean): Promise<void> => {
    for (const h of [...heal]) {
      if (all || h.at <= side.now()) {
        heal.splice(heal.indexOf(h), 1);
        await drive(h.run());
      }
    }
  };
  while (side.now() - t0 < plan.durationMs) {
    await side.sleep(20);
    const now = side.now();
    onStep();
    await healDue(false);
    const f = plan.faults[nextFault];
    if (f !== undefined && now - t0 >= f.at) {
      nextFault++;
      await drive(fire(f));
    }
  }
  stopClients = true;
  await healDue(true);
  // Renewals go on while the clients finish.
  const clientsDone = clients.then(() => undefined);
  let done = false;
  void clientsDone.finally(() => (done = true));
  while (!done) {
    await side.sleep(20);
    onStep();
  }
  // The lease is still kept alive: its key must be there (a linearizable read).
  const present = await anyMember((m) => m.kv.range({ key: bytes(LEASE_KEY) }), 'Range of the lease key');
  const presentAt = side.now();
  renewing = false;
  await side.sleep(CALL_DEADLINE_MS); // the last renewal answers or gives up
  const ok = renewals.filter((r) => r.ret !== undefined);
  let longestGap = 0;
  for (let k = 1; k < ok.length; k++) longestGap = Math.max(longestGap, ok[k]!.invoke - ok[k - 1]!.invoke);
  longestGap = Math.max(longestGap, presentAt - (ok.filter((r) => r.invoke <= presentAt).at(-1)?.invoke ?? 0));
  const last = ok.at(-1)!;
  // A later renewal that got no answer in time may still have renewed the lease (its answer lost, or
  // served once a resumed member ran again): the upper bound counts from its deadline too.
  const lastSent = renewals.at(-1)!;
  const anchor = Math.max(last.ret!, lastSent.ret ?? lastSent.invoke + CALL_DEADLINE_MS);
  const leaseChecks: string[] = [];
  let leaseFailed = false;
  if (longestGap < ttl * 1000) {
    if (present.kvs.length === 0) {
      leaseFailed = true;
      leaseChecks.push(`the lease key was gone at +${presentAt - t0}ms although every renewal gap was under the TTL (longest ${longestGap} ms)`);
    }
  } else {
    leaseChecks.push(`renewals paused ${longestGap} ms >= TTL: presence not promised`);
  }
  // Then it must go within TTL + election timeout + the lessor's period + slack after the last renewal,
  // and not before TTL after the last successful one was sent.
  const bound = ttl * 1000 + ELECTION_MS + LESSOR_CHECK_MS + EXPIRY_SLACK_MS;
  let goneAt: number | undefined;
  while (side.now() <= anchor + bound + 500) {
    const r = await anyMember((m) => m.kv.range({ key: bytes(LEASE_KEY) }), 'Range of the lease key');
    if (r.kvs.length === 0) {
      goneAt = side.now();
      break;
    }
    await side.sleep(100);
  }
  if (present.kvs.length > 0 || longestGap < ttl * 1000) {
    if (goneAt === undefined) {
      leaseFailed = true;
      leaseChecks.push(`the lease key outlived its last renewal (+${anchor - t0}ms) by more than ${bound} ms`);
    } else if (goneAt - last.invoke < ttl * 1000 && present.kvs.length > 0) {
      leaseFailed = true;
      leaseChecks.push(`the lease key was gone ${goneAt - last.invoke} ms after the last renewal was sent, before its TTL`);
    } else {
      leaseChecks.push(`gone ${goneAt - anchor} ms after the last renewal (bound ${bound})`);
    }
  }
  checks.push({ name: 'lease', status: leaseFailed ? 'failed' : 'ok', detail: `${ok.length}/${renewals.length} renewals; ${leaseChecks.join('; ')}` });

  // Settle: every member answers, names the same leader, and applied what the leader committed.
  const statuses = await settle(side, drive, timeout);
  const members = (await anyMember((m) => m.memberList(), 'MemberList')).members.length;
  const leaderIds = new Set(statuses.map((s) => s.leader));
  const leaders = statuses.filter((s) => s.leader !== '0' && s.leader === s.header.member_id).length;
  checks.push({
    name: 'members',
    status: members === n && leaders === 1 && leaderIds.size === 1 ? 'ok' : 'failed',
    detail: `${members} members, ${leaders} reports itself leader, leaders named: ${[...leaderIds].join(', ')}`,
  });

  // Every member's keyspace, serializable (its own applied state, now caught up).
  const spaces = await Promise.all(
    Array.from({ length: n }, (_, i) => drive(timeout(side.member(i).kv.range({ ...ALL, serializable: true }), 3000))),
  );
  const render = (r: M.RangeResponse | undefined): string =>
    r === undefined ? '(no answer)' : r.kvs.map((kv) => `${text(kv.key)}=${text(kv.value)}@${kv.create_revision}/${kv.mod_revision}/v${kv.version}`).join(' ');
  const shown = spaces.map(render);
  const agree = shown.every((s) => s === shown[0]) && spaces[0] !== undefined;
  checks.push({ name: 'keyspace', status: agree ? 'ok' : 'failed', detail: agree ? `${spaces[0]!.kvs.length} keys on every member` : shown.map((s, i) => `member ${i}: ${s}`).join('\n') });
  const finalRevision = spaces[0] === undefined ? undefined : Number(spaces[0].header.revision);
  const keyspace = new Map((spaces[0]?.kvs ?? []).map((kv) => [text(kv.key), text(kv.value)] as const));

  // The committed history: a watch from revision 2 on the leader, read through the final revision.
  const reference = finalRevision === undefined ? undefined : await readHistory(side, drive, timeout, statuses, finalRevision);
  // Let every live watch catch up to the final revision, then judge each stream.
  if (finalRevision !== undefined) {
    for (let k = 0; k < 100 && watches.some((w) => !w.ended && w.lastRevision < finalRevision); k++) await side.sleep(50);
  }
  const watchProblems: string[] = [];
  if (reference === undefined) {
    watchProblems.push('the committed history could not be read back');
  } else {
    const committed: CommittedHistory = { revisions: reference, completeFrom: 2, baseline: [] };
    for (const w of watches) {
      const v = checkWatch(committed, w.request, w.responses, { drainedThrough: w.ended ? undefined : finalRevision });
      if (v.length > 0) watchProblems.push(`watch on member ${w.member} from revision ${w.request.startRevision}${w.ended ? ' (broken by a kill)' : ''}:\n    ${formatViolations(v).split('\n').join('\n    ')}`);
    }
    // The history replays to the keyspace every member holds.
    const replayed = new Map<string, string>();
    for (const rev of reference) for (const ev of rev.events) ev.type === 'PUT' ? replayed.set(text(ev.kv.key), text(ev.kv.value)) : replayed.delete(text(ev.kv.key));
    const a = [...replayed].sort().join(' ');
    const b = [...keyspace].sort().join(' ');
    if (agree && a !== b) watchProblems.push(`the committed history replays to {${a}}, the members hold {${b}}`);
  }
  for (const w of watches) w.stream.cancel();
  checks.push({ name: 'watch', status: watchProblems.length === 0 ? 'ok' : 'failed', detail: watchProblems.length === 0 ? `${watches.length} streams` : watchProblems.join('\n') });

  // Linearizability of the KV history.
  const ops = history.operations;
  const lin = checkLinearizable(ops);
  checks.push({
    name: 'linearizable',
    status: lin.verdict === 'linearizable' ? 'ok' : lin.verdict === 'gave-up' ? 'skipped' : 'failed',
    detail: lin.verdict === 'linearizable' ? `${lin.operations} operations on ${lin.keys} keys` : lin.verdict === 'gave-up' ? `gave up on key ${lin.key} after ${lin.steps} steps` : lin.text,
  });

  // The revision count: with every write's outcome known, each write that changed something is one revision.
  const unknownWrites = ops.filter((o) => o.ret === 'unknown' && o.type !== 'get').length;
  if (unknownWrites > 0 || finalRevision === undefined || reference === undefined) {
    checks.push({ name: 'revision', status: 'skipped', detail: `${unknownWrites} writes with an unknown outcome` });
  } else {
    const changed = ops.filter(changedSomething).length;
    // + the revisions of the lease key (its put — twice if a retried setup put had applied — and its
    // deletion by expiry), as the committed history has them.
    const leased = reference.filter((rev) => rev.events.some((ev) => text(ev.kv.key) === LEASE_KEY)).length;
    const expected = 1 + changed + leased;
    checks.push({ name: 'revision', status: expected === finalRevision ? 'ok' : 'failed', detail: `final revision ${finalRevision}, expected ${expected} (1 + ${changed} KV writes + ${leased} of the lease key)` });
  }
  // Raft's own invariants, where the side checks them after every tick (the simulator).
  const broken = side.raftViolations?.();
  if (broken !== undefined) checks.push({ name: 'raft', status: broken.length === 0 ? 'ok' : 'failed', detail: broken.length === 0 ? 'invariants held after every tick' : broken.join('\n') });
  return { side: side.name, seed: plan.seed, checks, faultLog, operations: ops.length, unknownWrites, finalRevision, keyspace, members, leaders, watchStreams: watches.length };
}

/** A write answered that changed the keyspace: a put, a successful txn, a delete that deleted. */
function changedSomething(o: KvOperation): boolean {
  if (o.ret === 'unknown') return false;
  return o.type === 'put' || (o.type === 'cas' && o.succeeded === true) || (o.type === 'delete' && o.deleted === 1);
}

type Drive = <T>(task: Promise<T>, stepMs?: number) => Promise<T>;
type Timeout = <T>(p: Promise<T>, ms: number) => Promise<T | undefined>;

/** Waits until every member answers Status, all name one leader, and all applied the leader's commit index. */
async function settle(side: ClusterSide, drive: Drive, timeout: Timeout): Promise<M.StatusResponse[]> {
  let last: Array<M.StatusResponse | undefined> = [];
  for (let k = 0; k < 100; k++) {
    last = await drive(Promise.all(Array.from({ length: side.size }, (_, i) => timeout(side.member(i).status(), 1000))));
    const all = last.filter((s): s is M.StatusResponse => s !== undefined);
    if (all.length === side.size) {
      const leader = all[0]!.leader;
      const top = all.reduce((x, s) => (BigInt(s.raftIndex) > x ? BigInt(s.raftIndex) : x), 0n);
      if (leader !== '0' && all.every((s) => s.leader === leader && BigInt(s.raftAppliedIndex) >= top)) return all;
    }
    await side.sleep(100);
  }
  throw new Error(`${side.name}: the members did not settle: ${JSON.stringify(last.map((s) => s && { leader: s.leader, raftIndex: s.raftIndex, applied: s.raftAppliedIndex }))}`);
}

/** Every committed revision from 2 to `through`, as a watch from revision 2 on the leader reports them. */
async function readHistory(side: ClusterSide, drive: Drive, timeout: Timeout, statuses: readonly M.StatusResponse[], through: number): Promise<HistoryRevision[] | undefined> {
  const leader = Math.max(0, statuses.findIndex((s) => s.leader === s.header.member_id));
  const stream = side.member(leader).watch();
  const events: Event[] = [];
  let resolve: () => void = () => undefined;
  const complete = new Promise<void>((r) => (resolve = r));
  stream.onResponse((rs) => {
    for (const r of rs) for (const ev of watchResponseIn(r).events) events.push({ type: ev.type, kv: ev.kv });
    if ((events.at(-1)?.kv.modRevision ?? 1) >= through) resolve();
  });
  stream.write({ create_request: { ...ALL, start_revision: '2' } });
  if (through < 2) resolve();
  const ok = await drive(timeout(complete.then(() => true), 5000));
  stream.cancel();
  if (ok !== true) return undefined;
  const byRev = new Map<number, Event[]>();
  for (const ev of events) {
    const list = byRev.get(ev.kv.modRevision) ?? [];
    list.push(ev);
    byRev.set(ev.kv.modRevision, list);
  }
  return [...byRev].sort((a, b) => a[0] - b[0]).map(([revision, evs]) => ({ revision, events: evs }));
}


// ---------------------------------------------------------------------------------------------------
// Both sides, compared

export interface ClusterDiffOptions {
  /** Workload length in ms (default 6000). */
  readonly durationMs?: number | undefined;
  /** Inject the seed's faults (default true); without them the revision count is checked exactly. */
  readonly faults?: boolean | undefined;
  /** Run the simulated side only (no etcd needed). */
  readonly simOnly?: boolean | undefined;
  readonly sim?: SimSideOptions | undefined;
  readonly etcdBin?: string | undefined;
  /**
   * Keep only these of the seed's planned faults (indices into clusterPlan's list): what the fault
   * shrinker (shrinkClusterFaults) found still fails, replayed with `--keep-faults`.
   */
  readonly keepFaults?: readonly number[] | undefined;
}

/** The command that replays one seed of the cluster differential. */
export function clusterReplayCommand(seed: number, opts: ClusterDiffOptions = {}): string {
  const flags = [
    opts.durationMs === undefined ? '' : ` --duration ${opts.durationMs}`,
    opts.faults === false ? ' --no-faults' : '',
    opts.keepFaults === undefined ? '' : ` --keep-faults ${opts.keepFaults.length === 0 ? 'none' : opts.keepFaults.join(',')}`,
    opts.simOnly === true ? ' --sim-only' : '',
  ];
  return `etcdsim diff --cluster --seed ${seed}${flags.join('')}`;
}

/**
 * Runs one seed on the simulated cluster and (unless simOnly) on a real one, and lists the divergences:
 * every failed check, with its side, and every cross-side disagreement where etcd is deterministic
 * (member count, one leader).
 */
export async function runClusterDiff(seed: number, opts: ClusterDiffOptions = {}): Promise<ClusterDiffResult> {
  const planned = clusterPlan(seed, opts.durationMs, opts.faults ?? true);
  const keep = opts.keepFaults;
  const plan = keep === undefined ? planned : { ...planned, faults: planned.faults.filter((_, i) => keep.includes(i)) };
  const sides: ClusterSideResult[] = [await runClusterSide(simSide(plan, opts.sim), plan)];
  if (opts.simOnly !== true) sides.push(await runClusterSide(await etcdSide(plan, { bin: opts.etcdBin }), plan));
  const divergences: string[] = [];
  for (const s of sides) for (const c of s.checks) if (c.status === 'failed') divergences.push(`${s.side}: ${c.name}: ${c.detail}`);
  if (sides.length === 2) {
    const [a, b] = [sides[0]!, sides[1]!];
    if (a.members !== b.members) divergences.push(`members: simulator ${a.members}, etcd ${b.members}`);
    if (a.leaders !== b.leaders) divergences.push(`leaders: simulator ${a.leaders}, etcd ${b.leaders}`);
  }
  return { seed, plan, sides, divergences, replay: clusterReplayCommand(seed, opts) };
}

/** What shrinkClusterFaults found: the fewest of the seed's planned faults that still fail the same check. */
export interface ShrunkClusterRun {
  /** Indices into the seed's planned faults (clusterPlan) that are kept. */
  readonly keepFaults: readonly number[];
  /** How many faults the seed planned. */
  readonly planned: number;
  /** The simulated run with only those faults (its replay line has `--keep-faults`). */
  readonly result: ClusterDiffResult;
  /** Simulated runs the shrinker made. */
  readonly runs: number;
}

/**
 * Shrinks a seed whose *simulated* side failed a check: the simulated side is a pure function of the seed
 * and its fault schedule, so it is re-run with fewer of the planned faults (first none, then each one left
 * out in turn, greedily, until leaving out any remaining one makes the failure go away) and the smallest
 * schedule that still fails a check of the same name is returned. The workload itself is not shrunk here:
 * the failed check's detail is already minimal where it can be (linearizability.ts prints a sub-history of
 * one key that has no linearization). Undefined when the simulated side did not fail.
 */
export async function shrinkClusterFaults(failed: ClusterDiffResult, opts: ClusterDiffOptions = {}): Promise<ShrunkClusterRun | undefined> {
  const simFailures = (r: ClusterDiffResult): Set<string> =>
    new Set(r.sides.filter((s) => s.side === 'simulator').flatMap((s) => s.checks.filter((c) => c.status === 'failed').map((c) => c.name)));
  const wanted = simFailures(failed);
  if (wanted.size === 0) return undefined;
  const planned = clusterPlan(failed.seed, opts.durationMs, opts.faults ?? true).faults.length;
  let keep = opts.keepFaults === undefined ? Array.from({ length: planned }, (_, i) => i) : [...opts.keepFaults];
  let best: ClusterDiffResult = failed;
  let runs = 0;
  const attempt = async (candidate: number[]): Promise<ClusterDiffResult | undefined> => {
    runs++;
    const r = await runClusterDiff(failed.seed, { ...opts, simOnly: true, keepFaults: candidate });
    return [...simFailures(r)].some((name) => wanted.has(name)) ? r : undefined;
  };
  const none = keep.length === 0 ? undefined : await attempt([]);
  if (none !== undefined) return { keepFaults: [], planned, result: none, runs };
  for (let progress = true; progress && keep.length > 0; ) {
    progress = false;
    for (const i of [...keep]) {
      const candidate = keep.filter((x) => x !== i);
      const r = await attempt(candidate);
      if (r !== undefined) {
        keep = candidate;
        best = r;
        progress = true;
      }
    }
  }
  return { keepFaults: keep, planned, result: best, runs };
}

/** A report of one seed, for humans: each side's checks, its faults, the divergences and the replay line. */
export function formatClusterDiff(r: ClusterDiffResult): string {
  const lines: string[] = [`seed ${r.seed}: ${r.plan.faults.length} faults planned, ${r.plan.clients} clients, ${r.plan.durationMs} ms`];
  for (const s of r.sides) {
    lines.push(`  ${s.side}: ${s.operations} KV operations (${s.unknownWrites} writes with unknown outcome), final revision ${s.finalRevision ?? '?'}, ${s.watchStreams} watch streams`);
    for (const f of s.faultLog) lines.push(`    fault ${f}`);
    for (const c of s.checks) lines.push(`    ${c.status.padEnd(7)} ${c.name}: ${c.detail.split('\n').join('\n      ')}`);
  }
  lines.push(r.divergences.length === 0 ? '  no divergence' : `  ${r.divergences.length} DIVERGENCES:\n    ${r.divergences.join('\n    ')}`);
  lines.push(`  replay: ${r.replay}`);
  return lines.join('\n');
}
