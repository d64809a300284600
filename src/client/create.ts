/**
 * createEtcdSim: a simulated etcd for unit tests — starts in microseconds, runs on real time by default (a
 * drop-in for a real etcd) or on a virtual clock the test drives, and gives tests the levers a real etcd
 * hides (advance time, compact, restore, hash).
 */
import { type CompactResponse, type MvccStore, type StoreSnapshot } from '../mvcc/index.js';
import type { Lessor } from '../lease/index.js';
import { EtcdServer, type EtcdServerOptions, type EtcdServerView, type EtcdServices, type GrpcError, type MemberSnapshot } from '../server/index.js';
import { ClusterMemberView, EtcdCluster, type EtcdClusterView, type ClusterMemberServices, type EtcdClusterOptions, type MemberRef } from '../cluster/index.js';
import { RealClock, VirtualClock, afterHostTime, hostMicrotask, hostNextTurn, type Clock } from '../sim/index.js';
import type { WatchableStore, WatchStream } from '../watch/index.js';
import type { Etcd3 } from 'etcd3';
import { createEtcd3Client, createEtcd3ClusterClient, type SimEtcd3Options } from './etcd3.js';
import { failoverServices } from './failover.js';
import { resolveEndpoints, type FailoverTarget } from './balancer.js';
import { EtcdClient } from './raw_client.js';

/**
 * Timers that live outside the simulator but must follow its clock — etcd3's keep-alive interval and
 * reconnect backoff. `node:test`'s `mock.timers` fits: enable it with
 * `{ apis: ['setTimeout', 'setInterval', 'Date'], now: 0 }` (leave setImmediate real).
 * @public
 */
export interface TimerDriver {
  tick(ms: number): void;
}

/** @public */
export interface Etcd3SimOptions extends SimEtcd3Options {
  /** Drive etcd3's timers from the virtual clock (see TimerDriver). Without it they run on real time. */
  readonly timers?: TimerDriver | undefined;
}

/**
 * How time passes for a simulator (see the README's table of what flows when):
 *  - 'real' (the default): a real clock, as a real etcd has. Lease expiry, the watch sync step that replays
 *    history to watchers opened at a past revision, victim retries and progress notifications happen by
 *    themselves, so unchanged client code written for a real etcd works. `clockSpeed` makes that time run
 *    faster (10: a 60 s lease expires after 6 s).
 *  - 'virtual': a virtual clock that moves only when the test moves it (`await sim.advance(ms)`), so a run
 *    is a pure function of its inputs and seed. Work etcd does on its own clock waits until then.
 * @public
 */
export type TimeMode = 'real' | 'virtual';

/** @public */
export interface EtcdSimOptions extends Omit<EtcdServerOptions, 'clock'> {
  /** 'real' (default) or 'virtual'; see TimeMode. */
  readonly time?: TimeMode | undefined;
  /** With time 'real': simulated milliseconds per host millisecond (default 1), as `serve --clock-speed`. */
  readonly clockSpeed?: number | undefined;
  /**
   * With time 'virtual': warn (process warning `EtcdsimVirtualClockWarning`) when a client stream waits for
   * watch work that only a moving clock does and nobody has moved it for this many host ms (default 1000;
   * 0 turns the warning off).
   */
  readonly stallWarningMs?: number | undefined;
}

