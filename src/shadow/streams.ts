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

/** One item of a stream, compared as its text; an event also says its revision (StreamCompare.floor). */
export interface StreamItem {
  readonly key: string;
  readonly item: string;
  readonly rev?: number | undefined;
}

/** A watch response as items compared one by one, per watch: each event, and each creation, cancel or progress answer. */
export function watchItems(r: M.WatchResponse): StreamItem[] {
  const key = String(r.watch_id);
  const out: StreamItem[] = [];
  if (r.created || r.canceled || r.events.length === 0) {
    out.push({ key, item: text(canon({ ...r, events: [], fragment: false }, NO_LEASES)) });
  }
  for (const e of r.events) out.push({ key, item: text(canon(e, NO_LEASES)), rev: Number(e.kv?.mod_revision ?? 0) });
  return out;
}

/** Most stream items one side holds unmatched before the stream is no longer compared. */
const MAX_UNMATCHED = 10_000;
/** Most keys of one stream with a floor (a watch each, from an old revision). */
const MAX_FLOORS = 1000;

/** One stream's responses on both sides, compared item by item per key. */
export class StreamCompare {
  private readonly sides = { etcd: new Map<string, StreamItem[]>(), sim: new Map<string, StreamItem[]>() };
  private stopped: string | undefined;
  /** Keys no longer compared: diverged (reported once), or left out (skip). */
  private readonly diverged = new Set<string>();
  /** Per key, the revision below which etcd's events are not compared (floor). */
  private readonly floors = new Map<string, number>();

  constructor(
    private readonly rpc: string,
    simCall: GrpcBidiCall<never, unknown>,
    private readonly items: (r: unknown) => StreamItem[],
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

  /**
   * The simulator's side of `key` starts at revision `rev` (a watch etcd synced before a compaction the
   * simulator had already applied: it is created from its compaction revision, stream_calls.ts): etcd's
   * events of that key below `rev` have no counterpart, and are counted as not compared.
   */
  floor(key: string, rev: number): void {
    this.floors.set(key, rev);
    if (this.floors.size > MAX_FLOORS) this.floors.delete(this.floors.keys().next().value!);
  }

  /** `key` is no longer compared (`why`, counted once): what either side sends of it is let go. */
  skip(key: string, why: string): void {
    if (this.diverged.has(key)) return;
    this.diverged.add(key);
    this.sides.etcd.delete(key);
    this.sides.sim.delete(key);
    this.report.notCompared(this.rpc, why);
  }

  private push(side: 'etcd' | 'sim', r: unknown): void {
    if (this.stopped !== undefined) return;
    for (const item of this.items(r)) {
      const { key } = item;
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
      const floor = this.floors.get(key);
      while (e.length > 0 && s !== undefined && s.length > 0) {
        if (floor !== undefined && e[0]!.rev !== undefined && e[0]!.rev < floor) {
          e.shift();
          this.report.notCompared(this.rpc, "an event below the simulator's compaction (etcd synced the watch before it)");
          continue;
        }
        const a = e.shift()!.item;
        const b = s.shift()!.item;
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
