/**
 * One member of a cluster of processes (etcd's EtcdServer with its raftNode): an EtcdServer (src/server)
 * whose state moves only by the committed entries of its own Raft node (src/raft), which talks to the other
 * members' processes over the peer transport on their peer URLs.
 *
 *  - Every write is an entry (raft_request.ts, etcd's InternalRaftRequest): the member asked proposes it
 *    with its request ID in the header and answers its caller with what its own apply of that entry gave
 *    (requests.ts, etcd's wait registry). Entries are applied in log order on every member, each as the
 *    user its header names, so every member's store goes through the same revisions.
 *  - Membership is Raft's conf changes, each carrying the member's name and peer URLs (etcd's conf change
 *    context); a member publishes its name and client URLs through Raft once it has a leader (etcd's
 *    publish), so `member list` names every member on every member.
 *  - Leases expire only on the leader: its lessor is promoted when it wins an election (expiries pushed
 *    out by an election timeout, etcd's lessor.Promote), demoted when it loses leadership, and hands its
 *    expired leases over to be revoked through Raft (etcd's revokeExpiredLeases); the followers' lessors
 *    never expire anything themselves.
 *  - IDs as etcd derives them: each member's from its peer URLs and --initial-cluster-token, the
 *    cluster's from the initial members' (src/server/member_id.ts). A new member's log starts with one
 *    conf change per initial member (bootstrapStorage), so its first leader is elected at term 2, as etcd's.
 *  - Kept in --data-dir: the Raft log and hard state in the WAL (wal_persistence.ts); every --snapshot-count
 *    entries a snapshot (member_snapshot.ts: the db and the members), the log let go but for the catch-up
 *    entries. A restart loads the db and applies the WAL's committed entries the db lacks (etcd's consistent
 *    index check); a member behind the leader's log installs the leader's db (etcd's applySnapshot).
 */
import { mkdirSync } from 'node:fs';
import { applyMemberUpdate, errTransportClosing, EtcdServer, clusterIdOf, memberIdOf, toGrpcError, type GrpcError } from '../server/index.js';
import {
  CLUSTER_VERSION_SET_FIELD,
  LEASE_CHECKPOINT_FIELD,
  LEASE_REVOKE_FIELD,
  MEMBER_ATTR_SET_FIELD,
  RaftRequestError,
  applyRaftRequest,
  decodeRaftRequest,
  encodeClusterVersion,
  encodeLeaseCheckpoint,
  encodeMemberAttributes,
  encodeRaftRequest,
  type MemberAttributesEntry,
} from '../server/raft_request.js';
import { NONE, RaftLoop, RaftNode, RaftNodeChecker, bootstrapStorage, type ConfChange, type Entry, type NodeId, type RaftPersistence, type RaftStorage, type Ready, type Role, type Snapshot } from '../raft/index.js';
import { SimRandom } from '../sim/index.js';
import { readBackendFile, walExists } from '../storage/index.js';
import { answerLease } from './lease_forward.js';
import { MemberRequests } from './requests.js';
import { PeerTransport, type PeerAddress, type PeerTls } from './transport.js';
import type { MembersAnswer } from './codec.js';
import { decodeMembers, encodeMembers, openMemberDb, takeReceivedDb, writeMemberDb } from './member_snapshot.js';
import { WalPersistence, retentionOf } from './wal_persistence.js';
import type { InitialMember, ProcessClusterMember, ProcessMemberOptions } from './member_options.js';

export type { InitialMember, ProcessClusterMember, ProcessMemberEvents, ProcessMemberOptions } from './member_options.js';

/** The conf change context of a member (etcd puts the member's JSON there). */
interface MemberContext {
  readonly id: string;
  readonly name: string;
  readonly peerURLs: readonly string[];
  readonly isLearner?: boolean;
}

/** A new member could not join: etcd's words. */
export class JoinError extends Error {
  override name = 'JoinError';
}

/** etcd's --snapshot-count default (3.4) and SnapshotCatchUpEntries. */
const DEFAULT_SNAPSHOT_COUNT = 100_000;
const DEFAULT_CATCH_UP_ENTRIES = 5000;
/** How often an unpublished member proposes its attributes again (etcd retries publish). */
const PUBLISH_RETRY_MS = 500;