/** @public */
export interface EtcdSim<C extends Clock = Clock> {
  /** The member: its engine and its levers (an interface: serverOf(sim) is the EtcdServer, for this package's own floors). */
  readonly server: EtcdServerView;
  /** How time passes for this simulator. */
  readonly time: TimeMode;
  /** The member's clock: a VirtualClock with time 'virtual', a RealClock with time 'real'. */
  readonly clock: C;
  /** The KV API (Range, Put, DeleteRange, Txn, Compact) with etcd's errors. */
  readonly mvcc: MvccStore;
  /** Grant, revoke, keep-alive, time-to-live, leases. */
  readonly lessor: Lessor;
  readonly watchable: WatchableStore;
  /**
   * etcd's services in gRPC message form (what `@grpc/proto-loader` produces): kv, watch, lease,
   * maintenance, cluster. Errors are grpc-js-shaped; see src/server.
   */
  readonly services: EtcdServices;
  /** Opens a watch stream (one gRPC Watch call) in the engine's form. */
  watchStream(): WatchStream;
  /** Fault hook: breaks every open Watch call (default error UNAVAILABLE). Returns how many. */
  breakWatchStreams(err?: GrpcError): number;
  /** Fault hook: breaks every open LeaseKeepAlive call (default error UNAVAILABLE). Returns how many. */
  breakKeepAliveStreams(err?: GrpcError): number;
  /** Compacts the history at `revision` (etcd's Compact; errors as etcd's). */
  compact(revision: number): CompactResponse;
  /** The member's full state for restore(): the store and the auth state (users, roles, enabled, revision; no tokens). */
  snapshot(): MemberSnapshot;
  /**
   * Restores a snapshot as a follower does (watchers move to unsynced, lessor rebuilt, auth state replaced
   * when the snapshot carries one; the member's tokens stay, as etcd's in-memory simple tokens do).
   */
  restore(snapshot: StoreSnapshot | MemberSnapshot): void;
  /**
   * A digest of the whole retained history, for comparing two simulators: equal digests, equal stores.
   * Not etcd's HashKV (that is `services.maintenance.hashKV`, CRC-32C over etcd's backend layout).
   */
  digest(): number;
  /**
   * A real `Etcd3` client (npm etcd3, an optional peer) running on this simulator in-process, through its
   * `mock()` plug point. With time 'virtual', pass `timers` so its keep-alives and reconnects follow the
   * virtual clock, and let time pass with `await sim.advance(ms)`: a watcher opened at a past
   * revision gets its history at the next watch sync step (every 100 ms of simulated time).
   */
  etcd3(options?: Etcd3SimOptions): Etcd3;
  /**
   * etcd's raw v3 API, typed (see raw_client.ts): `kv`, `lease`, `watch()`, `maintenance`, `cluster` in
   * etcd's message form, straight over `services`. Stream responses arrive once the current synchronous
   * code is done (a microtask later), never inside the call that caused them.
   */
  client(): EtcdClient;
  /**
   * Time 'virtual' only: lets `ms` of virtual time pass for the simulator and for the clients on it — every
   * lease expiry, watch sync and progress tick due meanwhile runs, the clock moves in steps of at most 10 ms,
   * linked timers tick along, and client code runs between steps. The one verb for time; the synchronous,
   * engine-only form (no client code runs meanwhile) is `sim.server.advance(ms)`.
   */
  advance(ms: number): Promise<void>;
  /**
   * Lets pending client work run (promise chains, stream deliveries, zero-delay timers of linked drivers)
   * without moving time: turns of the event loop until two in a row deliver and commit nothing.
   */
  settle(): Promise<void>;
  /** Stops the member's timers (lease expiry, watch sync); with time 'real' the process may then exit. */
  close(): void;
}

/** createEtcdSim with time 'virtual': the clock is a VirtualClock. */
/** createEtcdSim with `members`: a simulated cluster (docs/cluster.md) on a VirtualClock. @public */
export function createEtcdSim(options: EtcdClusterSimOptions & { readonly time: 'virtual' }): EtcdClusterSim<VirtualClock>;
/** createEtcdSim with `members`: a simulated cluster (docs/cluster.md). @public */
export function createEtcdSim(options: EtcdClusterSimOptions): EtcdClusterSim;
/** @public */
export function createEtcdSim(options: EtcdSimOptions & { readonly time: 'virtual' }): EtcdSim<VirtualClock>;
/** createEtcdSim with time 'real' (the default): the clock is a RealClock. @public */
export function createEtcdSim(options?: EtcdSimOptions & { readonly time?: 'real' | undefined }): EtcdSim<RealClock>;
/** @public */
export function createEtcdSim(options?: EtcdSimOptions): EtcdSim;
/** @public */
export function createEtcdSim(options: EtcdSimOptions | EtcdClusterSimOptions = {}): EtcdSim | EtcdClusterSim {
  if ('members' in options && options.members !== undefined) return createClusterSim(options);
  return createMemberSim(options as EtcdSimOptions);
}

