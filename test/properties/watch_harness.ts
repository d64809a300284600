/**
 * Shared pieces of the watch properties: a small key universe with a watched prefix, random history
 * operations (puts, deletes, range deletes, multi-key txns, compactions) and how to apply them, and a
 * recorder that routes a stream's responses to the watches they belong to, so each watch can be judged
 * by src/watch/guarantees.ts. Seed/replay plumbing lives in harness.ts.
 */
import fc from 'fast-check';

import { keyBytes, ErrCompacted, ErrFutureRev, type MvccStore, type RequestOp, type KeyValue } from '../../src/mvcc/index.js';
import { isEtcdError } from '../../src/etcd/index.js';
import { INVALID_WATCH_ID, type WatchCreateRequest, type WatchResponse, type WatchStream } from '../../src/watch/index.js';
import type * as M from '../../src/server/messages.js';
import { watchResponseIn } from '../../src/server/convert.js';
import { isProgressNotify } from '../../src/watch/guarantees.js';
import { referenceResponseSize } from './model/reference_watch_size.js';
import { COMPACTED, WatchIdReference } from './model/reference_watch_stream.js';

/** The watched prefix "/p/" is [PREFIX, PREFIX_END). "/p/1\0" sits right after "/p/1" (pagination edge). */
export const PREFIX = '/p/';
export const PREFIX_END = '/p0';
export const KEYS: readonly string[] = ['/p/0', '/p/1', '/p/1\0', '/p/2', '/p/3', '/p', '/p0', '/q/1'];

export const b = (s: string): Uint8Array => keyBytes(s);
export const latin1 = (u: Uint8Array): string => Buffer.from(u.buffer, u.byteOffset, u.byteLength).toString('latin1');

export type HistoryOp =
  | { readonly op: 'put'; readonly key: string; readonly value: string }
  | { readonly op: 'del'; readonly key: string }
  | { readonly op: 'delRange'; readonly key: string; readonly end: string }
  | { readonly op: 'txn'; readonly puts: readonly { readonly key: string; readonly value: string }[]; readonly dels: readonly string[] }
  | { readonly op: 'compact'; readonly back: number };

const keyArb = fc.constantFrom(...KEYS);
/** Values of varied length, so that small response limits fragment some responses. */
const valueArb = fc.tuple(fc.nat({ max: 99 }), fc.nat({ max: 40 })).map(([n, len]) => `v${n}`.padEnd(2 + len, '.'));

export const historyOpArb: fc.Arbitrary<HistoryOp> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant('put' as const), key: keyArb, value: valueArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('del' as const), key: keyArb }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      { op: 'delRange' as const, key: PREFIX, end: PREFIX_END },
      { op: 'delRange' as const, key: '/p/1', end: '/p/3' },
      { op: 'delRange' as const, key: '/p', end: '\0' },
    ),
  },
  {
    weight: 3,
    arbitrary: fc
      .record({
        puts: fc.uniqueArray(fc.record({ key: keyArb, value: valueArb }), { minLength: 1, maxLength: 4, selector: (p) => p.key }),
        dels: fc.uniqueArray(keyArb, { maxLength: 2 }),
      })
      .map(({ puts, dels }) => ({ op: 'txn' as const, puts, dels: dels.filter((d) => !puts.some((p) => p.key === d)) })),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('compact' as const), back: fc.nat({ max: 4 }) }) },
);

/** An operation with its compaction revision resolved, so it replays identically on another store. */
export type ResolvedOp = Exclude<HistoryOp, { op: 'compact' }> | { readonly op: 'compactAt'; readonly rev: number };

/** Resolves `compact back k` against `kv` (current - k); undefined when it would be rejected. */
export function resolve(kv: MvccStore, op: HistoryOp): ResolvedOp | undefined {
  if (op.op !== 'compact') return op;
  const rev = kv.currentRevision - op.back;
  if (rev <= kv.compactRevision || rev < 1) return undefined;
  return { op: 'compactAt', rev };
}

