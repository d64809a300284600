/**
 * etcd's write-ahead log (its wal package) as files in `member/wal`: segments named `SEQ-INDEX.wal` (16 hex
 * digits each: the segment's sequence number and the Raft index of the first entry it was cut for), each
 * opening with a crc record (the running CRC-32C), the metadata, and the hard state (the first segment: an
 * empty snapshot record instead). save() appends entries and the hard state and syncs the file before it
 * returns — etcd answers a request only after the entry holding it is synced, and so must the caller. A
 * segment over 64 MB is cut into a new one; releaseTo() lets go of the segments a snapshot made unneeded
 * (etcd's ReleaseLockTo) and purge() deletes the oldest of those while more than a number remain (etcd's
 * purge of `member/wal`, which skips a segment the WAL still holds locked).
 *
 * Reading (Wal.open) checks every record's CRC and the metadata of every segment, replays Raft's rule that
 * an entry overwrites any entry at or after its index (a new leader truncating a follower's log), and
 * repairs a torn tail of the last segment — a record a crash cut short — by cutting the file before it, as
 * etcd does ("repaired WAL error (unexpected EOF)"); anything else unreadable is a WalError with etcd's words.
 */
import { closeSync, existsSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import {
  RECORD_CRC,
  RECORD_ENTRY,
  RECORD_METADATA,
  RECORD_SNAPSHOT,
  RECORD_STATE,
  WalError,
  decodeEntry,
  decodeHardState,
  decodeMetadata,
  decodeSnapshot,
  encodeEntry,
  encodeHardState,
  encodeMetadata,
  encodeSnapshot,
  frameRecord,
  isTorn,
  readFrames,
  rollCrc,
  type HardState,
  type WalEntry,
  type WalMetadata,
  type WalSnapshot,
} from './wal_record.js';

/** etcd's SegmentSizeBytes: a segment past this is cut at the next save. */
export const SEGMENT_BYTES = 64 * 1000 * 1000;

/** What a WAL holds, read back in order. */
export interface WalContents {
  readonly metadata: WalMetadata;
  /** The last hard state saved (undefined: none yet). */
  readonly hardState: HardState | undefined;
  /** The last snapshot record ({0, 0} in a new log): entries up to its index are folded into the backend. */
  readonly snapshot: WalSnapshot;
  /** Every entry still in the log, in index order, later writes having overwritten earlier ones at the same index. */
  readonly entries: readonly WalEntry[];
  /** A torn tail was cut off the last segment (etcd logs "repaired WAL error (unexpected EOF)"). */
  readonly repairedFile: string | undefined;
}

interface Segment {
  readonly seq: bigint;
  readonly index: bigint;
  readonly name: string;
}

const segmentName = (seq: bigint, index: bigint): string => `${seq.toString(16).padStart(16, '0')}-${index.toString(16).padStart(16, '0')}.wal`;

/** The segments of `dir`, in sequence order (names that are not segments are ignored, as etcd does). */
function segmentsOf(dir: string): Segment[] {
  const out: Segment[] = [];
  for (const name of readdirSync(dir)) {
    const m = /^([0-9a-f]{16})-([0-9a-f]{16})\.wal$/.exec(name);
    if (m !== null) out.push({ seq: BigInt(`0x${m[1]!}`), index: BigInt(`0x${m[2]!}`), name });
  }
  return out.sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0));
}

/** Whether `dir` holds a WAL (etcd's wal.Exist: any segment file). */
export function walExists(dir: string): boolean {
  return existsSync(dir) && statSync(dir).isDirectory() && segmentsOf(dir).length > 0;
}

/** Syncs a directory, so that a file created or renamed in it survives a crash. */
export function syncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** A WAL open for appending: its last segment's file and the running CRC. */
export class Wal {
  #fd: number;
  #crc: number;
  #seq: bigint;
  #size: number;
  #lastIndex: bigint;
  #state: HardState | undefined;
  /** Segments below this sequence number are released: no restart reads them, purge() may delete them. */
  #releasedBelow = 0n;

  private constructor(
    readonly dir: string,
    readonly metadata: WalMetadata,
    fd: number,
    seq: bigint,
    size: number,
    crc: number,
    lastIndex: bigint,
    state: HardState | undefined,
  ) {
    this.#fd = fd;
    this.#seq = seq;
    this.#size = size;
    this.#crc = crc;
    this.#lastIndex = lastIndex;
    this.#state = state;
  }