function createMemberSim(options: EtcdSimOptions): EtcdSim {
  const { time = 'real', clockSpeed, stallWarningMs = DEFAULT_STALL_WARNING_MS, ...serverOptions } = options;
  if (time !== 'real' && time !== 'virtual') throw new RangeError(`createEtcdSim: time must be 'real' or 'virtual', got ${String(time)}`);
  if (clockSpeed !== undefined && time !== 'real') throw new RangeError("createEtcdSim: clockSpeed applies to time 'real' only");
  const virtual = time === 'virtual' ? new VirtualClock() : undefined;
  // Unref'd timers: an idle simulator never keeps the process alive; open client streams do (below).
  const real = virtual === undefined ? new RealClock({ unref: true, speed: clockSpeed ?? 1 }) : undefined;
  const clock: Clock = virtual ?? real!;
  const server = new EtcdServer({ ...serverOptions, clock });
  const drivers: TimerDriver[] = [];
  if (real !== undefined) {
    // An open Watch or LeaseKeepAlive call is an open connection: like a socket to etcd, it keeps the
    // process alive, so a client awaiting a replay or an expiry is not cut off by an idle event loop.
    let release: (() => void) | undefined;
    server.delivery.onOpenChange = (open) => {
      if (open > 0) release ??= real.hold();
      else if (release !== undefined) {
        release();
        release = undefined;
      }
    };
  }
  const needVirtual = (what: string): VirtualClock => {
    if (virtual === undefined) {
      throw new Error(
        `etcdsim: ${what} moves a virtual clock, and this simulator runs on real time (time: 'real', the default): ` +
          `time passes by itself. Create it with createEtcdSim({ time: 'virtual' }) to drive time from the test.`,
      );
    }
    return virtual;
  };
  const stall = virtual !== undefined && stallWarningMs > 0 ? new StallWatch(server, virtual, stallWarningMs) : undefined;
  const activity = (): number => server.delivery.delivered + server.raftIndex;
  const settle = (): Promise<void> => settleClients(activity, drivers);
  // Zero-delay timers that client code sets in reaction to a delivery (etcd3 awaits delay(0) after a
  // watch cancel) must fire without anyone advancing time: tick linked drivers for a few turns after it.
  const tickZero = (turns: number): void => tickZeroTimers(drivers, turns);
  // Clients live on the event loop: their stream responses are delivered once the synchronous code that
  // caused them is done — a microtask later, so a reading client keeps up with a burst of writes as it
  // keeps up with etcd over a socket. Every in-process client sets this same scheduler.
  const useEventLoopDelivery = (): void =>
    server.delivery.setScheduler((flush) =>
      hostMicrotask(() => {
        flush();
        stall?.check();
        tickZero(ZERO_TICK_TURNS);
      }),
    );
  const sim: EtcdSim = {
    server,
    time,
    clock,
    mvcc: server.mvcc,
    lessor: server.lessor,
    watchable: server.watchable,
    services: server.services,
    watchStream: () => server.watchable.newWatchStream(),
    breakWatchStreams: (err) => {
      const calls = server.services.watch.calls();
      for (const c of calls) c.abort(err);
      return calls.length;
    },
    breakKeepAliveStreams: (err) => {
      const calls = server.services.lease.calls();
      for (const c of calls) c.abort(err);
      return calls.length;
    },
    compact: (revision) => server.mvcc.compact(revision),
    snapshot: () => server.snapshot(),
    restore: (snapshot) => server.restore(snapshot),
    digest: () => server.mvcc.hash(),
    etcd3: (opts = {}) => {
      const { timers, ...etcd3Options } = opts;
      if (timers !== undefined) {
        needVirtual('sim.etcd3({ timers })');
        if (!drivers.includes(timers)) drivers.push(timers);
      }
      useEventLoopDelivery();
      return createEtcd3Client(server.services, etcd3Options);
    },
    client: () => {
      useEventLoopDelivery();
      return new EtcdClient(server.services);
    },
    advance: async (ms) => {
      needVirtual('sim.advance()');
      if (!(ms >= 0)) throw new RangeError(`advance: ms must be >= 0, got ${ms}`);
      await advanceInSteps(ms, (step) => server.advance(step), drivers, settle);
    },
    settle,
    close: () => {
      stall?.cancel();
      drivers.length = 0; // linked timers (mock timers) may be gone after this; never tick them again
      server.delivery.onOpenChange = undefined;
      server.close();
      real?.close();
    },
  };
  BEHIND.set(sim, server);
  return sim;
}

/** What each simulator createEtcdSim made holds behind its published interfaces: its EtcdServer or EtcdCluster. */
const BEHIND = new WeakMap<EtcdSim | EtcdClusterSim, EtcdServer | EtcdCluster>();

function behind<T extends EtcdServer | EtcdCluster>(sim: EtcdSim | EtcdClusterSim, kind: abstract new (...args: never[]) => T, caller: string): T {
  const held = BEHIND.get(sim);
  if (!(held instanceof kind)) throw new TypeError(`${caller}: not a simulator made by createEtcdSim`);
  return held;
}