/** Applies a resolved op; rejected compactions are ignored (any other error is a bug and propagates). */
export function apply(kv: MvccStore, op: ResolvedOp): void {
  switch (op.op) {
    case 'put':
      kv.put({ key: b(op.key), value: b(op.value) });
      return;
    case 'del':
      kv.deleteRange({ key: b(op.key) });
      return;
    case 'delRange':
      kv.deleteRange({ key: b(op.key), rangeEnd: b(op.end) });
      return;
    case 'txn': {
      const success: RequestOp[] = [
        ...op.puts.map((p) => ({ requestPut: { key: b(p.key), value: b(p.value) } })),
        ...op.dels.map((d) => ({ requestDeleteRange: { key: b(d) } })),
      ];
      kv.txn({ success });
      return;
    }
    case 'compactAt':
      try {
        kv.compact(op.rev);
      } catch (e) {
        if (!isEtcdError(e, ErrCompacted) && !isEtcdError(e, ErrFutureRev)) throw e;
      }
      return;
  }
}

/** The live keys of [key, end) at the current revision, as "key=value@mod" lines (for comparisons). */
export function rangeNow(kv: MvccStore, key: string, end: string): Map<string, KeyValue> {
  const out = new Map<string, KeyValue>();
  for (const x of kv.range({ key: b(key), rangeEnd: b(end) }).kvs) out.set(latin1(x.key), x);
  return out;
}

export function showKv(kv: KeyValue): string {
  return `${JSON.stringify(latin1(kv.key))}=${JSON.stringify(latin1(kv.value))}@${kv.modRevision}/c${kv.createRevision}/v${kv.version}`;
}

/** One watch as a client saw it: its request and every response routed to it. */
export interface WatchRecord {
  readonly req: WatchCreateRequest;
  readonly responses: WatchResponse[];
  /** The watch ID, or -1 when the create failed. */
  readonly id: number;
  /** Its stream was closed under it: no cancel response, no more responses. */
  broken: boolean;
  /** A canceled response arrived (compaction, or the client's own cancel). */
  canceled: boolean;
  /** The store's compaction revision when the client read each response (prev_kv was readable at or above it). */
  readonly compactedAtRead: number[];
  /**
   * The client asked to cancel it. Its own responses already on the wire still arrive, in order and
   * whole (a fragmented response is sent in one go, so its last fragment precedes the canceled reply);
   * those still in the channel are dropped, so a stream-wide progress notification after this point no
   * longer vouches for this watch and is not recorded for it.
   */
  cancelRequested: boolean;
}

/**
 * A watch stream with the client side of the bookkeeping: responses are routed to their watch by ID, a
 * stream-wide progress notification (ID -1) goes to every watch already created on the stream, as the
 * Go client broadcasts it. The IDs a create gets (or its refusal) and a cancel's answer are judged as they
 * happen, against model/reference_watch_stream.ts; so is what a read returns against `pending`.
 */
export class RecordedStream {
  readonly records: WatchRecord[] = [];
  private readonly live = new Map<number, WatchRecord>();
  /**
   * Records whose created response was not taken yet, by ID, oldest first: a client may reuse an ID once
   * its watch is canceled, before the first created reply was read.
   */
  private readonly announced = new Map<number, WatchRecord[]>();
  /** Records whose canceled response was taken, by ID. */
  private readonly ended = new Map<number, WatchRecord>();

  /** The IDs the stream must hand out, and those it knows. */
  private readonly ids = new WatchIdReference();
  /** A watch asked for fragments: a response may then be read as several. */
  private fragmenting = false;

  /** The send loop told the reader (onSend) that something can be read since the reader last emptied it. */
  private told = false;

  /** `compacted` reads the store's compaction revision (when a response is read); `createdAt`, the clock. */
  constructor(
    readonly stream: WatchStream,
    private readonly compacted: () => number = () => 0,
    readonly createdAt = 0,
  ) {
    // A front door's reader sleeps until onSend: it must come when there is something, and only then.
    stream.onSend = () => {
      if (stream.pending === 0) throw new Error(`stream ${stream.seq}: onSend with nothing to read`);
      this.told = true;
    };
  }

