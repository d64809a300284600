/**
 * What a rule for one compared unary RPC says (unary.ts applies it): whether etcd's answer made a
 * revision, how the simulator is asked (its service method of the same name, mostly), how a read answers
 * once the simulator is past etcd's revision, and what in the answer is etcd's own (time, its
 * configuration) and so left free.
 */
import type { Buffer } from 'node:buffer';
import type { EtcdSim } from '../client/index.js';
import type { Canon } from '../diff/index.js';
import type { CallContext } from '../server/index.js';
import { isObj, type Outcome, type ShadowContext } from './context.js';

export type Msg = Record<string, unknown>;

export interface UnaryRule {
  /**
   * Whether etcd's successful answer made a revision (asked when the simulator is one below it). `ok` gives
   * etcd's answer, decoded on the first call (wire_answer.ts): a rule that needs only the request never decodes it.
   */
  makesRevision?(ok: () => Msg, req: Msg, ctx: ShadowContext): boolean;
  /** Asked when the simulator is already past etcd's revision: 'read' asks at that revision, 'as-is' asks now; absent: not compared. */
  readonly late?: 'read' | 'as-is';
  /** Before asking the simulator: what etcd's answer says it must follow (a lease gone on etcd). */
  follow?(ctx: ShadowContext, req: Msg, ok: Msg | undefined): void;
  /** The request as the simulator is asked it (etcd's IDs turned into the simulator's). */
  request?(ctx: ShadowContext, req: Msg): Msg;
  /**
   * The simulator's answer (throws etcd's error); `call` carries the simulator's token for etcd's. `ok` gives
   * etcd's answer (undefined: an error), decoded on the first call, as for makesRevision.
   */
  ask(ctx: ShadowContext, req: Msg, ok: () => Msg | undefined, call: CallContext | undefined): unknown;
  /** Why the simulator is not asked this call though etcd answered it now (counted as not compared); undefined: it is asked. */
  passedBy?(ctx: ShadowContext, req: Msg, ok: Msg | undefined): string | undefined;
  /** Only etcd's successful answers are compared (an error answer: the simulator is not asked). */
  readonly answersOnly?: boolean;
  /**
   * The simulator's answer in etcd's own encoding (src/grpc/codec.ts): etcd's answer is then compared as
   * the bytes it sent, and decoded only when they differ or something else reads it (wire_answer.ts).
   */
  encode?(answer: unknown): Buffer;
  /** Both answers in a form where what is etcd's own configuration is left out (applied to both sides). */
  canonical?(c: Canon): Canon;
  /** After both answered: what the shadow learns from them (the token pair of an Authenticate). */
  learn?(ctx: ShadowContext, mine: Outcome, etcd: Outcome): void;
  /** etcd's canonical answer with what is time made the simulator's. */
  free?(mine: Canon, etcd: Canon): Canon;
  /** The request as the scenario log records it (for a replay to mean the same). */
  logged?(req: Msg, ok: Msg | undefined): unknown;
}

type Method = (req: Msg, call: CallContext | undefined) => unknown;

/** The simulator's service method of the same name (`Auth/UserAdd` is `services.auth.userAdd`). */
export function byName(service: keyof EtcdSim['services'], method: string): UnaryRule['ask'] {
  const name = method[0]!.toLowerCase() + method.slice(1);
  return (ctx, r, _ok, call) => {
    const svc = ctx.sim.services[service] as unknown as Record<string, Method>;
    return svc[name]!.call(svc, r, call);
  };
}

/** etcd's own answer for fields `keep` of the simulator's (what the real etcd's configuration and Raft decide). */
export function fromSim(...keep: string[]): (mine: Canon, etcd: Canon) => Canon {
  return (mine, etcd) => {
    if (!isObj(mine) || !isObj(etcd)) return etcd;
    const out = { ...etcd };
    for (const k of keep) if (k in mine) out[k] = mine[k]!;
    return out;
  };
}


/** The simulator's key-value at `key` now (as root: the shadow reads what etcd holds, whoever asked). */
export function simKey(ctx: ShadowContext, key: unknown): { create_revision: string; lease: string } | undefined {
  if (!(key instanceof Uint8Array) || key.length === 0) return undefined;
  return ctx.sim.services.kv.range({ key }, ctx.follower.asRoot()).kvs[0];
}