/**
 * The EtcdServer behind `sim.server`, with the wiring EtcdServerView leaves out of the published types (the
 * auth store, the delivery queue, the backend's buckets): for the floors above and the tests that reach
 * into the member.
 */
export function serverOf(sim: EtcdSim): EtcdServer {
  return behind(sim, EtcdServer, 'serverOf');
}

// ---------------------------------------------------------------------------------------------------
// A simulated cluster (createEtcdSim({ members: N })): docs/cluster.md

/** Options of a simulated cluster: createEtcdSim's, plus the cluster's (members, pre-vote, lags). @public */
export interface EtcdClusterSimOptions extends Omit<EtcdClusterOptions, 'clock' | 'members'> {
  /** Number of members (etcd's --initial-cluster); giving it makes the simulator a cluster, even with 1. */
  readonly members: number;
  /** 'real' (default) or 'virtual'; see TimeMode. */
  readonly time?: TimeMode | undefined;
  /** With time 'real': simulated milliseconds per host millisecond (default 1). */
  readonly clockSpeed?: number | undefined;
}

/** Which member a client talks to, and over which link (see EtcdCluster.connect). @public */
export interface ClusterClientOptions {
  /** The member (index, name or ID) a pinned client talks to; default 0, the first leader. */
  readonly member?: MemberRef | undefined;
  /**
   * Members (index, name or ID) a client talks to and fails over between, as a real client given several
   * endpoints does: `sim.client()` as etcd's Go client (clientv3 3.4: round robin, retries, resuming
   * watches), `sim.etcd3()` with etcd3's own connection pool (shuffled hosts, circuit breakers, retries).
   * Not together with `member`.
   */
  readonly endpoints?: readonly MemberRef[] | undefined;
  /** The client's name for the link levers (cluster.dropLink(client, member), delayLink); default 'client'. */
  readonly client?: string | undefined;
  /** The client's deadline per call in ms (a call unanswered by then fails with DEADLINE_EXCEEDED). */
  readonly deadlineMs?: number | undefined;
}

/** A simulated etcd cluster with clients pinned to its members. @public */
export interface EtcdClusterSim<C extends Clock = Clock> {
  /** The cluster: members, leader, term, and the fault levers (pause, partition, crash, moveLeader, ...). An interface: clusterOf(sim) is the EtcdCluster, for this package's own floors. */
  readonly cluster: EtcdClusterView;
  readonly time: TimeMode;
  readonly clock: C;
  /** A member's services in message form, asynchronous (writes through Raft, ReadIndex for linearizable reads). */
  services(options?: ClusterClientOptions): ClusterMemberServices;
  /**
   * etcd's raw v3 API (KV, Lease, Watch, Maintenance, Cluster, Auth, Lock, Election): pinned to one member,
   * or over `endpoints` with clientv3's failover (src/client/failover.ts).
   */
  client(options?: ClusterClientOptions): EtcdClient;
  /** A real `Etcd3` client: pinned to one member, or over `endpoints` with etcd3's own failover. */
  etcd3(options?: Etcd3SimOptions & ClusterClientOptions): Etcd3;
  /** Time 'virtual' only: lets `ms` pass for the cluster and its clients, in steps of at most 10 ms. */
  advance(ms: number): Promise<void>;
  /** Lets pending client work run without moving time. */
  settle(): Promise<void>;
  /** Stops every member's and the cluster's timers. */
  close(): void;
}

