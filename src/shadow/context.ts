/**
 * What every shadowed call shares: the simulator following the real etcd (follower.ts), the report, the
 * replayable log, the open stream comparisons, and how a divergence is told. One etcd answer, one of the
 * simulator, both as an `Outcome` (a message or etcd's gRPC error), compared as canonical text after
 * src/diff/normalise.ts has made what etcd leaves free (cluster and member IDs, raft term) equal.
 */
import type { EtcdSim } from '../client/index.js';
import { canon, text, type Canon, type LeaseNames } from '../diff/index.js';
import { toGrpcError } from '../server/index.js';
import type { Reader } from './compaction.js';
import type { Follower } from './follower.js';
import type { ShadowReport } from './report.js';
import type { ScenarioLog } from './scenario.js';
import type { StreamCompare } from './streams.js';
import { jwtExpiryMs } from './token_kind.js';

/** Lease IDs are the real etcd's on both sides (the simulator grants the ID etcd chose): none are renamed. */
export const NO_LEASES: LeaseNames = { names: new Map() };

export type Outcome = { readonly ok: unknown } | { readonly err: { readonly code: number; readonly details: string } };

export type Diverge = (rpc: string, where: string, request: unknown, etcd: string, etcdsim: string, revision: number | undefined) => void;

export interface ShadowContext {
  readonly sim: EtcdSim;
  readonly report: ShadowReport;
  readonly log: ScenarioLog;
  readonly follower: Follower;
  /** Stream comparisons open now (compared again after every step the simulator takes). */
  readonly streams: Set<StreamCompare>;
  readonly diverge: Diverge;
  /** Drops a lease the real etcd no longer has (expired there; its keys, if any, came as events). */
  leaseGone(id: string | undefined): void;
  /** Numbers a new stream, from 1, for the scenario log. */
  nextStream(): number;
  readonly tokens: TokenMap;
  /** Members added through the shadow: etcd's ID → the simulator's (each side chose its own). */
  readonly memberIds: Map<string, string>;
  /** etcd refused a read as compacted that the simulator answers: ask etcd for its compaction (compaction.ts). */
  compactionSeen(): void;
  /** etcd's current revision when it refuses reads at `rev`, compacted beyond it; else undefined (compaction.ts). */
  compactedBeyond(rev: number, as?: Reader): Promise<number | undefined>;
  /** Resolves once etcd's watch sync loop ran twice since now (true), or that could not be seen (false; compaction.ts). */
  syncPassed(below: number, as?: Reader): Promise<boolean>;
  /** An application's Range etcd let through: with auth on, etcd is asked for its compactions as it (compaction.ts). */
  readerSeen(r: Reader): void;
}

/**
 * Auth tokens: the application's token goes to etcd unchanged; the simulator, which keeps its own auth
 * state (users, roles, the enabled flag, all followed from the calls), gave its own token for the same
 * Authenticate. A call carrying etcd's token is asked of the simulator with the simulator's token from that
 * Authenticate. A token the shadow never saw issued (one from before it started) has no counterpart, and
 * such a call is not compared.
 *
 * The simulator's clock never moves, so its tokens never expire by themselves: each pair forgotten here
 * takes the simulator's token with it (`drop`), and pairs are forgotten as etcd forgets its tokens — when
 * etcd refuses one (`forget`), and once one went unused for longer than etcd's --auth-token-ttl (a simple
 * token lives that long after its last use; etcd's keeper sweeps once a second, so the shadow waits
 * TTL_SLACK_MS more before it drops a pair, and a call etcd still takes is never left without its
 * counterpart). A JWT (etcd's `--auth-token jwt,...`; token_kind.ts) is not dropped for want of use: etcd
 * takes it until its expiry however seldom it is used, so its pair is kept until then (and TTL_SLACK_MS
 * more). And at most `max` pairs, the oldest forgotten first past that: an application that authenticates
 * faster than the TTL lets tokens go grows etcd's store, but not the shadow's beyond it.
 */
