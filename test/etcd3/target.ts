// The one place the etcd3 feature tests get their client from.
//
// ETCD_ENDPOINT=host:port → a real etcd (Debian's 3.4.23 was used); ETCDSIM_TARGET=serve → the simulator
// served over real gRPC by `serve({ port: 0 })` in this process (test/grpc/etcd3_network.test.ts runs the
// files that way); otherwise the simulator in-process through `sim.etcd3()`. Tests use only etcd3's public
// API plus these helpers, so the same files run against all three. Against a real etcd, `advance(ms)` is a
// real wait (a real etcd has a real clock) — it is the only place these tests wait; against the simulator
// it moves the virtual clock and must also drive the timers etcd3 itself schedules (lease keep-alive
// interval, watch reconnect backoff).
import net from 'node:net';
import { mock } from 'node:test';
import { Etcd3 } from 'etcd3';
import { createEtcdSim } from '../../src/index.js';
import { serve } from '../../src/grpc/server.js';
import { VirtualClock } from '../../src/sim/index.js';

// The host's timer functions, taken before any test enables mock timers (the served target needs one
// real timer of its own; see served()).
const realSetTimeout = globalThis.setTimeout;
const realSetInterval = globalThis.setInterval;
const realClearInterval = globalThis.clearInterval;

export interface Target {
  readonly client: Etcd3;
  readonly kind: 'etcd' | 'sim' | 'serve';
  /** Let `ms` of time pass: real time against etcd, virtual time (plus etcd3's timers) on the simulator. */
  advance(ms: number): Promise<void>;
  /** Compact the key-value history at `rev` (physical). */
  compact(rev: string | number): Promise<void>;
  /** Break every watch stream the client has open, the way a dropped connection does; the client
   *  reconnects by itself. Present when the target was asked for `{ breakable: true }`. */
  readonly breakWatchStreams: (() => void) | undefined;
  /** Cut the client off: its requests stay unanswered until the returned `heal()` (real etcd: the proxy holds
   *  every byte; simulator: keep-alive requests are held back — the only traffic the tests rely on being
   *  cut). Present when the target was asked for `{ breakable: true }`. */
  readonly partition: (() => () => void) | undefined;
  /** Another client on the same etcd (its own connection, never partitioned); closed with the target. */
  another(): Etcd3;
  close(): Promise<void>;
}

export interface TargetOptions {
  /** Route the client so that `breakWatchStreams()` is available (real etcd: through a loopback TCP proxy). */
  readonly breakable?: boolean;
}

export async function target(options: TargetOptions = {}): Promise<Target> {
  const endpoint = process.env['ETCD_ENDPOINT'];
  if (endpoint !== undefined && endpoint !== '') {
    return realEtcd(endpoint, options);
  }
  const kind = process.env['ETCDSIM_TARGET'];
  if (kind === 'serve') return served(options);
  if (kind !== undefined && kind !== '' && kind !== 'sim') throw new Error(`ETCDSIM_TARGET must be sim or serve, got ${kind}`);
  return simulator();
}

/** Virtual-time step of the served target's advance (etcd3's keep-alive runs every TTL/3 ≈ 667 ms). */
const SERVED_STEP_MS = 10;
/** Event-loop turns let pass before and after one real 1 ms timer turn, after each step. setImmediate
 *  turns alone were seen to leave a server-initiated HTTP/2 write (a watch sync's replay) undelivered until
 *  the loop went idle, in about one run of three; one real timer turn per step makes it go out. */
const SERVED_SETTLE_TURNS = 8;

/**
 * The simulator over the network: `serve({ port: 0, clock })` with a VirtualClock, and a plain
 * `new Etcd3({ hosts })` speaking real gRPC (HTTP/2 over loopback TCP) to it.
 *
 * Time. Everything that schedules with JS timers runs on virtual time, as on the in-process target: the
 * member's lease expiry and watch sync on the VirtualClock, etcd3's keep-alive interval / reconnect
 * backoff and grpc-js's own timers (call deadlines, reconnect backoff, HTTP/2 keepalive) on node:test's
 * mock timers. `advance(ms)` moves both in 10 ms steps and after each step lets real event-loop turns
 * pass, so the socket traffic a step caused (a keep-alive and its answer, a watch event) completes at that
 * step's virtual instant. The alternatives were worse: real time (RealClock, optionally accelerated with
 * `speed`) makes every lease test wait seconds of wall time — and a sped-up server clock cannot be
 * combined with etcd3's real keep-alive interval without kept leases expiring — while mocking only the
 * server's clock leaves etcd3's 667 ms keep-alives on wall time, behind the server's. Sockets themselves
 * use Node's internal timers, which the mock leaves alone, so I/O proceeds in real time between steps.
 * What stays nondeterministic is only how many event-loop turns a round trip takes; the settle turns
 * cover a loopback round trip, and the tests' `eventually` loops tolerate a step more.
 *
 * Zero-delay timers (etcd3 awaits `delay(0)` after cancelling a watch; grpc-js defers some work the same
 * way) must fire without anyone advancing time, so one real 1 ms interval ticks the mock by 0 ms while the
 * target lives.
 *
 * breakable: like the real etcd target, the client goes through a loopback TCP proxy, so breaking watch
 * streams cuts the real connection and a partition holds real bytes.
 */
