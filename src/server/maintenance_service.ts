/**
 * etcdserverpb.Maintenance over one member: Status, HashKV, Defragment, Alarm (the member's alarm store,
 * alarms.ts), and Snapshot (a bbolt file in etcd's backend layout, alarm bucket included) with its restore.
 * Response shapes follow etcd 3.4.23 as observed (Defragment and, on 3.4, Alarm carry no header at all).
 */
import { Buffer, createHash } from '../sim/index.js';
import { header, int64ToNumber, uint64ToBigInt } from './convert.js';
import { asGrpc, invalidArgument } from './errors.js';
import { EtcdError, GrpcCode, fail } from '../etcd/index.js';
import type { CallContext } from './call_context.js';
import type * as M from './messages.js';
import type { EtcdServer } from './etcd_server.js';
import {
  SnapshotFormatError,
  backendHash,
  memberOfBackend,
  readEtcdSnapshot,
  layoutEtcdBackend,
  type BoltLayout,
  type EtcdBackend,
} from '../snapshot/index.js';
import { serverCompat } from './compat.js';
import { AlarmStore, alarmMemberOut, alarmText, alarmTypeNumber, type RaisedAlarm } from './alarms.js';
import { ErrInvalidAuthToken, ErrPermissionDenied, ErrUserEmpty, ErrUserNotFound } from '../auth/index.js';

/** @public */
export class MaintenanceService {
  /** @internal The member's raised alarms (etcd's alarm store, kept in the backend's alarm bucket). */
  readonly alarms: AlarmStore;

  /** @internal */
  constructor(private readonly server: EtcdServer) {
    this.alarms = new AlarmStore(server.etcdVersion);
  }

  /** Maintenance.Status: version, estimated db size, leader (this member), raft index and term. */
  status(_req: M.StatusRequest = {}, ctx?: CallContext): M.StatusResponse {
    requireAuthInfo(this.server, ctx);
    const s = this.server;
    const index = String(s.raftIndex);
    // A member that lost its quorum (Cluster.MemberAdd of a voter that never starts) steps down.
    const leader = s.services.cluster.leaderId();
    return {
      header: header(s.identity, s.mvcc.currentRevision),
      version: s.member.version,
      dbSize: String(s.dbSize),
      leader: String(leader),
      raftIndex: index,
      raftTerm: s.identity.raftTerm,
      raftAppliedIndex: index,
      errors: [...(leader === 0n ? ['etcdserver: no leader'] : []), ...this.alarmErrors()],
      dbSizeInUse: String(s.dbSizeInUse),
      isLearner: false,
      ...(serverCompat(s.etcdVersion).statusFields36
        ? { storageVersion: `${s.etcdVersion}.0`, dbSizeQuota: String(s.quotaBackendBytesReported), downgradeInfo: { enabled: false, targetVersion: '' } }
        : {}),
    };
  }

  /**
   * Maintenance.HashKV: etcd's hash of the history up to `revision` (0: current) — the same value a real
   * etcd reports after the same requests (MvccStore.hashKV) — and the compaction revision (-1 before any).
   * The header revision is the current one even when an older revision is hashed (observed on 3.4.23).
   * Errors as etcd's HashByRev: at or below the compaction point compacted, above current future.
   */
  hashKV(req: M.HashKVRequest = {}, ctx?: CallContext): M.HashKVResponse {
    requireAdmin(this.server, ctx);
    const s = this.server;
    return asGrpc(() => {
      const kv = s.mvcc;
      const r = kv.hashKV(int64ToNumber(req.revision, 'revision'));
      // The header carries the current revision, whichever revision was hashed (etcd's HashByRev).
      return {
        header: header(s.identity, kv.currentRevision),
        hash: r.hash,
        compact_revision: String(r.compactRevision),
        // hash_revision came with the compaction hash check (3.5.5+); 3.4's message has no such field.
        hash_revision: serverCompat(s.etcdVersion).hashKVReportsHashRevision ? String(r.hashRevision) : '0',
      };
    });
  }

