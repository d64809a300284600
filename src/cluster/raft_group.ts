/**
 * etcd's Raft in a simulated cluster: every member runs its own Raft node and loop (src/raft, the same
 * model a member in a process of its own runs), persisting to a disk of its own (what survives SIGKILL)
 * and talking to the others over the cluster's network (peer_network.ts, where partitions, pauses and
 * crashes lose messages). The cluster's one ticker ticks every running member's node in turn, once per
 * heartbeat interval, as etcd's raftNode ticks its node; after each step the network delivers everything
 * sent within the same instant, and members apply what their nodes committed (apply.ts).
 *
 * Entries carry bytes, as etcd's do; in one process the bytes only name the request (a sequence number),
 * whose body — how every member applies it — the group keeps beside them until every member applied it.
 * Snapshots likewise: their bytes name the member's state taken at the snapshot's index (memberImage).
 *
 * What etcd observes of a fresh cluster is kept: its log holds one conf change per member, the first
 * leader's empty entry, one attribute publish per member and the cluster version before the first request
 * (index 2n+2, observed on 3.4.23), and the first member wins the first election, at term 2. The entries
 * before the first leader's are one snapshot here (index 2n+1, term 1), and the first election is held at
 * once: member 0 campaigns as etcd's first candidate does after its initial tick advance.
 */
import { MemoryStorage, NONE, RaftLoop, RaftNode, type ConfChange, type Entry, type Message, type NodeId, type ReadState, type Role, type Snapshot } from '../raft/index.js';
import type { Clock, SimRandom } from '../sim/index.js';
import { installImage, memberImage, type EntryBody, type MemberImage, type MemberState, type RaftRole } from './member_state.js';
import { PeerNetwork } from './peer_network.js';

/** What Raft's steps mean for the rest of the cluster. */
export interface RaftEffects {
  trace(event: string): void;
  /** `m`'s node committed entries `m` is to apply: its apply may be due. */
  committed(m: MemberState): void;
  /** `m`'s state was replaced by a snapshot: what it was about to apply is moot. */
  snapshotInstalled(m: MemberState): void;
  /** `m`'s leader became a different member (etcd 3.4's leaderChanged notification). */
  leaderChanged(m: MemberState): void;
  /** `m` now follows a leader it did not before, or leads: what it proposed without one goes there. */
  leaderKnown(m: MemberState): void;
  /** `l` won an election: its lessor takes over the leases. */
  leads(l: MemberState): void;
  /** `m` stopped leading: its lessor hands nothing over any more. */
  demoted(m: MemberState): void;
  /** A leader's own step at each tick, before its node's (the lease hand-off of a paused leader). */
  leaderTick(l: MemberState): void;
  /** A leader appended these entries to its log (proposals get their index). */
  appended(entries: readonly Entry[]): void;
  /** `m`'s node confirmed a read (ReadIndex). */
  readState(m: MemberState, r: ReadState): void;
  /** Applies what became due (apply.ts). */
  pump(): void;
  /** A member refused `m`'s message: it removed `m` from the cluster (etcd's rafthttp answers so), `m` stops. */
  removedFromCluster(m: MemberState): void;
}

/** Timing and log settings, etcd's flags. */
export interface RaftOptions {
  readonly clock: Clock;
  readonly random: SimRandom;
  readonly preVote: boolean;
  readonly heartbeatMs: number;
  readonly electionTimeoutMs: number;
  readonly snapshotCount: number;
  readonly snapshotCatchUpEntries: number;
}

/** The members' Raft nodes, the network between them, and the entries' and snapshots' bodies. */
export class RaftGroup {
  readonly network: PeerNetwork;
  /** Called with every member's committed entries as its node hands them over (the checker listens). */
  onCommitted: ((m: MemberState, entries: readonly Entry[]) => void) | undefined;
  private readonly bodies = new WeakMap<Uint8Array, EntryBody>();
  private readonly images = new WeakMap<Uint8Array, MemberImage>();
  /** When an entry was first known committed (by its bytes): a member's apply lag counts from there. */
  private readonly commitTimes = new WeakMap<Uint8Array, number>();
  /** The bytes first applied at each index no member has applied yet everywhere (release()). */
  private readonly firstApplied = new Map<number, Uint8Array>();
  private releasedTo = 0;
  private seq = 0;
  private settling = false;
  /** The term each member last became leader in (a step down names it). */
  private readonly leaderTerms = new Map<MemberState, bigint>();