/** The ID etcd gives a member of --initial-cluster. */
export function initialMemberId(m: InitialMember, token: string): NodeId {
  return memberIdOf(m.peerUrls, token);
}

/** A URL's host and port, for dialing a peer. */
export function peerAddressOf(url: string): PeerAddress {
  const u = new URL(url);
  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  return { host, port: Number(u.port === '' ? (u.protocol === 'https:' ? 443 : 80) : u.port) };
}

export class ProcessMember {
  readonly id: NodeId;
  readonly clusterId: bigint;
  readonly server: EtcdServer;
  readonly node: RaftNode;
  readonly loop: RaftLoop;
  readonly transport: PeerTransport;
  readonly requests: MemberRequests;
  readonly requestTimeoutMs: number;
  readonly heartbeatMs: number;
  readonly electionMs: number;
  /** The peer TLS it dials with (a forwarded lease call to the leader too). */
  readonly peerTls: PeerTls | undefined;
  /** The cluster's members as this member applied them, by ID. */
  readonly members = new Map<NodeId, ProcessClusterMember>();
  /** Whether the data dir held a member (restarted from it). */
  readonly restarted: boolean;
  /** The commit index it restarted at (0 for a new member). */
  readonly restartCommit: number;
  private readonly random: SimRandom;
  /** The peers whose stream is up, and since when on the member's clock (etcd's rafthttp ActiveSince). */
  private readonly active = new Map<NodeId, number>();
  /** Members the cluster removed (etcd's members_removed): their streams are refused. */
  private readonly removedIds = new Set<NodeId>();
  private seq = 0n;
  private lastLeader: NodeId = NONE;
  private lastRole: Role = 'follower';
  private lastTerm = 0n;
  private published = false;
  /** The cluster version entry was applied (or, on the leader, proposed). */
  private clusterVersionSet = false;
  private publishing = false;
  private stopped = false;
  /** The consistent index of the db the state was last loaded from: entries up to it are in it already. */
  private dbIndex = 0;
  /** This member's last snapshot's index (its own or the leader's). */
  private snapIndex: number;

