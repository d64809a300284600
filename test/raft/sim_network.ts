/**
 * N Raft nodes (src/raft) on a simulated network driven by a virtual clock: each member ticks every
 * heartbeat interval (staggered), persists each Ready to its own "disk" before its messages leave, applies
 * committed entries to a tiny state machine (the list of values applied) and snapshots it every
 * `snapshotEvery` entries (or when the test says, keeping as many entries as it says);
 * the network delays each message by a random amount (so it also reorders), drops some, duplicates some,
 * and honours partitions; a member can crash (losing everything not persisted, and the messages to it in
 * flight) and restart from its disk. Membership changes go through the log as etcd's do: once a member
 * applies an add, the new member starts with an empty disk (as an operator starts etcd after `member add`
 * returned); once one applies a removal, the removed member is gone for good: its peers stop listening to
 * it, and it runs on for 10 ticks (etcd's server stops a member that applied its own removal), where it must
 * know it is removed and lead no more. The checker (src/raft/checker.ts) runs after
 * every event, and the step rules (step_rules.ts) judge each delivered message, tick and Ready. A member may
 * take a message while it handles a Ready (stepMidReady), as etcd's node steps messages while a Ready is out.
 * Over 600 lines (stated): the network's two ways of handling a member's Readies (its own, or the member's
 * RaftLoop) share the members' private state with the checks of what each member shows; to split next.
 */
import { MemoryStorage, NONE, RaftLoop, RaftNode, RaftNodeChecker, bootstrapStorage, type ConfChange, type ConfState, type Entry, type Message, type NodeId, type RaftPersistence, type RaftStorage, type ReadState } from '../../src/raft/index.js';
import { SimRandom, VirtualClock, type Clock } from '../../src/sim/index.js';
import { LoopJudge, type AdvanceSpec } from './loop_rules.js';
import { StepRules } from './step_rules.js';

export const HEARTBEAT_MS = 10;
/** At most this many proposals reach leaders mid-Ready per heartbeat interval (proposeMidReady). */
const MID_READY_PROPOSALS_PER_HEARTBEAT = 2;
export const ELECTION_TICKS = 10;
const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();
/** The application's context of a member's conf change (etcd: its name and peer URLs). */
const contextOf = (id: NodeId): Uint8Array => utf8.encode(`member-${id}`);


interface Member {
  readonly id: NodeId;
  node: RaftNode;
  disk: MemoryStorage;
  readonly tee: RaftPersistence | undefined;
  alive: boolean;
  incarnation: number;
  /** The state machine: values applied, in order. */
  values: string[];
  /** The index of the last snapshot this member saved. */
  savedSnapshot: number;
  /** The leader and role as the Readies told them (a Ready carries them when they changed). */
  soft: { leader: NodeId; role: string };
  /** Removed: the ticks it still runs (etcd's server stops a removed member a little after it applies the removal). */
  stopIn: number | undefined;
  /** With `loops`: the member's RaftLoop (src/raft/loop.ts), which handles its Readies; stopped when it crashed. */
  loop: RaftLoop | undefined;
  /** It applied its own removal (with `loops`: judged once its loop is done). */
  removedItself: boolean;
  /** Where its ticks fall within a heartbeat interval (members tick staggered). */
  readonly phase: number;
  /**
   * With `loops`: what must hold after the step or tick its loop is handling (a loop handles the Ready inside
   * the call; a message stepped while that Ready is out comes after it, so this is judged first).
   */
  pendingAfter: (() => void) | undefined;
  /** With `loops`: what its loop must do with its timers (loop_rules.ts). */
  judge: LoopJudge | undefined;
}

/**
 * The initial tick advance members' loops make (etcd's --initial-election-tick-advance): none, etcd's (the
 * election ticks less two, once more than one peer is up), or etcd's with a fresh cluster's first member
 * advancing until it campaigns (etcdsim's process members: the first candidate).
 */
export type LoopAdvance = 'off' | 'etcd' | 'first';

/** Ticks a removed member still runs, unheard by its peers (etcd 3.4 stops it about 10 ticks later). */
const REMOVED_RUNS_TICKS = 10;

export interface NetFaults {
  drop: number;
  duplicate: number;
  maxDelayMs: number;
}