  constructor(
    /** The members ever started, in order (a member MemberAdd added joins the end of it: join()). */
    readonly states: MemberState[],
    readonly opts: RaftOptions,
    private readonly effects: RaftEffects,
    start: number,
  ) {
    this.network = new PeerNetwork(states, (to, m) => to.loop?.step(m), (from) => effects.removedFromCluster(from));
    const voters = states.map((m) => m.id);
    const boot = { index: start - 1, term: 1n, conf: { voters, learners: [] }, data: new Uint8Array(0) };
    for (const m of states) {
      m.disk = new MemoryStorage({ hardState: { term: 1n, vote: NONE, commit: start - 1 }, snapshot: boot, entries: [] });
      this.startLoop(m);
    }
    this.topologyChanged();
  }

  /**
   * A member MemberAdd added starts (etcd with --initial-cluster-state existing): its Raft node starts from
   * the state `from` applied, as a leader's snapshot brings it (its image, at `from`'s applied index, with
   * `from`'s configuration), and catches up from the leader's log past it.
   */
  join(m: MemberState, from: MemberState): void {
    const node = from.loop!.node;
    const index = from.applied;
    const term = node.log.term(index) ?? node.log.snapshot.term;
    const snapshot = { index, term, conf: node.conf, data: this.image(from) };
    m.disk = new MemoryStorage({ hardState: { term, vote: NONE, commit: index }, snapshot, entries: [] });
    this.network.partitionOf.push(0);
    this.startLoop(m);
    this.topologyChanged();
    this.settle();
  }

  /** Who reaches whom changed (a lever, a member joined or stopped): since when each pair does follows. */
  topologyChanged(): void {
    this.network.noteTopology(this.opts.clock.now());
  }

  /** The first election: member 0 campaigns at once (once the rest of the cluster is wired to the effects). */
  start(): void {
    this.campaignNow(this.states[0]!);
  }

  /** Votes needed: a majority of the voting members. */
  get quorum(): number {
    return Math.floor(this.voters().length / 2) + 1;
  }

  /** The voting members' IDs, as the leader's Raft configuration holds them (else a running member's). */
  voters(): readonly bigint[] {
    const node = (this.leader ?? this.states.find((s) => s.loop !== undefined))?.loop?.node;
    return node?.conf.voters ?? this.states.map((s) => s.id);
  }

  /** The member that currently acts as leader (in the leader role, not crashed, highest term), if any. */
  get leader(): MemberState | undefined {
    let best: MemberState | undefined;
    for (const m of this.states) if (m.role === 'leader' && !m.crashed && (best === undefined || m.term > best.term)) best = m;
    return best;
  }

  /** The leader `m` knows (itself if it leads). */
  knownLeader(m: MemberState): MemberState | undefined {
    if (m.crashed) return undefined;
    return m.role === 'leader' ? m : m.lead;
  }

  connected(a: MemberState, b: MemberState): boolean {
    return this.network.connected(a, b);
  }

  /** Whether leader `l` reaches a quorum (itself included). */
  leaderHasQuorum(l: MemberState): boolean {
    let n = 0;
    for (const id of this.voters()) {
      const m = this.network.byId(id);
      if (m !== undefined && (m === l ? m.up : this.connected(l, m))) n++;
    }
    return n >= this.quorum;
  }

  /**
   * One heartbeat interval on every running member, in turn: what each tick sent is delivered before the
   * next member ticks (etcd's members tick on clocks of their own, never at the very same instant, so two
   * members whose election timeouts end on the same tick do not both campaign blind).
   */
  tick(): void {
    for (const m of this.states) {
      if (!m.up) continue;
      if (m.role === 'leader') this.effects.leaderTick(m);
      m.loop?.tick();
      this.settle();
    }
  }

  /** The bytes of a new entry doing `body` (a request's, a lease expiry's). */
  entryData(body: EntryBody): Uint8Array {
    const data = new Uint8Array(8);
    new DataView(data.buffer).setFloat64(0, ++this.seq);
    this.bodies.set(data, body);
    return data;
  }

  /** What an entry does; undefined for a leader's empty entry and a conf change. */
  bodyOf(e: Entry): EntryBody | undefined {
    if (e.data.length === 0) return undefined;
    const body = this.bodies.get(e.data);
    if (body === undefined) throw new Error(`etcdsim: internal error: the Raft entry at ${e.index} was applied again after every member applied it`);
    return body;
  }