  /**
   * Maintenance.Hash: etcd's hash of its whole backend (every bucket but meta/consistent_index; see
   * src/snapshot/backend_hash.ts for what is modelled), with the current revision in the header. Root only with auth on.
   */
  hash(_req: M.HashRequest = {}, ctx?: CallContext): M.HashResponse {
    requireAdmin(this.server, ctx);
    const s = this.server;
    return { header: header(s.identity, s.mvcc.currentRevision), hash: backendHash(s.etcdBackend()) };
  }

  /**
   * Maintenance.MoveLeader: on a single member the only valid transferee is the leader itself, which etcd
   * answers with an empty response (no header); any other ID, 0 and a learner included, is
   * "etcdserver: bad leader transferee" (observed on 3.4.23).
   */
  moveLeader(req: M.MoveLeaderRequest = {}, _ctx?: CallContext): M.MoveLeaderResponse {
    const s = this.server;
    return asGrpc(() => {
      const target = uint64ToBigInt(req.targetID, 'targetID');
      // etcd's maintenance server first checks that this member leads (not checked against a real etcd).
      if (s.services.cluster.leaderId() === 0n) throw new EtcdError({ code: GrpcCode.FAILED_PRECONDITION, message: 'etcdserver: not leader' });
      if (target !== s.member.memberId) throw new EtcdError({ code: GrpcCode.FAILED_PRECONDITION, message: 'etcdserver: bad leader transferee' });
      return { header: null };
    });
  }

  /** Maintenance.Defragment: the db file shrinks to the data in use (Status dbSize); etcd answers without a header. */
  defragment(_req: M.DefragmentRequest = {}, ctx?: CallContext): M.DefragmentResponse {
    requireAdmin(this.server, ctx);
    this.server.defragment();
    return { header: null };
  }

  /**
   * Maintenance.Alarm: GET lists the raised alarms of the request's type (NONE: all of them); ACTIVATE
   * raises the type for the request's memberID (any ID, 0 too: etcd does not check it) and answers it — or
   * the one already raised; DEACTIVATE takes it off and answers it, or nothing when it was not raised. An
   * action etcd does not know answers nothing. Each request is a Raft entry (applyAlarm); the caller is
   * checked first: any user may GET (3.4: anyone), ACTIVATE and DEACTIVATE want root while auth is on.
   */
  alarm(req: M.AlarmRequest = {}, ctx?: CallContext): M.AlarmResponse {
    this.checkAlarmCaller(req, ctx);
    return this.applyAlarm(req);
  }

  /** @internal Alarm's permission check, made by the member the client called before it proposes (authMaintenanceServer). */
  checkAlarmCaller(req: M.AlarmRequest, ctx: CallContext | undefined): void {
    const action = req.action ?? 0;
    if (action === 0 || action === 'GET') requireAuthInfo(this.server, ctx);
    else requireAdmin(this.server, ctx);
  }

  /**
   * @internal An Alarm request as every member applies it (etcd's applierV3backend.Alarm), the caller already checked:
   * one Raft entry, then the store's change. 3.5+ fill a header; 3.4 answers none.
   */
  applyAlarm(req: M.AlarmRequest): M.AlarmResponse {
    const s = this.server;
    const { memberId, type } = asGrpc(() => ({ memberId: uint64ToBigInt(req.memberID ?? 0, 'memberID'), type: alarmTypeNumber(req.alarm) }));
    const compat = serverCompat(s.etcdVersion);
    s.noteRaftEntry();
    let alarms: RaisedAlarm[] = [];
    switch (req.action ?? 0) {
      case 0:
      case 'GET':
        alarms = this.alarms.list(type);
        break;
      case 1:
      case 'ACTIVATE':
        if (type !== 0 || !compat.alarmActivateNoneIgnored) alarms = [this.alarms.activate(memberId, type)];
        break;
      case 2:
      case 'DEACTIVATE': {
        const a = this.alarms.deactivate(memberId, type);
        if (a !== undefined) alarms = [a];
        break;
      }
      default:
        // etcd's applier answers an unknown action with no response at all; an empty one here.
        break;
    }
    return { header: compat.alarmResponseHeader ? header(s.identity, s.mvcc.currentRevision) : null, alarms: alarms.map(alarmMemberOut) };
  }

