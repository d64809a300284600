/**
 * Fragmenting of large watch responses (v3rpc/watch.go sendFragments): a response of at least the limit
 * with two or more events is split into several responses of whole events, all but the last flagged
 * `fragment`. The sizes are protobuf-encoded sizes, estimated field by field.
 */
import { type KeyValue, bytesField, intField, messageField } from '../mvcc/index.js';
import type { WatchEvent, WatchResponse } from './types.js';

function kvSize(kv: KeyValue): number {
  return (
    bytesField(kv.key.length) +
    intField(kv.createRevision) +
    intField(kv.modRevision) +
    intField(kv.version) +
    bytesField(kv.value.length) +
    intField(kv.lease)
  );
}

function eventSize(ev: WatchEvent): number {
  return (ev.type === 'DELETE' ? 2 : 0) + messageField(kvSize(ev.kv)) + (ev.prevKv === undefined ? 0 : messageField(kvSize(ev.prevKv)));
}

/** Approximate encoded size: a fixed header (cluster and member IDs, revision, term) plus the events. */
export function watchResponseSize(r: WatchResponse, events: readonly WatchEvent[] = r.events): number {
  let n = messageField(32) + intField(r.watchId) + intField(r.compactRevision) + bytesField(r.cancelReason.length);
  for (const ev of events) n += messageField(eventSize(ev));
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
      const s = messageField(eventSize(ev));
      if (cur.length > 0 && size + s >= limit) break;
      cur.push(ev);
      size += s;
    }
    out.push({ ...r, events: cur, fragment: i < r.events.length });
  }
  return out;
}
