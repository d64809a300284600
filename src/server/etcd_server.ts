/**
 * One simulated etcd member: the MVCC store, the lessor and the watchable store wired together on one
 * clock, one ticker and one seeded PRNG — what etcd's EtcdServer owns. Every front door (the in-process
 * client, later the gRPC server and the scenario runner) drives the same instance, so each etcd rule lives
 * once, below this layer. The server knows nothing of its front doors. How a member is started and who it
 * is: member_options.ts; what its snapshot and restart report: restart.ts.
 */
import { serverCompat } from './compat.js';
import { AuthStore, type AuthInfo } from '../auth/index.js';
import { Lessor } from '../lease/index.js';
import { MvccStore, compatFor, type StoreSnapshot } from '../mvcc/index.js';
import { DEFAULT_ETCD_VERSION, type EtcdVersion } from '../etcd/index.js';
import { SimRandom, Ticker, VirtualClock, type Clock } from '../sim/index.js';
import { WatchableStore } from '../watch/index.js';
import { Delivery } from './delivery.js';
import { AuthService } from './auth_service.js';
import { isApplied, type CallContext } from './call_context.js';
import { ClusterService } from './membership_service.js';
import { KVService } from './kv_service.js';
import { LeaseService } from './lease_service.js';
import { MaintenanceService } from './maintenance_service.js';
import { WatchService } from './watch_service.js';
import { AppliedWait, registerTokenWaits, simpleTokenIndex } from './applied_wait.js';
import { LockService } from './lock_service.js';
import { ElectionService } from './election_service.js';
import type { HeaderIdentity } from './convert.js';
import type { EtcdServerView } from './server_view.js';
import { DEFAULT_QUOTA_BACKEND_BYTES, memberInfoOf, type EtcdServerOptions, type MemberInfo } from './member_options.js';
import type { CompactionCrash, MemberRestart, MemberSnapshot } from './restart.js';
import {
  DEFAULT_COMPACTION_BATCH_LIMIT,
  backendOfMember,
  interruptCompaction,
  memberOfBackend,
  readEtcdSnapshot,
  writeEtcdSnapshot,
  type EtcdBackend,
} from '../snapshot/index.js';
import { errTransportClosing } from './errors.js';

/** The Raft log of a fresh single member holds 4 entries before the first request (observed, 3.4.23). */
const INITIAL_RAFT_INDEX = 4;
/** Raft entries a restarted single member appends: its new term's empty entry, its published attributes. */
const RESTART_RAFT_ENTRIES = 2;
/** Status dbSize / dbSizeInUse of a fresh member (observed, 3.4.23). */
const INITIAL_DB_SIZE = 20480;
const INITIAL_DB_SIZE_IN_USE = 16384;
/** Rough bolt overhead per stored revision of a key, for the dbSize estimate. */
const DB_BYTES_PER_REVISION = 64;
const DB_PAGE = 4096;

/** etcd's services over one member, message form in and out (v3rpc's six, plus v3lock and v3election). @public */
export interface EtcdServices {
  readonly kv: KVService;
  readonly watch: WatchService;
  readonly lease: LeaseService;
  readonly maintenance: MaintenanceService;
  readonly cluster: ClusterService;
  readonly auth: AuthService;
  /** v3lockpb.Lock (etcd's v3lock server). */
  readonly lock: LockService;
  /** v3electionpb.Election (etcd's v3election server). */
  readonly election: ElectionService;
}

