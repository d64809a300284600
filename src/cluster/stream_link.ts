/**
 * The link under one streaming call (Watch, LeaseKeepAlive, Election.Observe) between a client and a
 * cluster member: the StreamLink the call runs over (stream_call.ts). It follows the same levers as the
 * cluster's unary calls — the client's link to the member (dropLink, delayLink, restoreLink) and the
 * member's process (pause, resume) — but as a TCP connection carries a stream: in order both ways, and
 * nothing lost. While the link is dropped or the member stopped, requests and responses wait (responses on
 * the member, where they fill the stream's window and turn its watchers into victims, as a client that
 * does not read makes them); once it is back they go on, each after the link's delay.
 */
import type { TimerHandle } from '../sim/index.js';
import { StreamHold, type StreamCall, type StreamLink } from '../server/index.js';
import type { EtcdCluster } from './cluster.js';
import { DEFAULT_CLIENT, type ConnectOptions, type MemberState } from './member_state.js';

/** One direction of the link: messages in the order sent, each due at its send time plus the link's delay. */
interface Pipe {
  readonly items: Array<{ readonly due: number; readonly fn: () => void }>;
  timer: TimerHandle | undefined;
}

/**
 * A stream's link between client `client` and member `member`. It is known to the member only while
 * something waits in it, so that resume and restoreLink move it on.
 */
export class ClusterStreamLink implements StreamLink {
  private readonly up: Pipe = { items: [], timer: undefined };
  private readonly down: Pipe = { items: [], timer: undefined };

  constructor(
    private readonly cluster: EtcdCluster,
    private readonly client: string,
    private readonly member: MemberState,
  ) {}

  get blocked(): boolean {
    return this.member.paused || this.cluster.linkOf(this.client, this.member)?.dropped === true;
  }

  toMember(fn: () => void): void {
    this.send(this.up, fn);
  }

  toClient(fn: () => void): void {
    this.send(this.down, fn);
  }

  /** @internal The link or the member changed (restored, resumed): what waited moves on. */
  release(): void {
    this.pump(this.up);
    this.pump(this.down);
  }

  private send(p: Pipe, fn: () => void): void {
    const delay = this.cluster.linkOf(this.client, this.member)?.delayMs ?? 0;
    if (p.items.length === 0 && delay === 0 && !this.blocked) {
      fn();
      return;
    }
    p.items.push({ due: this.cluster.clock.now() + delay, fn });
    this.member.streamLinks.add(this);
    this.pump(p);
  }

  /** Runs what is due, in order; the head of the line waits for its time, or for the link. */
  private pump(p: Pipe): void {
    const clock = this.cluster.clock;
    while (p.items.length > 0 && !this.blocked) {
      const head = p.items[0]!;
      if (head.due > clock.now()) {
        if (p.timer === undefined) {
          p.timer = clock.setTimer(head.due, () => {
            p.timer = undefined;
            this.pump(p);
          }, 'cluster.stream-link');
        }
        return;
      }
      p.items.shift();
      head.fn();
    }
    if (this.up.items.length === 0 && this.down.items.length === 0) this.member.streamLinks.delete(this);
  }
}

/** Puts a stream just opened on member `m` on the link of the client `opts` names (as the cluster's unary calls are). */
export function overClientLink<S extends Pick<StreamCall<unknown>, 'attachLink'>>(c: EtcdCluster, m: MemberState, opts: ConnectOptions, call: S): S {
  call.attachLink(new ClusterStreamLink(c, opts.client ?? DEFAULT_CLIENT, m));
  return call;
}

/**
 * A server stream's responses (Maintenance.Snapshot) from member `m` over the link of the client `opts`
 * names: before each one, a StreamHold while the link is down or the member stopped, so that nothing more
 * is sent until the link is back or the member runs again.
 */
export function heldOverClientLink<R>(c: EtcdCluster, m: MemberState, opts: ConnectOptions, responses: Iterable<R>): Iterable<R | StreamHold> {
  const link = new ClusterStreamLink(c, opts.client ?? DEFAULT_CLIENT, m);
  const hold = new StreamHold((resume) => link.toClient(resume));
  const it = responses[Symbol.iterator]();
  const held: IterableIterator<R | StreamHold> = {
    next: () => (link.blocked ? { done: false, value: hold } : it.next()),
    [Symbol.iterator]: () => held,
  };
  return held;
}
