/**
 * etcdserverpb.Maintenance over one member: Status, HashKV, Defragment, Alarm, and a Snapshot/restore of
 * the simulator's own state. Response shapes follow etcd 3.4.23 as observed (Defragment and an Alarm
 * list with no alarm carry no header at all).
 */
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import { header, int64ToNumber } from './convert.js';
import { asGrpc, invalidArgument } from './errors.js';
import { ErrInvalidAuthToken, ErrPermissionDenied, ErrUserEmpty, ErrUserNotFound, EtcdError, GrpcCode, fail } from '../mvcc/index.js';
import type { CallContext } from './call_context.js';
import type * as M from './messages.js';
import type { EtcdServer, MemberSnapshot } from './etcd_server.js';

const SNAPSHOT_PREFIX = 'etcdsim-snapshot/';

export class MaintenanceService {
  /** Snapshots handed out by snapshot(), by token; restore() takes them back. */
  private readonly snapshots = new Map<string, MemberSnapshot>();
  private snapshotSeq = 0;

  constructor(private readonly server: EtcdServer) {}

  /** Maintenance.Status: version, estimated db size, leader (this member), raft index and term. */
  status(_req: M.StatusRequest = {}, ctx?: CallContext): M.StatusResponse {
    requireAuthInfo(this.server, ctx);
    const s = this.server;
    const index = String(s.raftIndex);
    return {
      header: header(s.identity, s.kv.currentRevision),
      version: s.member.version,
      dbSize: String(s.dbSize),
      leader: s.identity.memberId,
      raftIndex: index,
      raftTerm: s.identity.raftTerm,
      raftAppliedIndex: index,
      errors: [],
      dbSizeInUse: String(s.dbSizeInUse),
      isLearner: false,
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
      const kv = s.kv;
      const r = kv.hashKV(int64ToNumber(req.revision, 'revision'));
      // The header carries the current revision, whichever revision was hashed (etcd's HashByRev).
      return {
        header: header(s.identity, kv.currentRevision),
        hash: r.hash,
        compact_revision: String(r.compactRevision),
        // hash_revision came with the compaction hash check (3.5.5+); 3.4's message has no such field.
        hash_revision: s.etcdVersion === '3.4' ? '0' : String(r.hashRevision),
      };
    });
  }

  /** Maintenance.Defragment: nothing to do; etcd answers without a header. */
  defragment(_req: M.DefragmentRequest = {}, ctx?: CallContext): M.DefragmentResponse {
    requireAdmin(this.server, ctx);
    return { header: null };
  }

  /**
   * Maintenance.Alarm: the simulator raises no alarms (no space quota, no corruption check), so every
   * action answers an empty list, without a header as etcd does then. Each request is a Raft entry.
   */
  alarm(_req: M.AlarmRequest = {}, ctx?: CallContext): M.AlarmResponse {
    const action = _req.action ?? 0;
    if (action === 0 || action === 'GET') requireAuthInfo(this.server, ctx);
    else requireAdmin(this.server, ctx);
    this.server.noteRaftEntry();
    return { header: null, alarms: [] };
  }

  /**
   * Maintenance.Snapshot (a server stream): one response whose blob is a token for the simulator's
   * state at this moment (store and auth state, as etcd's snapshot holds the auth buckets) — not a bolt
   * file. Pass the blob to restore() on the same server.
   */
  snapshot(_req: M.SnapshotRequest = {}, ctx?: CallContext): M.SnapshotResponse[] {
    requireAdmin(this.server, ctx);
    const s = this.server;
    const token = `${SNAPSHOT_PREFIX}${++this.snapshotSeq}@${s.kv.currentRevision}`;
    this.snapshots.set(token, s.snapshot());
    return [{ header: header(s.identity, s.kv.currentRevision), remaining_bytes: '0', blob: snapshotBlob(token) }];
  }

  /** Restores a state taken by snapshot() (as a follower applies a leader's snapshot: see EtcdServer.restore). */
  restore(blob: Uint8Array): void {
    const token = snapshotToken(blob);
    const snap = this.snapshots.get(token);
    if (snap === undefined) throw invalidArgument(`etcdsim: unknown snapshot ${JSON.stringify(token.slice(0, 64))}`);
    this.server.restore(snap);
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
      const raw = err instanceof EtcdError && server.etcdVersion === '3.4' ? RAW_AUTH_TEXT.get(err.kind) : undefined;
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
  if (server.etcdVersion === '3.4') return; // 3.4.23 answers Status and Alarm GET to anyone (observed)
  maintenanceAuth(server, () => {
    if (server.auth.enabled && server.authInfo(ctx) === undefined) fail(ErrUserEmpty);
  });
}

/**
 * The snapshot stream's payload: the token, zero-padded to whole 512-byte pages and followed by the SHA-256
 * of those pages — the framing etcdctl's `snapshot save` checks (a bolt file is pages; etcd appends the
 * hash), so the save succeeds. It is still a token, not a bolt database: `snapshot status` cannot read it.
 */
function snapshotBlob(token: string): Buffer {
  const text = Buffer.from(token, 'utf8');
  const pages = Buffer.alloc(Math.ceil(text.length / SNAPSHOT_PAGE) * SNAPSHOT_PAGE);
  text.copy(pages);
  return Buffer.concat([pages, createHash('sha256').update(pages).digest()]);
}

/** The token inside a snapshot payload (or inside a bare token, as earlier versions handed out). */
function snapshotToken(blob: Uint8Array): string {
  const b = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
  const body = b.length % SNAPSHOT_PAGE === 32 ? b.subarray(0, b.length - 32) : b;
  const end = body.indexOf(0);
  return body.subarray(0, end < 0 ? body.length : end).toString('utf8');
}

const SNAPSHOT_PAGE = 512;