  /** `m` proposes `data` (forwarded to its leader); false when its node dropped it. */
  propose(m: MemberState, data: Uint8Array): boolean {
    const ok = m.loop?.propose(data) ?? false;
    this.settle();
    return ok;
  }

  /** `m` proposes a membership change (a conf change entry whose `data` names its body); false when dropped. */
  proposeConfChange(m: MemberState, conf: ConfChange, data: Uint8Array): boolean {
    const ok = m.loop?.proposeConfChange(conf, data) ?? false;
    this.settle();
    return ok;
  }

  /** `m` asks its leader for a read index; its ReadState comes back through the effects. */
  readIndex(m: MemberState, context: string): boolean {
    const ok = m.loop?.readIndex(context) ?? false;
    this.settle();
    return ok;
  }

  /** Leader `l` hands leadership to `target` (MsgTransferLeader; the target campaigns once its log caught up). */
  transfer(l: MemberState, target: MemberState): void {
    l.loop?.act((n) => n.transferLeadership(target.id));
    this.settle();
  }

  /** `c` campaigns now, past PreVote and the leader lease (a forced election). */
  campaignNow(c: MemberState): void {
    c.loop?.act((n) => n.campaignNow());
    this.settle();
  }

  /** `m` snapshots its state at its applied index and compacts its log, keeping `keep` entries; returns its compaction point. */
  compact(m: MemberState, keep: number): number {
    const loop = m.loop;
    if (loop === undefined) return 0;
    const n = loop.node;
    if (m.applied >= n.log.snapshot.index && n.log.term(m.applied) !== undefined) {
      loop.act((node) => node.compact(m.applied, this.image(m), Math.max(0, keep)));
      m.disk.snapshotted(n.log.snapshot);
      this.effects.trace(`compact log of ${m.name} to ${n.log.firstIndex() - 1}`);
    }
    this.settle();
    return n.log.firstIndex() - 1;
  }

  /** Leader `l` snapshots its state now and sends it to `to` (installed there only past what `to` committed). */
  sendSnapshot(l: MemberState, to: MemberState): void {
    const loop = l.loop;
    if (loop === undefined) return;
    const n = loop.node;
    if (n.log.term(l.applied) !== undefined && l.applied >= n.log.snapshot.index) {
      // Every entry stays in the log: only the snapshot's point moves.
      loop.act((node) => node.compact(l.applied, this.image(l), l.applied));
      l.disk.snapshotted(n.log.snapshot);
    }
    loop.act((node) => node.sendSnapshotTo(to.id));
    this.settle();
  }

  /** `m` runs again after a pause: its leader's latest heartbeat is what it reads first (peer_network.ts). */
  resumed(m: MemberState): void {
    const l = this.leader;
    if (l !== undefined && l !== m && this.connected(l, m)) l.loop?.act((n) => n.heartbeatTo(m.id));
    this.settle();
  }

  /** `m` stops: its node and what it had not applied are gone; its disk stays. */
  stop(m: MemberState): void {
    m.loop?.stop();
    m.loop = undefined;
    m.applyQueue = [];
    m.role = 'follower';
    m.lead = undefined;
  }

  /** `m` starts again from its disk (its server was rebuilt from its backend, at its applied index). */
  restart(m: MemberState): void {
    this.startLoop(m);
    this.settle();
  }

  /** Delivers what was sent and applies what is due, until nothing moves (re-entrant calls leave it to the outer one). */
  settle(): void {
    if (this.settling) return;
    this.settling = true;
    try {
      do {
        this.network.drain();
        this.effects.pump();
      } while (this.network.pending);
    } finally {
      this.settling = false;
    }
  }

  /**
   * `m` applied the entry at `index`: once every member applied it, its body is let go — it never runs
   * again (a restart replays from the member's own applied index, a snapshot brings state, not entries).
   */
  applied(e: Entry): void {
    if (e.index > this.releasedTo && !this.firstApplied.has(e.index)) this.firstApplied.set(e.index, e.data);
    let min = Infinity;
    // A removed member applies nothing more: it holds nothing back.
    for (const s of this.states) if (!s.removed && s.applied < min) min = s.applied;
    if (min <= this.releasedTo) return;
    for (let i = this.releasedTo + 1; i <= min; i++) {
      const data = this.firstApplied.get(i);
      if (data === undefined) continue;
      this.bodies.delete(data);
      this.firstApplied.delete(i);
    }
    this.releasedTo = min;
  }