export class SimNetwork {
  readonly clock = new VirtualClock();
  readonly checker = new RaftNodeChecker();
  /** What each single step must do (pace, vote counting, read confirmation): step_rules.ts. */
  readonly rules: StepRules;
  readonly members = new Map<NodeId, Member>();
  /** Each member's side; messages cross only within a side. */
  private side = new Map<NodeId, number>();
  faults: NetFaults = { drop: 0, duplicate: 0, maxDelayMs: 3 };
  /** Values some member applied (acknowledged to a client), with the index they landed at. */
  readonly acked = new Map<string, number>();
  /** Reads confirmed: the index answered and the highest acknowledged index at the time it was asked. */
  readonly reads: { readonly at: number; readonly floor: number; readonly member: NodeId }[] = [];
  private readonly pendingReads = new Map<string, number>();
  /** The member each read was asked at: its ReadState must come there (a leader answers a follower's read to it). */
  private readonly askedAt = new Map<string, NodeId>();
  /** ReadStates handed to members, per read context. */
  readonly readAnswers = new Map<string, number>();
  /** Snapshots members received from a leader and installed. */
  snapshotsInstalled = 0;
  /** Members removed from the cluster: stopped, never restarted. */
  readonly gone = new Set<NodeId>();
  /** Snapshot messages still to lose, whatever the faults (a MsgSnap lost must be sent again). */
  loseSnapshots = 0;
  private readonly net: SimRandom;
  private seq = 0;
  /** Messages sent at one virtual instant (a livelock sends without end). */
  private sentAt = -1;
  private sentNow = 0;
  /**
   * The chance that a client's proposal reaches the leader while it handles a Ready (between ready() and
   * advance()): etcd's node goroutine takes proposals while a Ready is out, so what advance() marks stable
   * must be what that Ready carried, not what the log holds by then.
   */
  proposeMidReady = 0;
  /**
   * The chance that a message on its way to a member arrives while it handles a Ready: etcd's node steps
   * messages while a Ready is out, so advance() must mark stable, applied and installed only what that
   * Ready carried (a snapshot or a truncation that arrived meanwhile waits for the next one).
   */
  stepMidReady = 0;
  /** A client's call into a member's loop is under way (propose, read, conf change, transfer, lever). */
  private inCall = false;
  /** Every first member exists (loops start then). */
  private booted = false;
  /** Proposals taken while a Ready was out (proposeMidReady). */
  private midProposed = 0;
  /**
   * Mid-Ready proposals left in the current heartbeat interval (and which interval it is). Each proposal
   * brings Readies (its appends' answers: one per entry and follower with one-entry appends), each a chance
   * of another proposal, so unbounded the chance feeds itself: five followers at 0.2 grew the leader's log
   * without end (raft_node seed -499261700, 1-entry appends).
   */
  private midBudget = { interval: -1, left: 0 };
  /** What the members send while a lever's effects are handled (checked against what the lever asked). */
  private sentLog: Message[] | undefined;
  /** Messages on their way, per member (a member handling a Ready may take one early: stepMidReady). */
  private readonly inflight = new Map<NodeId, Set<() => boolean>>();

  constructor(
    readonly seed: number,
    readonly ids: readonly NodeId[],
    private readonly snapshotEvery = 20,
    /** A second disk per member that sees every save too (a WAL under test). */
    private readonly tee?: (id: NodeId, initial: RaftStorage) => RaftPersistence,
    /** etcd's --pre-vote (false by default in etcd 3.4, true from 3.5). */
    private readonly preVote = true,
    /**
     * Each member runs in a RaftLoop (src/raft/loop.ts, etcd's raftNode goroutine, as the cluster's and a
     * process member's do), ticked by its own ticker on the network's clock: the loop persists, sends,
     * applies, snapshots past `snapshotEvery` and advances; the network judges what it handed over.
     */
    private readonly loops = false,
    private readonly advance: LoopAdvance = 'off',
    /**
     * The most entries one append carries (etcd's MaxSizePerMsg, counted in entries): small ones make a
     * member's catch-up take several appends, each acknowledged on its own.
     */
    private readonly maxEntriesPerMessage = 8,
    /** How long each loop's advance looks for peers (etcd's 5 s by default; shorter, its end is reached cheaply). */
    private readonly advanceWaitMs?: number,
  ) {
    this.rules = new StepRules(ELECTION_TICKS, preVote);
    this.net = new SimRandom(seed).fork('net');
    const disk0 = bootstrapStorage(ids.map((id) => ({ id, context: contextOf(id) })));
    for (const id of ids) this.start(id, disk0);
    // Loops start once every first member exists: a loop applies the bootstrap's conf changes at once.
    this.booted = true;
    if (this.loops) for (const m of [...this.members.values()]) this.startLoop(m);
  }

  private start(id: NodeId, disk0: RaftStorage): void {
    const disk = new MemoryStorage(disk0);
    const m: Member = { id, node: this.newNode(id, disk, 0), disk, tee: this.tee?.(id, disk0), alive: true, incarnation: 0, values: [], savedSnapshot: disk0.snapshot.index, soft: { leader: NONE, role: 'follower' }, stopIn: undefined, loop: undefined, removedItself: false, phase: (this.members.size % (HEARTBEAT_MS - 1)) + 1, pendingAfter: undefined, judge: undefined };
    this.side.set(id, 0);
    if (!this.loops) this.clock.every(HEARTBEAT_MS, () => this.tick(m, () => m.node.tick()), { phase: m.phase });
    this.members.set(id, m);
    this.rules.restarted(id);
    // (The others find a member added at their next poll: a start here is inside another member's apply.)
    if (this.loops && this.booted) this.startLoop(m);
  }

