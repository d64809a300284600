/**
 * Which member a failover client's call goes to, as clientv3 3.4's balancer chooses (clientv3/balancer of
 * etcd 3.4, grpc-go's reconnect backoff): a sub-connection per endpoint, READY, CONNECTING while a stopped
 * member cannot finish its handshake, or failed until its next reconnect; a round-robin picker over the
 * ready ones in a seeded order; calls wait for one until their deadline (failover.ts has the whole picture).
 */
import { errTransportClosing, type EtcdServices } from '../server/index.js';
import { clusterErrors, type EtcdCluster, type MemberRef, type MemberState } from '../cluster/index.js';
import type { SimRandom, TimerHandle } from '../sim/index.js';

/** grpc-go's reconnect backoff (DefaultConfig): base, multiplier, jitter, cap. */
const RECONNECT_BASE_MS = 1000;
const RECONNECT_MULTIPLIER = 1.6;
const RECONNECT_JITTER = 0.2;
const RECONNECT_MAX_MS = 120_000;
/** How soon a call waiting for a connection sees a stopped member's handshake complete after it resumes. */
const HANDSHAKE_POLL_MS = 10;
/** How a failover client reaches the cluster: its members, its name on the link levers, its deadline. */
export interface FailoverTarget {
  readonly cluster: EtcdCluster;
  /** The endpoints, in the order the client was given them. */
  readonly endpoints: readonly MemberState[];
  /** The client's name for the link levers. */
  readonly client: string;
  /** The deadline of each call (its context's), in ms. */
  readonly deadlineMs: number | undefined;
  /** The client's own random stream (picker order, jitter): a fork of the cluster's seed. */
  readonly random: SimRandom;
  /** One member's services over this client's link, as the in-process clients take them. */
  open(member: MemberState, deadlineMs: number | undefined): EtcdServices;
}

/** Resolves a client's endpoints (index, name or member ID) to members; duplicates and an empty list are refused. */
export function resolveEndpoints(cluster: EtcdCluster, refs: readonly MemberRef[]): MemberState[] {
  if (refs.length === 0) throw new RangeError('etcdsim: endpoints must name at least one member');
  const out: MemberState[] = [];
  for (const r of refs) {
    const m = cluster.member(r);
    if (out.includes(m)) throw new RangeError(`etcdsim: endpoint ${String(r)} is given twice`);
    out.push(m);
  }
  return out;
}

/**
 * One sub-connection of the balancer: READY; CONNECTING (the member is stopped: the kernel accepts the
 * TCP connection, but the gRPC handshake waits until it runs again); or TRANSIENT_FAILURE (refused: the
 * member is down) until its next reconnect attempt.
 */
interface SubConn {
  readonly member: MemberState;
  state: 'ready' | 'connecting' | 'failure';
  backoffMs: number;
  retry: TimerHandle | undefined;
}

/**
 * clientv3 3.4's balancer: a sub-connection per endpoint and a round-robin picker over the READY ones,
 * rebuilt (order drawn anew, position reset) whenever that set changes. Calls wait for a ready one.
 */
export class FailoverBalancer {
  private readonly conns: SubConn[];
  private order: MemberState[] = [];
  private next = 0;
  private waiters: (() => void)[] = [];
  private closed = false;

  constructor(private readonly t: FailoverTarget) {
    this.conns = t.endpoints.map((member) => ({ member, state: 'connecting', backoffMs: 0, retry: undefined }));
    for (const c of this.conns) this.dial(c);
    this.rebuild();
  }

  /** The next ready member (round robin), or undefined when none is ready. */
  pickNow(): MemberState | undefined {
    this.observe();
    if (this.order.length === 0) return undefined;
    const m = this.order[this.next]!;
    this.next = (this.next + 1) % this.order.length;
    return m;
  }

