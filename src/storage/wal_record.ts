/**
 * etcd's WAL on disk, record by record (etcd's wal package and its walpb / raftpb messages): each record is
 * a frame — a little-endian uint64 holding the record's length, and, when the record is not a multiple of
 * 8 bytes, 0x80|padding in its top byte — followed by the walpb.Record {type 1, crc 2, data 3} and the
 * padding, so that a length word never straddles a torn write. The crc is CRC-32C rolled over the data of
 * every record from the start of the log (a crc record carries the running value into a new file).
 *
 * What the data of each record type is:
 *   metadata (1)  etcdserverpb.Metadata {NodeID 1, ClusterID 2} — who wrote the log
 *   entry (2)     raftpb.Entry {Type 1, Term 2, Index 3, Data 4} — a Raft log entry
 *   state (3)     raftpb.HardState {Term 1, Vote 2, Commit 3}
 *   crc (4)       no data: the running crc, at the head of every file
 *   snapshot (5)  walpb.Snapshot {Index 1, Term 2} — the log is folded into the backend up to here
 * Bytes in and out are those etcd 3.4 writes (its proto2 fields are always written, zero or not), so a WAL
 * etcd wrote (e.g. by `etcdctl snapshot restore`) reads here and the other way round.
 */
import CRC32C from 'crc-32/crc32c.js';
import { LEN, VARINT, WireWriter, tag, varintSize } from '../mvcc/index.js';
import { ProtoFormatError, decodeFields, type ProtoField } from '../snapshot/index.js';

export const RECORD_METADATA = 1;
export const RECORD_ENTRY = 2;
export const RECORD_STATE = 3;
export const RECORD_CRC = 4;
export const RECORD_SNAPSHOT = 5;

/** Raft's entry types (raftpb.EntryType). */
export type EntryType = 'normal' | 'confChange' | 'confChangeV2';
const ENTRY_TYPES: readonly EntryType[] = ['normal', 'confChange', 'confChangeV2'];

/** raftpb.Entry: one Raft log entry; `data` is what the state machine applies (etcd: an InternalRaftRequest). */
export interface WalEntry {
  readonly term: bigint;
  readonly index: bigint;
  readonly type: EntryType;
  readonly data: Uint8Array;
}

/** raftpb.HardState: what Raft must find again after a restart. */
export interface HardState {
  readonly term: bigint;
  readonly vote: bigint;
  readonly commit: bigint;
}

/** walpb.Snapshot: the position up to which the log was folded into a snapshot (the backend). */
export interface WalSnapshot {
  readonly index: bigint;
  readonly term: bigint;
}

/** etcdserverpb.Metadata: the member and cluster the log belongs to. */
export interface WalMetadata {
  readonly nodeId: bigint;
  readonly clusterId: bigint;
}

/** One decoded walpb.Record, with where its frame starts in its file. */
export interface WalRecord {
  readonly type: number;
  readonly crc: number;
  readonly data: Uint8Array;
}

/** A WAL that cannot be read, with etcd's words for why ("walpb: crc mismatch", a decoding error, ...). */
export class WalError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WalError';
  }
}

/** CRC-32C of `data` continued from `prev` (Go's crc32.Update with the Castagnoli table). */
export function rollCrc(prev: number, data: Uint8Array): number {
  return CRC32C.buf(data, prev) >>> 0;
}

type Field = readonly [number, bigint | number] | readonly [number, Uint8Array];

/** A proto2 message of `fields` in order: varints always written (etcd's non-nullable fields), bytes as given. */
export function encodeFields(fields: readonly Field[]): Uint8Array {
  let size = 0;
  for (const [f, v] of fields) {
    size += v instanceof Uint8Array ? varintSize(tag(f, LEN)) + varintSize(v.length) + v.length : varintSize(tag(f, VARINT)) + varintSize(BigInt.asUintN(64, BigInt(v)));
  }
  const w = new WireWriter(size);
  for (const [f, v] of fields) {
    if (v instanceof Uint8Array) w.bytes(f, v);
    else {
      w.varint(tag(f, VARINT));
      w.varint(BigInt.asUintN(64, BigInt(v)));
    }
  }
  return new Uint8Array(w.buf.buffer, w.buf.byteOffset, w.buf.length);
}

/** The fields of a record's message, as WalError when they are not protobuf (etcd's words: `proto: ...`). */
function fieldsOf(data: Uint8Array, what: string): ProtoField[] {
  try {
    return decodeFields(data, what);
  } catch (err) {
    if (err instanceof ProtoFormatError) throw new WalError(`proto: ${err.message}`);
    throw err;
  }
}

const varintOf = (fs: readonly ProtoField[], n: number): bigint => {
  let v = 0n;
  for (const f of fs) if (f.field === n && 'varint' in f) v = f.varint;
  return v;
};
const bytesOf = (fs: readonly ProtoField[], n: number): Uint8Array => {
  let v: Uint8Array = new Uint8Array(0);
  for (const f of fs) if (f.field === n && 'bytes' in f) v = f.bytes;
  return v;
};

