/**
 * Fragmenting of large watch responses (v3rpc/watch.go sendFragments): a response of at least the limit
 * with two or more events is split into several responses of whole events, all but the last flagged
 * `fragment`. The sizes are protobuf-encoded sizes, estimated field by field.
 */
import type { KeyValue } from '../mvcc/index.js';
import type { WatchEvent, WatchResponse } from './types.js';

function varintLen(v: number | bigint): number {
  let x = typeof v === 'bigint' ? v : BigInt(Math.trunc(v));
  if (x < 0n) return 10;
  let n = 1;
  while (x >= 0x80n) {
    x >>= 7n;
    n++;
  }
  return n;
}

function field(len: number): number {
  return 1 + varintLen(len) + len;
}

function intField(v: number | bigint): number {
  return v === 0 || v === 0n ? 0 : 1 + varintLen(v);
}

function kvSize(kv: KeyValue): number {
  return (
    (kv.key.length > 0 ? field(kv.key.length) : 0) +
    intField(kv.createRevision) +
    intField(kv.modRevision) +
    intField(kv.version) +
    (kv.value.length > 0 ? field(kv.value.length) : 0) +
    intField(kv.lease)
  );
}

function eventSize(ev: WatchEvent): number {
  return (ev.type === 'DELETE' ? 2 : 0) + field(kvSize(ev.kv)) + (ev.prevKv === undefined ? 0 : field(kvSize(ev.prevKv)));
}

/** Approximate encoded size: a fixed header (cluster and member IDs, revision, term) plus the events. */
export function watchResponseSize(r: WatchResponse, events: readonly WatchEvent[] = r.events): number {
  let n = field(32) + intField(r.watchId) + intField(r.compactRevision) + (r.cancelReason.length > 0 ? field(r.cancelReason.length) : 0);
  for (const ev of events) n += field(eventSize(ev));
  return n;
}

export function fragmentResponse(r: WatchResponse, limit: number): WatchResponse[] {
  if (r.events.length < 2 || watchResponseSize(r) < limit) return [r];
  const out: WatchResponse[] = [];
  let i = 0;
  while (i < r.events.length) {
    const cur: WatchEvent[] = [];
    let size = watchResponseSize(r, cur);
    for (; i < r.events.length; i++) {
      const ev = r.events[i]!;
      const s = field(eventSize(ev));
      if (cur.length > 0 && size + s >= limit) break;
      cur.push(ev);
      size += s;
    }
    out.push({ ...r, events: cur, fragment: i < r.events.length });
  }
  return out;
}