  /**
   * The member's node in a RaftLoop of its own, as etcd's raftNode runs it: its ticker on the network's clock
   * (the network judges each tick as its own), a Ready's entries and hard state on disk before its messages
   * leave, committed entries and a received snapshot applied, reads answered, a snapshot once more than
   * `snapshotEvery` entries were applied since the last, keeping 5 (etcd's SnapshotCatchUpEntries).
   */
  private startLoop(m: Member): void {
    const node = m.node;
    const advance = this.advanceOf(m);
    const judge = new LoopJudge(`member ${m.id}`, node, advance, () => this.activePeers(m.id), () => this.rules.beforeTick(node));
    m.judge = judge;
    // Every node tick is judged: from its ticker (the network's tick), or from the advance (the judge's).
    const tickNode = node.tick.bind(node);
    node.tick = () => {
      judge.nodeTicked();
      tickNode();
    };
    const ticker = (fn: () => void) => () =>
      this.tick(m, () => {
        judge.inTicker = true;
        try {
          fn();
        } finally {
          judge.inTicker = false;
        }
      });
    const clock: Clock = {
      now: () => this.clock.now(),
      setTimer: (at, fn, name) => this.clock.setTimer(at, fn, name),
      cancel: (h) => {
        judge.cancelled(h);
        return this.clock.cancel(h);
      },
      every: (ms, fn, opts) => {
        const h = this.clock.every(ms, judge.every(ms, opts?.name, fn, ticker), { ...opts, phase: m.phase });
        judge.registered(h, opts?.name);
        return h;
      },
    };
    let firstBefore = node.log.firstIndex();
    const loop = new RaftLoop({
      node,
      clock,
      heartbeatMs: HEARTBEAT_MS,
      persistence: {
        save: (rd) => {
          this.rules.ready(node, rd);
          m.disk.save(rd);
          m.tee?.save(rd);
          firstBefore = node.log.firstIndex();
          if (rd.snapshot !== undefined) {
            m.savedSnapshot = rd.snapshot.index;
            this.snapshotsInstalled++;
          }
          this.midReady(m);
        },
        snapshotted: (s) => {
          // etcd's check: more than --snapshot-count entries applied since the last snapshot; at the applied index.
          const boundary = Math.max(firstBefore - 1, s.index - 5);
          if (s.index !== node.log.applied || s.index - m.savedSnapshot <= this.snapshotEvery || node.log.firstIndex() !== boundary + 1) {
            throw new Error(`member ${m.id}'s loop snapshotted at ${s.index} (applied ${node.log.applied}, last snapshot ${m.savedSnapshot}, every ${this.snapshotEvery}), its log then starting at ${node.log.firstIndex()}, expected ${boundary + 1}`);
          }
          m.disk.snapshotted(s);
          m.tee?.snapshotted(s);
          m.savedSnapshot = s.index;
        },
      },
      send: (msg) => this.send(msg),
      apply: (entries, snap) => {
        if (snap !== undefined) m.values = JSON.parse(fromUtf8.decode(snap.data)) as string[];
        for (const e of entries) this.apply(m, e);
        for (const e of entries) {
          if (e.conf === undefined) continue;
          this.confApplied(e.conf);
          this.rules.confApplied(node, e.conf);
          if (e.conf.type === 'remove' && e.conf.id === m.id) m.removedItself = true;
        }
      },
      snapshotData: () => utf8.encode(JSON.stringify(m.values)),
      snapshotCount: this.snapshotEvery,
      catchUpEntries: 5,
      onReadState: (r) => this.readState(m, r),
      onSoftState: (leader, role) => {
        m.soft = { leader, role };
      },
      ...(advance === undefined ? {} : { initialTickAdvance: { ...advance, activePeers: () => this.activePeers(m.id) } }),
      check: {
        checker: this.checker,
        violated: (v) => {
          throw new Error(`member ${m.id}'s loop: ${JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? String(x) : x))}`);
        },
      },
    });
    m.loop = loop;
    loop.start();
    judge.started();
    this.process(m);
  }

  /** The advance `m`'s loop makes as it starts (the first member's first start only is a fresh cluster's first candidate). */
  private advanceOf(m: Member): AdvanceSpec | undefined {
    if (this.advance === 'off') return undefined;
    const wait = this.advanceWaitMs === undefined ? {} : { waitMs: this.advanceWaitMs };
    if (this.advance === 'first' && m.incarnation === 0 && m.id === this.ids[0] && this.ids.length > 1) return { ticks: 2 * ELECTION_TICKS, untilCampaign: true, ...wait };
    return { ticks: ELECTION_TICKS - 2, ...wait };
  }

  /** The peers `id` has a connection to (rafthttp's active peers): the others up, not removed, on its side. */
  private activePeers(id: NodeId): number {
    let n = 0;
    for (const x of this.members.values()) if (x.id !== id && x.alive && !this.gone.has(x.id) && this.side.get(x.id) === this.side.get(id)) n++;
    return n;
  }

  /** Members came up, went down or were cut off: each loop looks at its peers at once (the judge checks what it did). */
  private peersChanged(): void {
    if (!this.loops) return;
    for (const m of this.members.values()) if (m.alive && m.loop !== undefined) m.judge!.peersChanged(() => m.loop!.peersChanged());
  }

  /** `m`'s loop stops (its member crashed, or was removed and ran out its ticks): it must keep no timer. */
  private stopLoop(m: Member): void {
    m.loop?.stop();
    m.judge?.stopped();
  }