  private image(m: MemberState): Uint8Array {
    const data = new Uint8Array(8);
    new DataView(data.buffer).setFloat64(0, ++this.seq);
    this.images.set(data, memberImage(m));
    return data;
  }

  private startLoop(m: MemberState): void {
    const { clock, heartbeatMs, electionTimeoutMs, preVote } = this.opts;
    const node = new RaftNode(
      {
        id: m.id,
        random: this.opts.random.fork(`raft ${m.id} #${m.incarnation}`),
        electionTicks: Math.max(1, Math.round(electionTimeoutMs / heartbeatMs)),
        preVote,
        checkQuorum: true,
      },
      m.disk.storage(),
    );
    m.term = node.term;
    m.server.setRaftTerm(node.term);
    const loop = new RaftLoop({
      node,
      clock,
      heartbeatMs,
      persistence: {
        save: (rd) => {
          m.disk.save(rd);
          if (rd.hardState !== undefined && rd.hardState.term !== m.term) {
            m.term = rd.hardState.term;
            m.server.setRaftTerm(m.term);
          }
          if (rd.entries.length > 0 && node.role === 'leader') this.effects.appended(rd.entries);
        },
        snapshotted: (s) => m.disk.snapshotted(s),
      },
      send: (msg: Message) => this.network.send(msg),
      apply: (entries, snapshot) => this.committedAt(m, entries, snapshot),
      snapshotData: () => this.image(m),
      appliedIndex: () => m.applied,
      snapshotCount: this.opts.snapshotCount,
      catchUpEntries: this.opts.snapshotCatchUpEntries,
      onReadState: (r) => this.effects.readState(m, r),
      onSoftState: (leader, role) => this.softState(m, leader, role),
    });
    m.loop = loop;
    m.role = 'follower';
    m.lead = undefined;
  }

  /** `m`'s node committed entries (and perhaps installed a snapshot first): queued for its apply. */
  private committedAt(m: MemberState, entries: readonly Entry[], snapshot: Snapshot | undefined): void {
    if (snapshot !== undefined) this.install(m, snapshot);
    const now = this.opts.clock.now();
    for (const entry of entries) {
      let at = this.commitTimes.get(entry.data);
      if (at === undefined) this.commitTimes.set(entry.data, (at = now));
      if (entry.index > m.applied) m.applyQueue.push({ entry, at });
    }
    this.onCommitted?.(m, entries);
    this.effects.committed(m);
  }

  private install(m: MemberState, s: Snapshot): void {
    const image = this.images.get(s.data);
    if (image === undefined || s.index <= m.applied) return;
    installImage(m, image);
    m.applied = s.index;
    m.applyQueue = m.applyQueue.filter((c) => c.entry.index > s.index);
    const from = m.lead?.name ?? 'the leader';
    this.effects.trace(`snapshot ${from} -> ${m.name} at ${s.index}`);
    this.effects.snapshotInstalled(m);
  }

  /** What the node's SoftState means for the member: its role, its leader, and the cluster's notifications. */
  private softState(m: MemberState, leader: NodeId, role: Role): void {
    const wasLeader = m.role === 'leader';
    const leaderTerm = this.leaderTerms.get(m) ?? m.term;
    const before = m.lead;
    const lead = leader === NONE ? undefined : this.states.find((s) => s.id === leader);
    const next: RaftRole = role === 'leader' ? 'leader' : role === 'candidate' ? 'candidate' : 'follower';
    const roleChanged = next !== m.role;
    m.role = next;
    m.lead = lead;
    if (wasLeader && next !== 'leader') {
      this.effects.trace(`${m.name} steps down: ${m.term === leaderTerm ? 'no quorum' : 'a higher term'} (term ${leaderTerm})`);
      this.effects.demoted(m);
    }
    if (next === 'candidate' && roleChanged) this.effects.trace(`${m.name} campaigns at term ${m.term}`);
    if (next === 'leader' && !wasLeader) {
      this.leaderTerms.set(m, m.term);
      this.effects.trace(`leader ${m.name} term ${m.term}`);
      this.effects.leads(m);
    }
    const changed = lead !== undefined && lead !== before;
    if (changed) this.effects.leaderChanged(m);
    if (lead !== undefined && (changed || roleChanged)) this.effects.leaderKnown(m);
  }
}