  private constructor(
    private readonly opts: ProcessMemberOptions,
    id: NodeId,
    clusterId: bigint,
    storage: RaftStorage,
    private readonly persistence: WalPersistence,
    restarted: boolean,
    db?: Uint8Array,
  ) {
    this.id = id;
    this.clusterId = clusterId;
    this.restarted = restarted;
    this.restartCommit = restarted ? storage.hardState.commit : 0;
    this.snapIndex = storage.snapshot.index;
    const { clock } = opts;
    this.random = new SimRandom(opts.seed).fork(`member-${id.toString(16)}-${storage.hardState.commit}-${storage.hardState.term}`);
    this.seq = (id & 0xffffn) << 48n | (this.random.nextUint63() & 0xffffffffffn);
    const own = opts.initialCluster.find((m) => m.name === opts.name);
    this.server = new EtcdServer({
      ...opts.server,
      clock,
      seed: opts.seed,
      memberId: id,
      clusterId,
      memberName: opts.name,
      clientUrls: opts.clientUrls,
      peerUrls: own?.peerUrls ?? [],
      raftTerm: storage.hardState.term,
      initialRaftIndex: 0,
    });
    // A follower's lessor expires nothing; the leader's is promoted when it wins (onSoftState).
    this.server.lessor.demote();
    if (db !== undefined) this.dbIndex = this.server.applySnapshot(db);
    const electionTicks = Math.max(1, Math.round(opts.electionMs / opts.heartbeatMs));
    this.requestTimeoutMs = 5000 + 2 * opts.electionMs;
    this.heartbeatMs = opts.heartbeatMs;
    this.electionMs = opts.electionMs;
    this.peerTls = opts.peerTls;
    this.node = new RaftNode({ id, random: new SimRandom(opts.seed).fork(`raft-${id.toString(16)}`), electionTicks, preVote: opts.preVote, checkQuorum: true }, storage);
    this.transport = new PeerTransport({
      id,
      clusterId,
      listen: opts.listenPeer,
      clock,
      ...(opts.peerTls === undefined ? {} : { tls: opts.peerTls }),
      deliver: (m) => this.loop.step(m),
      snapDir: opts.layout.snapDir,
      snapshotDb: () => openMemberDb(opts.layout),
      members: () => ({ kind: 'members', clusterId, members: [...this.members.values()].map((m) => ({ id: m.id, peerUrls: m.peerUrls })) }),
      lease: (q) => Promise.resolve(answerLease(this, q)),
      isRemoved: (peer) => this.removedIds.has(peer),
      removedFromCluster: () => {
        if (!this.stopped) this.opts.events?.removed?.();
      },
      peerActive: (peer, on) => {
        if (on) this.active.set(peer, clock.now());
        else this.active.delete(peer);
        this.loop.peersChanged();
      },
    });
    const kept: RaftPersistence = {
      save: (rd: Ready) => {
        // The leader's db goes in place before the snap file names its snapshot (a crash between the two
        // leaves a db ahead of the snapshot, which the consistent index check makes harmless).
        if (rd.snapshot !== undefined) takeReceivedDb(opts.layout, rd.snapshot.index);
        persistence.save(rd);
        if (rd.hardState !== undefined) this.termMoved(rd.hardState.term);
      },
      snapshotted: (s: Snapshot) => {
        writeMemberDb(opts.layout, this.server.etcdBackend(), s.index, opts.leaseCheckpointPersist === true);
        persistence.snapshotted(s);
        this.snapIndex = s.index;
      },
    };
    this.loop = new RaftLoop({
      node: this.node,
      clock,
      heartbeatMs: opts.heartbeatMs,
      persistence: kept,
      send: (m) => this.transport.send(m),
      apply: (entries, snap) => this.apply(entries, snap),
      snapshotData: () => encodeMembers({ members: [...this.members.values()], clusterVersionSet: this.clusterVersionSet }),
      snapshotCount: opts.snapshotCount ?? DEFAULT_SNAPSHOT_COUNT,
      catchUpEntries: opts.catchUpEntries ?? DEFAULT_CATCH_UP_ENTRIES,
      onReadState: (r) => this.requests.readState(r),
      onSoftState: (leader, role) => this.softState(leader, role),
      check: opts.raftCheck === true ? { checker: new RaftNodeChecker(), violated: (v) => opts.events?.raftViolated?.(v) } : undefined,
      initialTickAdvance:
        opts.initialElectionTickAdvance === false
          ? undefined
          : firstCandidate(opts, id, storage, restarted)
            ? { ticks: 2 * electionTicks, untilCampaign: true, activePeers: () => this.active.size }
            : { ticks: Math.max(0, electionTicks - 2), activePeers: () => this.active.size },
    });
    this.requests = new MemberRequests(
      {
        id,
        propose: (data) => this.loop.propose(data),
        proposeConfChange: (conf, data) => this.loop.proposeConfChange(conf, data),
        readIndex: (ctx) => this.loop.readIndex(ctx),
        leader: () => this.node.leader,
        applied: () => this.node.log.applied,
        reachable: (peer) => this.active.has(peer),
      },
      clock,
      this.requestTimeoutMs,
    );
    // The members known before the log's conf changes are applied (the snapshot's, then the log's): their streams open now.
    this.restoreMembers(storage.snapshot);
    for (const m of storage.entries) if (m.type === 'conf' && m.conf !== undefined) this.confChanged(m.conf, false);
  }