  /** @internal Status.errors' line for each raised alarm (etcd appends them after "no leader"). */
  alarmErrors(): string[] {
    return this.alarms.list().map((a) => alarmText(a, this.server.etcdVersion));
  }

  /**
   * Maintenance.Snapshot (a server stream): the member's backend as a bbolt file in etcd's layout
   * (EtcdServer.etcdBackend), sent as etcd's v3rpc sends it — chunks of 32 KiB (snapshotSendBufferSize),
   * each saying how many bytes of the file remain after it, then one last message holding the file's SHA-256
   * (remaining 0). No response carries a header (etcd's Snapshot fills none; observed on 3.4.23); from 3.6 on
   * each carries the backend's storage version. `etcdctl snapshot save` writes the concatenation of the blobs;
   * `etcdctl snapshot status` and `restore` read it. All the responses at once; see snapshotStream.
   */
  snapshot(req: M.SnapshotRequest = {}, ctx?: CallContext): M.SnapshotResponse[] {
    return [...this.snapshotStream(req, ctx)];
  }

  /**
   * @internal snapshot()'s responses one at a time, the file written as they are asked for: the backend is taken and
   * its pages planned now (the state of this moment, as etcd's snapshot reads one backend transaction), the
   * key bucket's leaves written a piece at a time as the stream asks for more, and the SHA-256 computed over
   * what was sent — as etcd pipes its bbolt file while sending, so a save costs the larger of writing and
   * sending rather than their sum, and the member holds a piece of the file instead of all of it. The blobs
   * are views of those pieces, not copies: the gRPC layer writes them to the wire as they are
   * (src/grpc/snapshot_wire.ts). Errors (auth) are thrown here, before the first response.
   */
  snapshotStream(_req: M.SnapshotRequest = {}, ctx?: CallContext, opts: SnapshotStreamOptions = {}): IterableIterator<M.SnapshotResponse> {
    requireAdmin(this.server, ctx);
    const backend = this.server.etcdBackend();
    return snapshotResponses(layoutEtcdBackend(backend), backend.storageVersion, opts.reusePieces === true);
  }

  /**
   * @internal Restores the store, auth state and alarms of a snapshot in etcd's format — the concatenated blobs of
   * snapshot(), or a snapshot a real etcd wrote — as a follower applies a leader's snapshot (see
   * EtcdServer.restore). A file that is not one is rejected with InvalidArgument naming what is wrong.
   */
  restore(blob: Uint8Array): void {
    let loaded;
    let backend;
    try {
      backend = readEtcdSnapshot(blob);
      loaded = memberOfBackend(backend, { restoreLoneTombstone: this.server.restoreLoneTombstone });
    } catch (err) {
      if (err instanceof SnapshotFormatError) throw invalidArgument(`etcdsim: ${err.message}`);
      throw err;
    }
    this.server.restore({ ...loaded.store, auth: loaded.auth });
    // The alarm bucket comes with the state, and its alarms rule (etcd's restoreAlarms after a snapshot).
    this.alarms.restore(backend.alarms);
  }
}

/**
 * etcd 3.4's authMaintenanceServer returned the auth package's own errors unmapped, so clients saw
 * Unknown with "auth: ..." (observed on 3.4.23: `rpc error: code = Unknown desc = auth: permission
 * denied`); later releases map them with togRPCError.
 */
const RAW_AUTH_TEXT = new Map([
  [ErrPermissionDenied, 'auth: permission denied'],
  [ErrUserEmpty, 'auth: user name is empty'],
  [ErrUserNotFound, 'auth: user not found'],
  [ErrInvalidAuthToken, 'auth: invalid auth token'],
]);

