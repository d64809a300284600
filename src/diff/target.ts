/**
 * The two sides of a differential run behind one interface: the simulator's services (in-process, through
 * `sim.services`) and a real etcd (through the gRPC client, src/grpc/client.ts). Unary calls are Promises
 * on both; streams collect every response they receive, in arrival order.
 *
 * Settling after an op: the simulator is synchronous except for watch catch-up, which etcd runs in a
 * periodic sync loop (every 100 ms); the sim side runs that sync step by hand until no watcher is behind,
 * without moving its virtual clock, then drains its streams. The etcd side waits until each stream has at
 * least as many responses as the simulator's (bounded by a timeout); extra responses etcd sends later are
 * caught by the next comparisons and by the end-of-run grace period.
 */
import type { EtcdSim } from '../client/index.js';
import { toGrpcError, type GrpcError, type BidiStream, promised, type CallContext } from '../server/index.js';
import type * as M from '../server/messages.js';
import type { GrpcAuthClient, EtcdGrpcClient, GrpcKVClient, GrpcLeaseClient } from '../grpc/index.js';

export interface DiffStream<Req, Res> {
  write(req: Req): void;
  /** Every response received so far, oldest first. */
  readonly responses: Res[];
  /** Set once the stream ended: undefined error for a clean end. */
  readonly ended: { readonly err: GrpcError | undefined } | undefined;
  close(): void;
}

/** Every call takes the caller's CallContext last (sim: the services' argument; etcd: `token` metadata). */
export type DiffLease = Omit<GrpcLeaseClient, 'leaseKeepAlive'>;

export interface DiffTarget {
  readonly name: 'etcdsim' | 'etcd';
  readonly kv: GrpcKVClient;
  readonly lease: DiffLease;
  readonly auth: GrpcAuthClient;
  openWatch(ctx?: CallContext): DiffStream<M.WatchRequest, M.WatchResponse>;
  openKeepAlive(ctx?: CallContext): DiffStream<M.LeaseKeepAliveRequest, M.LeaseKeepAliveResponse>;
  /**
   * Lets the effects of the last op reach the streams. `expected` (etcd side) gives, per stream in
   * opening order, how many responses the simulator's counterpart holds.
   */
  settle(streams: readonly DiffStream<unknown, unknown>[], expected: readonly number[]): Promise<void>;
}

/**
 * A stream as the differential reads it, on either side (the simulator's own call or a call over gRPC: one
 * BidiStream shape): every response kept in arrival order, and how the call ended.
 */
class RecordedStream<Req, Res> implements DiffStream<Req, Res> {
  readonly responses: Res[] = [];
  ended: { err: GrpcError | undefined } | undefined;
  private waiters: (() => void)[] = [];
  constructor(private readonly call: BidiStream<Req, Res>) {
    call.onResponse((rs) => {
      for (const r of rs) this.responses.push(r);
      this.wake();
    });
    call.onEnd((err) => {
      this.ended = { err };
      this.wake();
    });
  }
  write(req: Req): void {
    this.call.write(req);
  }
  close(): void {
    this.call.cancel();
  }
  /** Resolves once `n` responses arrived, the stream ended, or `timeoutMs` passed. */
  waitFor(n: number, timeoutMs: number): Promise<void> {
    if (this.responses.length >= n || this.ended !== undefined) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      const check = (): void => {
        if (this.responses.length >= n || this.ended !== undefined) done();
        else this.waiters.push(check);
      };
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.waiters.push(check);
    });
  }
  private wake(): void {
    const ws = this.waiters.splice(0);
    for (const w of ws) w();
  }
}

// ---------------------------------------------------------------------------------------------------
// The simulator

async function call<T>(fn: () => T): Promise<T> {
  try {
    return fn();
  } catch (err) {
    throw toGrpcError(err);
  }
}

/** The simulator as a diff target. Its clock never moves: no lease expires during a run. */
export function simTarget(sim: EtcdSim): DiffTarget {
  const s = sim.services;
  return {
    name: 'etcdsim',
    kv: promised(s.kv, call),
    lease: promised(s.lease, call, ['leaseKeepAlive', 'calls']),
    auth: promised(s.auth, call),
    openWatch: (ctx) => new RecordedStream(s.watch.watch(ctx)),
    openKeepAlive: (ctx) => new RecordedStream(s.lease.leaseKeepAlive(ctx)),
    async settle() {
      const w = sim.watchable;
      // etcd's sync loop: catch up every unsynced watcher (batches of revisions, compaction cancels).
      for (let i = 0; i < 10_000 && w.unsynced.size > 0; i++) w.syncWatchers();
      sim.server.flush(); // every response queued by the op reaches its stream
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// A real etcd

export interface EtcdTargetOptions {
  /** How long to wait for stream responses the simulator produced (default 2000 ms). */
  readonly streamTimeoutMs?: number | undefined;
}

/** A real etcd (through the gRPC client) as a diff target. */
export function etcdTarget(client: EtcdGrpcClient, opts: EtcdTargetOptions = {}): DiffTarget {
  const timeout = opts.streamTimeoutMs ?? 2000;
  return {
    name: 'etcd',
    kv: client.kv,
    lease: client.lease,
    auth: client.auth,
    openWatch: (ctx) => new RecordedStream(client.watch.watch(ctx)),
    openKeepAlive: (ctx) => new RecordedStream(client.lease.leaseKeepAlive(ctx)),
    async settle(streams, expected) {
      await Promise.all(
        streams.map((st, i) => (st instanceof RecordedStream ? st.waitFor(expected[i] ?? 0, timeout) : Promise.resolve())),
      );
    },
  };
}
