/**
 * One simulated etcd member: the MVCC store, the lessor and the watchable store wired together on one
 * clock, one ticker and one seeded PRNG — what etcd's EtcdServer owns. Every front door (the in-process
 * client, later the gRPC server and the scenario runner) drives the same instance, so each etcd rule lives
 * once, below this layer. The server knows nothing of its front doors.
 */
import { Lessor } from '../lease/index.js';
import { MvccStore, type EtcdVersion, type StoreSnapshot } from '../mvcc/index.js';
import { SimRandom, Ticker, VirtualClock, type Clock } from '../sim/index.js';
import { WatchableStore } from '../watch/index.js';

/** Knobs with etcd's defaults, named after etcd's flags where etcd has one. */
export interface EtcdServerOptions {
  /** Time source; default a VirtualClock starting at 0 (time moves only when the caller advances it). */
  readonly clock?: Clock | undefined;
  /** Seed of every random choice (generated lease IDs, progress jitter). Same seed, same run. */
  readonly seed?: number | bigint | undefined;
  /** Which etcd release's rules to follow where releases differ (default 3.7). */
  readonly etcdVersion?: EtcdVersion | undefined;
  /** --max-txn-ops (128). */
  readonly maxTxnOps?: number | undefined;
  /** --max-request-bytes (1.5 MiB). */
  readonly maxRequestBytes?: number | undefined;
  /** --heartbeat-interval in ms (100); with electionTicks it sets the minimum lease TTL. */
  readonly heartbeatIntervalMs?: number | undefined;
  /** --election-timeout / --heartbeat-interval (10 ticks). */
  readonly electionTicks?: number | undefined;
  /** Override the minimum lease TTL in seconds (etcd derives 2 s from the defaults above). */
  readonly minLeaseTTL?: number | undefined;
  /** --experimental-watch-progress-notify-interval in ms (10 min). */
  readonly watchProgressNotifyIntervalMs?: number | undefined;
  /** --experimental-enable-lease-checkpoint (off) and its interval (5 min). */
  readonly leaseCheckpoint?: boolean | undefined;
  readonly leaseCheckpointIntervalMs?: number | undefined;
  /** Watch stream buffer before watchers become victims (etcd chanBufLen, 128). */
  readonly watchChanBufLen?: number | undefined;
}

export class EtcdServer {
  readonly clock: Clock;
  readonly ticker: Ticker;
  readonly random: SimRandom;
  readonly lessor: Lessor;
  readonly kv: MvccStore;
  readonly watchable: WatchableStore;

  constructor(opts: EtcdServerOptions = {}) {
    this.clock = opts.clock ?? new VirtualClock();
    this.ticker = new Ticker(this.clock);
    this.random = new SimRandom(opts.seed ?? 0);
    this.lessor = new Lessor({
      clock: this.clock,
      ticker: this.ticker,
      random: this.random.fork('lease'),
      tickMs: opts.heartbeatIntervalMs,
      electionTicks: opts.electionTicks,
      minLeaseTTL: opts.minLeaseTTL,
      checkpointing: opts.leaseCheckpoint,
      checkpointIntervalMs: opts.leaseCheckpointIntervalMs,
    });
    this.kv = new MvccStore({
      lessor: this.lessor,
      etcdVersion: opts.etcdVersion,
      maxTxnOps: opts.maxTxnOps,
      maxRequestBytes: opts.maxRequestBytes,
    });
    this.lessor.bind(this.kv);
    this.watchable = new WatchableStore(this.kv, {
      ticker: this.ticker,
      clock: this.clock,
      random: this.random.fork('watch'),
      progressNotifyIntervalMs: opts.watchProgressNotifyIntervalMs,
      chanBufLen: opts.watchChanBufLen,
    });
  }

  /**
   * Restores a snapshot as a follower applies the leader's: the store's state is replaced, synced watchers
   * are moved to unsynced, and the lessor's key sets are rebuilt from the restored keys.
   */
  restore(snapshot: StoreSnapshot): void {
    this.watchable.restore(snapshot);
    this.lessor.recoverFromStore();
  }

  /** Stops every periodic step (lease expiry, watch sync, progress) so a real clock lets the process exit. */
  close(): void {
    this.ticker.close();
    this.lessor.close();
  }
}
