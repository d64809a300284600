/**
 * A watch stream: etcd's mvcc watchStream (many watchers, one bounded channel) together with the gRPC
 * server side of a Watch call (v3rpc/watch.go serverWatchStream): created and canceled replies, prev_kv
 * looked up when a response is sent, fragmenting, periodic progress notifications and progress requests.
 *
 * Delivery is pull-based: responses wait in the stream until the client takes them. A client that does
 * not take them is a slow consumer: after `chanBufLen` undelivered event responses the stream's watchers
 * become victims, exactly as a full channel makes them in etcd.
 */
import {
  ErrCompacted,
  ErrEmptyWatcherRange,
  ErrWatcherDuplicateID,
  keyString,
  type Event,
  type KeyString,
} from '../mvcc/index.js';
import { rangeEndOf } from '../mvcc/store.js';
import type { TimerHandle } from '../sim/index.js';
import { fragmentResponse } from './fragment.js';
import type { WatchCreateRequest, WatchEvent, WatchResponse } from './types.js';
import type { WatchableStore } from './watchable_store.js';
import type { Watcher } from './watcher.js';

/** clientv3.InvalidWatchID: the watch ID of stream-wide progress and of failed creates. */
export const INVALID_WATCH_ID = -1;

/** A response waiting in the stream: a control reply already final, or a channel entry still to render. */
type Pending =
  | { readonly ctrl: WatchResponse }
  | { readonly ctrl?: undefined; readonly watchId: number; readonly events: readonly Event[]; readonly revision: number; readonly compactRevision: number };

export class WatchStream {
  private readonly watchers = new Map<number, Watcher>();
  private nextId = 0;
  private queue: Pending[] = [];
  /** Channel entries not yet taken; the channel is full at chanBufLen. */
  private inChannel = 0;
  private readonly prevKv = new Set<number>();
  private readonly fragment = new Set<number>();
  /** Watchers with progress_notify → "no events since the last progress tick". */
  private readonly progress = new Map<number, boolean>();
  private progressTimer: TimerHandle | undefined;
  private closed = false;
  /**
   * Called whenever a response is queued — from a request, a commit, or a timer step (catch-up sync,
   * victim retry, progress). Front doors that push responses to clients hook their delivery here.
   */
  onQueue: (() => void) | undefined;

  constructor(
    private readonly ws: WatchableStore,
    readonly seq: number,
  ) {
    const clock = ws.clock;
    if (clock !== undefined) {
      const base = ws.progressNotifyIntervalMs;
      const jitter = ws.random === undefined ? 0 : ws.random.fork(`watch.stream.${seq}`).nextInt(0, Math.max(0, Math.floor(base / 10) - 1));
      const interval = base + jitter;
      const tick = (): void => {
        this.progressTick();
        this.progressTimer = clock.setTimer(clock.now() + interval, tick, `watch.progress.${seq}`);
      };
      this.progressTimer = clock.setTimer(clock.now() + interval, tick, `watch.progress.${seq}`);
    }
  }

  /** Number of responses waiting to be taken. */
  get pending(): number {
    return this.queue.length;
  }

  /** IDs of the watchers on this stream. */
  watchIds(): number[] {
    return [...this.watchers.keys()];
  }

  /**
   * WatchCreateRequest: answers created (and, on error, canceled with the reason and watch ID -1). A start
   * revision below the compaction point is accepted here and canceled by the next sync step with
   * compact_revision, as etcd does.
   */
  watch(req: WatchCreateRequest): WatchResponse {
    const ws = this.ws;
    const rev = ws.rev();
    if (this.closed) throw new Error('watch stream is closed');
    const startRev = req.startRevision ?? 0;
    const compat = ws.kv.compat;
    if (startRev < 0 && compat.negativeWatchStartRevRejected) {
      return this.reply(createdCanceled(rev, ErrCompacted.message));
    }
    // An empty key is "\0", the smallest key; a "\0" range end means every key >= key.
    const key: KeyString = req.key.length === 0 ? '\0' : keyString(req.key);
    const end = rangeEndOf(req.rangeEnd);
    if (end !== undefined && end !== '' && key >= end) return this.reply(createdCanceled(rev, ErrEmptyWatcherRange.message));
    let id = req.watchId ?? 0;
    if (id === 0) {
      while (this.watchers.has(this.nextId)) this.nextId++;
      id = this.nextId++;
    } else if (this.watchers.has(id)) {
      return this.reply(createdCanceled(rev, ErrWatcherDuplicateID.message));
    }
    const filters = req.filters ?? [];
    const w = ws.watch(this, id, key, end, startRev, filters.includes('NOPUT'), filters.includes('NODELETE'));
    this.watchers.set(id, w);
    if (req.prevKv === true) this.prevKv.add(id);
    if (req.fragment === true) this.fragment.add(id);
    if (req.progressNotify === true) this.progress.set(id, true);
    return this.reply({ ...BLANK, revision: rev, watchId: id, created: true });
  }

