/**
 * etcd's lessor (server/lease/lessor.go) on the simulator's clock: grant, revoke, renew, time-to-live,
 * the periodic expiry loop with its revoke rate limit, primary/secondary behaviour and TTL checkpoints.
 *
 * Plugging in: the lessor is the store's LeaseHook (`new MvccStore({ lessor })`) and needs the store back
 * to delete a revoked lease's keys, so it is bound after construction with {@link Lessor.bind}, or both
 * are made at once with {@link createLeasedStore}. src/mvcc knows nothing of this module.
 *
 * Time: all instants are clock ms; TTLs are whole seconds, as on the wire. The expiry loop runs as the
 * Ticker step `lease.expiry` every `loopIntervalMs` (500 ms); each run revokes at most
 * `leaseRevokeRate / 2` expired leases, earliest expiry first (ties: smaller ID), so a lease is revoked
 * at the first loop instant at or after its expiry unless the per-run budget is used up — as with etcd,
 * expiry is not exact to the millisecond. etcd hands expired leases to the server, which revokes them
 * through raft; here the loop revokes them directly through the same path as {@link Lessor.revoke}.
 */
import { keyString, type KeyString, ErrLeaseNotFound, MvccStore, type MvccOptions, type LeaseHook, invalidField } from '../mvcc/index.js';
import { EtcdError, fail, GrpcCode, type EtcdErrorKind } from '../etcd/index.js';
import { type Clock, IndexedHeap, SimRandom, Ticker } from '../sim/index.js';
import { checkLessor } from './check.js';
import { expiresBefore, Lease, MAX_LEASE_TTL } from './lease.js';
import { ErrLeaseExist, ErrLeaseTTLTooLarge } from './errors.js';

/**
 * lease.ErrNotPrimary ("not a primary lessor"): Renew on a demoted lessor. etcd never sends this to a
 * client — the server forwards the renew to the leader and answers `etcdserver: request timed out`
 * (Unavailable) when there is none — so the code here is Unavailable, the one a client retries.
 * @public
 */
export const ErrNotPrimary: EtcdErrorKind = Object.freeze({ code: GrpcCode.UNAVAILABLE, message: 'not a primary lessor' });

/** etcd defaults (server/lease/lessor.go, embed/config.go). */
export const DEFAULT_LEASE_LOOP_MS = 500;
export const DEFAULT_LEASE_REVOKE_RATE = 1000;
const DEFAULT_LEASE_CHECKPOINT_RATE = 1000;
const DEFAULT_MAX_LEASE_CHECKPOINT_BATCH_SIZE = 1000;
export const DEFAULT_CHECKPOINT_INTERVAL_MS = 5 * 60 * 1000;
export const DEFAULT_TICK_MS = 100;
export const DEFAULT_ELECTION_TICKS = 10;
const MAX_INT64 = (1n << 63n) - 1n;
const MIN_INT64 = -(1n << 63n);

export interface LessorOptions {
  readonly clock: Clock;
  /** The shared ticker that orders every periodic step; default: a ticker of its own on `clock`. */
  readonly ticker?: Ticker | undefined;
  /** Randomness; the lessor draws generated IDs from its fork `lease.ids`. Default: seed 0. */
  readonly random?: SimRandom | undefined;
  /** Heartbeat interval (etcd --heartbeat-interval, 100 ms); with electionTicks gives the minimum TTL. */
  readonly tickMs?: number | undefined;
  /** Election timeout in ticks (etcd: election-timeout / heartbeat-interval = 10). */
  readonly electionTicks?: number | undefined;
  /** Minimum TTL in seconds; overrides ceil(floor(3 * electionTicks / 2) * tickMs / 1000) (= 2 s by default). */
  readonly minLeaseTTL?: number | undefined;
  /** Period of the expiry loop in ms (etcd: 500). */
  readonly loopIntervalMs?: number | undefined;
  /** Revokes per second (etcd leaseRevokeRate: 1000); each loop run revokes at most floor(rate / 2). */
  readonly leaseRevokeRate?: number | undefined;
  /**
   * Checkpoints per second (etcd leaseCheckpointRate: 1000, a variable its tests set, as leaseRevokeRate):
   * each loop run hands over at most floor(rate / 2) batches.
   */
  readonly leaseCheckpointRate?: number | undefined;
  /** Checkpoints in one batch, one LeaseCheckpoint proposal each (etcd maxLeaseCheckpointBatchSize: 1000). */
  readonly maxLeaseCheckpointBatchSize?: number | undefined;
  /** The LeaseCheckpoint feature gate (etcd: off). */
  readonly checkpointing?: boolean | undefined;
  /** Checkpoint interval in ms (etcd --experimental-lease-checkpoint-interval: 5 min). */
  readonly checkpointIntervalMs?: number | undefined;
  /** Start as primary (the leader's lessor). Default true: a single member is its own leader. */
  readonly primary?: boolean | undefined;
  /** Ticker step name (default `lease.expiry`); distinct lessors on one ticker need distinct names. */
  readonly stepName?: string | undefined;
  /** Ticker rank of the step (default -10: expire leases before watch steps due at the same instant). */
  readonly stepRank?: number | undefined;
}