  /**
   * A new WAL in `dir` (which must not hold one): the first segment with its crc, metadata and an empty
   * snapshot record, made in `dir.tmp` and renamed into place, as etcd's wal.Create does, so a crash leaves
   * either no WAL or a whole one.
   */
  static create(dir: string, metadata: WalMetadata): Wal {
    if (walExists(dir)) throw new WalError('wal: file already exists');
    const tmp = `${dir}.tmp`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true, mode: 0o700 });
    const name = segmentName(0n, 0n);
    const fd = openSync(join(tmp, name), 'w', 0o600);
    let crc = 0;
    const frames: Uint8Array[] = [frameRecord({ type: RECORD_CRC, crc: 0, data: new Uint8Array(0) })];
    for (const [type, data] of [[RECORD_METADATA, encodeMetadata(metadata)], [RECORD_SNAPSHOT, encodeSnapshot({ index: 0n, term: 0n })]] as const) {
      crc = rollCrc(crc, data);
      frames.push(frameRecord({ type, crc, data }));
    }
    const size = writeAll(fd, frames);
    fsyncSync(fd);
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
    syncDir(join(dir, '..'));
    return new Wal(dir, metadata, openSync(join(dir, name), 'a'), 0n, size, crc, 0n, undefined);
  }

  /** Reads the WAL in `dir` (see the module comment) and opens it for appending after its last record. */
  static open(dir: string): { wal: Wal; contents: WalContents } {
    const segments = segmentsOf(dir);
    if (segments.length === 0) throw new WalError('wal: file not found');
    let crc = 0;
    let metadata: WalMetadata | undefined;
    let hardState: HardState | undefined;
    let snapshot: WalSnapshot = { index: 0n, term: 0n };
    let entries: WalEntry[] = [];
    let repairedFile: string | undefined;
    let lastSize = 0;
    for (const [i, seg] of segments.entries()) {
      const path = join(dir, seg.name);
      const file = new Uint8Array(readFileSync(path));
      const last = i === segments.length - 1;
      const { records, tornAt, end: dataEnd } = readFrames(file);
      let end = tornAt;
      for (const r of records) {
        if (r.type === RECORD_CRC) {
          if (crc !== 0 && r.crc !== crc) throw new WalError('walpb: crc mismatch');
          crc = r.crc;
          continue;
        }
        const next = rollCrc(crc, r.data);
        if (next !== r.crc) {
          if (last && isTorn(r.body, r.bodyOffset)) {
            end = r.offset;
            break;
          }
          throw new WalError('walpb: crc mismatch');
        }
        crc = next;
        if (r.type === RECORD_ENTRY) {
          const e = decodeEntry(r.data);
          // Raft's overwrite: an entry at an index already held replaces it and everything after it.
          if (entries.length > 0 && e.index <= entries[entries.length - 1]!.index) entries = entries.filter((x) => x.index < e.index);
          entries.push(e);
        } else if (r.type === RECORD_STATE) hardState = decodeHardState(r.data);
        else if (r.type === RECORD_METADATA) {
          const m = decodeMetadata(r.data);
          if (metadata !== undefined && (m.nodeId !== metadata.nodeId || m.clusterId !== metadata.clusterId)) throw new WalError('wal: conflicting metadata found');
          metadata = m;
        } else if (r.type === RECORD_SNAPSHOT) snapshot = decodeSnapshot(r.data);
        else throw new WalError(`wal: unexpected block type ${r.type}`);
      }
      if (end !== undefined && !last) throw new WalError('unexpected EOF');
      if (last) {
        // Appends go right after the last whole record: a torn one is cut off (etcd's wal.Repair), and so is
        // the zeroed rest of a segment etcd preallocated.
        lastSize = end ?? dataEnd;
        if (end !== undefined) repairedFile = path;
        if (lastSize !== file.length) {
          const fd = openSync(path, 'r+');
          ftruncateSync(fd, lastSize);
          fsyncSync(fd);
          closeSync(fd);
        }
      }
    }
    if (metadata === undefined) throw new WalError('wal: metadata not found');
    const tail = segments[segments.length - 1]!;
    const lastIndex = entries.length > 0 ? entries[entries.length - 1]!.index : snapshot.index;
    const wal = new Wal(dir, metadata, openSync(join(dir, tail.name), 'a'), tail.seq, lastSize, crc, lastIndex, hardState);
    return { wal, contents: { metadata, hardState, snapshot, entries, repairedFile } };
  }

  /** The index of the last entry saved (the snapshot's before any). */
  get lastIndex(): bigint {
    return this.#lastIndex;
  }

  /** The hard state last saved. */
  get hardState(): HardState | undefined {
    return this.#state;
  }

  /**
   * Appends `entries` (in index order; one at or below lastIndex overwrites from there, as Raft does) and,
   * when given and changed, the hard state, then syncs: when save returns, they survive a crash.
   */
  save(state: HardState | undefined, entries: readonly WalEntry[]): void {
    const frames: Uint8Array[] = [];
    for (const e of entries) {
      frames.push(this.#frame(RECORD_ENTRY, encodeEntry(e)));
      this.#lastIndex = e.index;
    }
    const s = this.#state;
    if (state !== undefined && (s === undefined || s.term !== state.term || s.vote !== state.vote || s.commit !== state.commit)) {
      frames.push(this.#frame(RECORD_STATE, encodeHardState(state)));
      this.#state = state;
    }
    if (frames.length === 0) return;
    this.#size += writeAll(this.#fd, frames);
    fsyncSync(this.#fd);
    if (this.#size >= SEGMENT_BYTES) this.cut();
  }

  /** Records that the log is folded into a snapshot (the backend) up to `snap`, synced. */
  saveSnapshot(snap: WalSnapshot): void {
    this.#size += writeAll(this.#fd, [this.#frame(RECORD_SNAPSHOT, encodeSnapshot(snap))]);
    fsyncSync(this.#fd);
    if (snap.index > this.#lastIndex) this.#lastIndex = snap.index;
  }

  /** Starts a new segment for the entries after lastIndex: crc, metadata, the hard state. */
  cut(): void {
    fsyncSync(this.#fd);
    closeSync(this.#fd);
    this.#seq++;
    const name = segmentName(this.#seq, this.#lastIndex + 1n);
    const tmp = join(this.dir, `${name}.tmp`);
    const fd = openSync(tmp, 'w', 0o600);
    this.#fd = fd;
    this.#size = 0;
    const frames = [frameRecord({ type: RECORD_CRC, crc: this.#crc, data: new Uint8Array(0) }), this.#frame(RECORD_METADATA, encodeMetadata(this.metadata))];
    if (this.#state !== undefined) frames.push(this.#frame(RECORD_STATE, encodeHardState(this.#state)));
    this.#size = writeAll(fd, frames);
    fsyncSync(fd);
    closeSync(fd);
    renameSync(tmp, join(this.dir, name));
    syncDir(this.dir);
    this.#fd = openSync(join(this.dir, name), 'a');
  }

  /**
   * Lets go of the segments a snapshot at `index` made unneeded, by etcd's rule (ReleaseLockTo): every one
   * before the segment preceding the first that starts at or after `index` (or, when none does, before the
   * last one). Nothing is deleted here: purge() does that.
   */
  releaseTo(index: bigint): void {
    const segs = segmentsOf(this.dir);
    const after = segs.findIndex((s) => s.index >= index);
    const keep = after < 0 ? segs.length - 1 : after - 1;
    if (keep <= 0) return;
    const seq = segs[keep]!.seq;
    if (seq > this.#releasedBelow) this.#releasedBelow = seq;
  }

  /**
   * Deletes the oldest segments while more than `max` remain, stopping at the first one not released
   * (etcd's purge of `member/wal`, which stops at a segment whose lock it cannot take). Returns the paths
   * deleted, oldest first.
   */
  purge(max: number): string[] {
    const segs = segmentsOf(this.dir);
    const gone: string[] = [];
    while (segs.length > max && segs[0]!.seq < this.#releasedBelow) {
      const path = join(this.dir, segs.shift()!.name);
      rmSync(path);
      gone.push(path);
    }
    if (gone.length > 0) syncDir(this.dir);
    return gone;
  }

  /** Syncs and closes the file. */
  close(): void {
    if (this.#fd < 0) return;
    fsyncSync(this.#fd);
    closeSync(this.#fd);
    this.#fd = -1;
  }

  #frame(type: number, data: Uint8Array): Uint8Array {
    this.#crc = rollCrc(this.#crc, data);
    return frameRecord({ type, crc: this.#crc, data });
  }
}

/** Writes the frames at the file's end in one write; returns the bytes written. */
function writeAll(fd: number, frames: readonly Uint8Array[]): number {
  const total = frames.reduce((n, f) => n + f.length, 0);
  const buf = new Uint8Array(total);
  let at = 0;
  for (const f of frames) {
    buf.set(f, at);
    at += f.length;
  }
  let done = 0;
  while (done < total) done += writeSync(fd, buf, done, total - done);
  return total;
}
