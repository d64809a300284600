/**
 * createEtcdSim: a simulated etcd for unit tests — starts in microseconds, runs on a virtual clock, and
 * gives tests the levers a real etcd hides (advance time, compact, restore, hash).
 */
import type { CompactResponse, MvccStore, StoreSnapshot } from '../mvcc/index.js';
import type { Lessor } from '../lease/index.js';
import { EtcdServer, type EtcdServerOptions, type EtcdServices, type GrpcError } from '../server/index.js';
import { VirtualClock } from '../sim/index.js';
import type { WatchableStore, WatchStream } from '../watch/index.js';

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
  /** The store's full state, for restore(). */
  snapshot(): StoreSnapshot;
  /** Restores a snapshot as a follower does (watchers move to unsynced, lessor rebuilt). */
  restore(snapshot: StoreSnapshot): void;
  /** A digest of the whole history: equal hashes, equal stores. */
  hash(): number;
}

export function createEtcdSim(options: EtcdSimOptions = {}): EtcdSim {
  const clock = new VirtualClock();
  const server = new EtcdServer({ ...options, clock });
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
    snapshot: () => server.kv.snapshot(),
    restore: (snapshot) => server.restore(snapshot),
    hash: () => server.kv.hash(),
  };
}

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