  /**
   * A conf change was applied somewhere: an added member starts empty, a removed one stops for good. An
   * add carries the context it was proposed with (etcd's member name and peer URLs), bootstrap's too.
   */
  private confApplied(cc: ConfChange): void {
    if (cc.type !== 'remove' && fromUtf8.decode(cc.context) !== fromUtf8.decode(contextOf(cc.id))) {
      throw new Error(`member ${cc.id}'s conf change (${cc.type}) was applied with context '${fromUtf8.decode(cc.context)}'`);
    }
    if ((cc.type === 'add' || cc.type === 'addLearner') && !this.members.has(cc.id)) {
      this.start(cc.id, { hardState: { term: 0n, vote: NONE, commit: 0 }, snapshot: { index: 0, term: 0n, conf: { voters: [], learners: [] }, data: new Uint8Array(0) }, entries: [] });
    } else if (cc.type === 'remove' && !this.gone.has(cc.id)) {
      // Its peers stop listening at once; it runs on a few ticks (what it does there is judged).
      this.gone.add(cc.id);
      const m = this.members.get(cc.id);
      if (m !== undefined) m.stopIn = REMOVED_RUNS_TICKS;
    }
  }

  private newNode(id: NodeId, disk: MemoryStorage, incarnation: number): RaftNode {
    return new RaftNode(
      { id, random: new SimRandom(this.seed).fork(`node-${id}-${incarnation}`), electionTicks: ELECTION_TICKS, preVote: this.preVote, checkQuorum: true, maxEntriesPerMessage: this.maxEntriesPerMessage },
      disk.storage(),
    );
  }

  /** A member's tick (`tick` ticks its node, or its loop). */
  private tick(m: Member, tick: () => void): void {
    if (m.stopIn !== undefined && --m.stopIn <= 0) {
      m.alive = false;
      this.stopLoop(m);
    }
    if (!m.alive) return;
    const after = this.rules.beforeTick(m.node);
    if (m.loop === undefined) {
      tick();
      this.process(m);
      after();
      return;
    }
    m.pendingAfter = after;
    tick();
    this.flush(m);
    this.process(m);
  }

  /** Judges what must hold after the step or tick a member's loop handled (once). */
  private flush(m: Member): void {
    const after = m.pendingAfter;
    m.pendingAfter = undefined;
    after?.();
  }

  /** A proposal or a message that reaches a member while it handles a Ready (proposeMidReady, stepMidReady). */
  private midReady(m: Member): void {
    // The step or tick whose Ready this is has done its part: judge it before anything else reaches the node.
    if (m.loop !== undefined) this.flush(m);
    const interval = Math.floor(this.clock.now() / HEARTBEAT_MS);
    if (this.midBudget.interval !== interval) this.midBudget = { interval, left: MID_READY_PROPOSALS_PER_HEARTBEAT };
    if (this.proposeMidReady > 0 && m.node.role === 'leader' && this.midBudget.left > 0 && this.net.nextBool(this.proposeMidReady)) {
      this.midBudget.left--;
      const v = utf8.encode(`v${this.seq++}`);
      if (m.loop !== undefined ? m.loop.propose(v) : m.node.propose(v)) this.midProposed++;
    }
    // A loop handling the Ready of a client's call (a proposal, a lever) takes no message meanwhile here: the
    // call's own checks judge the node right after it.
    if (this.stepMidReady > 0 && !this.inCall && this.net.nextBool(this.stepMidReady)) {
      const early = this.inflight.get(m.id)?.values().next().value;
      if (early !== undefined) {
        this.rules.midReady = m.id;
        try {
          early();
        } finally {
          this.rules.midReady = undefined;
        }
      }
    }
  }

  private readState(m: Member, r: ReadState): void {
    const asker = this.askedAt.get(r.context);
    if (asker !== undefined && asker !== m.id) throw new Error(`read ${r.context}, asked at member ${asker}, was answered at member ${m.id}`);
    this.readAnswers.set(r.context, (this.readAnswers.get(r.context) ?? 0) + 1);
    const floor = this.pendingReads.get(r.context);
    if (floor !== undefined) this.reads.push({ at: r.index, floor, member: m.id });
    this.pendingReads.delete(r.context);
  }