/** @public */
export interface GrantResult {
  readonly id: bigint;
  /** Granted TTL in seconds (raised to the minimum if the request asked for less). */
  readonly ttl: number;
}

/** @public */
export interface RevokeResult {
  /** The store's revision after the revoke (0 when no store is bound). */
  readonly revision: number;
  /** Keys deleted (all at one revision). */
  readonly deleted: number;
}

/** @public */
export interface TimeToLiveResult {
  readonly id: bigint;
  /**
   * Remaining seconds, truncated toward zero (etcd: int64(Remaining().Seconds())); -1 for an unknown
   * lease. A lease that expired but is not yet revoked reports 0 (or less). On a demoted lessor (no
   * expiry) it reports the TTL a promote would start from: the checkpointed remainder, else the full TTL.
   */
  readonly ttl: number;
  /** TTL granted, in seconds; 0 for an unknown lease. */
  readonly grantedTTL: number;
  /** Attached keys in byte order, when asked for (else empty). */
  readonly keys: Uint8Array[];
}

/** Something the lessor did, for traces and for layers above (keep-alive streams, watch tests). @public */
export type LessorEvent =
  | { readonly type: 'grant'; readonly id: bigint; readonly ttl: number; readonly at: number }
  | {
      readonly type: 'revoke';
      readonly id: bigint;
      /** 'revoke': a client's Revoke; 'expire': the expiry loop. */
      readonly reason: 'revoke' | 'expire';
      readonly at: number;
      /** Store revision after the revoke; 0 without a store. */
      readonly revision: number;
      readonly deleted: number;
    }
  | { readonly type: 'checkpoint'; readonly id: bigint; readonly remainingTTL: number; readonly at: number };

/** @public */
export type LessorListener = (ev: LessorEvent) => void;

interface ScheduledCheckpoint {
  readonly id: bigint;
  readonly at: number;
}

/** etcd MinLeaseTTL: ceil(((3 * electionTicks) / 2) * tickMs) seconds, the division being Go's integer one. */
export function minLeaseTTLFor(tickMs: number, electionTicks: number): number {
  return Math.ceil((Math.floor((3 * electionTicks) / 2) * tickMs) / 1000);
}

function checkInt(what: string, v: number, min: number): void {
  if (!Number.isSafeInteger(v) || v < min) throw new RangeError(`Lessor: ${what} must be an integer >= ${min}, got ${v}`);
}

/** A lease ID from a JavaScript caller: an int64 bigint, else INVALID_ARGUMENT (see mvcc/shape.ts). */
function checkLeaseId(id: bigint): void {
  if (typeof id !== 'bigint' || id < MIN_INT64 || id > MAX_INT64) invalidField('lease ID', 'an int64 bigint', id);
}

/** etcd's lessor. See the module comment for how time and the store come in. @public */
export class Lessor implements LeaseHook {
  readonly clock: Clock;
  /** @internal */
  readonly ticker: Ticker;
  readonly minLeaseTTL: number;
  readonly loopIntervalMs: number;
  readonly leaseRevokeRate: number;
  readonly leaseCheckpointRate: number;
  readonly maxLeaseCheckpointBatchSize: number;
  readonly checkpointing: boolean;
  readonly checkpointIntervalMs: number;
  readonly stepName: string;