/** @public */
export class EtcdServer implements EtcdServerView {
  readonly clock: Clock;
  readonly ticker: Ticker;
  readonly random: SimRandom;
  readonly lessor: Lessor;
  readonly mvcc: MvccStore;
  readonly watchable: WatchableStore;
  /** Users, roles, permissions, tokens (etcd's auth store). */
  readonly auth: AuthStore;
  /** The release whose rules this member follows. */
  readonly etcdVersion: EtcdVersion;
  /** Replaced (never mutated) when the raft term moves: see setRaftTerm. */
  member: MemberInfo;
  /** The header identity in message form (decimal strings), computed once. */
  identity: HeaderIdentity;
  /** When stream responses reach their listeners (see delivery.ts). */
  readonly delivery = new Delivery();
  /** Waits for the applied index to reach a raft index (etcd's applyWait; see tokenWaitIndex). */
  readonly appliedWait = new AppliedWait(this.delivery, () => this.appliedIndex);
  readonly services: EtcdServices;
  /** --election-timeout in ms: how long a leader without a quorum stays leader (etcd's CheckQuorum). */
  readonly electionTimeoutMs: number;
  /** Whether a client certificate's Common Name authenticates a call without a token (--client-cert-auth). */
  readonly clientCertAuth: boolean;
  /** --strict-reconfig-check: membership changes that would leave too few started members are refused before proposing. */
  readonly strictReconfigCheck: boolean;
  /** Whether an index rebuilt from the backend keeps a key whose first stored revision is a tombstone (etcd PR #19188). */
  readonly restoreLoneTombstone: boolean;
  /** Key-bucket entries per batch of a compaction's deletions (--experimental-compaction-batch-limit). */
  readonly compactionBatchLimit: number;
  /** The space quota in bytes, Infinity for none (EtcdServerOptions.quotaBackendBytes). */
  readonly quotaBackendBytes: number;
  /** The quota as 3.6+'s Status reports it: as configured, 0 as the default; a negative one (no quota) as it is. */
  readonly quotaBackendBytesReported: number;
  private appliedIndex: number;
  /**
   * The estimated db file beyond a fresh one: it grows with the data in use and never shrinks (bolt reuses
   * the pages a compaction frees, it does not give them back), except by Defragment.
   */
  private fileBytes = 0;

  constructor(opts: EtcdServerOptions = {}) {
    this.clock = opts.clock ?? new VirtualClock();
    this.ticker = new Ticker(this.clock);
    this.random = new SimRandom(opts.seed ?? 0);
    this.lessor = new Lessor({
      clock: this.clock,
      ticker: this.ticker,
      random: this.random.fork('lease'),
      tickMs: opts.heartbeatIntervalMs,
      electionTicks: opts.electionTicks,
      minLeaseTTL: opts.minLeaseTTL,
      checkpointing: opts.leaseCheckpoint,
      checkpointIntervalMs: opts.leaseCheckpointIntervalMs,
    });
    this.mvcc = new MvccStore({
      lessor: this.lessor,
      etcdVersion: opts.etcdVersion,
      maxTxnOps: opts.maxTxnOps,
      maxRequestBytes: opts.maxRequestBytes,
    });
    this.lessor.bind(this.mvcc);
    this.watchable = new WatchableStore(this.mvcc, {
      ticker: this.ticker,
      clock: this.clock,
      random: this.random.fork('watch'),
      progressNotifyIntervalMs: opts.watchProgressNotifyIntervalMs,
      chanBufLen: opts.watchChanBufLen,
      sendWindowBytes: opts.watchSendWindowBytes,
      restoreKeepsFutureMinRev: opts.restoreKeepsFutureMinRev,
      progressRespectsStartRev: opts.progressRespectsStartRev,
    });
    this.auth = new AuthStore({
      clock: this.clock,
      random: this.random.fork('auth'),
      tokenTTL: opts.authTokenTTL,
      tokenProvider: opts.authTokenProvider,
      hashCost: opts.authHashCost,
      ...serverCompat(opts.etcdVersion ?? DEFAULT_ETCD_VERSION).auth,
    });
    if (opts.auth !== undefined) this.auth.apply(opts.auth);
    this.clientCertAuth = opts.clientCertAuth === true;
    this.strictReconfigCheck = opts.strictReconfigCheck ?? true;
    this.restoreLoneTombstone = opts.restoreLoneTombstone ?? compatFor(opts.etcdVersion ?? DEFAULT_ETCD_VERSION).restoreLoneTombstone;
    this.compactionBatchLimit = opts.compactionBatchLimit ?? DEFAULT_COMPACTION_BATCH_LIMIT;
    const quota = opts.quotaBackendBytes ?? 0;
    this.quotaBackendBytes = quota < 0 ? Infinity : quota === 0 ? DEFAULT_QUOTA_BACKEND_BYTES : quota;
    this.quotaBackendBytesReported = quota === 0 ? DEFAULT_QUOTA_BACKEND_BYTES : quota;
    if (!Number.isSafeInteger(this.compactionBatchLimit) || this.compactionBatchLimit < 1) {
      throw new RangeError(`EtcdServer: compactionBatchLimit must be an integer >= 1, got ${this.compactionBatchLimit}`);
    }
    const startIndex = opts.initialRaftIndex ?? INITIAL_RAFT_INDEX;
    if (!Number.isSafeInteger(startIndex) || startIndex < 0) throw new RangeError(`EtcdServer: initialRaftIndex must be an integer >= 0, got ${startIndex}`);
    this.appliedIndex = startIndex;
    const etcdVersion = opts.etcdVersion ?? DEFAULT_ETCD_VERSION;
    this.etcdVersion = etcdVersion;
    this.electionTimeoutMs = (opts.heartbeatIntervalMs ?? 100) * (opts.electionTicks ?? 10);
    this.member = memberInfoOf(opts, etcdVersion);
    this.identity = Object.freeze({
      clusterId: String(this.member.clusterId),
      memberId: String(this.member.memberId),
      raftTerm: String(this.member.raftTerm),
    });
    const fromFile = opts.fromSnapshot === undefined ? undefined : this.loadEtcdSnapshot(opts.fromSnapshot);
    // Every commit is one Raft entry and may grow the estimated db file. (Watch responses it queues reach
    // their clients through each stream's onSend hook.)
    this.mvcc.storage.subscribeLazy(() => {
      this.noteRaftEntry();
      this.growFile();
    });
    // Lease revokes by expiry and lease checkpoints are Raft proposals too (client requests count in the services).
    this.lessor.subscribe((ev) => {
      if ((ev.type === 'revoke' && ev.reason === 'expire' && ev.deleted === 0) || ev.type === 'checkpoint') this.noteRaftEntry();
    });
    const services: EtcdServices = {
      kv: new KVService(this),
      watch: new WatchService(this),
      lease: new LeaseService(this),
      maintenance: new MaintenanceService(this),
      cluster: new ClusterService(this),
      auth: new AuthService(this),
      lock: new LockService(this),
      election: new ElectionService(this),
    };
    this.services = opts.wrapServices === undefined ? services : opts.wrapServices(services, this);
    registerTokenWaits(this.services, this);
    // Its alarm bucket too, once the maintenance service that keeps the alarms exists.
    if (fromFile !== undefined) this.services.maintenance.alarms.restore(fromFile.alarms);
    // And its membership: the members and removed IDs it kept (a restarted member's own backend).
    if (fromFile !== undefined) this.services.cluster.restore(fromFile.members, fromFile.removedMembers);
  }