  /**
   * Handles a member's Ready as etcd's raftNode does: persist, send, apply, advance (with `loops`, its loop
   * did), then judges what the member shows.
   */
  private process(m: Member): void {
    if (m.loop !== undefined) {
      this.settle(m);
      return;
    }
    for (let rounds = 0; m.node.hasReady(); rounds++) {
      if (rounds > 1000) throw new Error(`member ${m.id}: a Ready every round, never settling`);
      const rd = m.node.ready();
      this.rules.ready(m.node, rd);
      m.disk.save(rd);
      m.tee?.save(rd);
      if (rd.softState !== undefined) m.soft = { ...rd.softState };
      if (rd.snapshot !== undefined) {
        m.savedSnapshot = rd.snapshot.index;
        m.values = JSON.parse(fromUtf8.decode(rd.snapshot.data)) as string[];
        this.snapshotsInstalled++;
      }
      for (const msg of rd.messages) this.send(msg);
      this.midReady(m);
      for (const e of rd.committedEntries) this.apply(m, e);
      this.checker.appliedEntries(m.id, rd.committedEntries);
      for (const e of rd.committedEntries) if (e.conf !== undefined) this.confApplied(e.conf);
      for (const r of rd.readStates) this.readState(m, r);
      const confBefore = m.node.conf;
      m.node.advance(rd);
      for (const e of rd.committedEntries) if (e.conf !== undefined) this.rules.confApplied(m.node, e.conf);
      if (rd.snapshot === undefined) this.checkConf(m, confBefore, rd.committedEntries);
      if (rd.committedEntries.some((e) => e.conf?.type === 'remove' && e.conf.id === m.id)) m.removedItself = true;
      if (!m.alive) break;
      if (m.node.log.applied - m.node.log.snapshot.index >= this.snapshotEvery) this.snapshot(m, 5);
    }
    this.settle(m);
  }

  /** What must hold once a member handled its Readies. */
  private settle(m: Member): void {
    this.rules.settled(m.node);
    this.checker.check([...this.members.values()].filter((x) => x.alive).map((x) => x.node));
    if (!m.alive) return;
    this.checkViews(m);
    // A member that applied its own removal knows it (it takes no proposal) and leads no more.
    if (m.removedItself && (!m.node.removed || m.node.role !== 'follower')) {
      throw new Error(`member ${m.id} applied its own removal, yet it is ${m.node.role}${m.node.removed ? '' : ' and not marked removed'}`);
    }
    // A loop snapshots as soon as more than --snapshot-count entries were applied since the last snapshot.
    if (m.loop !== undefined && m.node.log.applied - m.node.log.snapshot.index > this.snapshotEvery) {
      throw new Error(`member ${m.id}'s loop applied up to ${m.node.log.applied} and kept its snapshot at ${m.node.log.snapshot.index} (every ${this.snapshotEvery})`);
    }
  }

  /**
   * The configuration after applying conf changes, against a naive reading of them: an add makes a voter
   * (a learner promoted), a learner is added only when no voter, a removal leaves neither.
   */
  private checkConf(m: Member, before: ConfState, applied: readonly Entry[]): void {
    const voters = new Set(before.voters);
    const learners = new Set(before.learners);
    for (const e of applied) {
      const cc = e.conf;
      if (cc === undefined) continue;
      if (cc.type === 'add') {
        learners.delete(cc.id);
        voters.add(cc.id);
      } else if (cc.type === 'addLearner' && !voters.has(cc.id)) learners.add(cc.id);
      else if (cc.type === 'remove') {
        voters.delete(cc.id);
        learners.delete(cc.id);
      }
    }
    const now = m.node.conf;
    const same = (a: ReadonlySet<NodeId>, b: readonly NodeId[]): boolean => a.size === b.length && b.every((id) => a.has(id));
    if (!same(voters, now.voters) || !same(learners, now.learners)) throw new Error(`member ${m.id}: conf changes applied gave voters ${String(now.voters)} learners ${String(now.learners)}, expected ${String([...voters])} and ${String([...learners])}`);
  }

  /**
   * What a member shows of its node once its Readies are handled: no Ready left behind, the leader and role
   * the Readies said, a status that is the node's own state (the vote as persisted), and, from a leader, a
   * match index per member of its term that the member's log reaches (a follower acknowledges only what it
   * persisted).
   */
  private checkViews(m: Member): void {
    const n = m.node;
    // hasReady() said nothing is left: a Ready now must carry nothing (raft's HasReady and containsUpdates).
    const rd = n.ready();
    const left = rd.messages.length + rd.readStates.length + rd.entries.length + rd.committedEntries.length;
    if (left > 0 || rd.snapshot !== undefined || rd.hardState !== undefined || rd.softState !== undefined) throw new Error(`member ${m.id}: hasReady() said no, but a Ready holds ${JSON.stringify(Object.keys(rd))} (${left} items)`);
    if (m.soft.leader !== n.leader || m.soft.role !== n.role) throw new Error(`member ${m.id}: its Readies said leader ${m.soft.leader} as ${m.soft.role}; it is ${n.role} under ${n.leader}`);
    const st = n.status();
    const disk = m.disk.storage();
    // Its latest snapshot is on its disk once its Readies are handled, one it made or one a leader sent (etcd
    // saves it, then compacts its raft log).
    if (disk.snapshot.index !== n.log.snapshot.index) throw new Error(`member ${m.id}: its snapshot is at ${n.log.snapshot.index}, its disk's at ${disk.snapshot.index}`);
    // Its hard state is on disk once its Readies are handled (Raft persists term, vote and commit before answering).
    const hard = disk.hardState;
    const own = { id: m.id, role: n.role, term: hard.term, vote: hard.vote, leader: n.leader, commit: hard.commit, applied: n.log.applied, lastIndex: n.log.lastIndex() };
    for (const [k, v] of Object.entries(own)) if (st[k as keyof typeof own] !== v) throw new Error(`member ${m.id}: status says ${k} ${String(st[k as keyof typeof own])}, its node and disk ${String(v)}`);
    const conf = n.conf;
    if (String(st.conf.voters) !== String(conf.voters) || String(st.conf.learners) !== String(conf.learners)) throw new Error(`member ${m.id}: status shows another configuration`);
    // A leader tracks every member of its configuration, itself as holding its whole log.
    if (n.role === 'leader') {
      for (const id of [...conf.voters, ...conf.learners]) if (n.matchOf(id) === undefined) throw new Error(`leader ${m.id} tracks no progress of member ${id}`);
      if (n.matchOf(m.id) !== n.log.lastIndex()) throw new Error(`leader ${m.id} counts itself as holding ${n.matchOf(m.id)}; its log ends at ${n.log.lastIndex()}`);
    }
    for (const [id, other] of this.members) {
      const match = n.matchOf(id);
      if (n.role !== 'leader') {
        if (match !== undefined) throw new Error(`member ${m.id}, ${n.role}, tells a match index for ${id}`);
      } else if (match !== undefined && other.node.term === n.term && match > other.node.log.lastIndex()) {
        throw new Error(`leader ${m.id} counts ${id} as holding ${match}; its log ends at ${other.node.log.lastIndex()}`);
      }
    }
  }