  private readonly leaseMap = new Map<bigint, Lease>();
  private readonly expiryHeap = new IndexedHeap<Lease>(expiresBefore);
  /**
   * Scheduled checkpoints. etcd keeps them in a heap by due time; here each is due one fixed interval after
   * it was scheduled, on a clock that never goes back, so they fall due in the order they were scheduled:
   * a Set, which iterates in insertion order, is that queue (ties in scheduling order; etcd's heap leaves
   * the order of ties open).
   */
  private readonly checkpointQueue = new Set<ScheduledCheckpoint>();
  private readonly ids: SimRandom;
  private store: MvccStore | undefined;
  private isPrimary: boolean;
  private readonly listeners: LessorListener[] = [];
  private closed = false;
  /**
   * Where a primary lessor hands expired leases instead of revoking them itself: etcd's lessor sends them
   * on its expired channel and the server proposes each revoke through Raft (a cluster's leader sets this,
   * and every member then applies the revoke with expire()). Unset: revoked at once, as one member does.
   */
  onExpired: ((ids: readonly bigint[]) => void) | undefined;
  /**
   * Where a primary lessor hands due checkpoints instead of applying them itself: etcd proposes each
   * LeaseCheckpoint through Raft, so every member records the remaining TTL a later leader starts from (a
   * cluster's leader sets this; every member then applies checkpoint()). One call a batch (one
   * LeaseCheckpointRequest each, as etcd proposes them). Unset: applied at once.
   */
  onCheckpoint: ((due: ReadonlyArray<{ readonly id: bigint; readonly remaining: number }>) => void) | undefined;

  /** @internal */
  constructor(opts: LessorOptions) {
    this.clock = opts.clock;
    this.ticker = opts.ticker ?? new Ticker(opts.clock);
    this.ids = (opts.random ?? new SimRandom(0)).fork('lease.ids');
    const tickMs = opts.tickMs ?? DEFAULT_TICK_MS;
    const electionTicks = opts.electionTicks ?? DEFAULT_ELECTION_TICKS;
    checkInt('tickMs', tickMs, 1);
    checkInt('electionTicks', electionTicks, 1);
    this.minLeaseTTL = opts.minLeaseTTL ?? minLeaseTTLFor(tickMs, electionTicks);
    checkInt('minLeaseTTL', this.minLeaseTTL, 0);
    this.loopIntervalMs = opts.loopIntervalMs ?? DEFAULT_LEASE_LOOP_MS;
    checkInt('loopIntervalMs', this.loopIntervalMs, 1);
    this.leaseRevokeRate = opts.leaseRevokeRate ?? DEFAULT_LEASE_REVOKE_RATE;
    checkInt('leaseRevokeRate', this.leaseRevokeRate, 2);
    this.leaseCheckpointRate = opts.leaseCheckpointRate ?? DEFAULT_LEASE_CHECKPOINT_RATE;
    checkInt('leaseCheckpointRate', this.leaseCheckpointRate, 2);
    this.maxLeaseCheckpointBatchSize = opts.maxLeaseCheckpointBatchSize ?? DEFAULT_MAX_LEASE_CHECKPOINT_BATCH_SIZE;
    checkInt('maxLeaseCheckpointBatchSize', this.maxLeaseCheckpointBatchSize, 1);
    this.checkpointing = opts.checkpointing ?? false;
    this.checkpointIntervalMs = opts.checkpointIntervalMs ?? DEFAULT_CHECKPOINT_INTERVAL_MS;
    checkInt('checkpointIntervalMs', this.checkpointIntervalMs, 1);
    this.isPrimary = opts.primary ?? true;
    this.stepName = opts.stepName ?? 'lease.expiry';
    this.ticker.add(this.stepName, this.loopIntervalMs, () => this.runLoopOnce(), { rank: opts.stepRank ?? -10 });
  }

