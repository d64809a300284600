/**
 * createEtcdSim: a simulated etcd for unit tests — starts in microseconds, runs on a virtual clock, and
 * gives tests the levers a real etcd hides (advance time, compact, restore, hash).
 */
import type { CompactResponse, MvccStore, StoreSnapshot } from '../mvcc/index.js';
import type { Lessor } from '../lease/index.js';
import { EtcdServer, type EtcdServerOptions, type EtcdServices, type GrpcError, type MemberSnapshot } from '../server/index.js';
import { VirtualClock } from '../sim/index.js';
import type { WatchableStore, WatchStream } from '../watch/index.js';
import type { Etcd3 } from 'etcd3';
import { createEtcd3Client, type SimEtcd3Options } from './etcd3.js';
import { EtcdClient } from './raw_client.js';

/**
 * Timers that live outside the simulator but must follow its clock — etcd3's keep-alive interval and
 * reconnect backoff. `node:test`'s `mock.timers` fits: enable it with
 * `{ apis: ['setTimeout', 'setInterval', 'Date'], now: 0 }` (leave setImmediate real).
 */
export interface TimerDriver {
  tick(ms: number): void;
}

export interface Etcd3SimOptions extends SimEtcd3Options {
  /** Drive etcd3's timers from the virtual clock (see TimerDriver). Without it they run on real time. */
  readonly timers?: TimerDriver | undefined;
}

export type EtcdSimOptions = Omit<EtcdServerOptions, 'clock'>;

export interface EtcdSim {
  readonly server: EtcdServer;
  readonly clock: VirtualClock;
  /** The KV API (Range, Put, DeleteRange, Txn, Compact) with etcd's errors. */
  readonly kv: MvccStore;
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
  /**
   * Moves virtual time forward, running every lease expiry, watch sync and progress tick due meanwhile;
   * after each instant at which something ran (and at the end), queued stream responses are delivered
   * to their listeners.
   */
  advance(ms: number): void;
  /** Delivers queued watch / keep-alive responses to their listeners now. Returns how many. */
  flush(): number;
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
  /** A digest of the whole history: equal hashes, equal stores. */
  hash(): number;
  /**
   * A real `Etcd3` client (npm etcd3, an optional peer) running on this simulator in-process, through its
   * `mock()` plug point. Pass `timers` so its keep-alives and reconnects follow the virtual clock.
   */
  etcd3(options?: Etcd3SimOptions): Etcd3;
  /**
   * etcd's raw v3 API, typed (see raw_client.ts): `kv`, `lease`, `watch()`, `maintenance`, `cluster` in
   * etcd's message form, straight over `services`. Stream responses arrive on a later event-loop turn.
   */
  client(): EtcdClient;
  /**
   * Lets `ms` of virtual time pass for the simulator and for the clients on it: the clock moves in steps of
   * at most 10 ms, linked timers tick along, and promise chains run between steps.
   */
  advanceAsync(ms: number): Promise<void>;
  /** Lets pending client work run (promise chains, stream deliveries) without moving time. */
  settle(): Promise<void>;
}

export function createEtcdSim(options: EtcdSimOptions = {}): EtcdSim {
  const clock = new VirtualClock();
  const server = new EtcdServer({ ...options, clock });
  const drivers: TimerDriver[] = [];
  const settle = async (): Promise<void> => {
    // A few event-loop turns: each lets promise chains finish and scheduled deliveries run; zero-delay
    // timers of linked drivers (etcd3's delay(0)) fire in between.
    for (let i = 0; i < SETTLE_TURNS; i++) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      for (const d of drivers) d.tick(0);
    }
  };
  // Zero-delay timers that client code sets in reaction to a delivery (etcd3 awaits delay(0) after a
  // watch cancel) must fire without anyone advancing time: tick linked drivers for a few turns after it.
  const tickZero = (turns: number): void => {
    if (turns === 0 || drivers.length === 0) return;
    setImmediate(() => {
      for (const d of drivers) d.tick(0);
      tickZero(turns - 1);
    });
  };
  // Clients live on the event loop: their stream responses are delivered on a later turn, never inside
  // the call that caused them. Every in-process client sets this same scheduler.
  const useEventLoopDelivery = (): void =>
    server.delivery.setScheduler((flush) =>
      setImmediate(() => {
        flush();
        tickZero(ZERO_TICK_TURNS);
      }),
    );
  return {
    server,
    clock,
    kv: server.kv,
    lessor: server.lessor,
    watchable: server.watchable,
    services: server.services,
    watchStream: () => server.watchable.newWatchStream(),
    advance: (ms) => advance(clock, server, ms),
    flush: () => server.flush(),
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
    compact: (revision) => server.kv.compact(revision),
    snapshot: () => server.snapshot(),
    restore: (snapshot) => server.restore(snapshot),
    hash: () => server.kv.hash(),
    etcd3: (opts = {}) => {
      useEventLoopDelivery();
      const { timers, ...etcd3Options } = opts;
      if (timers !== undefined && !drivers.includes(timers)) drivers.push(timers);
      return createEtcd3Client(server.services, etcd3Options);
    },
    client: () => {
      useEventLoopDelivery();
      return new EtcdClient(server.services);
    },
    advanceAsync: async (ms) => {
      if (!(ms >= 0)) throw new RangeError(`advanceAsync: ms must be >= 0, got ${ms}`);
      await settle();
      for (let left = ms; left > 0; ) {
        const step = Math.min(left, ASYNC_STEP_MS);
        advance(clock, server, step);
        for (const d of drivers) d.tick(step);
        left -= step;
        await settle();
      }
    },
    settle,
  };
}

/** Largest step of advanceAsync: fine enough for etcd3's timers (keep-alive every TTL/3, 100 ms retries). */
const ASYNC_STEP_MS = 10;
const SETTLE_TURNS = 4;
const ZERO_TICK_TURNS = 3;

/** Advances instant by instant so stream listeners hear each step's responses at that step's time. */
function advance(clock: VirtualClock, server: EtcdServer, ms: number): void {
  if (!(ms >= 0)) throw new RangeError(`advance: ms must be >= 0, got ${ms}`);
  const target = clock.now() + ms;
  if (server.delivery.openCalls === 0) {
    clock.advanceTo(target);
    return;
  }
  for (let due = clock.nextDue(); due !== undefined && due <= target; due = clock.nextDue()) {
    clock.advanceTo(due);
    server.flush();
  }
  clock.advanceTo(target);
  server.flush();
}