async function served(options: TargetOptions): Promise<Target> {
  const clock = new VirtualClock();
  const handle = await serve({ port: 0, clock });
  const proxy = options.breakable === true ? await LoopbackProxy.start(handle.address) : undefined;
  const hosts = proxy === undefined ? handle.address : `127.0.0.1:${proxy.port}`;
  mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'], now: 0 });
  const zeroTicker = realSetInterval(() => mock.timers.tick(0), 1);
  const client = new Etcd3({ hosts });
  const others: Etcd3[] = [];
  const settle = async (): Promise<void> => {
    for (let i = 0; i < SERVED_SETTLE_TURNS; i++) await new Promise<void>((resolve) => setImmediate(resolve));
    await new Promise<void>((resolve) => realSetTimeout(resolve, 1));
    for (let i = 0; i < SERVED_SETTLE_TURNS; i++) await new Promise<void>((resolve) => setImmediate(resolve));
  };
  const step = (ms: number): void => {
    const to = clock.now() + ms;
    // instant by instant, so the member's responses of each instant go out at that instant
    for (let due = clock.nextDue(); due !== undefined && due <= to; due = clock.nextDue()) {
      clock.advanceTo(due);
      handle.server.flush();
    }
    clock.advanceTo(to);
    handle.server.flush();
    mock.timers.tick(ms);
  };
  const p = proxy;
  return {
    client,
    kind: 'serve',
    advance: async (ms) => {
      if (!(ms >= 0)) throw new RangeError(`advance: ms must be >= 0, got ${ms}`);
      await settle();
      for (let left = ms; left > 0; left -= SERVED_STEP_MS) {
        step(Math.min(left, SERVED_STEP_MS));
        await settle();
      }
    },
    compact: async (rev) => {
      await client.kv.compact({ revision: rev, physical: true });
    },
    breakWatchStreams: p === undefined ? undefined : () => p.breakAll(),
    partition: p === undefined ? undefined : () => p.hold(),
    another: () => {
      const c = new Etcd3({ hosts: handle.address });
      others.push(c);
      return c;
    },
    close: async () => {
      try {
        for (const c of others) c.close();
        client.close();
        if (p !== undefined) await p.close();
        await handle.close();
      } finally {
        realClearInterval(zeroTicker);
        mock.timers.reset();
      }
    },
  };
}

/**
 * The simulator: etcd3's own timers (keep-alive interval, reconnect backoff, Date.now) follow the virtual
 * clock through node:test's mock timers, which sim.advance ticks together with the simulator.
 */
function simulator(): Target {
  const sim = createEtcdSim({ time: 'virtual' });
  mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'], now: 0 });
  const client = sim.etcd3({ timers: mock.timers });
  const others: Etcd3[] = [];
  // The partition: keep-alive writes arriving while it lasts are held, and written when it heals.
  let held: (() => void)[] | undefined;
  const lease = sim.services.lease;
  const openKeepAlive = lease.leaseKeepAlive.bind(lease);
  lease.leaseKeepAlive = () => {
    const call = openKeepAlive();
    const write = call.write.bind(call);
    call.write = (req) => {
      if (held === undefined) write(req);
      else held.push(() => write(req));
    };
    return call;
  };
  return {
    client,
    kind: 'sim',
    advance: (ms) => sim.advance(ms),
    compact: async (rev) => {
      await client.kv.compact({ revision: rev, physical: true });
    },
    breakWatchStreams: () => {
      sim.breakWatchStreams();
    },
    partition: () => {
      held ??= [];
      return () => {
        const release = held ?? [];
        held = undefined;
        for (const w of release) w();
      };
    },
    another: () => {
      const c = sim.etcd3({ timers: mock.timers });
      others.push(c);
      return c;
    },
    close: async () => {
      for (const c of others) c.close();
      client.close();
      await sim.settle();
      sim.close();
      mock.timers.reset();
    },
  };
}

