/**
 * A process member's Raft state on its --data-dir, as etcd keeps it: each Ready's hard state and entries
 * go to the WAL (src/storage, synced before the Ready's messages leave), and a snapshot — the member's
 * state at an index, with the voters and learners then — goes to `member/snap/<term>-<index>.snap` in
 * etcd's snap file format (snappb.Snapshot: a CRC-32C and a raftpb.Snapshot), then a WAL snapshot record
 * marks the log before it as no longer needed, in that order (etcd's saveSnap), so a crash between the two
 * leaves a snap file the WAL does not name yet, never the reverse. A restart (`readRaftStorage`) reads the
 * newest snap file that decodes and the WAL's hard state and entries after it: a member comes back with its
 * term, its vote, its log and its membership. A snapshot received from the leader also cuts the WAL's
 * entries after it (they were the member's old log), so they cannot come back with a restart. A conf change entry is saved as etcd saves one (a
 * raftpb.ConfChange, its context included); the entry's own bytes are not kept.
 *
 * Old files are purged as etcd purges them (its purgeFile over `member/snap` and `member/wal`): beyond
 * --max-snapshots snap files (and as many `.snap.db` files a leader sent) the oldest go, beyond --max-wals
 * WAL segments the oldest a snapshot released go; 0 keeps them all. etcd looks every 30 s (and at start);
 * here at start and after each snapshot, so the directory never holds more than etcd's does 30 s later.
 */
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { ConfChange, Entry, RaftPersistence, RaftStorage, Ready, Snapshot } from '../raft/index.js';
import { decodeFields, type ProtoField } from '../snapshot/index.js';
import { Wal, WalError, encodeFields, rollCrc, type DataDirLayout, type WalEntry, type WalMetadata } from '../storage/index.js';

const CONF_TYPES: readonly ConfChange['type'][] = ['add', 'remove', 'update'];
/** raftpb.ConfChangeType: AddNode 0, RemoveNode 1, UpdateNode 2, AddLearnerNode 3. */
const confTypeNumber = (t: ConfChange['type']): number => (t === 'addLearner' ? 3 : CONF_TYPES.indexOf(t));

function walEntryOf(e: Entry): WalEntry {
  if (e.type === 'normal') return { term: e.term, index: BigInt(e.index), type: 'normal', data: e.data };
  const cc = e.conf!;
  const head = [[1, 0n], [2, confTypeNumber(cc.type)], [3, cc.id]] as const;
  const data = encodeFields(cc.context === undefined ? head : [...head, [4, cc.context] as const]);
  return { term: e.term, index: BigInt(e.index), type: 'confChange', data };
}

const varint = (fs: readonly ProtoField[], n: number): bigint => {
  let v = 0n;
  for (const f of fs) if (f.field === n && 'varint' in f) v = f.varint;
  return v;
};
const bytesField = (fs: readonly ProtoField[], n: number): Uint8Array | undefined => {
  let v: Uint8Array | undefined;
  for (const f of fs) if (f.field === n && 'bytes' in f) v = f.bytes;
  return v;
};

function entryOf(w: WalEntry): Entry {
  const index = Number(w.index);
  if (w.type === 'normal') return { index, term: w.term, type: 'normal', data: w.data };
  if (w.type !== 'confChange') throw new WalError(`raftpb: entry type ${w.type} is not supported here`);
  const fs = decodeFields(w.data, 'raftpb.ConfChange');
  const t = Number(varint(fs, 2));
  const type: ConfChange['type'] | undefined = t === 3 ? 'addLearner' : CONF_TYPES[t];
  if (type === undefined) throw new WalError(`raftpb: conf change type ${t} is not supported here`);
  const context = bytesField(fs, 4);
  return { index, term: w.term, type: 'conf', data: new Uint8Array(0), conf: { type, id: varint(fs, 3), ...(context === undefined ? {} : { context }) } };
}

