/**
 * A single member whose state is kept in its --data-dir (src/storage), as etcd keeps it: every request it
 * applies is written to the WAL as etcd's entry (raft_request.ts) and synced before its answer goes out, so
 * a member killed at any moment — SIGKILL included — and started again on the same directory serves every
 * write it acknowledged, its users and roles, its leases and its revision history.
 *
 * Starting: with no WAL in the directory the member is new (a WAL and a db are made for it). With one, it
 * restarts as etcd does: the db (member/snap/db) is loaded — revisions, compaction point, auth, leases —
 * then the WAL's entries past the db's consistent index are applied again in order, as the user each entry
 * names; its leases then count their TTL from now, plus an election timeout (etcd's lessor Promote when
 * the restarted member becomes leader: a restart renews every lease). Its membership (members added,
 * updated, promoted, removed) is kept as etcd keeps it: a conf change entry in the WAL, synced first, then
 * the members bucket of the db; a crash between the two leaves the entry past the db's consistent index,
 * and the restart applies it again, as etcd's replay of its WAL does. A single member elects itself again: its term is one above the WAL's, and it appends its
 * new term's empty entry and its published attributes, two entries, as etcd's does.
 *
 * The WAL is folded into the db every --snapshot-count entries (and once after a restart that replayed
 * any): the db is written anew with the last entry's index as its consistent index, a snapshot record
 * marks the WAL, a new segment is cut and the older ones deleted — etcd's snapshot and WAL purge. A member
 * restored by `etcdctl snapshot restore` (a db and a WAL of conf changes) starts from that db.
 */
import { mkdirSync } from 'node:fs';
import { Wal, dataDirLayout, encodeFields, readBackendFile, removeLeftovers, walExists, writeBackendFile, type DataDirLayout, type WalContents, type WalEntry } from '../storage/index.js';
import { SnapshotFormatError, decodeFields, encodeEtcdBackend, memberJson, parseMember, readEtcdSnapshot, writeBolt, type StoredMember } from '../snapshot/index.js';
import type { ClusterService } from './membership_service.js';
import type * as M from './messages.js';
import type { CallContext } from './call_context.js';
import { uint64ToBigInt } from './convert.js';
import { EtcdServer } from './etcd_server.js';
import { memberInfoOf, type EtcdServerOptions } from './member_options.js';
import { LEASE_REVOKE_FIELD, RaftRequestError, applyRaftRequest, decodeRaftRequest, journaledServices } from './raft_request.js';
import { DEFAULT_ETCD_VERSION } from '../etcd/index.js';

/** What a data dir held when it was read: nothing yet (a new member), or a member's WAL and db. */
export type KeptState =
  | { readonly kind: 'new'; readonly layout: DataDirLayout }
  | {
      readonly kind: 'restart';
      readonly layout: DataDirLayout;
      readonly wal: Wal;
      readonly contents: WalContents;
      /** The db's bytes and its consistent index; undefined: no db (every entry of the WAL is applied). */
      readonly db: Uint8Array | undefined;
      readonly consistentIndex: bigint;
    };

/** A db that is not a bbolt file in etcd's layout, with etcd's words (its backend panics with them). */
export class BackendOpenError extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`cannot open database at ${path} (invalid database)`);
    this.name = 'BackendOpenError';
  }
}

/**
 * Reads a data dir before the member starts: WalError for a WAL that cannot be read (a torn tail is
 * repaired first, see contents.repairedFile), BackendOpenError for a db that cannot.
 */
export function readKeptState(dataDir: string, walDir?: string): KeptState {
  const layout = dataDirLayout(dataDir, walDir);
  if (!walExists(layout.walDir)) return { kind: 'new', layout };
  removeLeftovers(layout);
  const db = readBackendFile(layout);
  let consistentIndex = 0n;
  if (db !== undefined) {
    try {
      consistentIndex = readEtcdSnapshot(db).consistentIndex;
    } catch (err) {
      if (err instanceof SnapshotFormatError) throw new BackendOpenError(layout.backendPath, err.message);
      throw err;
    }
  }
  const { wal, contents } = Wal.open(layout.walDir);
  return { kind: 'restart', layout, wal, contents, db, consistentIndex };
}