  /** Binds the store whose keys revokes delete (etcd SetRangeDeleter). The store should use this lessor as its hook. */
  bind(store: MvccStore): void {
    if (store.storage.lessor !== this) throw new Error('Lessor.bind: the store was not constructed with this lessor');
    this.store = store;
  }

  /** Whether this lessor is primary (manages expiry and renewals). */
  get primary(): boolean {
    return this.isPrimary;
  }

  /** Most leases one loop run revokes (etcd: leaseRevokeRate / 2). */
  get revokeLimitPerRun(): number {
    return Math.floor(this.leaseRevokeRate / 2);
  }

  /** Number of leases. */
  get size(): number {
    return this.leaseMap.size;
  }

  // ------------------------------------------------------------------------------------------
  // LeaseHook (called by the store inside its write transactions)

  exists(id: bigint): boolean {
    return this.leaseMap.has(id);
  }

  attach(id: bigint, key: Uint8Array): void {
    const l = this.leaseMap.get(id);
    // The store checks exists() before any write, so this is an invariant breach (etcd panics too).
    if (l === undefined) throw new Error(`Lessor.attach: lease ${id} does not exist`);
    l.keys.set(keyString(key), key);
  }

  detach(id: bigint, key: Uint8Array): void {
    // Unknown lease: etcd logs and carries on (this is the normal case while a revoke deletes keys).
    this.leaseMap.get(id)?.keys.delete(keyString(key));
  }

  // ------------------------------------------------------------------------------------------
  // Lease API

  /**
   * LeaseGrant. `id` 0n: a fresh positive 63-bit ID (redrawn on collision). Negative IDs are accepted
   * like any other, as etcd does (its only ID check is != 0). `ttlSeconds` below the minimum is raised.
   * Errors: ErrLeaseTTLTooLarge (> 9,000,000,000 s), ErrLeaseExist.
   */
  grant(id: bigint, ttlSeconds: number): GrantResult {
    checkLeaseId(id);
    // etcd's check first (integers past 2^53 are too large too); then what is no TTL at all (NaN, Infinity,
    // fractions, integers below -2^53).
    if (Number.isInteger(ttlSeconds) && ttlSeconds > MAX_LEASE_TTL) fail(ErrLeaseTTLTooLarge);
    if (!Number.isSafeInteger(ttlSeconds)) invalidField('lease TTL', 'an integer number of seconds', ttlSeconds);
    if (id === 0n) {
      do id = this.ids.nextUint63();
      while (this.leaseMap.has(id));
    } else if (this.leaseMap.has(id)) {
      fail(ErrLeaseExist);
    }
    const ttl = Math.max(ttlSeconds, this.minLeaseTTL);
    const now = this.clock.now();
    const l = new Lease(id, ttl, this.isPrimary ? now + ttl * 1000 : Infinity);
    this.leaseMap.set(id, l);
    if (this.isPrimary) {
      this.expiryHeap.push(l);
      this.scheduleCheckpointIfNeeded(l);
    }
    this.emit({ type: 'grant', id, ttl, at: now });
    return { id, ttl };
  }

  /**
   * LeaseRevoke: removes the lease and deletes every attached key in one write transaction (keys in
   * byte order ⇒ one revision, sub-revisions in key order); no keys ⇒ no new revision. The deletes go
   * through the store's write transaction directly, as etcd's RangeDeleter does, so they are not
   * subject to --max-txn-ops or the request size limit. Error: ErrLeaseNotFound.
   */
  revoke(id: bigint): RevokeResult {
    checkLeaseId(id);
    return this.revokeLease(id, 'revoke');
  }

  /**
   * Revokes a lease because it expired: what applying the leader's expiry proposal does on every member
   * (the same revoke as revoke(), reported with reason 'expire'). Error: ErrLeaseNotFound.
   */
  expire(id: bigint): RevokeResult {
    checkLeaseId(id);
    return this.revokeLease(id, 'expire');
  }

