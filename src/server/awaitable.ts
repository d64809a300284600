/**
 * An answer now or later. A single etcd member's services answer at once; a member of the simulated
 * cluster answers once Raft let it (a write after the member applied it, a linearizable read after
 * ReadIndex). Code written once for both — the doors, the Lock and Election rules — takes an Awaitable
 * and continues at once when the answer is there, so a single member never waits a microtask it did not.
 */

/** An answer now (a single member) or later (a cluster member, once Raft let it). @public */
export type Awaitable<T> = T | PromiseLike<T>;

/** Whether `v` is an answer still to come. */
export function isPromiseLike<T>(v: Awaitable<T>): v is PromiseLike<T> {
  return typeof (v as { then?: unknown } | null)?.then === 'function';
}

/** `f` of an answer: at once when it is there, else once it comes (a Promise then). */
export function andThen<T, U>(v: Awaitable<T>, f: (t: T) => Awaitable<U>): Awaitable<U> {
  return isPromiseLike(v) ? Promise.resolve(v).then(f) : f(v);
}

/** An answer a single member gave: it must be there at once (its services never wait). */
export function now<T>(v: Awaitable<T>): T {
  if (isPromiseLike(v)) throw new Error('etcdsim: a single member answered later; its services answer at once');
  return v;
}