/** etcd's snap file name: term and index, 16 hex digits each. */
const snapName = (s: Snapshot): string => `${s.term.toString(16).padStart(16, '0')}-${s.index.toString(16).padStart(16, '0')}.snap`;

function encodeSnapFile(s: Snapshot): Uint8Array {
  const conf = encodeFields([...s.conf.voters.map((v) => [1, v] as const), ...s.conf.learners.map((l) => [2, l] as const)]);
  const meta = encodeFields([[1, conf], [2, s.index], [3, s.term]]);
  const raftSnap = encodeFields([[1, s.data], [2, meta]]);
  return encodeFields([[1, rollCrc(0, raftSnap)], [2, raftSnap]]);
}

function decodeSnapFile(file: Uint8Array): Snapshot {
  const outer = decodeFields(file, 'snappb.Snapshot');
  const data = bytesField(outer, 2) ?? new Uint8Array(0);
  if (Number(varint(outer, 1)) !== rollCrc(0, data)) throw new WalError('snap: crc mismatch');
  const snap = decodeFields(data, 'raftpb.Snapshot');
  const meta = decodeFields(bytesField(snap, 2) ?? new Uint8Array(0), 'raftpb.SnapshotMetadata');
  const conf = decodeFields(bytesField(meta, 1) ?? new Uint8Array(0), 'raftpb.ConfState');
  const ids = (n: number): bigint[] => conf.filter((f) => f.field === n && 'varint' in f).map((f) => (f as { varint: bigint }).varint);
  return { index: Number(varint(meta, 2)), term: varint(meta, 3), conf: { voters: ids(1), learners: ids(2) }, data: bytesField(snap, 1) ?? new Uint8Array(0) };
}

function writeSynced(path: string, bytes: Uint8Array): void {
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, 'w', 0o600);
  writeSync(fd, bytes);
  fsyncSync(fd);
  closeSync(fd);
  renameSync(tmp, path);
}

/** How many old files a member keeps (--max-snapshots, --max-wals: etcd's 5 each; 0 keeps all), and who hears of a purge. */
export interface Retention {
  readonly maxSnapshots: number;
  readonly maxWals: number;
  /** A file was purged (etcd logs `purged file PATH successfully`). */
  readonly purged?: ((path: string) => void) | undefined;
}

/** etcd's defaults: --max-snapshots 5, --max-wals 5. */
export const DEFAULT_RETENTION: Retention = { maxSnapshots: 5, maxWals: 5 };

/** --max-snapshots and --max-wals as a member was started with them (etcd's 5 each when not given). */
export function retentionOf(opts: { readonly maxSnapshots?: number | undefined; readonly maxWals?: number | undefined; readonly events?: { purged?(path: string): void } | undefined }): Retention {
  return {
    maxSnapshots: opts.maxSnapshots ?? DEFAULT_RETENTION.maxSnapshots,
    maxWals: opts.maxWals ?? DEFAULT_RETENTION.maxWals,
    purged: (path) => opts.events?.purged?.(path),
  };
}

export class WalPersistence implements RaftPersistence {
  private constructor(
    private readonly wal: Wal,
    private readonly layout: DataDirLayout,
    private readonly retention: Retention,
  ) {}

  /** A new member's data dir: the WAL, with a new cluster's bootstrap entries (or a joining member's nothing). */
  static create(layout: DataDirLayout, metadata: WalMetadata, initial: RaftStorage, retention: Retention = DEFAULT_RETENTION): WalPersistence {
    mkdirSync(layout.snapDir, { recursive: true, mode: 0o700 });
    const p = new WalPersistence(Wal.create(layout.walDir, metadata), layout, retention);
    const h = initial.hardState;
    p.wal.save({ term: h.term, vote: h.vote, commit: BigInt(h.commit) }, initial.entries.map(walEntryOf));
    return p;
  }

