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
  /** An application's Range etcd let through: with auth on, etcd is asked for its compactions as it (compaction.ts). */
  readerSeen(r: Reader): void;
}

/**
 * Auth tokens: the application's token goes to etcd unchanged; the simulator, which keeps its own auth
 * state (users, roles, the enabled flag, all followed from the calls), gave its own token for the same
 * Authenticate. A call carrying etcd's token is asked of the simulator with the simulator's token from that
 * Authenticate. A token the shadow never saw issued (one from before it started) has no counterpart, and
 * such a call is not compared. Bounded: the oldest pairs are forgotten first.
 */
export class TokenMap {
  private readonly pairs = new Map<string, string>();

  constructor(private readonly max = 10_000) {}

  learn(etcdToken: string, simToken: string): void {
    this.pairs.set(etcdToken, simToken);
    if (this.pairs.size > this.max) this.pairs.delete(this.pairs.keys().next().value!);
  }

  simToken(etcdToken: string): string | undefined {
    return this.pairs.get(etcdToken);
  }

  /** etcd dropped the token (expired, or auth turned off): it has no counterpart any more. */
  forget(etcdToken: string): void {
    this.pairs.delete(etcdToken);
  }
}

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