  /**
   * Raft index (= applied index on a single member): an estimate that moves as etcd's does — one entry per
   * write request (committed or not), lease grant/revoke/expiry, compaction and alarm request.
   */
  get raftIndex(): number {
    return this.appliedIndex;
  }

  /**
   * The caller of a request (etcd's EtcdServer.AuthInfoFromCtx): the token's user; throws
   * ErrInvalidAuthToken for an unknown or expired token. Without a token (or while auth is disabled, when
   * the token is not looked up) a member started with client-cert-auth takes the client certificate's
   * Common Name as the user name, unchecked: a name that is no user, or '', is then refused by the
   * permission checks (permission denied; user name not found / empty for admin requests — observed on
   * 3.4.23). Otherwise undefined (no caller). The checks ignore the caller while auth is disabled.
   */
  authInfo(ctx: CallContext | undefined): AuthInfo | undefined {
    if (isApplied(ctx)) return ctx.appliedAuthInfo;
    const ai = this.auth.authInfo(ctx?.token);
    if (ai !== undefined || !this.clientCertAuth || ctx?.certCommonName === undefined) return ai;
    return { username: ctx.certCommonName };
  }

  /**
   * The raft term this member's headers and Status carry from now on: a member of a cluster moves to each
   * new term it learns of (elections), as etcd fills raft_term from its Raft node's term.
   */
  setRaftTerm(term: bigint): void {
    if (term === this.member.raftTerm) return;
    if (term < 0n || term >= 2n ** 64n) throw new RangeError(`EtcdServer: raftTerm must be a uint64, got ${term}`);
    this.member = Object.freeze({ ...this.member, raftTerm: term });
    this.identity = Object.freeze({ ...this.identity, raftTerm: String(term) });
  }

