/**
 * createEtcdSim: a simulated etcd for unit tests — starts in microseconds, runs on a virtual clock, and
 * gives tests the levers a real etcd hides (advance time, compact, restore, hash).
 */
import type { CompactResponse, MvccStore, StoreSnapshot } from '../mvcc/index.js';
import type { Lessor } from '../lease/index.js';
import { EtcdServer, type EtcdServerOptions } from '../server/index.js';
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
  /** Opens a watch stream (one gRPC Watch call). */
  watchStream(): WatchStream;
  /** Moves virtual time forward, running every lease expiry, watch sync and progress tick due meanwhile. */
  advance(ms: number): void;
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
    watchStream: () => server.watchable.newWatchStream(),
    advance: (ms) => void clock.advance(ms),
    compact: (revision) => server.kv.compact(revision),
    snapshot: () => server.kv.snapshot(),
    restore: (snapshot) => server.restore(snapshot),
    hash: () => server.kv.hash(),
  };
}