  /**
   * Makes the member on its data dir: a new member of --initial-cluster (its bootstrap entries written to
   * a new WAL), or the member the dir holds. Resolves once its peer port listens; run() starts its Raft.
   */
  static async start(opts: ProcessMemberOptions): Promise<ProcessMember> {
    const ids = opts.initialCluster.map((m) => initialMemberId(m, opts.initialClusterToken));
    const own = opts.initialCluster.findIndex((m) => m.name === opts.name);
    let member: ProcessMember;
    if (walExists(opts.layout.walDir)) {
      const { persistence, storage, metadata } = WalPersistence.open(opts.layout, retentionOf(opts));
      member = new ProcessMember(opts, metadata.nodeId, metadata.clusterId, storage, persistence, true, readBackendFile(opts.layout));
    } else if (opts.join === true) {
      member = await ProcessMember.join(opts);
    } else {
      if (own < 0) throw new Error(`couldn't find local name "${opts.name}" in the initial cluster configuration`);
      const id = ids[own]!;
      const clusterId = clusterIdOf(ids);
      mkdirSync(opts.layout.snapDir, { recursive: true, mode: 0o700 });
      const boot = bootstrapStorage(
        opts.initialCluster.map((m, i) => ({ id: ids[i]!, context: contextOf({ id: ids[i]!.toString(16), name: m.name, peerURLs: m.peerUrls }) })),
      );
      const persistence = WalPersistence.create(opts.layout, { nodeId: id, clusterId }, boot, retentionOf(opts));
      member = new ProcessMember(opts, id, clusterId, boot, persistence, false);
    }
    await member.transport.start();
    return member;
  }

  /**
   * A new member joining a running cluster (--initial-cluster-state existing), as etcd's does: it asks the
   * other members of --initial-cluster for the cluster (etcd's GET /members on their peer URLs), finds its
   * own ID by its peer URLs (given it by MemberAdd), and starts with an empty log, which the leader fills
   * from the start. Errors: JoinError when no member answers or the cluster does not list it.
   */
  private static async join(opts: ProcessMemberOptions): Promise<ProcessMember> {
    const own = opts.initialCluster.find((m) => m.name === opts.name);
    if (own === undefined) throw new Error(`couldn't find local name "${opts.name}" in the initial cluster configuration`);
    let answer: MembersAnswer | undefined;
    for (const m of opts.initialCluster) {
      if (m === own) continue;
      for (const url of m.peerUrls) {
        const a = await PeerTransport.ask(peerAddressOf(url), opts.clock, 2000, { kind: 'members?' }, opts.peerTls);
        if (a?.kind === 'members') answer = a;
        if (answer !== undefined) break;
      }
      if (answer !== undefined) break;
    }
    if (answer === undefined) throw new JoinError('cannot fetch cluster info from peer urls: could not retrieve cluster information from the given URLs');
    const mine = answer.members.find((m) => m.peerUrls.length === own.peerUrls.length && [...m.peerUrls].sort().join() === [...own.peerUrls].sort().join());
    if (mine === undefined) throw new JoinError(`error validating peerURLs ${JSON.stringify(own.peerUrls)}: member count is unequal`);
    mkdirSync(opts.layout.snapDir, { recursive: true, mode: 0o700 });
    const empty: RaftStorage = { hardState: { term: 0n, vote: NONE, commit: 0 }, snapshot: { index: 0, term: 0n, conf: { voters: [], learners: [] }, data: new Uint8Array(0) }, entries: [] };
    const persistence = WalPersistence.create(opts.layout, { nodeId: mine.id, clusterId: answer.clusterId }, empty, retentionOf(opts));
    const member = new ProcessMember(opts, mine.id, answer.clusterId, empty, persistence, false);
    for (const m of answer.members) member.knowMember(m.id, '', m.peerUrls, false);
    return member;
  }

  /** Starts ticking: the committed entries are applied, elections begin. */
  run(): void {
    if (this.stopped) return;
    // etcd's purge looks at the data dir as the server starts (files a previous run left beyond the limits).
    this.persistence.purge();
    this.loop.start();
  }

  /** The leader this member knows (NONE without one). */
  get leader(): NodeId {
    return this.node.leader;
  }

  /** Whether the transport has an active stream to `peer` (etcd's "peer became active"). */
  peerActive(peer: NodeId): boolean {
    return this.active.has(peer);
  }

  /** Since when (the member's clock) `peer`'s stream has been up, undefined while it is down (etcd's ActiveSince). */
  activeSince(peer: NodeId): number | undefined {
    return this.active.get(peer);
  }

  /** A new request ID (etcd's reqIDGen: the member's ID in the top bits, a counter below). */
  nextRequestId(): bigint {
    this.seq = (this.seq + 1n) & 0xffffffffffffffffn;
    return this.seq === 0n ? this.nextRequestId() : this.seq;
  }