function maintenanceAuth(server: EtcdServer, check: () => void): void {
  asGrpc(() => {
    try {
      check();
    } catch (err) {
      const raw = err instanceof EtcdError && serverCompat(server.etcdVersion).maintenanceAuthErrorsUnmapped ? RAW_AUTH_TEXT.get(err.kind) : undefined;
      if (raw !== undefined) throw new EtcdError({ code: GrpcCode.UNKNOWN, message: raw });
      throw err;
    }
  });
}

/** authMaintenanceServer.isPermitted: root only while auth is enabled. */
function requireAdmin(server: EtcdServer, ctx: CallContext | undefined): void {
  maintenanceAuth(server, () => server.auth.checkAdmin(server.authInfo(ctx)));
}

/** authMaintenanceServer.requireAuthInfo: any authenticated user while auth is enabled. */
function requireAuthInfo(server: EtcdServer, ctx: CallContext | undefined): void {
  if (serverCompat(server.etcdVersion).statusOpenToAnyone) return;
  maintenanceAuth(server, () => {
    if (server.auth.enabled && server.authInfo(ctx) === undefined) fail(ErrUserEmpty);
  });
}

/** etcd's snapshotSendBufferSize: the bytes of the file each Snapshot response carries. */
const SNAPSHOT_CHUNK = 32 * 1024;

/** Options of MaintenanceService.snapshotStream. */
export interface SnapshotStreamOptions {
  /**
   * Write the file's pieces (about 1 MiB each) into a few buffers taken in turn instead of fresh memory for
   * each: a response's blob then stays valid only until about three more MiB of responses were asked for.
   * For a consumer that is done with a response's bytes by then (the gRPC front door, which asks for more only
   * once less than 64 KiB waits in the stream); not for one that keeps them (snapshot()).
   */
  readonly reusePieces?: boolean | undefined;
}

/** Buffers a reusing stream takes in turn (see SnapshotStreamOptions.reusePieces). */
const REUSED_PIECES = 4;

/**
 * The Snapshot responses of a laid-out file: its bytes in 32 KiB blobs (views of the layout's pieces; a blob
 * that straddles two pieces is the one copy), each with the bytes remaining after it, then the SHA-256 of
 * everything sent. `version` (3.6+) goes in every response.
 */
function* snapshotResponses(layout: BoltLayout, version: string | undefined, reuse: boolean): Generator<M.SnapshotResponse, undefined, undefined> {
  const total = layout.size;
  const hash = createHash('sha256');
  const response = (blob: Buffer, remaining: number): M.SnapshotResponse => {
    const r: M.SnapshotResponse = { header: null, remaining_bytes: String(remaining), blob };
    // etcd 3.6+ sends meta/storageVersion ("3.6.0") in every response; earlier releases have no such field.
    return version === undefined ? r : { ...r, version };
  };
  let sent = 0;
  let partial: Buffer | undefined;
  let filled = 0;
  for (const piece of layout.pieces(undefined, reuse ? REUSED_PIECES : 0)) {
    hash.update(piece);
    const buf = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
    let at = 0;
    if (partial !== undefined) {
      const n = Math.min(partial.length - filled, buf.length);
      buf.copy(partial, filled, 0, n);
      filled += n;
      at = n;
      if (filled < partial.length) continue;
      sent += partial.length;
      yield response(partial, total - sent);
      partial = undefined;
    }
    // Whole chunks, and the file's last bytes when this piece ends it.
    while (buf.length - at >= SNAPSHOT_CHUNK || (at < buf.length && sent + buf.length - at === total)) {
      const n = Math.min(SNAPSHOT_CHUNK, buf.length - at);
      sent += n;
      yield response(buf.subarray(at, at + n), total - sent);
      at += n;
    }
    if (at < buf.length) {
      partial = Buffer.allocUnsafe(Math.min(SNAPSHOT_CHUNK, total - sent));
      filled = buf.copy(partial, 0, at);
    }
  }
  if (partial !== undefined || sent !== total) throw new Error(`etcdsim: snapshot pieces gave ${sent} of ${total} bytes`);
  yield response(hash.digest(), 0);
  return undefined;
}
