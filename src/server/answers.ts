/**
 * Shapes of a service whose answers may come later. One member answers at once; a member of a simulated
 * cluster answers once Raft let it (a write after the member applied it, a linearizable read after
 * ReadIndex). These types derive the later-answering forms from the one service class, so the list of
 * etcd's methods is written once (the class) and every door follows it.
 */

/** `S`'s methods, each answering with a Promise of what `S` answers (a cluster member's services). @public */
export type Promised<S> = { [K in keyof S]: S[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : never };

/** `S`'s methods, each answering now or later (what a front door can call: a member or a cluster member). */
export type AwaitableService<S> = { [K in keyof S]: S[K] extends (...args: infer A) => infer R ? (...args: A) => R | PromiseLike<R> : never };

/**
 * The methods a service class answers: its prototype's own methods, less `except` — etcd's calls, and the
 * few public helpers some classes keep for the member's own use (MaintenanceService.applyAlarm,
 * ClusterService.propose, the stream classes' `calls`). etcd's calls alone are memberCalls() (member_calls.ts).
 */
export function serviceMethods(service: { readonly prototype: object }, except: readonly string[] = []): string[] {
  return Object.getOwnPropertyNames(service.prototype).filter((n) => n !== 'constructor' && !except.includes(n));
}

/**
 * `service` seen through `wrap`: every method `m` of `S` becomes `(...args) => wrap(() => service.m(...args))`.
 * A test harness uses it to give a member's synchronous services the Promise shape a remote etcd's client
 * has, without writing etcd's method list out again.
 */
export function promised<S extends object>(service: S, wrap: <T>(fn: () => T) => Promise<T>, except: readonly string[] = []): Promised<S> {
  const out: Record<string, unknown> = {};
  for (const name of serviceMethods(service.constructor as { prototype: object }, except)) {
    const m = (service as Record<string, unknown>)[name] as (...a: unknown[]) => unknown;
    out[name] = (...args: unknown[]) => wrap(() => m.apply(service, args));
  }
  return out as Promised<S>;
}
