/**
 * A shadowed stream (Watch, LeaseKeepAlive) compared between the real etcd's responses and the simulator's
 * for the same requests. etcd orders responses per watcher, not across the watchers of one stream, and
 * batches revisions as its sync loop finds them, so the comparison is per key (a watch ID, a lease ID) and
 * item by item: each event, and each creation, cancel or answer to a progress request as a whole.
 */
import { canon, text } from '../diff/index.js';
import type { GrpcBidiCall } from '../grpc/index.js';
import type * as M from '../server/messages.js';
import { NO_LEASES } from './context.js';
import type { ShadowReport } from './report.js';

/** A watch response as items compared one by one, per watch: each event, and each creation, cancel or progress answer. */
export function watchItems(r: M.WatchResponse): Array<{ key: string; item: string }> {
  const key = String(r.watch_id);
  const out: Array<{ key: string; item: string }> = [];
  if (r.created || r.canceled || r.events.length === 0) {
    out.push({ key, item: text(canon({ ...r, events: [], fragment: false }, NO_LEASES)) });
  }
  for (const e of r.events) out.push({ key, item: text(canon(e, NO_LEASES)) });
  return out;
}

/** Most stream items one side holds unmatched before the stream is no longer compared. */
const MAX_UNMATCHED = 10_000;

/** One stream's responses on both sides, compared item by item per key. */
export class StreamCompare {
  private readonly sides = { etcd: new Map<string, string[]>(), sim: new Map<string, string[]>() };
  private stopped: string | undefined;
  private readonly diverged = new Set<string>();

  constructor(
    private readonly rpc: string,
    simCall: GrpcBidiCall<never, unknown>,
    private readonly items: (r: unknown) => Array<{ key: string; item: string }>,
    private readonly diverge: (rpc: string, where: string, request: unknown, etcd: string, sim: string, rev: number | undefined) => void,
    private readonly report: ShadowReport,
  ) {
    // The simulator's responses reach the listener on its delivery turn, after the step that caused them.
    simCall.onResponse((rs) => {
      for (const r of rs) this.push('sim', r);
      this.compare();
    });
  }

  etcd(r: unknown): void {
    this.push('etcd', r);
    this.compare();
  }

  stop(why: string): void {
    if (this.stopped !== undefined) return;
    this.stopped = why;
    this.sides.etcd.clear();
    this.sides.sim.clear();
    this.report.notCompared(this.rpc, why);
  }

  private push(side: 'etcd' | 'sim', r: unknown): void {
    if (this.stopped !== undefined) return;
    for (const { key, item } of this.items(r)) {
      const q = this.sides[side].get(key) ?? [];
      if (this.diverged.has(key)) continue;
      q.push(item);
      this.sides[side].set(key, q);
      // Memory stays bounded: one side this far ahead of the other is not waiting for it any more.
      if (q.length > MAX_UNMATCHED) this.stop(`one side ${MAX_UNMATCHED} responses ahead`);
    }
  }

  unmatched(): number {
    let n = 0;
    for (const [key, q] of this.sides.sim) if (!this.diverged.has(key)) n += q.length;
    return n;
  }

  /** Compares what both sides have; the rest waits for the other side. */
  compare(): void {
    for (const [key, e] of this.sides.etcd) {
      const s = this.sides.sim.get(key);
      while (e.length > 0 && s !== undefined && s.length > 0) {
        const a = e.shift()!;
        const b = s.shift()!;
        if (this.diverged.has(key)) continue;
        this.report.compared(this.rpc);
        if (a !== b) {
          this.diverged.add(key);
          this.diverge(this.rpc, `${this.rpc} id ${key}`, { stream: this.rpc, id: key }, a, b, undefined);
        }
      }
    }
  }
}