  open(req: WatchCreateRequest): WatchRecord {
    const created = this.stream.watch(req);
    // etcd 3.5.24+ refuse a negative start revision as compacted before anything else; 3.4 takes it.
    const refusedNegative = (req.startRevision ?? 0) < 0 && created.watchId === INVALID_WATCH_ID && created.cancelReason === COMPACTED;
    const want = refusedNegative ? { refused: COMPACTED } : this.ids.create(req);
    const got = created.watchId === INVALID_WATCH_ID ? { refused: created.cancelReason } : { id: created.watchId };
    if (JSON.stringify(got) !== JSON.stringify(want) || created.created !== true || created.canceled !== ('refused' in want)) {
      throw new Error(`stream ${this.stream.seq}: create ${JSON.stringify(req, jsonBytes)} got ${JSON.stringify(created, jsonBytes)}, etcd's rules give ${JSON.stringify(want)}`);
    }
    if (req.fragment === true) this.fragmenting = true;
    const rec: WatchRecord = { req, responses: [], id: created.watchId, broken: false, canceled: false, cancelRequested: false, compactedAtRead: [] };
    this.records.push(rec);
    if (created.watchId === INVALID_WATCH_ID) {
      // The failed create's reply is the only response it will ever get.
      rec.responses.push(created);
      rec.compactedAtRead.push(this.compacted());
      rec.canceled = true;
    } else {
      const waiting = this.announced.get(created.watchId);
      if (waiting === undefined) this.announced.set(created.watchId, [rec]);
      else waiting.push(rec);
    }
    return rec;
  }

  cancel(rec: WatchRecord): void {
    if (rec.id === INVALID_WATCH_ID || rec.canceled || rec.broken) return;
    rec.cancelRequested = true;
    const answered = this.stream.cancel(rec.id);
    if (answered !== this.ids.cancel(rec.id)) throw new Error(`stream ${this.stream.seq}: cancel of watch ${rec.id} answered ${answered}, the stream knows it: ${!answered}`);
  }

  /** A cancel of an ID the stream does not know: no answer at all, nothing queued. */
  cancelUnknown(id: number): void {
    if (this.ids.knows(id)) return;
    const before = this.stream.pending;
    if (this.stream.cancel(id) || this.stream.pending !== before) throw new Error(`stream ${this.stream.seq}: a cancel of unknown watch ${id} was answered`);
  }

  /**
   * Takes every waiting response and routes it; returns them. The stream's `pending` said how many: each
   * one read (a fragmenting watch's response may be read as several pieces), and nothing pending after.
   */
  take(): WatchResponse[] {
    const pending = this.stream.pending;
    const got = readSized(this.stream, () => this.stream.take());
    if (got.length < pending || (!this.fragmenting && got.length !== pending) || this.stream.pending !== 0) {
      throw new Error(`stream ${this.stream.seq}: ${pending} responses pending, a take read ${got.length} and left ${this.stream.pending}`);
    }
    this.told = false;
    for (const r of got) this.route(r);
    return got;
  }

  /** A slow reader: takes at most `n` responses (the send loop refills the window behind it). */
  read(n: number): WatchResponse[] {
    const pending = this.stream.pending;
    const got = readSized(this.stream, () => this.stream.read(n), n);
    if (got.length > n || (got.length < n && (this.stream.pending !== 0 || got.length < pending))) {
      throw new Error(`stream ${this.stream.seq}: ${pending} responses pending, a read of ${n} read ${got.length} and left ${this.stream.pending}`);
    }
    this.told = this.stream.pending > 0;
    for (const r of got) this.route(r);
    return got;
  }