function createClusterSim(options: EtcdClusterSimOptions): EtcdClusterSim {
  const { time = 'real', clockSpeed, members, ...clusterOptions } = options;
  if (time !== 'real' && time !== 'virtual') throw new RangeError(`createEtcdSim: time must be 'real' or 'virtual', got ${String(time)}`);
  if (clockSpeed !== undefined && time !== 'real') throw new RangeError("createEtcdSim: clockSpeed applies to time 'real' only");
  const virtual = time === 'virtual' ? new VirtualClock() : undefined;
  const real = virtual === undefined ? new RealClock({ unref: true, speed: clockSpeed ?? 1 }) : undefined;
  const clock: Clock = virtual ?? real!;
  const cluster = new EtcdCluster({ ...clusterOptions, members, clock });
  const drivers: TimerDriver[] = [];
  const servers = (): EtcdServer[] => cluster.members.filter((m) => !m.crashed).map((m) => m.server);
  const activity = (): number => servers().reduce((n, s) => n + s.delivery.delivered + s.raftIndex, 0);
  const settle = (): Promise<void> => settleClients(activity, drivers);
  // Stream responses reach in-process clients a microtask after what caused them, on every member (and on
  // the server a restart builds).
  let eventLoopDelivery = false;
  const useEventLoopDelivery = (): void => {
    if (eventLoopDelivery) return;
    eventLoopDelivery = true;
    // As on one member: zero-delay timers client code sets in reaction to a delivery (etcd3 awaits delay(0)
    // after a watch cancel) fire without anyone advancing time.
    cluster.onServer((server) =>
      server.delivery.setScheduler((flush) =>
        hostMicrotask(() => {
          flush();
          tickZeroTimers(drivers, ZERO_TICK_TURNS);
        }),
      ),
    );
  };
  const view = (o: ClusterClientOptions = {}): ClusterMemberServices => {
    if (o.endpoints !== undefined) throw new RangeError('etcdsim: sim.services() talks to one member: give `member`, not `endpoints`');
    return cluster.connect(o.member ?? 0, { client: o.client, deadlineMs: o.deadlineMs });
  };
  // Each failover client draws from its own stream of the cluster's seed, named by creation order.
  let failoverClients = 0;
  const failoverTarget = (o: ClusterClientOptions, endpoints: readonly MemberRef[]): FailoverTarget => {
    if (o.member !== undefined) throw new RangeError('etcdsim: give a client `member` (pinned) or `endpoints` (failover), not both');
    const client = o.client ?? 'client';
    return {
      cluster,
      endpoints: resolveEndpoints(cluster, endpoints),
      client,
      deadlineMs: o.deadlineMs,
      random: cluster.random.fork(`client/${failoverClients++}/${client}`),
      open: (m, deadlineMs) => clusterDoor(cluster.connect(m, { client, deadlineMs })),
    };
  };
  const sim: EtcdClusterSim = {
    cluster,
    time,
    clock,
    services: view,
    client: (o = {}) => {
      useEventLoopDelivery();
      if (o.endpoints === undefined) return new EtcdClient(clusterDoor(view(o)));
      const { services, close } = failoverServices(failoverTarget(o, o.endpoints));
      const c = new EtcdClient(services);
      const closeStreams = c.close.bind(c);
      c.close = () => {
        closeStreams();
        close();
      };
      return c;
    },
    etcd3: (o = {}) => {
      const { timers, member, client, deadlineMs, endpoints, ...etcd3Options } = o;
      if (timers !== undefined) {
        if (virtual === undefined) throw new Error("etcdsim: sim.etcd3({ timers }) needs createEtcdSim({ time: 'virtual' })");
        if (!drivers.includes(timers)) drivers.push(timers);
      }
      useEventLoopDelivery();
      if (endpoints === undefined) return createEtcd3Client(clusterDoor(view({ member, client, deadlineMs })), etcd3Options);
      const t = failoverTarget({ member, client, deadlineMs }, endpoints);
      const hosts = t.endpoints.map((m) => ({
        address: m.clientUrls[0] ?? `http://member-${m.index}`,
        open: () => t.open(m, deadlineMs),
      }));
      // etcd3's pool waits a zero-delay timer (its retry policy's backoff) before retrying a failed call:
      // with linked timers, fire it without anyone advancing time, as a delivery does on one member.
      return createEtcd3ClusterClient(hosts, etcd3Options, t.random, () => tickZeroTimers(drivers, ZERO_TICK_TURNS));
    },
    advance: async (ms) => {
      if (virtual === undefined) throw new Error("etcdsim: sim.advance() needs createEtcdSim({ time: 'virtual' })");
      if (!(ms >= 0)) throw new RangeError(`advance: ms must be >= 0, got ${ms}`);
      await advanceInSteps(ms, (step) => cluster.advanceSync(step), drivers, settle);
    },
    settle,
    close: () => {
      drivers.length = 0;
      cluster.close();
      real?.close();
    },
  };
  BEHIND.set(sim, cluster);
  return sim;
}

/**
 * The EtcdCluster behind `sim.cluster`, with the wiring EtcdClusterView leaves out of the published types
 * (each member's MemberState and EtcdServer, the hook on a restarted member's server, the clock's
 * synchronous advance): for the floors above and the tests that reach into the cluster.
 */
export function clusterOf(sim: EtcdClusterSim): EtcdCluster {
  return behind(sim, EtcdCluster, 'clusterOf');
}

/**
 * One member of a cluster behind the EtcdServices shape the in-process clients take: its member view's
 * services (src/cluster/member_view.ts). Unary methods answer with promises (a write waits for Raft, a
 * linearizable read for ReadIndex); both clients await every unary result, so the promise is what the
 * caller receives. Streams (Watch, LeaseKeepAlive) open at once, as on a single member; so does
 * Election.Observe.
 */