/** What starting the member did. */
export interface KeptMemberStart {
  readonly server: EtcdServer;
  /** The data dir held a member, which restarted from it. */
  readonly restarted: boolean;
  /** The commit index the member restarted at (etcd logs it), 0 for a new member. */
  readonly commitIndex: bigint;
  /** Entries of the WAL applied again, and how many of them failed (an entry no longer applies). */
  readonly replayed: number;
  readonly replayFailures: number;
}

/** Test hooks: points of a member's work where a test kills the process (etcd's gofail points). */
export interface KeptMemberHooks {
  /** A membership change's conf change entry is synced in the WAL; the db does not hold it yet. */
  readonly confChangeLogged?: (() => void) | undefined;
}

/** Raft entries a restarted single member appends: its new term's empty entry and its published attributes. */
const RESTART_ENTRIES = 2n;

/**
 * Starts the member `state` describes with `opts` (the member's flags; its IDs, term and state come from the
 * data dir when it restarts) and keeps it there from now on. `snapshotCount`: entries between two folds.
 */
export function startKeptMember(state: KeptState, opts: EtcdServerOptions, snapshotCount: number, hooks: KeptMemberHooks = {}): KeptMemberStart {
  let wal: Wal | undefined;
  let replaying = false;
  let sinceFold = 0;
  let internal: ((field: number, request: unknown) => void) | undefined;
  const restart = state.kind === 'restart' ? state : undefined;
  const server = new EtcdServer({
    ...opts,
    ...(restart === undefined
      ? {}
      : {
          memberId: restart.contents.metadata.nodeId,
          clusterId: restart.contents.metadata.clusterId,
          raftTerm: (restart.contents.hardState?.term ?? 1n) + 1n,
          fromSnapshot: restart.db,
          initialRaftIndex: Number(restart.consistentIndex),
        }),
    wrapServices: (services, s) => {
      const j = journaledServices(s, services, (data) => {
        if (replaying || wal === undefined) return;
        const index = BigInt(s.raftIndex) > wal.lastIndex ? BigInt(s.raftIndex) : wal.lastIndex + 1n;
        append(s, wal, [{ term: s.member.raftTerm, index, type: 'normal', data }]);
        if (++sinceFold >= snapshotCount) {
          fold(s, wal, state.layout);
          sinceFold = 0;
        }
      });
      internal = j.internal;
      const cluster = keptMembership(s, j.services.cluster, (entry) => {
        if (replaying || wal === undefined) return;
        append(s, wal, [{ ...entry, term: s.member.raftTerm, index: BigInt(s.raftIndex) > wal.lastIndex ? BigInt(s.raftIndex) : wal.lastIndex + 1n }]);
        hooks.confChangeLogged?.();
        // The members bucket is written at once (etcd saves a member to its backend as it applies the change).
        fold(s, wal, state.layout);
        sinceFold = 0;
      });
      return { ...j.services, cluster };
    },
  });
  // The member's own entries: a lease that expired is revoked through Raft in etcd, and so recorded here.
  server.lessor.subscribe((ev) => {
    if (ev.type === 'revoke' && ev.reason === 'expire') internal?.(LEASE_REVOKE_FIELD, { ID: String(ev.id) });
  });
  if (restart === undefined) {
    mkdirSync(state.layout.snapDir, { recursive: true, mode: 0o700 });
    const info = memberInfoOf(opts, opts.etcdVersion ?? DEFAULT_ETCD_VERSION);
    wal = Wal.create(state.layout.walDir, { nodeId: info.memberId, clusterId: info.clusterId });
    append(server, wal, []);
    fold(server, wal, state.layout);
    return { server, restarted: false, commitIndex: 0n, replayed: 0, replayFailures: 0 };
  }
  wal = restart.wal;
  const { replayed, failures, last } = replay(server, restart.contents.entries, restart.consistentIndex, (on) => (replaying = on));
  const commitIndex = [last, restart.consistentIndex, restart.contents.hardState?.commit ?? 0n].reduce((a, b) => (a > b ? a : b));
  // The new term's empty entry and the published attributes (etcd's), empty here: nothing to apply again.
  const term = server.member.raftTerm;
  const restartEntries: WalEntry[] = [1n, 2n].map((i) => ({ term, index: commitIndex + i, type: 'normal', data: new Uint8Array(0) }));
  server.resetAppliedIndex(Number(commitIndex + RESTART_ENTRIES));
  // Elected at its new term, the member promotes its lessor as etcd's does on becoming leader: every lease
  // expires its granted TTL (or checkpointed remainder) plus one election timeout from now (observed on
  // 3.4.23: a 60 s lease shows remaining(60s) right after a restart, whatever it had left).
  server.lessor.promote(server.electionTimeoutMs);
  append(server, wal, restartEntries);
  if (replayed > 0) fold(server, wal, state.layout);
  return { server, restarted: true, commitIndex, replayed, replayFailures: failures };
}