  /** A restarting member: its WAL opened for appending, and what its Raft node restarts from. */
  static open(layout: DataDirLayout, retention: Retention = DEFAULT_RETENTION): { persistence: WalPersistence; storage: RaftStorage; metadata: WalMetadata } {
    const { wal, contents } = Wal.open(layout.walDir);
    const snapshot = newestSnapshot(layout) ?? { index: 0, term: 0n, conf: { voters: [], learners: [] }, data: new Uint8Array(0) };
    const h = contents.hardState ?? { term: 0n, vote: 0n, commit: 0n };
    const entries = contents.entries.filter((e) => Number(e.index) > snapshot.index).map(entryOf);
    // etcd opens its WAL at the snapshot, holding only the segments from there: older ones may be purged.
    wal.releaseTo(BigInt(snapshot.index));
    return {
      persistence: new WalPersistence(wal, layout, retention),
      storage: { hardState: { term: h.term, vote: h.vote, commit: Math.max(Number(h.commit), snapshot.index) }, snapshot, entries },
      metadata: contents.metadata,
    };
  }

  save(rd: Ready): void {
    if (rd.snapshot !== undefined) {
      // The leader's snapshot replaced this member's whole log: what the WAL holds after its index is
      // another history. An entry at the snapshot's index (dropped on reading, being below the snap
      // file's point) makes the WAL cut everything after it, after the snapshot itself is safe.
      const s = rd.snapshot;
      this.snapshotted(s);
      this.wal.save(undefined, [{ term: s.term, index: BigInt(s.index), type: 'normal', data: new Uint8Array(0) }]);
    }
    const h = rd.hardState;
    this.wal.save(h === undefined ? undefined : { term: h.term, vote: h.vote, commit: BigInt(h.commit) }, rd.entries.map(walEntryOf));
  }

  snapshotted(s: Snapshot): void {
    writeSynced(join(this.layout.snapDir, snapName(s)), encodeSnapFile(s));
    this.wal.saveSnapshot({ index: BigInt(s.index), term: s.term });
    // The segments before the snapshot are no longer read by a restart (etcd's ReleaseLockTo).
    this.wal.releaseTo(BigInt(s.index));
    this.purge();
  }

  /** etcd's purgeFile, once: snap files, received dbs and released WAL segments beyond what is kept. */
  purge(): void {
    const { maxSnapshots, maxWals, purged } = this.retention;
    const gone: string[] = [];
    if (maxSnapshots > 0) {
      // etcd's suffixes: "snap.db" (a leader's db, received) and "snap" (the snap files), each counted apart.
      gone.push(...purgeOldest(this.layout.snapDir, (n) => n.endsWith('snap.db'), maxSnapshots));
      gone.push(...purgeOldest(this.layout.snapDir, (n) => n.endsWith('snap'), maxSnapshots));
    }
    if (maxWals > 0) gone.push(...this.wal.purge(maxWals));
    for (const p of gone) purged?.(p);
  }
}

/** Deletes the oldest (by name) of the files `matches` picks in `dir` while more than `max` remain. */
function purgeOldest(dir: string, matches: (name: string) => boolean, max: number): string[] {
  if (!existsSync(dir)) return [];
  const names = readdirSync(dir).filter(matches).sort();
  const gone = names.slice(0, Math.max(0, names.length - max)).map((n) => join(dir, n));
  for (const p of gone) rmSync(p);
  return gone;
}

/** The newest snap file that decodes (etcd's snapshotter.Load skips broken ones). */
function newestSnapshot(layout: DataDirLayout): Snapshot | undefined {
  if (!existsSync(layout.snapDir)) return undefined;
  const names = readdirSync(layout.snapDir).filter((n) => /^[0-9a-f]{16}-[0-9a-f]{16}\.snap$/.test(n)).sort().reverse();
  for (const n of names) {
    try {
      return decodeSnapFile(new Uint8Array(readFileSync(join(layout.snapDir, n))));
    } catch {
      continue;
    }
  }
  return undefined;
}