  private route(r: WatchResponse): void {
    // Only a refused create carries a cancel reason (a compaction's or a client's cancel has none).
    if (r.cancelReason !== '' && !(r.created && r.canceled)) throw new Error(`stream ${this.stream.seq}: a cancel reason on ${JSON.stringify(r, jsonBytes)}`);
    if (r.watchId === INVALID_WATCH_ID) {
      if (r.created) return; // a failed create: already recorded from watch()'s return value
      if (isProgressNotify(r)) for (const rec of this.live.values()) if (!rec.cancelRequested) this.file(rec, r);
      return;
    }
    let rec = this.live.get(r.watchId);
    if (r.created) {
      const waiting = this.announced.get(r.watchId);
      rec = waiting?.shift();
      if (waiting?.length === 0) this.announced.delete(r.watchId);
      if (rec !== undefined) this.live.set(r.watchId, rec);
    }
    if (rec === undefined && r.canceled && this.ended.get(r.watchId)?.cancelRequested === true) {
      // The answer to a cancel sent after the watch was already canceled by compaction (that response was
      // on the wire, unread): etcd still knows the ID and answers canceled once more.
      this.ended.delete(r.watchId);
      return;
    }
    if (rec === undefined) throw new Error(`response for unknown watch ${r.watchId}: ${JSON.stringify(r, jsonBytes)}`);
    this.file(rec, r);
    if (r.canceled) {
      rec.canceled = true;
      this.live.delete(r.watchId);
      this.ended.set(r.watchId, rec);
    }
  }

  /** etcd's sendLoop moves the channel into the transport while its window has room; the reader was told. */
  checkSendLoop(): void {
    const [n, held, newest] = [this.stream.channelLength, this.stream.inTransport.bytes, this.stream.inTransport.newest];
    if (n > 0 && held < this.stream.windowBytes) throw new Error(`stream ${this.stream.seq}: ${n} responses wait in the channel, the transport holds ${held} B of ${this.stream.windowBytes}`);
    // It sends only while the unread bytes are below the window (grpc-go's write quota), so a window of 0 holds
    // nothing (a fragmented response goes out whole: its pieces are judged by the size references).
    if (!this.fragmenting && held > 0 && held - newest >= this.stream.windowBytes) throw new Error(`stream ${this.stream.seq}: the transport holds ${held} B, ${held - newest} B before its newest response, the window is ${this.stream.windowBytes} B`);
    if (this.stream.pending > 0 && !this.told) throw new Error(`stream ${this.stream.seq}: ${this.stream.pending} responses wait, the reader was never told (onSend)`);
  }

  private file(rec: WatchRecord, r: WatchResponse): void {
    rec.responses.push(r);
    rec.compactedAtRead.push(this.compacted());
  }

  /**
   * The stream breaks: every watch on it ends without a cancel response. A closed stream takes no new
   * watch, answers no cancel and no progress request, and has nothing to read; closing it again is nothing.
   */
  close(): void {
    const ids = this.stream.watchIds();
    if (this.stream.isClosed) throw new Error(`stream ${this.stream.seq}: closed before close()`);
    this.stream.close();
    this.stream.close();
    let refused = false;
    try {
      this.stream.watch({ key: keyBytes('/p/1') });
    } catch (e) {
      refused = e instanceof Error && e.message === 'watch stream is closed';
    }
    this.stream.requestProgress();
    if (!refused || !this.stream.isClosed || ids.some((id) => this.stream.cancel(id)) || this.stream.pending !== 0 || this.stream.take().length !== 0 || this.stream.watchIds().length !== 0) {
      throw new Error(`stream ${this.stream.seq}: still serves after close()`);
    }
    for (const rec of this.records) if (!rec.canceled) rec.broken = true;
    this.live.clear();
    this.announced.clear();
    this.ended.clear();
  }

  /** Watches still open (created, not canceled, stream not broken). */
  openRecords(): WatchRecord[] {
    return this.records.filter((r) => !r.canceled && !r.broken && !r.cancelRequested);
  }
}

/** A stream of the quiet phase: its recorder and its progress interval (model/reference_watch_stream.ts). */
export interface QuietStream {
  readonly rs: RecordedStream;
  readonly intervalMs: number;
}

