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
 * Go client broadcasts it.
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

  constructor(readonly stream: WatchStream) {}

  open(req: WatchCreateRequest): WatchRecord {
    const created = this.stream.watch(req);
    const rec: WatchRecord = { req, responses: [], id: created.watchId, broken: false, canceled: false, cancelRequested: false };
    this.records.push(rec);
    if (created.watchId === INVALID_WATCH_ID) {
      // The failed create's reply is the only response it will ever get.
      rec.responses.push(created);
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
    this.stream.cancel(rec.id);
  }

  /** Takes every waiting response and routes it; returns them. */
  take(): WatchResponse[] {
    const got = readSized(this.stream, () => this.stream.take());
    for (const r of got) this.route(r);
    return got;
  }

  /** A slow reader: takes at most `n` responses (the send loop refills the window behind it). */
  read(n: number): WatchResponse[] {
    const got = readSized(this.stream, () => this.stream.read(n), n);
    for (const r of got) this.route(r);
    return got;
  }

  private route(r: WatchResponse): void {
    if (r.watchId === INVALID_WATCH_ID) {
      if (r.created) return; // a failed create: already recorded from watch()'s return value
      if (isProgressNotify(r)) for (const rec of this.live.values()) if (!rec.cancelRequested) rec.responses.push(r);
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
    rec.responses.push(r);
    if (r.canceled) {
      rec.canceled = true;
      this.live.delete(r.watchId);
      this.ended.set(r.watchId, rec);
    }
  }

  /** The stream breaks: every watch on it ends without a cancel response. */
  close(): void {
    this.stream.close();
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
