/**
 * Shapes of a service whose answers may come later. One member answers at once; a member of a simulated
 * cluster answers once Raft let it (a write after the member applied it, a linearizable read after
 * ReadIndex). These types derive the later-answering forms from the one service class, so the list of
 * etcd's methods is written once (the class) and every door follows it.
 */

/** `S`'s methods, each answering with a Promise of what `S` answers (a cluster member's services). */
export type Promised<S> = { [K in keyof S]: S[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<R> : never };

/** `S`'s methods, each answering now or later (what a front door can call: a member or a cluster member). */
export type AwaitableService<S> = { [K in keyof S]: S[K] extends (...args: infer A) => infer R ? (...args: A) => R | PromiseLike<R> : never };
