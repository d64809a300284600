/**
 * etcdserverpb.Maintenance over one member: Status, HashKV, Defragment, Alarm, and a Snapshot/restore of
 * the simulator's own state. Response shapes follow etcd 3.4.23 as observed (Defragment and an Alarm
 * list with no alarm carry no header at all).
 */
import { Buffer } from 'node:buffer';
import type { StoreSnapshot } from '../mvcc/index.js';
import { header, int64ToNumber } from './convert.js';
import { asGrpc, invalidArgument } from './errors.js';
import type * as M from './messages.js';
import type { EtcdServer } from './etcd_server.js';

const SNAPSHOT_PREFIX = 'etcdsim-snapshot/';

export class MaintenanceService {
  /** Snapshots handed out by snapshot(), by token; restore() takes them back. */
  private readonly snapshots = new Map<string, StoreSnapshot>();
  private snapshotSeq = 0;

  constructor(private readonly server: EtcdServer) {}

  /** Maintenance.Status: version, estimated db size, leader (this member), raft index and term. */
  status(_req: M.StatusRequest = {}): M.StatusResponse {
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
   * Maintenance.HashKV: a hash of the history up to `revision` (0: current) and the compaction revision
   * (-1 before any). The header revision is the hashed revision. Errors as etcd's HashByRev: a revision at
   * or below the compaction point is compacted, one above the current revision is future. The hash is
   * the simulator's own (equal hashes, equal histories), not bolt's CRC.
   */
  hashKV(req: M.HashKVRequest = {}): M.HashKVResponse {
    const s = this.server;
    return asGrpc(() => {
      const kv = s.kv;
      const rev = int64ToNumber(req.revision, 'revision');
      const hash = kv.hash(rev);
      const at = rev > 0 ? rev : kv.currentRevision;
      return { header: header(s.identity, at), hash, compact_revision: String(kv.compactRevision) };
    });
  }

  /** Maintenance.Defragment: nothing to do; etcd answers without a header. */
  defragment(_req: M.DefragmentRequest = {}): M.DefragmentResponse {
    return { header: null };
  }

  /**
   * Maintenance.Alarm: the simulator raises no alarms (no space quota, no corruption check), so every
   * action answers an empty list, without a header as etcd does then. Each request is a Raft entry.
   */
  alarm(_req: M.AlarmRequest = {}): M.AlarmResponse {
    this.server.noteRaftEntry();
    return { header: null, alarms: [] };
  }

  /**
   * Maintenance.Snapshot (a server stream): one response whose blob is a token for the simulator's
   * state at this moment — not a bolt file. Pass the blob to restore() on the same server.
   */
  snapshot(_req: M.SnapshotRequest = {}): M.SnapshotResponse[] {
    const s = this.server;
    const token = `${SNAPSHOT_PREFIX}${++this.snapshotSeq}@${s.kv.currentRevision}`;
    this.snapshots.set(token, s.kv.snapshot());
    return [{ header: header(s.identity, s.kv.currentRevision), remaining_bytes: '0', blob: Buffer.from(token, 'utf8') }];
  }

  /** Restores a state taken by snapshot() (as a follower applies a leader's snapshot: see EtcdServer.restore). */
  restore(blob: Uint8Array): void {
    const token = Buffer.from(blob).toString('utf8');
    const snap = this.snapshots.get(token);
    if (snap === undefined) throw invalidArgument(`etcdsim: unknown snapshot ${JSON.stringify(token.slice(0, 64))}`);
    this.server.restore(snap);
  }
}
