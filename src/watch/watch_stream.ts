/**
 * A watch stream: etcd's mvcc watchStream (many watchers, one bounded channel) together with the gRPC
 * server side of a Watch call (v3rpc/watch.go serverWatchStream): created and canceled replies, prev_kv
 * looked up when a response is sent, fragmenting, periodic progress notifications and progress requests.
 *
 * The send path is etcd's, in three stages:
 *  1. the channel: what watchers have offered and the send loop has not yet sent. It holds at most
 *     `chanBufLen` (128) watch responses; when it is full, `offer()` fails and the watcher becomes a victim.
 *  2. the send loop: moves responses from the channel into the transport, rendering them on the way
 *     (prev_kv is read at that moment, large responses are fragmented), for as long as the transport's
 *     window has room — etcd's sendLoop, which blocks in gRPC's Send while the window is closed. It runs
 *     whenever something is offered and whenever the client reads, so a client that keeps reading keeps
 *     the channel empty, however bursty the writes.
 *  3. the transport window (`windowBytes`, grpc-go's 64 KiB per-stream write quota): rendered responses the
 *     client has not read yet. A client that stops reading fills it, then the channel; its watchers then
 *     become victims and later catch up through the victim and unsynced paths, in etcd's batches.
 * Reading is `take()` (everything that can be read now) or `read(n)` (a slow reader's n responses).
 */
import { ErrCompacted, ErrEmptyWatcherRange, ErrWatcherDuplicateID, keyString, type Event, type KeyString, rangeEndOf } from '../mvcc/index.js';
import type { TimerHandle } from '../sim/index.js';
import { fragmentResponse, watchResponseSize } from './fragment.js';
import type { WatchCreateRequest, WatchEvent, WatchResponse } from './types.js';
import type { WatchableStore } from './watchable_store.js';
import type { Watcher } from './watcher.js';

/** clientv3.InvalidWatchID: the watch ID of stream-wide progress and of failed creates. @public */
export const INVALID_WATCH_ID = -1;

/** A response waiting to be sent: a control reply already final, or a channel entry still to render. */
type Pending =
  | { readonly ctrl: WatchResponse }
  | { readonly ctrl?: undefined; readonly watchId: number; readonly events: readonly Event[]; readonly revision: number; readonly compactRevision: number };

/** @public */
export class WatchStream {
  private readonly watchers = new Map<number, Watcher>();
  private nextId = 0;
  /**
   * What the send loop has not sent yet, in order: the channel's watch responses and the control replies
   * (created, canceled) between them. Read from the front (a short array: at most chanBufLen responses and
   * the control replies between them, so a shift is cheap).
   */
  private queue: Pending[] = [];
  /** Watch responses in the queue; the channel is full at chanBufLen (control replies do not count). */
  private inChannel = 0;
  /** Rendered responses in the transport, not yet read by the client, and their encoded size. */
  private sent: WatchResponse[] = [];
  /** The encoded size of each response in `sent`, measured once as it was sent. */
  private sentSizes: number[] = [];
  private sentHead = 0;
  private sentBytes = 0;
  /** The transport's window in bytes: the send loop stops while this much is unread. */
  private window: number;
  private readonly prevKv = new Set<number>();
  private readonly fragment = new Set<number>();
  /** Watchers with progress_notify → "no events since the last progress tick". */
  private readonly progress = new Map<number, boolean>();
  private progressTimer: TimerHandle | undefined;
  private closed = false;
  /**
   * Called whenever the send loop hands responses to the transport (or, with a window of 0, has one ready
   * for the reader) — after a request, a commit, a timer step (catch-up sync, victim retry, progress) or a
   * read. Front doors that push responses to their clients hook their delivery here.
   */
  onSend: (() => void) | undefined;