  /** The next ready member, waiting for one (WaitForReady) until `deadlineAt` (then DeadlineExceeded). */
  async pick(deadlineAt: number | undefined): Promise<MemberState> {
    for (;;) {
      const m = this.pickNow();
      if (m !== undefined) return m;
      if (this.closed) throw errTransportClosing();
      const clock = this.t.cluster.clock;
      await waitUntil(this.t.cluster, deadlineAt, (wake) => {
        this.waiters.push(wake);
        // A handshake pending on a stopped member completes when it runs again: look again shortly.
        if (this.conns.some((c) => c.state === 'connecting')) clock.setTimer(clock.now() + HANDSHAKE_POLL_MS, wake, 'client.handshake');
      });
    }
  }

  /** Stops reconnecting (the client closed). */
  close(): void {
    this.closed = true;
    for (const c of this.conns) if (c.retry !== undefined) this.t.cluster.clock.cancel(c.retry);
    this.wake();
  }

  /**
   * What the client's transport sees when it looks: a crash closes the member's sockets (READY or
   * CONNECTING → TRANSIENT_FAILURE); a stopped member that runs again completes its handshake (CONNECTING
   * → READY). A stop after the handshake leaves the connection READY: its calls hang.
   */
  private observe(): void {
    let changed = false;
    for (const c of this.conns) {
      if (c.state !== 'failure' && c.member.crashed) {
        c.state = 'failure';
        c.backoffMs = 0;
        this.failed(c);
        changed = true;
      } else if (c.state === 'connecting' && c.member.up) {
        c.state = 'ready';
        changed = true;
      }
    }
    if (changed) this.rebuild();
  }

  /** One connection attempt: refused by a down member, pending on a stopped one, else READY. */
  private dial(c: SubConn): void {
    if (c.member.crashed) {
      c.state = 'failure';
      this.failed(c);
      return;
    }
    c.backoffMs = 0;
    c.state = c.member.paused ? 'connecting' : 'ready';
  }

  /** The connection attempt was refused: try again after grpc-go's backoff. */
  private failed(c: SubConn): void {
    const clock = this.t.cluster.clock;
    c.backoffMs = c.backoffMs === 0 ? RECONNECT_BASE_MS : Math.min(c.backoffMs * RECONNECT_MULTIPLIER, RECONNECT_MAX_MS);
    const wait = Math.round(c.backoffMs * (1 + RECONNECT_JITTER * (this.t.random.nextFloat() * 2 - 1)));
    c.retry = clock.setTimer(clock.now() + wait, () => {
      c.retry = undefined;
      if (this.closed) return;
      this.dial(c);
      if (c.state === 'failure') return;
      this.rebuild();
      this.wake();
    }, 'client.reconnect');
  }

  /** A new picker over the ready connections: Go's map order (seeded here), starting at the first. */
  private rebuild(): void {
    const ready = this.conns.filter((c) => c.state === 'ready').map((c) => c.member);
    for (let i = ready.length - 1; i > 0; i--) {
      const j = this.t.random.nextInt(0, i);
      [ready[i], ready[j]] = [ready[j]!, ready[i]!];
    }
    this.order = ready;
    this.next = 0;
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}

/**
 * Waits until `register`'s wake-up is called, or fails with DeadlineExceeded at `deadlineAt` (on the
 * cluster's clock).
 */
function waitUntil(cluster: EtcdCluster, deadlineAt: number | undefined, register: (wake: () => void) => void): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let done = false;
    let timer: TimerHandle | undefined;
    if (deadlineAt !== undefined) {
      timer = cluster.clock.setTimer(deadlineAt, () => {
        if (done) return;
        done = true;
        reject(clusterErrors.errDeadlineExceeded());
      }, 'client.deadline');
    }
    register(() => {
      if (done) return;
      done = true;
      if (timer !== undefined) cluster.clock.cancel(timer);
      resolve();
    });
  });
}

/** Sleeps `ms` on the cluster's clock; fails with DeadlineExceeded if the deadline comes first. */
export async function sleep(cluster: EtcdCluster, ms: number, deadlineAt: number | undefined): Promise<void> {
  if (ms <= 0) return;
  const clock = cluster.clock;
  const at = clock.now() + ms;
  if (deadlineAt !== undefined && deadlineAt < at) {
    await waitUntil(cluster, deadlineAt, () => undefined);
    return;
  }
  await new Promise<void>((resolve) => clock.setTimer(at, resolve, 'client.backoff'));
}