/** raftpb.ConfChangeType. */
const CONF_CHANGE = { add: 0n, remove: 1n, update: 2n, addLearner: 3n } as const;

/**
 * The Cluster service of a kept member: each membership change that reached Raft becomes its WAL entry, as
 * etcd's — a raftpb.ConfChange (type, member ID, the member's JSON as context), or, for one the apply
 * refused, an empty entry holding its index — and the db's members bucket is written at once, so a restart
 * lists the members the member had (the WAL's conf changes are not applied again: the db has them).
 */
function keptMembership(server: EtcdServer, cluster: ClusterService, save: (e: Omit<WalEntry, 'term' | 'index'>) => void): ClusterService {
  const conf = (type: bigint, id: bigint, member?: M.Member): Omit<WalEntry, 'term' | 'index'> => {
    const context = member === undefined ? undefined : new TextEncoder().encode(memberJson({ id, name: member.name ?? '', peerURLs: member.peerURLs ?? [], clientURLs: member.clientURLs ?? [], isLearner: member.isLearner === true }));
    const fields = [[1, 0n], [2, type], [3, id]] as const;
    return { type: 'confChange', data: encodeFields(context === undefined ? fields : [...fields, [4, context] as const]) };
  };
  const find = (members: readonly M.Member[] | undefined, id: bigint): M.Member | undefined => members?.find((m) => BigInt(m.ID ?? 0) === id);
  const kept = <Req, Res>(call: (req: Req, ctx?: CallContext) => Res, entry: (req: Req, res: Res) => Omit<WalEntry, 'term' | 'index'>) => (req: Req, ctx?: CallContext): Res => {
    const before = server.raftIndex;
    let res: Res;
    try {
      res = call.call(cluster, req, ctx);
    } catch (err) {
      if (server.raftIndex !== before) save({ type: 'normal', data: new Uint8Array(0) });
      throw err;
    }
    save(entry(req, res));
    return res;
  };
  const idOf = (req: { readonly ID?: M.MemberRemoveRequest['ID'] } | undefined): bigint => uint64ToBigInt(req?.ID ?? 0, 'ID');
  const overrides: Partial<Record<keyof ClusterService, unknown>> = {
    memberAdd: kept(cluster.memberAdd, (_req: M.MemberAddRequest | undefined, res: M.MemberAddResponse) => {
      const id = BigInt(res.member?.ID ?? 0);
      return conf(res.member?.isLearner === true ? CONF_CHANGE.addLearner : CONF_CHANGE.add, id, res.member ?? undefined);
    }),
    memberRemove: kept(cluster.memberRemove, (req: M.MemberRemoveRequest | undefined) => conf(CONF_CHANGE.remove, idOf(req))),
    memberUpdate: kept(cluster.memberUpdate, (req: M.MemberUpdateRequest | undefined, res: M.MemberUpdateResponse) => conf(CONF_CHANGE.update, idOf(req), find(res.members, idOf(req)))),
    // etcd's promote is an AddNode with the member, a learner no more.
    memberPromote: kept(cluster.memberPromote, (req: M.MemberPromoteRequest | undefined, res: M.MemberPromoteResponse) => conf(CONF_CHANGE.add, idOf(req), find(res.members, idOf(req)))),
  };
  // Every other method runs on the service itself (its private state stays one).
  return new Proxy(cluster, {
    get(t, prop) {
      const o = overrides[prop as keyof ClusterService];
      if (o !== undefined) return o;
      const v: unknown = Reflect.get(t, prop, t);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    },
  });
}