function clusterDoor(v: ClusterMemberServices): EtcdServices {
  const m = v.member;
  const { services } = new ClusterMemberView(v);
  const door = {
    ...services,
    watch: { ...services.watch, calls: () => m.server.services.watch.calls() },
    lease: { ...services.lease, calls: () => m.server.services.lease.calls() },
  };
  // The one place the shapes differ: promises where EtcdServices has plain results (see above).
  return door as unknown as EtcdServices;
}

/** Fires the zero-delay timers of linked drivers for `turns` turns of the event loop (see createMemberSim). */
function tickZeroTimers(drivers: readonly TimerDriver[], turns: number): void {
  if (turns === 0 || drivers.length === 0) return;
  hostNextTurn(() => {
    for (const d of drivers) d.tick(0);
    tickZeroTimers(drivers, turns - 1);
  });
}

/**
 * settle(): macrotask turns, each letting every promise chain run to its next wait, delivering what it
 * caused and firing zero-delay timers of linked drivers (etcd3's delay(0)); done once two turns in a row
 * moved nothing (`activity` counts deliveries and raft entries).
 */
async function settleClients(activity: () => number, drivers: readonly TimerDriver[]): Promise<void> {
  let quiet = 0;
  for (let turn = 0; turn < MAX_SETTLE_TURNS && quiet < QUIET_TURNS; turn++) {
    const before = activity();
    await new Promise<void>((resolve) => hostNextTurn(resolve));
    for (const d of drivers) d.tick(0);
    quiet = activity() === before ? quiet + 1 : 0;
  }
}

/**
 * advance(ms) with clients on the event loop: virtual time moves in steps of at most ASYNC_STEP_MS, linked
 * timers tick along, and client code runs (settles) between steps, as it would while a real etcd's time passes.
 */
async function advanceInSteps(ms: number, step: (ms: number) => void, drivers: readonly TimerDriver[], settle: () => Promise<void>): Promise<void> {
  await settle();
  for (let left = ms; left > 0; ) {
    const dt = Math.min(left, ASYNC_STEP_MS);
    step(dt);
    for (const d of drivers) d.tick(dt);
    left -= dt;
    await settle();
  }
}

/** Largest step of advance(): fine enough for etcd3's timers (keep-alive every TTL/3, 100 ms retries). */
const ASYNC_STEP_MS = 10;
/** settle() ends after this many event-loop turns in a row without a delivery or a write. */
const QUIET_TURNS = 2;
/** A bound on settle() for client code that never goes quiet (it polls on zero-delay timers). */
const MAX_SETTLE_TURNS = 10_000;
const ZERO_TICK_TURNS = 3;
const DEFAULT_STALL_WARNING_MS = 1000;

/**
 * The trap of a virtual clock, made visible: a client stream waits for watch work that only the clock's
 * steps do (history replay of a watcher at a past revision, a victim's retry) and nobody moves the clock.
 * After `ms` of host time with the clock standing still, one process warning says what to do.
 */
class StallWatch {
  private armed: { cancel(): void } | undefined;
  private warned = false;

  constructor(
    private readonly server: EtcdServer,
    private readonly clock: VirtualClock,
    private readonly ms: number,
  ) {}

  /** Called after each delivery to in-process clients. */
  check(): void {
    if (this.warned || this.armed !== undefined || !this.waiting()) return;
    const at = this.clock.now();
    this.armed = afterHostTime(this.ms, () => {
      this.armed = undefined;
      if (this.clock.now() !== at || !this.waiting() || this.warned) return;
      this.warned = true;
      process.emitWarning(
        'a client is waiting for watch work that runs on the virtual clock (history replay for a watcher opened ' +
          'at a past revision, or a slow watcher\'s retry), and the clock has not moved. Let time pass with ' +
          "`await sim.advance(ms)` (the watch sync step runs every 100 ms), or create the simulator with time: 'real'.",
        { type: 'EtcdsimVirtualClockWarning' },
      );
    });
  }

  cancel(): void {
    this.armed?.cancel();
    this.armed = undefined;
  }

  private waiting(): boolean {
    const ws = this.server.watchable;
    return this.server.delivery.openCalls > 0 && (ws.unsynced.size > 0 || ws.victims.length > 0);
  }
}

/** Advances instant by instant so stream listeners hear each step's responses at that step's time. */