/**
 * The quiet phase, after every watch is synced and every response read: progress notifications judged
 * against etcd's rules (model/reference_watch_stream.ts) tick by tick, over every stream's ticks up to the
 * slowest one's fourth. A stream's first tick finds its transport unbuffered (window 0), so its
 * notifications wait in the channel until the client reads them after the tick; every later tick finds
 * grpc-go's 64 KiB window (no notification waits, none is dropped at a full channel). One write once every
 * stream has ticked twice, another once every stream has ticked three times. Nothing arrives between ticks;
 * at a tick, each open progress_notify watch of that stream that has reached its start revision gets one
 * notification under its own ID at the current revision — unless it was sent events since the stream's
 * last tick (unknown before the phase's first tick; a notification itself does not count; a watch made at a
 * stream's first tick owes one at its second) — and nothing
 * else arrives. Last, a progress request on each stream is answered once (ID -1, current revision) exactly
 * when every watch the stream knows is synced and has reached its start revision.
 */
export function quietPhase(clock: { now(): number; advanceTo(t: number): number }, streams: readonly QuietStream[], rev: () => number, write: () => void): void {
  const takeAll = (): Map<RecordedStream, WatchResponse[]> => new Map(streams.map(({ rs }) => [rs, rs.take()]));
  const setWindow = (rs: RecordedStream, bytes: number): void => {
    rs.stream.windowBytes = bytes;
    if (rs.stream.windowBytes !== bytes) throw new Error(`stream ${rs.stream.seq}: windowBytes = ${bytes} not set`);
  };
  for (const { rs } of streams) {
    // Bad sizes are refused and change nothing.
    for (const bad of [-1, 1.5, Number.NaN]) {
      const before = rs.stream.windowBytes;
      let refused = false;
      try {
        rs.stream.windowBytes = bad;
      } catch (e) {
        refused = e instanceof RangeError && e.message === `windowBytes must be a non-negative integer, got ${bad}`;
      }
      if (!refused || rs.stream.windowBytes !== before) throw new Error(`stream ${rs.stream.seq}: windowBytes = ${bad} was not refused`);
    }
    setWindow(rs, 0);
  }
  const open = (rs: RecordedStream): WatchRecord[] => rs.openRecords().filter((r) => r.req.progressNotify === true);
  /** Per watch: sent no events since its stream's last tick (undefined: not known before the first tick). */
  const quiet = new Map<WatchRecord, boolean>();
  const now = clock.now();
  const ticks: { at: number; s: QuietStream }[] = [];
  // Every tick of every stream up to the slowest one's fourth.
  const horizon = now + 4 * Math.max(...streams.map((q) => q.intervalMs));
  for (const q of streams) {
    const first = q.rs.createdAt + (Math.floor((now - q.rs.createdAt) / q.intervalMs) + 1) * q.intervalMs;
    for (let at = first; at <= horizon; at += q.intervalMs) ticks.push({ at, s: q });
  }
  const seen = new Map<RecordedStream, number>(streams.map(({ rs }) => [rs, 0]));
  let writes = 0;
  for (const at of [...new Set(ticks.map((t) => t.at))].sort((a, b) => a - b)) {
    if (at - 1 > clock.now()) {
      clock.advanceTo(at - 1);
      for (const [rs, got] of takeAll()) if (got.length > 0) throw new Error(`stream ${rs.stream.seq}: ${JSON.stringify(got, jsonBytes)} arrived between progress ticks (before ${at})`);
    }
    clock.advanceTo(at);
    const ticking = new Set(ticks.filter((t) => t.at === at).map((t) => t.s.rs));
    for (const [rs, got] of takeAll()) {
      const owed = ticking.has(rs) ? open(rs).filter((r) => rev() >= (r.req.startRevision ?? 0)) : [];
      const ids = got.map((r) => (isProgressNotify(r) && r.watchId !== INVALID_WATCH_ID && r.revision === rev() ? r.watchId : NaN));
      const must = owed.filter((r) => quiet.get(r) === true).map((r) => r.id);
      const may = owed.filter((r) => quiet.get(r) !== false).map((r) => r.id);
      if (ids.some((id) => !may.includes(id)) || must.some((id) => !ids.includes(id)) || new Set(ids).size !== ids.length) {
        throw new Error(`stream ${rs.stream.seq} at its progress tick ${at} (revision ${rev()}): got ${JSON.stringify(got, jsonBytes)}, owed notifications to [${must}] (and may to [${may}])`);
      }
    }
    for (const rs of ticking) {
      for (const r of open(rs)) quiet.set(r, true);
      seen.set(rs, seen.get(rs)! + 1);
      if (seen.get(rs) === 1) {
        setWindow(rs, 64 * 1024);
        // A watch made now has been sent no events: etcd marks a progress_notify watch quiet at its create
        // (serverWatchStream's progress[id] = true), so the stream's next tick owes it a notification. (Kills
        // the mutant that starts it not quiet: its first notification a tick late.) Made after the first tick,
        // whose window of 0 leaves room for only chanBufLen notifications in the channel.
        const fresh = rs.open({ key: Buffer.from('/quiet/fresh'), progressNotify: true });
        if (rs.take().length !== 1) throw new Error(`stream ${rs.stream.seq}: a create got other than its created reply in a quiet phase`);
        quiet.set(fresh, true);
      }
    }
    if (writes < 2 && [...seen.values()].every((n) => n >= writes + 2)) {
      writes++;
      write();
      for (const { rs } of streams) {
        const before = new Map(rs.records.map((r) => [r, r.responses.length]));
        rs.take();
        for (const r of rs.records) if (r.responses.slice(before.get(r)).some((x) => x.events.length > 0)) quiet.set(r, false);
      }
    }
  }
  for (const { rs } of streams) {
    const known = rs.records.filter((r) => r.id !== INVALID_WATCH_ID && !r.cancelRequested && !r.broken);
    const owed = known.length > 0 && known.every((r) => !r.canceled && rev() >= (r.req.startRevision ?? 0));
    rs.stream.requestProgress();
    const got = rs.take();
    const ok = owed ? got.length === 1 && isProgressNotify(got[0]!) && got[0]!.watchId === INVALID_WATCH_ID && got[0]!.revision === rev() : got.length === 0;
    if (!ok) throw new Error(`stream ${rs.stream.seq}: a progress request ${owed ? 'is owed one notification' : 'is owed nothing'} at revision ${rev()}, got ${JSON.stringify(got, jsonBytes)}`);
  }
}

