/**
 * What one member's Raft loop (src/raft/loop.ts, etcd's raftNode goroutine and etcdserver's adjustTicks) must
 * do with its timers, judged from outside by the sim network, which runs each member in a loop of its own in
 * half the raft_node property's runs:
 *  - it ticks its node only from its ticker (named 'raft.tick', every heartbeat interval) and from the initial
 *    tick advance, never otherwise; it registers no other periodic timer;
 *  - the initial tick advance (etcd's --initial-election-tick-advance): from the start, every 50 ms, it asks how
 *    many peers are up; at the first poll (or peer change) that finds more than one, it moves the election
 *    clock `ticks` ahead at once — with `untilCampaign`, tick by tick until the node campaigns or hears a
 *    leader — and stops polling; after 5 s (100 polls; or the loop's shorter `waitMs`) without, it stops
 *    polling and never advances;
 *  - a stopped loop (its member crashed) keeps no timer on the clock.
 * The advance's ticks are node ticks like any other: the step rules' election timer counts them.
 */
import { NONE, type RaftNode } from '../../src/raft/index.js';
import type { TimerHandle } from '../../src/sim/index.js';

/** etcd's adjustTicks: a poll every 50 ms for rafthttp's 5 s connection read timeout (or the loop's `waitMs`). */
const POLL_MS = 50;
const WAIT_MS = 5000;

export interface AdvanceSpec {
  readonly ticks: number;
  readonly untilCampaign?: boolean;
  /** How long it polls before it gives up (5 s when not given). */
  readonly waitMs?: number;
}

/** One incarnation of a member's loop, as the sim network started it. */
export class LoopJudge {
  /** Timers the loop registered and has not cancelled. */
  private readonly live = new Map<TimerHandle, string>();
  private advancer: TimerHandle | undefined;
  private polls = 0;
  /** Polls it makes at most, finding no peers. */
  private readonly maxPolls: number;
  /** Node ticks the advance made (undefined: it has not advanced). */
  private advanced: number | undefined;
  /** Inside a poll or a peer change: advance ticks are allowed. */
  private inAdvance = false;
  private burst = 0;
  /** Inside the network's tick of this member (its ticker). */
  inTicker = false;
  private pendingAfter: (() => void) | undefined;

  constructor(
    private readonly who: string,
    private readonly node: RaftNode,
    private readonly spec: AdvanceSpec | undefined,
    private readonly activePeers: () => number,
    /** The step rules' check around one node tick (their election timer counts every tick). */
    private readonly beforeTick: () => () => void,
  ) {
    this.maxPolls = (spec?.waitMs ?? WAIT_MS) / POLL_MS;
  }

  /** The loop registers a periodic timer; returns what the clock should run. */
  every(ms: number, name: string | undefined, fn: () => void, ticker: (fn: () => void) => () => void): () => void {
    if (name === 'raft.tick') return ticker(fn);
    if (name !== 'raft.initial-tick-advance' || ms !== POLL_MS || this.spec === undefined || this.advancer !== undefined) {
      throw new Error(`${this.who}'s loop registered a periodic timer '${name}' every ${ms} ms (advance ${JSON.stringify(this.spec)})`);
    }
    return () => this.poll(fn);
  }

  registered(h: TimerHandle, name: string | undefined): void {
    this.live.set(h, name ?? '');
    if (name === 'raft.initial-tick-advance') this.advancer = h;
  }

  cancelled(h: TimerHandle): void {
    this.live.delete(h);
  }

  /** A tick of the node, from wherever it came. */
  nodeTicked(): void {
    if (this.inTicker) return;
    if (!this.inAdvance) throw new Error(`${this.who}'s node ticked outside its ticker and the initial tick advance`);
    if (this.spec?.untilCampaign === true && (this.node.role !== 'follower' || this.node.leader !== NONE)) {
      throw new Error(`${this.who}'s advance ticked on after it ${this.node.role === 'follower' ? `heard leader ${this.node.leader}` : `became ${this.node.role}`}`);
    }
    this.pendingAfter?.();
    this.pendingAfter = this.beforeTick();
    this.burst++;
  }

  /** One 50 ms poll of the advance. */
  private poll(fn: () => void): void {
    this.polls++;
    if (this.advanced !== undefined || this.polls > this.maxPolls) throw new Error(`${this.who}'s advance polled ${this.polls} times (advanced: ${this.advanced ?? 'no'}), past its end`);
    this.around(`its poll ${this.polls}`, fn);
    const polling = this.advancer !== undefined && this.live.has(this.advancer);
    if (this.polls === this.maxPolls && polling) throw new Error(`${this.who}'s advance polled ${this.maxPolls} times (${this.maxPolls * POLL_MS} ms) and goes on polling`);
    if (this.polls < this.maxPolls && this.advanced === undefined && !polling) throw new Error(`${this.who}'s advance stopped polling after ${this.polls} polls (of ${this.maxPolls}) without advancing`);
  }

  /** A peer's stream came up or went down: the loop looks at once (`fn` tells it). */
  peersChanged(fn: () => void): void {
    const polling = this.advancer !== undefined && this.live.has(this.advancer);
    this.around('a peer change', fn, polling);
  }

  private around(what: string, fn: () => void, polling = true): void {
    const peers = this.activePeers();
    this.inAdvance = polling;
    this.burst = 0;
    try {
      fn();
    } finally {
      this.inAdvance = false;
      this.pendingAfter?.();
      this.pendingAfter = undefined;
    }
    const spec = this.spec;
    const due = polling && spec !== undefined && this.advanced === undefined && peers > 1;
    if (!due) {
      if (this.burst > 0) throw new Error(`${this.who}'s loop advanced ${this.burst} ticks at ${what} with ${peers} peers up`);
      return;
    }
    const { role, leader } = this.node;
    const campaigned = role !== 'follower' || leader !== NONE;
    if (this.burst !== spec.ticks && !(spec.untilCampaign === true && campaigned && this.burst < spec.ticks)) {
      throw new Error(`${this.who}'s loop, ${peers} peers up at ${what}, advanced ${this.burst} ticks, expected ${spec.ticks}${spec.untilCampaign === true ? ' or until it campaigned' : ''}`);
    }
    this.advanced = this.burst;
    if (this.advancer !== undefined && this.live.has(this.advancer)) throw new Error(`${this.who}'s loop advanced, yet it goes on polling`);
  }

  /** The loop started: its ticker runs, and its advance polls when it has one to make. */
  started(): void {
    const names = [...this.live.values()].sort();
    const expected = this.spec === undefined ? ['raft.tick'] : ['raft.initial-tick-advance', 'raft.tick'];
    if (String(names) !== String(expected)) throw new Error(`${this.who}'s loop started with timers ${names.join(', ')}, expected ${expected.join(', ')}`);
  }

  /** The loop was stopped (its member crashed): it keeps no timer. */
  stopped(): void {
    if (this.live.size > 0) throw new Error(`${this.who}'s loop, stopped, keeps its timers ${[...this.live.values()].join(', ')}`);
  }
}