export class TokenMap {
  /** `expires`: a JWT's expiry (ms); absent for a simple token, which lives `ttlMs` past its last use. */
  private readonly pairs = new Map<string, { readonly sim: string; used: number; readonly expires: number | undefined }>();
  private swept: number;

  constructor(
    /** Takes the simulator's token out of its token store. */
    private readonly drop: (simToken: string) => void,
    /** etcd's --auth-token-ttl, in ms. */
    private readonly ttlMs: number,
    /** Host time in ms (src/sim's hostNow). */
    private readonly now: () => number,
    private readonly max = 10_000,
  ) {
    this.swept = now();
  }

  learn(etcdToken: string, simToken: string): void {
    if (this.now() - this.swept >= SWEEP_MS) this.sweep();
    const old = this.pairs.get(etcdToken);
    if (old !== undefined && old.sim !== simToken) this.drop(old.sim);
    this.pairs.set(etcdToken, { sim: simToken, used: this.now(), expires: jwtExpiryMs(etcdToken) });
    if (this.pairs.size > this.max) this.forget(this.pairs.keys().next().value!);
  }

  /** The simulator's counterpart of etcd's token, as a call uses it (a use renews it, as on etcd). */
  simToken(etcdToken: string): string | undefined {
    const p = this.pairs.get(etcdToken);
    if (p === undefined) return undefined;
    const now = this.now();
    if (this.gone(p, now)) {
      // Unused past etcd's TTL, or a JWT past its expiry: etcd dropped it, whatever the last sweep saw.
      this.forget(etcdToken);
      return undefined;
    }
    p.used = now;
    if (now - this.swept >= SWEEP_MS) this.sweep();
    return p.sim;
  }

  /** etcd dropped the token (expired, or auth turned off): it has no counterpart any more, on either side. */
  forget(etcdToken: string): void {
    const p = this.pairs.get(etcdToken);
    if (p === undefined) return;
    this.pairs.delete(etcdToken);
    this.drop(p.sim);
  }

  /** A token of the simulator's that no token of etcd's will name. */
  unpaired(simToken: string): void {
    this.drop(simToken);
  }

  /** Pairs held now. */
  get size(): number {
    return this.pairs.size;
  }

  /** Forgets every pair unused for longer than etcd keeps a token. */
  private sweep(): void {
    const now = this.now();
    this.swept = now;
    for (const [etcdToken, p] of this.pairs) if (this.gone(p, now)) this.forget(etcdToken);
  }

  /** etcd no longer takes the token: a simple one unused past its TTL, a JWT past its expiry (each with the slack). */
  private gone(p: { readonly used: number; readonly expires: number | undefined }, now: number): boolean {
    return p.expires === undefined ? now - p.used > this.ttlMs + TTL_SLACK_MS : now > p.expires + TTL_SLACK_MS;
  }
}

/**
 * etcd's simple-token keeper sweeps once a second: a token may be taken up to 1 s past its TTL; 1 s more for
 * the call on its way (a JWT's `exp` is in whole seconds, and etcd's clock may be another machine's).
 */
const TTL_SLACK_MS = 2_000;
/** How often a use of a token also sweeps the others (each Authenticate sweeps too). */
const SWEEP_MS = 1_000;

export function outcomeText(o: Outcome): string {
  return text('err' in o ? { error: { code: o.err.code, details: o.err.details } } : canon(o.ok, NO_LEASES));
}

/** The simulator's answer to one call, an error as etcd's gRPC error. */
export function simOutcome(fn: () => unknown): Outcome {
  try {
    return { ok: fn() };
  } catch (err) {
    const g = toGrpcError(err);
    return { err: { code: g.code, details: g.details } };
  }
}

export function isObj(c: Canon): c is { [k: string]: Canon } {
  return typeof c === 'object' && c !== null && !Array.isArray(c);
}