  /**
   * Renew (the lessor's side of KeepAlive): expiry = now + TTL (or the checkpointed remainder, which a
   * renew with checkpointing on first clears); returns the TTL. Errors: ErrNotPrimary on a demoted
   * lessor; ErrLeaseNotFound for an unknown lease and for one already expired but not yet revoked
   * (etcd waits for that revoke, then answers not found).
   */
  renew(id: bigint): number {
    checkLeaseId(id);
    if (!this.isPrimary) fail(ErrNotPrimary);
    const l = this.leaseMap.get(id);
    if (l === undefined) fail(ErrLeaseNotFound);
    const now = this.clock.now();
    if (l.expired(now)) fail(ErrLeaseNotFound);
    if (this.checkpointing && l.remainingTTL > 0) this.checkpoint(id, 0);
    this.refresh(l, 0);
    return l.ttl;
  }

  /**
   * KeepAlive as the gRPC layer answers it: the renewed TTL, or 0 for an unknown or expired lease (not
   * an error). Still throws ErrNotPrimary on a demoted lessor.
   */
  keepAlive(id: bigint): number {
    try {
      return this.renew(id);
    } catch (err) {
      if (err instanceof EtcdError && err.kind === ErrLeaseNotFound) return 0;
      throw err;
    }
  }

  /** LeaseTimeToLive; unknown lease ⇒ ttl -1 (the gRPC answer). See {@link TimeToLiveResult}. */
  timeToLive(id: bigint, keys = false): TimeToLiveResult {
    checkLeaseId(id);
    const l = this.leaseMap.get(id);
    if (l === undefined) return { id, ttl: -1, grantedTTL: 0, keys: [] };
    const remainingMs = l.remainingMs(this.clock.now());
    const ttl = remainingMs === Infinity ? l.remainingTTLOrFull() : Math.trunc(remainingMs / 1000) + 0;
    return { id, ttl, grantedTTL: l.ttl, keys: keys ? l.sortedKeyStrings().map((k) => l.keys.get(k)!) : [] };
  }

  /** LeaseLeases: every lease ID, ascending (signed int64 order). */
  leases(): bigint[] {
    // A BigInt64Array sorts in signed int64 order by itself (every ID is an int64: checkLeaseId).
    return [...BigInt64Array.from(this.leaseMap.keys()).sort()];
  }

  /** Expiry instant of a lease in clock ms (Infinity when demoted), or undefined if unknown. */
  expiryOf(id: bigint): number | undefined {
    return this.leaseMap.get(id)?.expiry;
  }

  /** Last checkpointed remaining TTL of a lease (0 = none), or undefined if unknown. */
  checkpointedTTLOf(id: bigint): number | undefined {
    return this.leaseMap.get(id)?.remainingTTL;
  }

  /** @internal Attached key strings (latin1) of a lease in byte order; empty if unknown. */
  keyStringsOf(id: bigint): KeyString[] {
    return this.leaseMap.get(id)?.sortedKeyStrings() ?? [];
  }

  // Stryker disable all: an invariant checker is the properties' oracle (docs/mutation.md)
  /** The lessor's invariants against its store (check.ts): the first violation, or undefined. */
  checkValid(): string | undefined {
    return checkLessor(this, this.requireStore());
  }
  // Stryker restore all

  // ------------------------------------------------------------------------------------------
  // Leadership and checkpoints

  /**
   * Promote: becomes primary; every lease's expiry = now + extendMs + (checkpointed remaining TTL, else
   * full TTL). With at least leaseRevokeRate leases, expiries are then spread so that no more than 3/4 of
   * the revoke rate expire in any one-second window (etcd lessor.Promote).
   */
  promote(extendMs = 0): void {
    if (!Number.isFinite(extendMs) || extendMs < 0) throw new RangeError(`Lessor.promote: extend must be >= 0 ms, got ${extendMs}`);
    this.isPrimary = true;
    const all = this.leasesInIdOrder();
    for (const l of all) {
      this.refresh(l, extendMs);
      this.scheduleCheckpointIfNeeded(l);
    }
    if (all.length < this.leaseRevokeRate) return;
    const now = this.clock.now();
    const byExpiry = all.sort((a, b) => (expiresBefore(a, b) ? -1 : expiresBefore(b, a) ? 1 : 0));
    // The first lease opens the first one-second window (no window is open before it).
    let baseWindow = 0;
    let nextWindow = -Infinity;
    let expires = 0;
    const target = Math.floor((3 * this.leaseRevokeRate) / 4);
    for (const l of byExpiry) {
      const remaining = l.remainingMs(now);
      if (remaining > nextWindow) {
        baseWindow = remaining;
        nextWindow = baseWindow + 1000;
        expires = 1;
        continue;
      }
      expires++;
      if (expires <= target) continue;
      const delay = Math.trunc(1000 * (expires / target) - (remaining - baseWindow));
      nextWindow = baseWindow + delay;
      this.refresh(l, delay + extendMs);
      this.scheduleCheckpointIfNeeded(l);
    }
  }