  /**
   * Sets the applied raft index after the member's state was replaced wholesale: a snapshot from the
   * leader installed (etcd's applySnapshot takes the snapshot's index). Waits for that index are released.
   */
  resetAppliedIndex(index: number): void {
    if (!Number.isSafeInteger(index) || index < 0) throw new RangeError(`EtcdServer: applied index must be an integer >= 0, got ${index}`);
    this.appliedIndex = index;
    this.appliedWait.moved();
  }

  /**
   * Counts one Raft entry, applied at once on a single member: every commit and lessor entry comes through
   * here, and so does a request that committed no revision (a write that changed nothing, a lease grant,
   * ...). Waits for the applied index (appliedWait) are released from here, at the next delivery point.
   */
  noteRaftEntry(): void {
    this.appliedIndex++;
    this.appliedWait.moved();
  }

  /**
   * The raft index etcd's simple-token check makes a request with this caller wait for before it looks
   * the token up (see applied_wait.ts), or undefined when it does not wait: no token, tokens not checked
   * (auth disabled, in 3.5+), a token that is no `<random>.<index>`, or an index already applied — every
   * token this member issued names one.
   */
  tokenWaitIndex(ctx: CallContext | undefined): bigint | undefined {
    const token = ctx?.token;
    if (token === undefined || !this.auth.checksTokens) return undefined;
    const index = simpleTokenIndex(token, this.etcdVersion);
    return index === undefined || index <= BigInt(this.appliedIndex) ? undefined : index;
  }

  /**
   * Status dbSize: an estimate of etcd's bolt file, which the quota is measured against. It grows with the
   * retained revisions and keeps its size when a compaction frees some, until Defragment.
   */
  get dbSize(): number {
    return INITIAL_DB_SIZE + this.fileBytes;
  }

  /** Status dbSizeInUse: the estimate of the pages the retained revisions fill (a compaction lowers it). */
  get dbSizeInUse(): number {
    return INITIAL_DB_SIZE_IN_USE + this.inUseBytes();
  }

  /** Maintenance.Defragment's effect: the db file is rewritten to the data in use. */
  defragment(): void {
    this.fileBytes = this.inUseBytes();
  }

  /** The retained revisions' pages: their keys and values plus a rough per-revision overhead, page-rounded. */
  private inUseBytes(): number {
    const m = this.mvcc;
    return Math.ceil((m.retainedBytes + m.retainedRevisions * DB_BYTES_PER_REVISION) / DB_PAGE) * DB_PAGE;
  }

  private growFile(): void {
    const used = this.inUseBytes();
    if (used > this.fileBytes) this.fileBytes = used;
  }

  /** Pushes queued stream responses to their listeners now (see delivery.ts). */
  flush(): number {
    return this.delivery.flush();
  }

  /**
   * Moves the member's virtual clock forward by `ms`, running every lease expiry, watch sync and progress
   * tick due meanwhile, synchronously. After each instant at which something ran (and at the end) queued
   * stream responses are delivered, as a reading client would take them off the wire between two ticks.
   * Engine-level: client code on the event loop (etcd3, the raw client) needs `await sim.advance(ms)`,
   * which lets it run between steps.
   */
  advance(ms: number): void {
    const clock = this.clock;
    if (!(clock instanceof VirtualClock)) {
      throw new Error('EtcdServer.advance: this member runs on real time; create it with a VirtualClock to drive time');
    }
    if (!(ms >= 0)) throw new RangeError(`advance: ms must be >= 0, got ${ms}`);
    const target = clock.now() + ms;
    if (this.delivery.openCalls === 0) {
      clock.advanceTo(target);
      return;
    }
    for (let due = clock.nextDue(); due !== undefined && due <= target; due = clock.nextDue()) {
      clock.advanceTo(due);
      this.flush();
    }
    clock.advanceTo(target);
    this.flush();
  }

  /**
   * The member's state as etcd's snapshot carries it: the MVCC store plus the auth store's persistent state
   * (users, roles, permissions, enabled flag, auth revision — etcd's auth buckets). Tokens are not in it.
   */
  snapshot(): MemberSnapshot {
    return { ...this.mvcc.snapshot(), auth: this.auth.snapshot() };
  }