  /** The member snapshots its state machine at its applied index and compacts its log but for `keep` entries. */
  private snapshot(m: Member, keep: number): void {
    const log = m.node.log;
    const applied = log.applied;
    if (applied === log.snapshot.index) return;
    const before = [...log.held()];
    const boundary = Math.max(log.firstIndex() - 1, applied - keep);
    m.node.compact(applied, utf8.encode(JSON.stringify(m.values)), keep);
    // etcd keeps SnapshotCatchUpEntries before the snapshot's point for slow followers: exactly the
    // entries after `applied - keep` stay (or all, when the log starts later already), none moved.
    const kept = before.filter((e) => e.index > boundary);
    const held = log.held();
    if (log.firstIndex() !== boundary + 1 || held.length !== kept.length || held.some((e, i) => e !== kept[i])) {
      throw new Error(`member ${m.id} compacted at ${applied} keeping ${keep}: log starts at ${log.firstIndex()} with ${held.length} entries, expected ${boundary + 1} with ${kept.length}`);
    }
    m.disk.snapshotted(m.node.log.snapshot);
    m.savedSnapshot = m.node.log.snapshot.index;
    m.tee?.snapshotted(m.node.log.snapshot);
    this.checker.check([m.node]);
  }

  private apply(m: Member, e: Entry): void {
    if (e.type !== 'normal' || e.data.length === 0) return;
    const v = fromUtf8.decode(e.data);
    m.values.push(v);
    if (!this.acked.has(v)) this.acked.set(v, e.index);
  }

  private send(msg: Message): void {
    this.sentLog?.push(msg);
    // A member sends only to a member: never to none (raft's None: no leader known) nor to itself (a request
    // passed on to the leader, of term 0, keeps the member it came from, or names the transferee, instead).
    if (msg.to === NONE || (msg.to === msg.from && msg.term !== 0n)) throw new Error(`member ${msg.from} sent ${msg.type} to ${msg.to === NONE ? 'none' : 'itself'}`);
    if (this.clock.now() !== this.sentAt) {
      this.sentAt = this.clock.now();
      this.sentNow = 0;
    }
    if (++this.sentNow > 20_000) throw new Error(`a message storm at ${this.sentAt} ms: ${msg.type} ${msg.from}→${msg.to} ${JSON.stringify(msg, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}`);
    if (this.side.get(msg.from) !== this.side.get(msg.to) || this.net.nextBool(this.faults.drop)) return;
    if (msg.type === 'MsgSnap' && this.loseSnapshots > 0) {
      this.loseSnapshots--;
      return;
    }
    // Raft's own messages are idempotent, a forwarded proposal is not (etcd's TCP streams never repeat one).
    const copies = msg.type !== 'MsgProp' && this.net.nextBool(this.faults.duplicate) ? 2 : 1;
    for (let c = 0; c < copies; c++) {
      const to = this.members.get(msg.to);
      if (to === undefined) return;
      const inc = to.incarnation;
      let box = this.inflight.get(msg.to);
      if (box === undefined) this.inflight.set(msg.to, (box = new Set()));
      const inbox = box;
      const deliver = (): boolean => {
        inbox.delete(deliver);
        // A removed member's peers no longer listen to it.
        if (!to.alive && to.loop !== undefined && to.incarnation === inc) this.stepStopped(to, msg);
        if (!to.alive || to.incarnation !== inc || this.gone.has(msg.from) || this.side.get(msg.from) !== this.side.get(msg.to)) return false;
        const after = this.rules.beforeStep(to.node, msg);
        if (to.loop !== undefined) {
          to.pendingAfter = after;
          to.loop.step(msg);
          this.flush(to);
        } else {
          to.node.step(msg);
          after();
        }
        return true;
      };
      inbox.add(deliver);
      this.clock.setTimer(this.clock.now() + this.net.nextInt(0, this.faults.maxDelayMs), () => {
        if (inbox.has(deliver) && deliver()) this.process(to);
      });
    }
  }

