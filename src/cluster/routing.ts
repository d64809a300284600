/**
 * The network between clients and members: each call travels over its client's link to one member and
 * its answer back the same way — delayed or lost as the link levers say (a dropped TCP connection, tc
 * netem), held while the member is paused (a stopped process reads nothing and sends nothing), refused
 * while it is down (connection refused) — and a client's deadline ends the wait (DEADLINE_EXCEEDED).
 * Streams read the same links as they carry each message (stream_link.ts).
 */
import { toGrpcError, type GrpcError } from '../server/index.js';
import type { Clock, TimerHandle } from '../sim/index.js';
import { errDeadlineExceeded, errMemberDown } from './errors.js';
import { DEFAULT_CLIENT, type ConnectOptions, type MemberState, type Reply } from './member_state.js';

/** What a call of a member's services answered: its value or etcd's error (see EtcdCluster.answerOf). @public */
export type CallAnswer<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: GrpcError };

/** The levers on one client's link to one member. */
export interface Link {
  dropped: boolean;
  delayMs: number;
}

function linkKey(client: string, m: MemberState): string {
  return `${client}\u0000${m.index}`;
}

/** Every client's links to the members, and the calls over them. */
export class Routing {
  private readonly links = new Map<string, Link>();
  /** Each call's answer once it has one (see answerOf); weak, so a forgotten call costs nothing. */
  private readonly answers = new WeakMap<Promise<unknown>, { answer?: CallAnswer<unknown> }>();

  constructor(private readonly clock: Clock) {}

  /**
   * The levers set on a client's link to `m`, if any (no key is built while no link lever was ever used).
   * Unary calls and stream links read them as they carry each message.
   */
  linkOf(client: string, m: MemberState): Readonly<Link> | undefined {
    return this.links.size === 0 ? undefined : this.links.get(linkKey(client, m));
  }

  /** The levers of a client's link to `m`, made on first use. */
  link(client: string, m: MemberState): Link {
    const key = linkKey(client, m);
    let l = this.links.get(key);
    if (l === undefined) {
      l = { dropped: false, delayMs: 0 };
      this.links.set(key, l);
    }
    return l;
  }

  /** The link between a client and `m` is as new again (no drop, no delay). */
  restore(client: string, m: MemberState): void {
    this.links.delete(linkKey(client, m));
  }

  /** What streams on `m` held while their link was down or `m` stopped moves on (responses and requests). */
  releaseStreams(m: MemberState): void {
    for (const l of [...m.streamLinks]) l.release();
    if (!m.crashed) m.server.delivery.poke();
  }

  /** The answer a call has already had, read at once; undefined while it still waits. */
  answerOf<T>(call: Promise<T>): CallAnswer<T> | undefined {
    return this.answers.get(call)?.answer as CallAnswer<T> | undefined;
  }

  /** Carries one call from a client to `m` and its answer back, over the client's link. */
  call<T>(m: MemberState, opts: ConnectOptions, handle: (reply: Reply<T>) => void): Promise<T> {
    const client = opts.client ?? DEFAULT_CLIENT;
    const clock = this.clock;
    // What the call got, recorded the moment it is known (answerOf reads it without awaiting).
    const box: { answer?: CallAnswer<T> } = {};
    const promise = new Promise<T>((resolveCall, rejectCall) => {
      const resolve = (v: T): void => {
        box.answer = { ok: true, value: v };
        resolveCall(v);
      };
      const reject = (err: unknown): void => {
        box.answer = { ok: false, error: toGrpcError(err) };
        rejectCall(err);
      };
      let settled = false;
      let deadline: TimerHandle | undefined;
      const finish = (fn: () => void): void => {
        if (settled) return;
        settled = true;
        if (deadline !== undefined) clock.cancel(deadline);
        fn();
      };
      if (opts.deadlineMs !== undefined) {
        deadline = clock.setTimer(clock.now() + opts.deadlineMs, () => finish(() => reject(errDeadlineExceeded())), 'cluster.deadline');
      }
      const back = (fn: () => void): void => {
        // A stopped process sends nothing: an answer due while it is paused leaves when it resumes.
        if (m.paused) {
          m.held.push({ run: () => back(fn), fail: (err) => finish(() => reject(err)) });
          return;
        }
        const link = this.linkOf(client, m);
        if (link?.dropped === true) return;
        if (link !== undefined && link.delayMs > 0) clock.setTimer(clock.now() + link.delayMs, () => finish(fn), 'cluster.link');
        else finish(fn);
      };
      const reply: Reply<T> = {
        ok: (v) => back(() => resolve(v)),
        fail: (err) => back(() => reject(toGrpcError(err))),
      };
      const arrive = (): void => {
        if (settled) return;
        if (m.crashed) return reply.fail(errMemberDown(m.name));
        const run = (): void => {
          try {
            handle(reply);
          } catch (err) {
            reply.fail(err);
          }
        };
        if (m.paused) m.held.push({ run, fail: (err) => finish(() => reject(err)) });
        else run();
      };
      const link = this.linkOf(client, m);
      if (link?.dropped === true) return;
      if (link !== undefined && link.delayMs > 0) clock.setTimer(clock.now() + link.delayMs, arrive, 'cluster.link');
      else arrive();
    });
    this.answers.set(promise, box);
    return promise;
  }
}
