/**
 * Naive references for the two places a watch response's encoded size decides etcd's behaviour, written
 * independently of src/watch/fragment.ts (issue #35: no property judged either, so a fragmenting that never
 * split, or sized events wrongly, survived every mutation run):
 *  - fragmenting (v3rpc/watch.go sendFragments): a response of at least the limit with two or more events
 *    goes out in pieces of whole events; each piece takes events while it stays below the limit, and always
 *    at least one;
 *  - the transport window: the send loop stops once the rendered responses the client has not read reach
 *    the window (grpc-go's write quota counts encoded bytes).
 *
 * The size is what the engine estimates, which is the protobuf encoding of the WatchResponse with two
 * simplifications it documents: the ResponseHeader counts as 32 bytes whatever its IDs, and the three
 * booleans (created, canceled, fragment) are not counted. Here the message is encoded byte by byte — tags,
 * varints (an int64 below 0 as ten bytes), zero values left out — and the bytes are counted.
 */
import type { KeyValue } from '../../../src/mvcc/index.js';
import type { WatchEvent, WatchResponse } from '../../../src/watch/index.js';
import { varint } from './reference_hash.js';

/** etcd's default response limit for fragmenting: --max-request-bytes (1.5 MiB) + 512 KiB. */
export const DEFAULT_FRAGMENT_LIMIT = 1.5 * 1024 * 1024 + 512 * 1024;

/** Appends field `field` of a message: a varint (left out when zero) or length-delimited bytes. */
function int(out: number[], field: number, n: number | bigint): void {
  if (BigInt(n) !== 0n) out.push(field << 3, ...varint(BigInt(n)));
}
function bytes(out: number[], field: number, b: ArrayLike<number>, keepEmpty = false): void {
  if (b.length === 0 && !keepEmpty) return;
  out.push((field << 3) | 2, ...varint(BigInt(b.length)));
  for (let i = 0; i < b.length; i++) out.push(b[i]!);
}

function keyValue(kv: KeyValue): number[] {
  const out: number[] = [];
  bytes(out, 1, kv.key);
  int(out, 2, kv.createRevision);
  int(out, 3, kv.modRevision);
  int(out, 4, kv.version);
  bytes(out, 5, kv.value);
  int(out, 6, kv.lease);
  return out;
}

function event(ev: WatchEvent): number[] {
  const out: number[] = [];
  int(out, 1, ev.type === 'DELETE' ? 1 : 0); // mvccpb.Event.EventType: PUT = 0, DELETE = 1
  bytes(out, 2, keyValue(ev.kv), true);
  if (ev.prevKv !== undefined) bytes(out, 3, keyValue(ev.prevKv), true);
  return out;
}

/** The encoded size of `r` as the engine counts it (see the header): the fragment and window rules' unit. */
export function referenceResponseSize(r: WatchResponse): number {
  const out: number[] = [];
  bytes(out, 1, new Array<number>(32).fill(0), true); // the header, estimated
  int(out, 2, r.watchId);
  int(out, 5, r.compactRevision);
  bytes(out, 6, Array.from(r.cancelReason, (c) => c.charCodeAt(0)));
  for (const ev of r.events) bytes(out, 11, event(ev), true);
  return out.length;
}

/** How many events each piece of `r` holds when sent with fragmenting at `limit` (one piece: unsplit). */
export function referenceFragments(r: WatchResponse, limit: number): number[] {
  if (r.events.length < 2 || referenceResponseSize(r) < limit) return [r.events.length];
  const pieces: number[] = [];
  let next = 0;
  while (next < r.events.length) {
    let n = 1;
    while (next + n < r.events.length && referenceResponseSize({ ...r, events: r.events.slice(next, next + n + 1) }) < limit) n++;
    pieces.push(n);
    next += n;
  }
  return pieces;
}

/**
 * Problems with how a watch's responses were split, judged against referenceFragments: each fragment
 * sequence (responses flagged `fragment`, then the last piece unflagged) and each unflagged response with
 * events is one response as etcd built it, so splitting it again must give exactly these pieces. `cut`: the
 * recording may end inside a sequence (its stream broke while it was read), which is then left unjudged.
 */
export function fragmentingProblems(responses: readonly WatchResponse[], limit: number, cut: boolean): string[] {
  const problems: string[] = [];
  let open: WatchResponse[] = [];
  for (const r of responses) {
    if (r.events.length === 0 && open.length === 0) continue;
    open.push(r);
    if (r.fragment) continue;
    const whole: WatchResponse = { ...open[0]!, fragment: false, events: open.flatMap((p) => p.events) };
    const want = referenceFragments(whole, limit);
    const got = open.map((p) => p.events.length);
    if (want.join() !== got.join()) {
      problems.push(`watch ${whole.watchId} at revision ${whole.revision}: ${whole.events.length} events (${referenceResponseSize(whole)} B, limit ${limit} B) sent in pieces of [${got}] events, want [${want}]`);
    }
    open = [];
  }
  if (open.length > 0 && !cut) problems.push(`watch ${open[0]!.watchId}: a fragment sequence of ${open.length} responses never ended`);
  return problems;
}