  /**
   * Restores a snapshot as a follower applies the leader's: the store's state is replaced, synced watchers
   * are moved to unsynced, and the lessor's key sets are rebuilt from the restored keys. A snapshot taken by
   * snapshot() also replaces the auth state (etcd's authStore.Recover; the member's in-memory tokens stay,
   * see AuthStore.restore); a bare store snapshot (MvccStore.snapshot()) leaves the auth state as it is.
   */
  restore(snapshot: StoreSnapshot | MemberSnapshot): void {
    this.watchable.restore(snapshot);
    this.lessor.recoverFromStore();
    if ('auth' in snapshot && snapshot.auth !== undefined) this.auth.restore(snapshot.auth);
    this.growFile(); // the restored data is in the file now
  }

  /**
   * The member's state as etcd's Snapshot RPC streams it: a bbolt file in etcd 3.4's backend layout (see
   * src/snapshot/etcd_backend.ts) followed by its SHA-256 — what `etcdctl snapshot save` stores and
   * `etcdctl snapshot restore` turns into a real etcd's data dir.
   */
  etcdSnapshot(): Uint8Array {
    return writeEtcdSnapshot(this.etcdBackend());
  }

  /**
   * What this member's backend holds, in etcd's layout: the bucket contents a snapshot writes and
   * Maintenance.Hash hashes (every member of the cluster, removed ones by ID; the raised alarms).
   */
  etcdBackend(): EtcdBackend {
    const lessor = this.lessor;
    const { members, removed } = this.services.cluster.backendState();
    const b = backendOfMember({
      // The index alone: the key bucket is what it keeps (the log's Events would be one object per revision).
      store: this.mvcc.storage.indexSnapshot(),
      auth: this.auth.snapshot(),
      leases: lessor.leases().map((id) => ({ id, ttl: lessor.timeToLive(id).grantedTTL, remainingTTL: lessor.checkpointedTTLOf(id) ?? 0 })),
      consistentIndex: BigInt(this.appliedIndex),
      members: members.map((m) => ({ id: m.id, name: m.name, peerURLs: m.peerUrls, clientURLs: m.clientUrls, isLearner: m.isLearner })),
      removedMembers: removed,
      version: this.member.version,
      term: this.member.raftTerm,
    });
    // The alarm bucket: raised alarms survive a restart and travel in snapshots (etcd's restoreAlarms).
    const alarms = this.services.maintenance.alarms;
    return alarms.size === 0 ? b : { ...b, alarms: alarms.bucketKeys() };
  }

  /**
   * Loads a snapshot in etcd's format into this fresh member, as a real etcd restored from it starts: the
   * store's revisions and compaction point (a compaction scheduled but unfinished is finished), auth, and
   * the leases, whose expiry counts from now — their checkpointed remaining TTL if any, else the full TTL
   * (etcd's lessor promote). The member's identity stays its own (etcdctl snapshot restore replaces the
   * members too). Errors: SnapshotFormatError naming what is wrong; nothing is loaded then. Returns the
   * backend read (its alarms are raised once the services exist).
   */
  private loadEtcdSnapshot(file: Uint8Array): EtcdBackend {
    const backend = readEtcdSnapshot(file);
    this.rebuildFrom(backend, true);
    return backend;
  }

  /**
   * Replaces this member's state by the leader's (etcd's applySnapshot, after the db a MsgSnap brought was
   * received): the store from the db's key bucket (watchers move to unsynced and catch up from it, nothing
   * breaks), auth, the raised alarms, and the leases — the db's are granted (with their checkpointed TTL)
   * and the member's own that the db lacks dropped, with no keys left to delete since the store is the
   * db's; the lessor keeps its role (a follower's expires nothing). The applied index becomes the db's
   * consistent index, which it returns. Errors: SnapshotFormatError for a file that is no db in etcd's layout, before
   * anything changes.
   */
  applySnapshot(db: Uint8Array): number {
    const backend = readEtcdSnapshot(db);
    const loaded = memberOfBackend(backend, { restoreLoneTombstone: this.restoreLoneTombstone });
    this.restore({ ...loaded.store, auth: loaded.auth });
    if (loaded.pendingCompactRev !== undefined) this.mvcc.compact(loaded.pendingCompactRev);
    const theirs = new Set(loaded.leases.map((l) => l.id));
    for (const id of this.lessor.leases()) if (!theirs.has(id)) this.lessor.revoke(id);
    for (const l of loaded.leases) {
      if (!this.lessor.exists(l.id)) this.lessor.grant(l.id, l.ttl);
      this.lessor.checkpoint(l.id, l.remainingTTL);
    }
    this.lessor.recoverFromStore();
    this.services.maintenance.alarms.restore(backend.alarms);
    this.resetAppliedIndex(Number(backend.consistentIndex));
    return this.appliedIndex;
  }