  /** Demote: stops expiry (every expiry = forever) and drops scheduled checkpoints. */
  demote(): void {
    for (const l of this.leaseMap.values()) l.expiry = Infinity;
    this.expiryHeap.clear();
    this.checkpointQueue.clear();
    this.isPrimary = false;
  }

  /**
   * Applies a checkpoint (etcd Lessor.Checkpoint, what the raft apply of a LeaseCheckpoint does): records
   * `remainingTTL` seconds (0 clears it) for use by the next promote. Unknown lease: ignored.
   */
  checkpoint(id: bigint, remainingTTL: number): void {
    checkInt('remainingTTL', remainingTTL, 0);
    const l = this.leaseMap.get(id);
    if (l === undefined) return;
    l.remainingTTL = remainingTTL;
    if (this.isPrimary) this.scheduleCheckpointIfNeeded(l);
    this.emit({ type: 'checkpoint', id, remainingTTL, at: this.clock.now() });
  }

  // ------------------------------------------------------------------------------------------
  // Recovery, loop, lifecycle

  /**
   * Rebuilds every lease's key set from the bound store's live keys (etcd restores the lessor's items
   * from the KVs after a snapshot). A key naming a lease that does not exist stays unattached, as etcd
   * logs and skips it. Returns how many keys were attached and how many named a missing lease.
   */
  recoverFromStore(): { attached: number; orphaned: number } {
    const store = this.requireStore();
    for (const l of this.leaseMap.values()) l.keys.clear();
    let attached = 0;
    let orphaned = 0;
    const all = store.range({ key: new Uint8Array([0]), rangeEnd: new Uint8Array([0]) });
    for (const kv of all.kvs) {
      if (kv.lease === 0n) continue;
      const l = this.leaseMap.get(kv.lease);
      if (l === undefined) {
        orphaned++;
        continue;
      }
      l.keys.set(keyString(kv.key), kv.key);
      attached++;
    }
    return { attached, orphaned };
  }

  /**
   * One run of etcd's runLoop body: revoke expired leases (primary only, at most revokeLimitPerRun, by
   * expiry then ID), then take due checkpoints. The ticker calls this; tests may call it directly.
   */
  runLoopOnce(): void {
    this.revokeExpiredLeases();
    this.checkpointScheduledLeases();
  }