  /** A message that reaches a member whose loop stopped (it crashed): the loop steps nothing, sends nothing. */
  private stepStopped(m: Member, msg: Message): void {
    const n = m.node;
    const before = JSON.stringify(n.status(), (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
    const sent: Message[] = [];
    this.sentLog = sent;
    m.loop!.step(msg);
    m.loop!.tick();
    m.loop!.peersChanged();
    this.sentLog = undefined;
    const after = JSON.stringify(n.status(), (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
    if (after !== before || sent.length > 0) throw new Error(`member ${m.id}'s loop, stopped, stepped ${msg.type}: ${before} → ${after}, sent ${sent.length}`);
  }

  // ---- what a test does ----

  /** Proposes a fresh value at `id`; returns it. */
  propose(id: NodeId): string {
    const v = `v${this.seq++}`;
    const m = this.members.get(id)!;
    if (!m.alive) return v;
    const check = this.rules.beforePropose(m.node, false);
    const mid = this.midProposed;
    check(m.loop !== undefined ? this.call(() => m.loop!.propose(utf8.encode(v))) : m.node.propose(utf8.encode(v)), this.midProposed - mid);
    this.process(m);
    return v;
  }

  /**
   * Asks `id` for a read index; its answer must cover every value acknowledged so far. With `resend`, asks
   * again for a read still unanswered, under its context (etcd's server retries a ReadIndex with its
   * request ID until the leader answers). Returns the read's context.
   */
  read(id: NodeId, resend?: string): string {
    const m = this.members.get(id)!;
    const ctx = resend ?? `r${this.seq++}`;
    if (!m.alive) return ctx;
    this.askedAt.set(ctx, id);
    if (resend === undefined) {
      let floor = 0;
      for (const i of this.acked.values()) floor = Math.max(floor, i);
      this.pendingReads.set(ctx, floor);
    }
    // Dropped at once (false) exactly when raft drops it: a leader that has not committed an entry of its
    // term yet (etcd 3.4), a member that knows no leader; the server then fails the read at once.
    const n = m.node;
    const takes = n.role === 'leader' ? n.log.term(n.log.committed) === n.term : n.leader !== NONE;
    this.rules.beforeRead(n, ctx);
    const ok = m.loop !== undefined ? this.call(() => m.loop!.readIndex(ctx)) : n.readIndex(ctx);
    if (ok !== takes) throw new Error(`member ${id}, ${n.role} under ${n.leader}: readIndex said ${ok}, yet raft ${takes ? 'takes' : 'drops'} the read`);
    this.process(m);
    return ctx;
  }

  /** `id` proposes a membership change (a follower forwards it); false when it was dropped at once. */
  changeMembership(id: NodeId, cc: ConfChange): boolean {
    const m = this.members.get(id)!;
    if (!m.alive) return false;
    const check = this.rules.beforePropose(m.node, true);
    const conf = cc.type === 'remove' ? cc : { ...cc, context: contextOf(cc.id) };
    const mid = this.midProposed;
    const ok = m.loop !== undefined ? this.call(() => m.loop!.proposeConfChange(conf, new Uint8Array(0))) : m.node.proposeConfChange(conf);
    check(ok, this.midProposed - mid);
    this.process(m);
    return ok;
  }

  /** Runs `f` on a member's node (through its loop, which handles what it produced, with `loops`). */
  private act<T>(m: Member, f: (n: RaftNode) => T): T {
    return m.loop !== undefined ? this.call(() => m.loop!.act(f)) : f(m.node);
  }

  /** A client's call into a loop (see inCall). */
  private call<T>(f: () => T): T {
    this.inCall = true;
    try {
      return f();
    } finally {
      this.inCall = false;
    }
  }

  /** The members removed that still run their last ticks (etcd stops one a little after it applies its removal). */
  removedRunning(): NodeId[] {
    return [...this.gone].filter((id) => this.members.get(id)?.alive === true);
  }

  /** The members not removed, in the order they joined. */
  present(): NodeId[] {
    return [...this.members.keys()].filter((id) => !this.gone.has(id));
  }

  transfer(id: NodeId, to: NodeId): void {
    const m = this.members.get(id)!;
    if (!m.alive) return;
    this.rules.transferAsked(m.node, to);
    this.act(m, (n) => n.transferLeadership(to));
    this.process(m);
  }

  /**
   * The cluster's levers on one node (src/cluster/raft_group.ts): a forced election (`campaignNow`, as the
   * cluster's first election and an operator's), a leader's snapshot sent now, a leader's heartbeat to a
   * member whose connection came back. Asked of any member: a node that may not do it does nothing (a
   * learner or a removed member never campaigns: the step rules judge it; only a leader sends, and only to
   * a member it tracks: checked here against its return).
   */
  lever(id: NodeId, kind: 'campaignNow' | 'snapshotTo' | 'heartbeatTo', to: NodeId): void {
    const m = this.members.get(id)!;
    if (!m.alive) return;
    const n = m.node;
    const after = this.rules.beforeLever(n);
    const { role, term } = n;
    const tracked = role === 'leader' && to !== id && [...n.conf.voters, ...n.conf.learners].includes(to);
    const sent: Message[] = [];
    this.sentLog = sent;
    if (kind === 'campaignNow') {
      // A voter of its own configuration campaigns for the next term at once (a sole voter wins it); any other does nothing.
      const voter = n.conf.voters.includes(id) && !n.removed;
      this.act(m, () => n.campaignNow());
      const ok = voter ? n.term === term + 1n && (n.role === 'candidate' || n.role === 'leader') : n.term === term && n.role === role;
      if (!ok) throw new Error(`member ${id}, ${role} at term ${term}${voter ? '' : ', no voter'}: a forced election left it ${n.role} at term ${n.term}`);
    } else if (kind === 'heartbeatTo') this.act(m, () => n.heartbeatTo(to));
    else {
      // An operator's snapshot is not the node's own retry: the rule against resending one unprobed does not apply.
      this.rules.forgetSent(id, to);
      const ok = this.act(m, () => n.sendSnapshotTo(to));
      if (ok !== tracked) throw new Error(`member ${id}, ${role}: sendSnapshotTo(${to}) said ${ok}, yet it ${tracked ? 'leads and tracks' : 'may not send to'} ${to}`);
    }
    after();
    this.process(m);
    this.sentLog = undefined;
    if (kind === 'campaignNow') {
      // Past PreVote and the leader lease, as a transfer's campaign (raft's campaignTransfer): votes asked at once, marked so.
      const asks = sent.filter((x) => x.from === id && (x.type === 'MsgVote' || x.type === 'MsgPreVote'));
      if (asks.some((x) => x.type !== 'MsgVote' || x.term !== term + 1n || x.context !== 'transfer')) {
        throw new Error(`member ${id}: a forced election asked ${asks.map((x) => `${x.type} of term ${x.term} (${x.context ?? 'no context'})`).join(', ')}, not votes of term ${term + 1n} past the lease`);
      }
    } else {
      const type = kind === 'heartbeatTo' ? 'MsgHeartbeat' : 'MsgSnap';
      const n2 = sent.filter((x) => x.from === id && x.to === to && x.type === type).length;
      if (n2 !== (tracked ? 1 : 0)) throw new Error(`member ${id}, ${role}: ${kind}(${to}) sent ${n2} ${type}, expected ${tracked ? 1 : 0}`);
    }
  }


  /** `id` snapshots now, whatever --snapshot-count says, keeping `keep` entries (a compaction at any point). */
  compact(id: NodeId, keep: number): void {
    const m = this.members.get(id)!;
    if (m.alive) this.snapshot(m, keep);
  }

  crash(id: NodeId): void {
    const m = this.members.get(id)!;
    m.alive = false;
    this.stopLoop(m);
    this.peersChanged();
  }

  restart(id: NodeId): void {
    const m = this.members.get(id)!;
    if (m.alive || this.gone.has(id)) return;
    m.incarnation++;
    m.node = this.newNode(id, m.disk, m.incarnation);
    m.soft = { leader: NONE, role: 'follower' };
    // A member restarts with the term, vote and commit index it persisted (raft's HardState).
    const { hardState } = m.disk.storage();
    const st = m.node.status();
    if (st.term !== hardState.term || st.vote !== hardState.vote || st.commit !== hardState.commit) {
      throw new Error(`member ${id} restarted at term ${st.term}, vote ${st.vote}, commit ${st.commit}; it persisted ${hardState.term}, ${hardState.vote}, ${hardState.commit}`);
    }
    // ...and from the last snapshot it saved (one it made, or one a leader sent), not an older one.
    if (m.node.log.snapshot.index !== m.savedSnapshot) throw new Error(`member ${id} restarted from its snapshot at ${m.node.log.snapshot.index}; it saved one at ${m.savedSnapshot}`);
    const snap = m.disk.storage().snapshot.data;
    m.values = snap.length === 0 ? [] : (JSON.parse(fromUtf8.decode(snap)) as string[]);
    m.alive = true;
    this.checker.restarted(id);
    this.rules.restarted(id);
    if (this.loops) this.startLoop(m);
    this.peersChanged();
  }

  partition(sides: ReadonlyMap<NodeId, number>): void {
    for (const id of this.members.keys()) this.side.set(id, sides.get(id) ?? 0);
    this.peersChanged();
  }

  heal(): void {
    this.partition(new Map());
  }

  run(ms: number): void {
    this.clock.advance(ms);
  }

  leaders(): NodeId[] {
    return [...this.members.values()].filter((m) => m.alive && m.node.role === 'leader').map((m) => m.id);
  }

  /** Runs until `done()` or `limitMs` of virtual time passed; returns whether it got there. */
  runUntil(done: () => boolean, limitMs: number): boolean {
    for (let t = 0; t < limitMs; t += HEARTBEAT_MS) {
      if (done()) return true;
      this.run(HEARTBEAT_MS);
    }
    return done();
  }
}