  /** Proposes `data` (made with the request ID given) and resolves with this member's apply of it. */
  propose(id: bigint, data: Uint8Array): Promise<unknown> {
    if (this.stopped) return Promise.reject(errTransportClosing());
    return this.requests.propose(id, data);
  }

  /** Proposes a membership change; resolves once this member applied it. */
  changeMembership(conf: ConfChange): Promise<unknown> {
    if (this.stopped) return Promise.reject(errTransportClosing());
    const id = this.nextRequestId();
    const data = new Uint8Array(8);
    new DataView(data.buffer).setBigUint64(0, id);
    return this.requests.proposeConfChange(id, conf, data);
  }

  /** A conf change's context for a member (etcd puts the member's JSON there). */
  memberContextOf(m: { readonly id: NodeId; readonly name: string; readonly peerUrls: readonly string[]; readonly isLearner: boolean }): Uint8Array {
    return contextOf({ id: m.id.toString(16), name: m.name, peerURLs: m.peerUrls, isLearner: m.isLearner });
  }

  /** Resolves once this member applied up to a read index the leader confirmed (ReadIndex). */
  linearizableRead(): Promise<void> {
    if (this.stopped) return Promise.reject(errTransportClosing());
    return this.requests.linearizableRead();
  }

  /** Stops ticking, closes the peer port and fails what waits; the data dir keeps what was saved. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.loop.stop();
    this.transport.close();
    this.requests.close(errTransportClosing());
    this.server.close();
  }

  /** The leader's snapshot (its db already in place), then committed entries in log order. */
  private apply(entries: readonly Entry[], snap: Snapshot | undefined): void {
    if (snap !== undefined && snap.index > 0) this.installSnapshot(snap);
    for (const e of entries) {
      if (e.type === 'conf' && e.conf !== undefined) {
        const refused = this.confChanged(e.conf, true);
        // The proposer's request ID, in the entry's data: its caller is answered now.
        if (e.data.length === 8) this.requests.applied(new DataView(e.data.buffer, e.data.byteOffset, 8).getBigUint64(0), undefined, refused);
      }
      else if (e.data.length > 0) this.applyRequest(e);
      if (e.index > this.dbIndex) this.server.resetAppliedIndex(e.index);
      this.requests.appliedTo(e.index);
    }
    this.server.flush();
  }

  private applyRequest(e: Entry): void {
    let r;
    try {
      r = decodeRaftRequest(e.data);
    } catch (err) {
      if (err instanceof RaftRequestError) return; // an entry no member can apply is skipped, as etcd skips it
      throw err;
    }
    let result: unknown;
    let error: GrpcError | undefined;
    if (r.field === MEMBER_ATTR_SET_FIELD) this.attributesApplied(r.request as MemberAttributesEntry);
    if (r.field === CLUSTER_VERSION_SET_FIELD) this.clusterVersionSet = true;
    // The db this member loaded holds the entry already (etcd's consistent index check): only the bookkeeping above.
    if (e.index <= this.dbIndex) return;
    // Unpersisted (3.4, 3.5 without --experimental-enable-lease-checkpoint-persist), etcd's db had no remaining TTL to restart with.
    if (r.field === LEASE_CHECKPOINT_FIELD && this.opts.leaseCheckpointPersist !== true && e.index <= this.restartCommit) return;
    try {
      result = applyRaftRequest(this.server, r, e.index);
    } catch (err) {
      // A request etcd applies and answers with an error (a txn on a revoked lease...) fails alike everywhere.
      error = toGrpcError(err);
    }
    const id = r.header?.id;
    if (id !== undefined) this.requests.applied(id, result, error);
  }

  private attributesApplied(a: MemberAttributesEntry): void {
    const m = this.members.get(a.memberId);
    if (m === undefined) return;
    m.name = a.name;
    m.clientUrls = [...a.clientUrls];
    // etcd's leader sets the cluster version once every member has published itself (monitorVersions).
    if (this.node.role === 'leader' && !this.clusterVersionSet && [...this.members.values()].every((x) => x.clientUrls.length > 0)) {
      this.clusterVersionSet = true;
      this.loop.propose(encodeClusterVersion(`${this.server.member.version.replace(/^(\d+\.\d+).*/, '$1')}.0`));
    }
    // Its own attributes as this start of the process proposed them (a restart publishes again, as etcd's does).
    if (a.memberId === this.id && this.publishing && !this.published) {
      this.published = true;
      this.opts.events?.published?.();
    }
  }