/**
 * Reads from `stream` with `read`, and checks that what its transport held before (the responses the send
 * loop sent into the window, and their bytes) is what the client then reads first, sized as
 * model/reference_watch_size.ts sizes it: the send loop's window counts the bytes the client would have
 * to read, so a wrong size shows as a window that holds more or less than grpc-go's would.
 */
export function readSized(stream: WatchStream, read: () => WatchResponse[], max = Infinity): WatchResponse[] {
  const held = stream.inTransport;
  const got = read();
  if (got.length < held.responses) {
    // A reader stops early only at its own limit: the transport held fewer than it says, or too many were lost.
    if (got.length < max) throw new Error(`stream ${stream.seq}: its transport held ${held.responses} responses, the client read ${got.length}`);
    return got;
  }
  const sizes = got.slice(0, held.responses).map(referenceResponseSize);
  const bytes = sizes.reduce((a, x) => a + x, 0);
  if (bytes !== held.bytes || (sizes.length > 0 && sizes[sizes.length - 1] !== held.newest)) {
    throw new Error(
      `stream ${stream.seq}: its transport held ${held.responses} responses of ${held.bytes} B (the newest ${held.newest} B), ` +
        `but those responses are ${bytes} B (the newest ${sizes[sizes.length - 1] ?? 0} B): ${JSON.stringify(got.slice(0, held.responses), jsonBytes)}`,
    );
  }
  return got;
}

/** JSON.stringify replacer that prints bytes as latin1 text and bigints as numbers. */
export function jsonBytes(_k: string, v: unknown): unknown {
  if (v instanceof Uint8Array) return latin1(v);
  if (typeof v === 'bigint') return Number(v);
  return v;
}

/** A message-form WatchResponse (raw client, grpc-js) in the engine's form, as the guarantees checker reads it. */
export const responseIn = watchResponseIn;