/** A conf change entry (raftpb.ConfChange: type, member ID, the member's JSON) applied to the membership again. */
function replayConfChange(server: EtcdServer, data: Uint8Array): void {
  const fields = decodeFields(data, 'raftpb.ConfChange');
  let type = 0n;
  let id = 0n;
  let context: Uint8Array | undefined;
  for (const f of fields) {
    if (f.field === 2 && 'varint' in f) type = f.varint;
    if (f.field === 3 && 'varint' in f) id = f.varint;
    if (f.field === 4 && 'bytes' in f) context = f.bytes;
  }
  const kind = (['add', 'remove', 'update', 'addLearner'] as const)[Number(type)];
  if (kind === undefined) return;
  let member: StoredMember | undefined;
  if (context !== undefined && context.length > 0) {
    try {
      member = parseMember(new TextEncoder().encode(id.toString(16)), context, 'conf change');
    } catch {
      member = undefined;
    }
  }
  server.services.cluster.replayConfChange(kind, id, member);
}

/** Applies the WAL's entries past `after` again, in order; the index of the last entry seen. */
function replay(server: EtcdServer, entries: readonly WalEntry[], after: bigint, setReplaying: (on: boolean) => void): { replayed: number; failures: number; last: bigint } {
  let replayed = 0;
  let failures = 0;
  let last = 0n;
  setReplaying(true);
  try {
    for (const e of entries) {
      if (e.index > last) last = e.index;
      if (e.index <= after) continue;
      if (e.type === 'confChange') {
        // Counted, so that the restart folds it into the db (its members bucket).
        replayConfChange(server, e.data);
        replayed++;
        continue;
      }
      if (e.type !== 'normal' || e.data.length === 0) continue;
      replayed++;
      try {
        applyRaftRequest(server, decodeRaftRequest(e.data));
      } catch (err) {
        // A request etcd applied and answered with an error (a txn on a deleted lease...) fails again the
        // same way; an entry this member cannot read is skipped as etcd skips what it cannot apply.
        if (err instanceof RaftRequestError || err instanceof Error) failures++;
        else throw err;
      }
    }
  } finally {
    setReplaying(false);
  }
  server.flush();
  return { replayed, failures, last };
}

/** Writes entries and the hard state (term, own vote, commit at the last entry), synced. */
function append(server: EtcdServer, wal: Wal, entries: readonly WalEntry[]): void {
  const last = entries.length > 0 ? entries[entries.length - 1]!.index : BigInt(server.raftIndex) > wal.lastIndex ? BigInt(server.raftIndex) : wal.lastIndex;
  wal.save({ term: server.member.raftTerm, vote: server.member.memberId, commit: last }, entries);
}

/** Folds the WAL into the db: the db written anew at the last entry's index, the WAL marked, cut and purged. */
function fold(server: EtcdServer, wal: Wal, layout: DataDirLayout): void {
  const index = wal.lastIndex;
  writeBackendFile(layout, writeBolt(encodeEtcdBackend({ ...server.etcdBackend(), consistentIndex: index })));
  wal.saveSnapshot({ index, term: server.member.raftTerm });
  wal.cut();
  wal.releaseTo(index);
  // A single member keeps no released segment: its db holds them all (process members honour --max-wals).
  wal.purge(0);
}