export const encodeEntry = (e: WalEntry): Uint8Array =>
  encodeFields([[2, e.term], [3, e.index], [1, ENTRY_TYPES.indexOf(e.type)], [4, e.data]]);
export function decodeEntry(data: Uint8Array): WalEntry {
  const fs = fieldsOf(data, 'raftpb.Entry');
  const type = ENTRY_TYPES[Number(varintOf(fs, 1))];
  if (type === undefined) throw new WalError(`raftpb: unknown entry type ${varintOf(fs, 1)}`);
  return { term: varintOf(fs, 2), index: varintOf(fs, 3), type, data: bytesOf(fs, 4) };
}

export const encodeHardState = (s: HardState): Uint8Array => encodeFields([[1, s.term], [2, s.vote], [3, s.commit]]);
export function decodeHardState(data: Uint8Array): HardState {
  const fs = fieldsOf(data, 'raftpb.HardState');
  return { term: varintOf(fs, 1), vote: varintOf(fs, 2), commit: varintOf(fs, 3) };
}

export const encodeSnapshot = (s: WalSnapshot): Uint8Array => encodeFields([[1, s.index], [2, s.term]]);
export function decodeSnapshot(data: Uint8Array): WalSnapshot {
  const fs = fieldsOf(data, 'walpb.Snapshot');
  return { index: varintOf(fs, 1), term: varintOf(fs, 2) };
}

export const encodeMetadata = (m: WalMetadata): Uint8Array => encodeFields([[1, m.nodeId], [2, m.clusterId]]);
export function decodeMetadata(data: Uint8Array): WalMetadata {
  const fs = fieldsOf(data, 'etcdserverpb.Metadata');
  return { nodeId: varintOf(fs, 1), clusterId: varintOf(fs, 2) };
}

/** A record framed for the file: length word, walpb.Record, padding to 8 bytes. */
export function frameRecord(r: WalRecord): Uint8Array {
  const rec = encodeFields(r.type === RECORD_CRC ? [[1, r.type], [2, r.crc]] : [[1, r.type], [2, r.crc], [3, r.data]]);
  const pad = (8 - (rec.length % 8)) % 8;
  const out = new Uint8Array(8 + rec.length + pad);
  const view = new DataView(out.buffer);
  view.setUint32(0, rec.length, true);
  view.setUint32(4, pad === 0 ? 0 : (0x80 | pad) << 24, true);
  out.set(rec, 8);
  return out;
}

/** A record as read from a file: where its frame starts, and its bytes (for etcd's torn-write check). */
export interface FramedRecord extends WalRecord {
  readonly offset: number;
  readonly body: Uint8Array;
  readonly bodyOffset: number;
}

/** What reading a file's frames found: the records, and whether the file ended inside one. */
export interface FramedRecords {
  readonly records: readonly FramedRecord[];
  /** The file ends inside a record, or a record that is not protobuf has a zeroed sector: a write torn by a crash. */
  readonly tornAt: number | undefined;
  /** Where the records end: the zero length word of an etcd segment's preallocated rest, or the file's end. */
  readonly end: number;
}

/** Sector size of etcd's torn-write check: a write is torn when a whole sector of it is still zeroes. */
const SECTOR = 512;

/**
 * Every record of a file's frames, in order. Reading stops at a zero length word (the preallocated rest
 * of an etcd file) or at the end. A record cut short by the end of the file, or one that is not protobuf
 * but has a zeroed sector, was torn by a crash (tornAt: its frame's offset). Any other record that is not
 * protobuf is a WalError (etcd: a `proto:` error).
 */
export function readFrames(file: Uint8Array): FramedRecords {
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const records: FramedRecord[] = [];
  let pos = 0;
  while (pos < file.length) {
    if (pos + 8 > file.length) return { records, tornAt: pos, end: pos };
    const lo = view.getUint32(pos, true);
    const hi = view.getUint32(pos + 4, true);
    if (lo === 0 && hi === 0) break;
    const pad = (hi & 0x80000000) !== 0 ? (hi >>> 24) & 0x7 : 0;
    const len = lo + (hi & 0x00ffffff) * 2 ** 32;
    const start = pos + 8;
    if (start + len + pad > file.length) return { records, tornAt: pos, end: pos };
    const body = file.subarray(start, start + len);
    let fs: ProtoField[];
    try {
      fs = fieldsOf(body, 'walpb.Record');
    } catch (err) {
      if (isTorn(body, start)) return { records, tornAt: pos, end: pos };
      throw err;
    }
    records.push({ type: Number(varintOf(fs, 1)), crc: Number(varintOf(fs, 2)), data: bytesOf(fs, 3), offset: pos, body, bodyOffset: start });
    pos = start + len + pad;
  }
  return { records, tornAt: undefined, end: pos };
}

/** Whether a record at file offset `at` has a whole sector-aligned chunk of zeroes (etcd's isTornEntry). */
export function isTorn(body: Uint8Array, at: number): boolean {
  let i = 0;
  while (i < body.length) {
    const next = Math.min(body.length, i + SECTOR - ((at + i) % SECTOR));
    let zero = true;
    for (let j = i; j < next && zero; j++) zero = body[j] === 0;
    if (zero) return true;
    i = next;
  }
  return false;
}