  /** etcd's applySnapshot: the leader's db replaces this member's state, the snapshot's members its members. */
  private installSnapshot(snap: Snapshot): void {
    const db = readBackendFile(this.opts.layout);
    if (db === undefined) throw new Error(`etcdsim: snapshot at ${snap.index} installed without its db`);
    const was = { snapshot: this.snapIndex, applied: this.server.raftIndex };
    this.dbIndex = this.server.applySnapshot(db);
    if (this.dbIndex < snap.index) throw new Error(`etcdsim: the db of the snapshot at ${snap.index} holds only up to ${this.dbIndex}`);
    this.snapIndex = snap.index;
    this.restoreMembers(snap);
    this.requests.appliedTo(this.dbIndex);
    this.opts.events?.snapshotApplied?.(was, snap);
  }

  /** The members a snapshot names replace the ones known (their peers' streams follow). */
  private restoreMembers(snap: Snapshot): void {
    const d = decodeMembers(snap.data);
    if (d === undefined) return;
    const listed = new Set(d.members.map((m) => m.id));
    for (const id of [...this.members.keys()]) {
      if (listed.has(id)) continue;
      this.members.delete(id);
      this.transport.removePeer(id);
    }
    for (const m of d.members) {
      this.knowMember(m.id, m.name, m.peerUrls, m.isLearner);
      Object.assign(this.members.get(m.id)!, { name: m.name, peerUrls: [...m.peerUrls], clientUrls: [...m.clientUrls], isLearner: m.isLearner });
    }
    this.clusterVersionSet ||= d.clusterVersionSet;
    // This start's publish may be folded into the snapshot: it was applied, then.
    const own = this.members.get(this.id);
    if (own !== undefined && this.publishing && !this.published && own.name === this.opts.name && own.clientUrls.join() === this.opts.clientUrls.join()) {
      this.published = true;
      this.opts.events?.published?.();
    }
  }

  /**
   * A conf change applied (or, at start, a member known before its entry is applied, so its stream opens);
   * returns the error an update's apply check gives its caller (etcd's ValidateConfigurationChange).
   */
  private confChanged(cc: ConfChange, applied: boolean): GrpcError | undefined {
    let ctx: MemberContext | undefined;
    if (cc.context !== undefined && cc.context.length > 0) {
      try {
        ctx = JSON.parse(new TextDecoder().decode(cc.context)) as MemberContext;
      } catch {
        ctx = undefined;
      }
    }
    if (cc.type === 'remove') {
      const gone = this.members.get(cc.id);
      this.members.delete(cc.id);
      this.removedIds.add(cc.id);
      this.transport.removePeer(cc.id);
      if (applied) this.opts.events?.membership?.(cc, gone);
      if (applied && cc.id === this.id) this.opts.events?.removed?.();
      return undefined;
    }
    if (cc.type === 'update') return this.updated(cc, ctx, applied);
    const known = this.members.get(cc.id);
    if (known !== undefined) {
      // A learner promoted: Raft adds it as a voter (etcd's promote is an AddNode).
      if (cc.type === 'add') known.isLearner = false;
      // A joining member knew the others from the members answer before it applies their conf changes.
      if (cc.type === 'addLearner') known.isLearner = true;
      if (known.name === '' && ctx?.name !== undefined) known.name = ctx.name;
    } else {
      this.knowMember(cc.id, ctx?.name ?? '', ctx?.peerURLs ?? [], cc.type === 'addLearner');
    }
    if (applied) this.opts.events?.membership?.(cc, this.members.get(cc.id));
    return undefined;
  }