  /** WatchCancelRequest: an unknown ID gets no reply at all. */
  cancel(watchId: number): boolean {
    const w = this.watchers.get(watchId);
    if (w === undefined) return false;
    this.ws.cancelWatcher(w);
    this.watchers.delete(watchId);
    this.prevKv.delete(watchId);
    this.fragment.delete(watchId);
    this.progress.delete(watchId);
    // Responses still queued for it would never reach the client once its cancel is acknowledged.
    this.dropQueued(watchId);
    this.reply({ ...BLANK, revision: this.ws.rev(), watchId, canceled: true });
    return true;
  }

  /**
   * WatchProgressRequest: one response with watch ID -1 and the current revision, only when every watcher
   * of the stream is synced (etcd >= 3.5 sends it through the watch channel, so it stays ordered with
   * events). etcd 3.4 answered unconditionally, out of band (issue #15220).
   */
  requestProgress(): void {
    if (this.ws.kv.compat.progressRequestAlwaysAnswered) {
      this.reply({ ...BLANK, revision: this.ws.rev(), watchId: INVALID_WATCH_ID });
      return;
    }
    this.ws.progressIfSync(this.watchers.values(), INVALID_WATCH_ID);
  }

  /** The client went away: every watcher is canceled, nothing more is delivered. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.watchers.values()) this.ws.cancelWatcher(w);
    this.watchers.clear();
    this.queue = [];
    this.inChannel = 0;
    if (this.progressTimer !== undefined) this.ws.clock?.cancel(this.progressTimer);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * The watch channel (mvcc WatchResponse): false when it is full, which makes the sender a victim.
   * `compactRevision` != 0 marks the compaction cancel of a watcher.
   */
  offer(watchId: number, events: readonly Event[], revision: number, compactRevision: number): boolean {
    if (this.closed) return true;
    if (this.inChannel >= this.ws.chanBufLen) return false;
    this.inChannel++;
    this.queue.push({ watchId, events, revision, compactRevision });
    this.onQueue?.();
    return true;
  }

  /** Takes every waiting response, in order, rendered as the client receives them. */
  take(): WatchResponse[] {
    const queue = this.queue;
    if (queue.length === 0) return [];
    this.queue = [];
    this.inChannel = 0;
    const out: WatchResponse[] = [];
    for (const p of queue) {
      if (p.ctrl !== undefined) {
        out.push(p.ctrl);
        continue;
      }
      const resp = this.render(p.watchId, p.events, p.revision, p.compactRevision);
      if (p.events.length > 0 && this.progress.get(p.watchId) === true) this.progress.set(p.watchId, false);
      if (this.fragment.has(p.watchId)) out.push(...fragmentResponse(resp, this.ws.maxResponseBytes));
      else out.push(resp);
    }
    return out;
  }

  /** The periodic progress tick: watchers with progress_notify and no events since the last tick. */
  progressTick(): void {
    for (const [id, quiet] of this.progress) {
      if (quiet) {
        const w = this.watchers.get(id);
        if (w !== undefined) this.ws.progressIfSync([w], id);
      }
      this.progress.set(id, true);
    }
  }

  private render(watchId: number, events: readonly Event[], revision: number, compactRevision: number): WatchResponse {
    let evs: readonly WatchEvent[] = events;
    if (events.length > 0 && this.prevKv.has(watchId)) evs = events.map((ev) => this.withPrevKv(ev));
    return { ...BLANK, revision, watchId, canceled: compactRevision !== 0, compactRevision, events: evs };
  }

  /** prev_kv is read when the response is sent: skipped for creates, omitted once compacted away. */
  private withPrevKv(ev: Event): WatchEvent {
    const kv = ev.kv;
    if (ev.type === 'PUT' && kv.createRevision === kv.modRevision) return ev;
    const kvStore = this.ws.kv;
    const at = kv.modRevision - 1;
    if (at < kvStore.compactRevision) return ev;
    const prev = kvStore.kvAt(kv.key, at);
    return prev === undefined ? ev : { type: ev.type, kv, prevKv: prev };
  }

  private reply(resp: WatchResponse): WatchResponse {
    if (!this.closed) {
      this.queue.push({ ctrl: resp });
      this.onQueue?.();
    }
    return resp;
  }

  private dropQueued(watchId: number): void {
    if (this.inChannel === 0) return;
    const kept: Pending[] = [];
    for (const p of this.queue) {
      if (p.ctrl === undefined && p.watchId === watchId) this.inChannel--;
      else kept.push(p);
    }
    this.queue = kept;
  }
}

const BLANK: WatchResponse = {
  revision: 0,
  watchId: 0,
  created: false,
  canceled: false,
  compactRevision: 0,
  cancelReason: '',
  fragment: false,
  events: [],
};

function createdCanceled(revision: number, reason: string): WatchResponse {
  return { ...BLANK, revision, watchId: INVALID_WATCH_ID, created: true, canceled: true, cancelReason: reason };
}