  /**
   * The member as etcd starts from `backend` (mvcc restore): the index rebuilt from the key bucket (see
   * restoreLoneTombstone), the compaction point the finished one, a compaction scheduled but unfinished run
   * again, auth, and the leases, whose expiry counts from now (etcd's lessor promote). A fresh member (the
   * constructor) grants the backend's leases; a restarted one already holds them, as its backend does.
   */
  private rebuildFrom(backend: EtcdBackend, fresh: boolean): Omit<MemberRestart, 'brokenStreams'> {
    const loaded = memberOfBackend(backend, { restoreLoneTombstone: this.restoreLoneTombstone });
    if (fresh) {
      for (const l of loaded.leases) {
        this.lessor.grant(l.id, l.ttl);
        if (l.remainingTTL > 0) this.lessor.checkpoint(l.id, l.remainingTTL);
      }
    } else {
      this.lessor.demote();
    }
    this.restore({ ...loaded.store, auth: loaded.auth });
    if (loaded.pendingCompactRev !== undefined) this.mvcc.compact(loaded.pendingCompactRev);
    this.lessor.promote();
    return {
      revision: this.mvcc.currentRevision,
      compactRevision: this.mvcc.compactRevision,
      finishedCompactRevision: loaded.store.compactRev,
      resumedCompactRevision: loaded.pendingCompactRev,
      keys: loaded.store.keys.length,
      loneTombstones: loaded.loneTombstones,
      loneTombstonesRestored: this.restoreLoneTombstone,
    };
  }

  /**
   * SIGKILL, then the member starts again, in place: every Watch and LeaseKeepAlive stream breaks (clients
   * see UNAVAILABLE and reconnect), and the member is rebuilt from `backend` — by default what its own
   * backend holds now — as etcd rebuilds itself from bbolt (the same rebuild a member started from a
   * snapshot file goes through). A single member then elects itself again: its raft term moves up by one,
   * and its log by two entries, the new term's empty one and the member publishing its attributes (observed
   * on 3.4.23: term 2 → 3, raft index + 2).
   */
  restart(backend: EtcdBackend = this.etcdBackend()): MemberRestart {
    let brokenStreams = 0;
    for (const c of this.services.watch.calls()) {
      c.abort(errTransportClosing());
      brokenStreams++;
    }
    for (const c of this.services.lease.calls()) {
      c.abort(errTransportClosing());
      brokenStreams++;
    }
    const rebuilt = this.rebuildFrom(backend, false);
    this.services.maintenance.alarms.restore(backend.alarms);
    this.setRaftTerm(this.member.raftTerm + 1n);
    this.resetAppliedIndex(Number(backend.consistentIndex) + RESTART_RAFT_ENTRIES);
    return { ...rebuilt, brokenStreams };
  }

  /**
   * Compact(rev) as the Compact RPC applies it (its answer and errors), then a SIGKILL once the backend has
   * committed `afterBatches` batches of the compaction's deletions (see src/snapshot/compaction.ts), and the
   * restart from what that backend holds: the compaction scheduled but not finished, resumed at start.
   * Errors: the Compact RPC's (nothing is killed then).
   */
  crashDuringCompaction(rev: number, afterBatches: number, ctx?: CallContext): CompactionCrash {
    if (!Number.isSafeInteger(afterBatches) || afterBatches < 0) throw new RangeError(`crashDuringCompaction: afterBatches must be an integer >= 0, got ${afterBatches}`);
    const before = this.etcdBackend();
    const response = this.services.kv.compact({ revision: String(rev) }, ctx);
    const progress = interruptCompaction(before, this.etcdBackend(), rev, afterBatches, this.compactionBatchLimit);
    return { response, progress, restart: this.restart(progress.backend) };
  }

  /** Stops every periodic step (lease expiry, watch sync, progress) so a real clock lets the process exit. */
  close(): void {
    this.ticker.close();
    this.lessor.close();
  }
}