async function realEtcd(endpoint: string, options: TargetOptions): Promise<Target> {
  let hosts = endpoint;
  let proxy: LoopbackProxy | undefined;
  if (options.breakable === true) {
    proxy = await LoopbackProxy.start(endpoint);
    hosts = `127.0.0.1:${proxy.port}`;
  }
  const client = new Etcd3({ hosts });
  const others: Etcd3[] = [];
  const p = proxy;
  return {
    client,
    kind: 'etcd',
    advance: (ms) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
    compact: async (rev) => {
      await client.kv.compact({ revision: rev, physical: true });
    },
    breakWatchStreams: p === undefined ? undefined : () => p.breakAll(),
    partition: p === undefined ? undefined : () => p.hold(),
    another: () => {
      const c = new Etcd3({ hosts: endpoint });
      others.push(c);
      return c;
    },
    close: async () => {
      for (const c of others) c.close();
      client.close();
      if (p !== undefined) await p.close();
    },
  };
}

/** A TCP forwarder on 127.0.0.1 whose connections can be cut (the whole HTTP/2 connection, so every
 *  stream on it fails with UNAVAILABLE and grpc-js reconnects). */
class LoopbackProxy {
  private readonly sockets = new Set<net.Socket>();
  /** While set, bytes in both directions are queued here instead of forwarded. */
  private held: (() => void)[] | undefined;
  private readonly server: net.Server;
  port = 0;

  private constructor(host: string, upPort: number) {
    this.server = net.createServer((down) => {
      const up = net.connect(upPort, host);
      this.sockets.add(down);
      this.sockets.add(up);
      const drop = (): void => {
        this.sockets.delete(down);
        this.sockets.delete(up);
        down.destroy();
        up.destroy();
      };
      down.on('error', drop).on('close', drop);
      up.on('error', drop).on('close', drop);
      const forward = (from: net.Socket, to: net.Socket): void => {
        from.on('data', (chunk: Buffer) => {
          if (this.held === undefined) to.write(chunk);
          else this.held.push(() => to.write(chunk));
        });
      };
      forward(down, up);
      forward(up, down);
    });
  }

  static async start(upstream: string): Promise<LoopbackProxy> {
    const idx = upstream.lastIndexOf(':');
    const host = upstream.slice(0, idx).replace(/^https?:\/\//, '');
    const proxy = new LoopbackProxy(host, Number(upstream.slice(idx + 1)));
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    const addr = proxy.server.address();
    if (addr === null || typeof addr === 'string') throw new Error('proxy: no port');
    proxy.port = addr.port;
    return proxy;
  }

  /** Holds all traffic (a network partition without resets) until the returned function releases it. */
  hold(): () => void {
    this.held ??= [];
    return () => {
      const release = this.held ?? [];
      this.held = undefined;
      for (const w of release) w();
    };
  }

  breakAll(): void {
    for (const s of [...this.sockets]) s.destroy();
    this.sockets.clear();
  }

  async close(): Promise<void> {
    this.breakAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

// ---------------------------------------------------------------------------------------------
// Helpers shared by the feature tests (no wall-clock reads; waiting goes through `advance`).

/** Step of virtual/real time used while waiting for something to arrive. */
export const STEP_MS = 20;

/** Runs `fn` with a fresh target and a key prefix private to this test; the prefix is emptied
 *  before and after (a real etcd is shared between test files running in parallel). */
export async function withTarget(
  name: string,
  fn: (t: Target, prefix: string) => Promise<void>,
  options: TargetOptions = {},
): Promise<void> {
  const t = await target(options);
  const prefix = `etcd3-test/${name}/`;
  try {
    await t.client.delete().prefix(prefix);
    await fn(t, prefix);
  } finally {
    try {
      await t.client.delete().prefix(prefix);
    } finally {
      await t.close();
    }
  }
}

/** Advances time in small steps until `cond()` holds; fails after `maxMs`. */
export async function eventually(t: Target, cond: () => boolean, what: string, maxMs = 5000): Promise<void> {
  for (let waited = 0; !cond(); waited += STEP_MS) {
    if (waited >= maxMs) throw new Error(`timed out after ${maxMs} ms waiting for ${what}`);
    await t.advance(STEP_MS);
  }
}

/** Current store revision, as a bigint (read from a Range header). */
export async function currentRevision(t: Target): Promise<bigint> {
  const res = await t.client.get('etcd3-test/\u0000revision-probe').exec();
  return BigInt(res.header.revision);
}

/** Like `eventually`, for a condition that must ask the server. */
export async function eventuallyAsync(
  t: Target,
  cond: () => Promise<boolean>,
  what: string,
  maxMs = 5000,
): Promise<void> {
  for (let waited = 0; !(await cond()); waited += STEP_MS) {
    if (waited >= maxMs) throw new Error(`timed out after ${maxMs} ms waiting for ${what}`);
    await t.advance(STEP_MS);
  }
}