  /**
   * etcd's UpdateNode: checked when applied, on every member alike (the member exists; no other member has
   * one of the URLs), so a refused update still takes its index, as etcd's does; then the member's peer URLs
   * are replaced (3.4 replaces its Raft attributes whole: a learner is listed as a voter from then on, while
   * Raft keeps it a learner) and the stream to it is dialed on the new URL.
   */
  private updated(cc: ConfChange, ctx: MemberContext | undefined, applied: boolean): GrpcError | undefined {
    const urls = ctx?.peerURLs ?? [];
    const refused = applyMemberUpdate(this.members, cc.id, urls, this.server.etcdVersion);
    const target = this.members.get(cc.id);
    if (refused !== undefined || target === undefined) return refused;
    const url = urls[0];
    if (cc.id !== this.id && url !== undefined) this.transport.updatePeer(cc.id, peerAddressOf(url));
    if (applied) this.opts.events?.membership?.(cc, target);
    return undefined;
  }

  private knowMember(id: NodeId, name: string, peerUrls: readonly string[], isLearner: boolean): void {
    if (!this.members.has(id)) this.members.set(id, { id, name, peerUrls: [...peerUrls], clientUrls: [], isLearner });
    const url = peerUrls[0];
    if (id !== this.id && url !== undefined) this.transport.addPeer(id, peerAddressOf(url));
  }

  private termMoved(term: bigint): void {
    if (term === this.lastTerm) return;
    this.lastTerm = term;
    this.server.setRaftTerm(term);
  }

  /** Raft's leader or role moved: the lessor follows leadership, the requests the leader, the log says so. */
  private softState(leader: NodeId, role: Role): void {
    this.termMoved(this.node.term);
    const lessor = this.server.lessor;
    if (role !== this.lastRole) {
      if (role === 'leader') {
        lessor.promote(this.opts.electionMs);
        lessor.onExpired = (ids) => this.proposeExpiries(ids);
        lessor.onCheckpoint = (due) => this.loop.propose(encodeLeaseCheckpoint({ checkpoints: due }));
      } else if (this.lastRole === 'leader') {
        lessor.onExpired = undefined;
        lessor.onCheckpoint = undefined;
        lessor.demote();
      }
      this.lastRole = role;
      this.opts.events?.role?.(role, this.node.term);
    }
    if (leader !== this.lastLeader) {
      this.lastLeader = leader;
      this.opts.events?.leader?.(leader, this.node.term);
      this.requests.leaderChanged();
      if (leader !== NONE) this.publish();
    }
  }

  /** The leader's lessor found leases expired: their revokes go through Raft, as the member's own requests. */
  private proposeExpiries(ids: readonly bigint[]): void {
    if (this.node.role !== 'leader') return;
    for (const id of ids) this.loop.propose(encodeRaftRequest(LEASE_REVOKE_FIELD, { ID: String(id) }, undefined));
  }

  /** etcd's publish: the member's name and client URLs through Raft, retried until applied. */
  private publish(): void {
    if (this.published || this.publishing || this.stopped) return;
    this.publishing = true;
    const id = this.nextRequestId();
    const data = encodeMemberAttributes({ memberId: this.id, name: this.opts.name, clientUrls: this.opts.clientUrls }, { username: '', authRevision: 0, id });
    this.requests.propose(id, data).then(
      () => {
        this.publishing = false;
      },
      () => {
        this.publishing = false;
        if (!this.stopped) this.opts.clock.setTimer(this.opts.clock.now() + PUBLISH_RETRY_MS, () => this.publish(), 'peer.publish');
      },
    );
  }
}

/**
 * Whether this member is a fresh cluster's first candidate: a new member of --initial-cluster (not restarted,
 * not joining) whose ID is the lowest of the initial members'. It campaigns as soon as its peers' streams
 * are up; the others advance as etcd does (election ticks less two) and campaign only if it does not. etcd
 * leaves the first election to the randomized timeouts (2 to 11 ticks after the advance, the lowest of the
 * members' draws winning); one chosen candidate elects in a round trip and cannot split the vote, and any
 * member may become etcd's first leader, so no client can tell — only the cluster's start is faster.
 */
function firstCandidate(opts: ProcessMemberOptions, id: NodeId, storage: RaftStorage, restarted: boolean): boolean {
  if (restarted || opts.join === true || storage.hardState.term > 1n) return false;
  const ids = opts.initialCluster.map((m) => initialMemberId(m, opts.initialClusterToken));
  return ids.length > 1 && ids.every((other) => other >= id);
}

function contextOf(c: MemberContext): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(c));
}