  constructor(
    private readonly ws: WatchableStore,
    readonly seq: number,
  ) {
    this.window = ws.sendWindowBytes;
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

  /** Responses the client can read now (in the transport), plus those still waiting in the channel. */
  get pending(): number {
    return this.sent.length - this.sentHead + this.queue.length;
  }

  /** The transport's window in bytes (grpc-go's per-stream write quota, 64 KiB by default). */
  get windowBytes(): number {
    return this.window;
  }

  /** Resizes the window (a transport with its own flow control below may want a smaller one). */
  set windowBytes(bytes: number) {
    if (!(Number.isSafeInteger(bytes) && bytes >= 0)) throw new RangeError(`windowBytes must be a non-negative integer, got ${bytes}`);
    this.window = bytes;
    this.sendLoop();
  }

  /** Watch responses waiting in the channel (at most chanBufLen). */
  get channelLength(): number {
    return this.inChannel;
  }

  /**
   * Responses and bytes in the transport, sent and not yet read, and the size of the newest one: the send
   * loop sends while the window has room, so the bytes before the newest response are below windowBytes.
   */
  get inTransport(): { readonly responses: number; readonly bytes: number; readonly newest: number } {
    const n = this.sent.length;
    return { responses: n - this.sentHead, bytes: this.sentBytes, newest: n > this.sentHead ? this.sentSizes[n - 1]! : 0 };
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
    // A second close() finds nothing left to cancel or clear (the timer's cancel finds it gone).
    this.closed = true;
    for (const w of this.watchers.values()) this.ws.cancelWatcher(w);
    this.watchers.clear();
    this.queue = [];
    this.inChannel = 0;
    this.emptyTransport();
    if (this.progressTimer !== undefined) this.ws.clock?.cancel(this.progressTimer);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * The watch channel (mvcc WatchResponse): false when it is full, which makes the sender a victim.
   * `compactRevision` != 0 marks the compaction cancel of a watcher. A closed stream is offered nothing:
   * close() cancels its watchers (out of every group and victim batch) and its progress timer.
   */
  offer(watchId: number, events: readonly Event[], revision: number, compactRevision: number): boolean {
    if (this.inChannel >= this.ws.chanBufLen) return false;
    this.inChannel++;
    this.queue.push({ watchId, events, revision, compactRevision });
    this.sendLoop();
    return true;
  }

  /** Reads every response the client can get now: the transport's, and what the send loop then sends. */
  take(): WatchResponse[] {
    const out = this.readWindow();
    for (let more = out; more.length > 0; ) {
      more = this.readWindow();
      for (const r of more) out.push(r);
    }
    return out;
  }

  /**
   * Reads what the transport holds now (at most one window), which lets the send loop refill it: one
   * read of a client that reads as fast as responses arrive. A reader waiting on an empty transport takes
   * the next response straight from the send loop, so a window of 0 is an unbuffered transport.
   */
  readWindow(): WatchResponse[] {
    if (this.sentHead === this.sent.length) {
      if (this.queue.length === 0) return [];
      this.sendNext();
    }
    const batch = this.sentHead === 0 ? this.sent : this.sent.slice(this.sentHead);
    this.emptyTransport();
    this.sendLoop();
    return batch;
  }

  /** A slow reader: reads at most `max` responses from the transport, then lets the send loop go on. */
  read(max: number): WatchResponse[] {
    const out: WatchResponse[] = [];
    while (out.length < max) {
      if (this.sentHead === this.sent.length) {
        if (this.queue.length === 0) break;
        this.sendNext();
      }
      const r = this.sent[this.sentHead]!;
      this.sentBytes -= this.sentSizes[this.sentHead]!;
      this.sent[this.sentHead++] = undefined as unknown as WatchResponse;
      out.push(r);
      if (this.sentHead === this.sent.length) this.emptyTransport();
      this.sendLoop();
    }
    return out;
  }

  /**
   * etcd's sendLoop: sends from the channel (and the control replies in their place) while the transport's
   * window has room. A response goes out whole once any room is left, as HTTP/2 sends what fits and the
   * rest as the window reopens.
   */
  private sendLoop(): void {
    let moved = false;
    while (this.queue.length > 0 && this.sentBytes < this.window) {
      this.sendNext();
      moved = true;
    }
    // An unbuffered transport (window 0) hands over only when the reader reads: tell it there is something.
    if (moved || (this.window === 0 && this.queue.length > 0)) this.onSend?.();
  }

  /** Sends the next queued response into the transport, rendered (and fragmented) as it goes out. */
  private sendNext(): void {
    const p = this.queue.shift()!;
    if (p.ctrl !== undefined) {
      this.transmit(p.ctrl);
      return;
    }
    this.inChannel--;
    const resp = this.render(p.watchId, p.events, p.revision, p.compactRevision);
    if (p.events.length > 0 && this.progress.get(p.watchId) === true) this.progress.set(p.watchId, false);
    if (this.fragment.has(p.watchId)) for (const f of fragmentResponse(resp, this.ws.maxResponseBytes)) this.transmit(f);
    else this.transmit(resp);
  }

  private transmit(resp: WatchResponse): void {
    const size = watchResponseSize(resp);
    this.sent.push(resp);
    this.sentSizes.push(size);
    this.sentBytes += size;
  }

  private emptyTransport(): void {
    this.sent = [];
    this.sentSizes = [];
    this.sentHead = 0;
    this.sentBytes = 0;
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
    if (this.prevKv.has(watchId)) evs = events.map((ev) => this.withPrevKv(ev));
    return { ...BLANK, revision, watchId, canceled: compactRevision !== 0, compactRevision, events: evs };
  }

  /**
   * prev_kv is read when the response is sent, at the revision before the event's: a create finds nothing
   * there (the key did not live), and neither does an event at or below the compaction revision (it
   * superseded the version before it, which the compaction removed), as etcd's read of a compacted one.
   */
  private withPrevKv(ev: Event): WatchEvent {
    const kv = ev.kv;
    const prev = this.ws.kv.kvAt(kv.key, kv.modRevision - 1);
    return prev === undefined ? ev : { type: ev.type, kv, prevKv: prev };
  }

  private reply(resp: WatchResponse): WatchResponse {
    if (!this.closed) {
      this.queue.push({ ctrl: resp });
      this.sendLoop();
    }
    return resp;
  }

  /** A canceled watcher's responses still in the channel are never sent (those in the transport are). */
  private dropQueued(watchId: number): void {
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
