/**
 * etcd's wait for its applied index (EtcdServer.applyWait, pkg/wait's WaitTime), as its simple-token check
 * uses it: a simple token is `<random>.<raft index of the Authenticate>`, and tokenSimple's
 * isValidSimpleToken (3.4 through 3.7) first waits until the member has applied that index, then looks the
 * token up. A token this member issued names an index it has applied, so only a made-up or mistyped token
 * — one naming an index not applied yet — waits: its request stands still until writes reach that index
 * (or the call's context ends), and is then refused (`etcdserver: invalid auth token`). A Watch stream waits
 * the same way inside its receive loop, so nothing it sends after such a create is read until then.
 *
 * Waiters are released at the member's delivery points (delivery.ts), never inside the commit that applies
 * their index, so what they run may call back into the server freely.
 *
 * Which doors wait: the gRPC and HTTP doors (each unary call, until the index or the call's deadline), a
 * Watch stream's receive loop (watch_service.ts), and the raw client's unary calls (src/client, through
 * tokenApplied; without a deadline, as a gRPC call without one). `sim.services` does not: its methods
 * answer synchronously, so a call whose token names an index not applied yet is answered at once, as etcd
 * answers it when its wait ends first — refused with `etcdserver: invalid auth token`.
 */
import type { EtcdVersion } from '../etcd/index.js';
import type { CallContext } from './call_context.js';
import type { Deliverable, Delivery } from './delivery.js';

interface Waiter {
  readonly index: bigint;
  readonly fn: () => void;
}

/** The waits of one member for its applied index to reach a raft index. */
export class AppliedWait implements Deliverable {
  private readonly waits = new Set<Waiter>();

  constructor(
    private readonly delivery: Delivery,
    /** The member's applied raft index. */
    private readonly applied: () => number,
  ) {}

  /** Waits in progress. */
  get size(): number {
    return this.waits.size;
  }

  /**
   * Calls `fn` once the member has applied raft index `index` — at the first delivery point from then on
   * (at the next one if it already has). `cancel()` drops the wait (the call ended first).
   */
  wait(index: bigint, fn: () => void): { cancel(): void } {
    const w: Waiter = { index, fn };
    this.waits.add(w);
    if (this.waits.size === 1) this.delivery.add(this);
    this.delivery.poke(this);
    return { cancel: () => this.drop(w) };
  }

  /** The member's applied index moved: waiters it reached are released at the next delivery point. */
  moved(): void {
    if (this.waits.size > 0) this.delivery.poke(this);
  }

  /** @internal Delivery point: releases the waiters whose index is applied. */
  deliver(): number {
    const applied = BigInt(this.applied());
    let released = 0;
    for (const w of [...this.waits]) {
      if (w.index > applied || !this.waits.has(w)) continue;
      this.drop(w);
      w.fn();
      released++;
    }
    // What they ran may have queued responses on calls already visited in this pass: ask for another.
    if (released > 0) this.delivery.flush();
    return 0;
  }

  private drop(w: Waiter): void {
    if (this.waits.delete(w) && this.waits.size === 0) this.delivery.remove(this);
  }
}

/**
 * The raft index etcd's isValidSimpleToken waits for, or undefined when it refuses the token at once: the
 * token must split at '.' into exactly two parts; 3.4 parses the second with strconv.Atoi (a sign allowed,
 * int64 range; a negative index becomes a huge uint64), 3.5+ with strconv.ParseUint (digits, uint64 range).
 */
export function simpleTokenIndex(token: string, v: EtcdVersion): bigint | undefined {
  const parts = token.split('.');
  if (parts.length !== 2) return undefined;
  const s = parts[1]!;
  if (v === '3.4') {
    const m = /^([+-]?)(\d+)$/.exec(s);
    if (m === null) return undefined;
    const n = m[1] === '-' ? -BigInt(m[2]!) : BigInt(m[2]!);
    if (n < -(2n ** 63n) || n >= 2n ** 63n) return undefined;
    return BigInt.asUintN(64, n);
  }
  if (!/^\d+$/.test(s)) return undefined;
  const n = BigInt(s);
  return n >= 2n ** 64n ? undefined : n;
}

/** What tokenApplied needs of a member. */
interface TokenWaits {
  tokenWaitIndex(ctx: CallContext | undefined): bigint | undefined;
  readonly appliedWait: AppliedWait;
}

/** The member behind each EtcdServices object (filled by the member as it builds its services). */
const membersOfServices = new WeakMap<object, TokenWaits>();

/** Lets tokenApplied find the member of `services`. */
export function registerTokenWaits(services: object, member: TokenWaits): void {
  membersOfServices.set(services, member);
}

/**
 * etcd's simple-token wait for an asynchronous in-process door (the raw client's unary calls): undefined
 * when a call by `ctx` on the member of `services` runs at once; else a promise that resolves once that
 * member has applied the raft index the token names — the call then runs, and the token is looked up as
 * etcd looks it up after its wait.
 */
export function tokenApplied(services: object, ctx: CallContext | undefined): Promise<void> | undefined {
  const member = membersOfServices.get(services);
  const index = member?.tokenWaitIndex(ctx);
  if (member === undefined || index === undefined) return undefined;
  return new Promise((resolve) => member.appliedWait.wait(index, resolve));
}