  /** Subscribes to lessor events. Returns an unsubscribe function. */
  subscribe(listener: LessorListener): () => void {
    this.listeners.push(listener);
    return () => {
      const i = this.listeners.indexOf(listener);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  /** Removes the expiry step from the ticker; leases stay readable, nothing expires any more. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.ticker.remove(this.stepName);
  }

  /**
   * The expiry queue is empty on a demoted lessor (demote() clears it, nothing is queued until promote()),
   * so this finds nothing there. Each lease is revoked as it leaves the queue (revokeLease takes it out),
   * so a revoke that throws (a store listener failing) leaves the rest of the batch queued for the next run.
   */
  private revokeExpiredLeases(): void {
    const now = this.clock.now();
    const limit = this.revokeLimitPerRun;
    const handOver = this.onExpired;
    const expired: bigint[] = [];
    for (let top = this.expiryHeap.peek(); top !== undefined && top.expired(now) && expired.length < limit; top = this.expiryHeap.peek()) {
      expired.push(top.id);
      if (handOver === undefined) this.revokeLease(top.id, 'expire');
      // Handed over: out of the expiry queue until the server's revoke applies (or a promote re-queues it).
      else this.expiryHeap.pop();
    }
    if (handOver !== undefined && expired.length > 0) handOver(expired);
  }

  /**
   * etcd's checkpointScheduledLeases: at most floor(leaseCheckpointRate / 2) batches, each of at most
   * maxLeaseCheckpointBatchSize due checkpoints (a lease gone, expired or at its full TTL is dropped and
   * not counted), handed over one batch at a time; a batch not full ends the run. The queue is empty
   * without checkpointing or on a demoted lessor (nothing is scheduled then; demote() clears it).
   */
  private checkpointScheduledLeases(): void {
    const now = this.clock.now();
    const size = this.maxLeaseCheckpointBatchSize;
    for (let batches = Math.floor(this.leaseCheckpointRate / 2); batches > 0; batches--) {
      const due: Array<{ id: bigint; remaining: number }> = [];
      for (const top of this.checkpointQueue) {
        if (due.length === size || top.at > now) break;
        this.checkpointQueue.delete(top);
        const l = this.leaseMap.get(top.id);
        if (l === undefined || l.expired(now)) continue;
        const remaining = Math.ceil(l.remainingMs(now) / 1000);
        if (remaining >= l.ttl) continue;
        due.push({ id: top.id, remaining });
      }
      // Applied at once, a checkpoint schedules the lease's next one an interval from now: not due in this run.
      if (due.length > 0) {
        if (this.onCheckpoint !== undefined) this.onCheckpoint(due);
        else for (const c of due) this.checkpoint(c.id, c.remaining);
      }
      if (due.length < size) return;
    }
  }

  private revokeLease(id: bigint, reason: 'revoke' | 'expire'): RevokeResult {
    const l = this.leaseMap.get(id);
    if (l === undefined) fail(ErrLeaseNotFound);
    this.leaseMap.delete(id);
    this.expiryHeap.remove(l);
    const store = this.store;
    let deleted = 0;
    if (store !== undefined && l.keys.size > 0) {
      deleted = store.deleteKeys(l.sortedKeyStrings()).deleted;
    }
    const revision = store?.currentRevision ?? 0;
    this.emit({ type: 'revoke', id, reason, at: this.clock.now(), revision, deleted });
    return { revision, deleted };
  }

  /** etcd lease.refresh: expiry = now + extend + remaining TTL; re-queued for expiry if primary. */
  private refresh(l: Lease, extendMs: number): void {
    this.expiryHeap.remove(l);
    l.expiry = this.clock.now() + extendMs + l.remainingTTLOrFull() * 1000;
    this.expiryHeap.push(l);
  }

  private scheduleCheckpointIfNeeded(l: Lease): void {
    if (!this.checkpointing) return;
    if (l.remainingTTLOrFull() * 1000 > this.checkpointIntervalMs) {
      this.checkpointQueue.add({ id: l.id, at: this.clock.now() + this.checkpointIntervalMs });
    }
  }

  /** In ID order, so that every member schedules a promote's checkpoints in the same order. */
  private leasesInIdOrder(): Lease[] {
    return this.leases().map((id) => this.leaseMap.get(id)!);
  }

  private requireStore(): MvccStore {
    if (this.store === undefined) throw new Error('Lessor: no store bound (call bind(store) first)');
    return this.store;
  }

  private emit(ev: LessorEvent): void {
    for (let i = 0; i < this.listeners.length; i++) this.listeners[i]!(ev);
  }
}

export interface LeasedStoreOptions extends LessorOptions {
  /** Options of the MVCC store (its `lessor` is this lessor). */
  readonly store?: Omit<MvccOptions, 'lessor'> | undefined;
}

/** Makes a store and its lessor, bound to each other. */
export function createLeasedStore(opts: LeasedStoreOptions): { store: MvccStore; lessor: Lessor } {
  const lessor = new Lessor(opts);
  const store = new MvccStore({ ...opts.store, lessor });
  lessor.bind(store);
  return { store, lessor };
}
