/**
 * The shadowed bidirectional streams, Watch and LeaseKeepAlive: each opens the same stream on the
 * simulator and hands it the client's requests at the revision etcd answered them at. A watch request is
 * given to the simulator when etcd's response to it arrives (its creation, its cancel, the answer to a
 * progress request), so the simulator's watch starts where etcd's did; a progress notification nobody
 * asked for is etcd's timer and not compared. The responses of both sides are compared item by item
 * (streams.ts). A watch from an old revision waits until it is known whether etcd compacted beyond it
 * (BelowCompaction): etcd's cancel of it is then the simulator's too.
 */
import { Buffer } from 'node:buffer';
import { canon, text } from '../diff/index.js';
import type { CallContext } from '../server/index.js';
import { ErrInvalidAuthToken } from '../auth/index.js';
import type * as M from '../server/messages.js';
import type { Codec } from './codecs.js';
import { NO_LEASES, type ShadowContext } from './context.js';
import type { TappedCall } from './proxy.js';
import { StreamCompare, watchItems } from './streams.js';
import { followCompaction, type Reader } from './compaction.js';
import { afterHostTime } from '../sim/index.js';

/** A step that runs once the simulator reaches etcd's revision `rev` and makes none itself. */
function at(rev: number | undefined, run: (late: boolean) => void): { rev: number | undefined; makesRevision: () => false; skip: () => void; run: (late: boolean) => void } {
  return { rev, makesRevision: () => false, skip: () => undefined, run };
}

/** A watch creation from "now" (no start revision) made explicit: from `start`, where etcd's watch started. */
function startingAt(req: M.WatchRequest, start: number): M.WatchRequest {
  const c = req.create_request;
  if (c == null || (c.start_revision !== undefined && String(c.start_revision) !== '0')) return req;
  return { ...req, create_request: { ...c, start_revision: String(start) } };
}

/** A watch creation from `start` below `compactRev` made to start at `compactRev` (`raised` is told so). */
function fromCompaction(req: M.WatchRequest, compactRev: number, raised: (floor: number) => void): M.WatchRequest {
  const c = req.create_request;
  if (c == null || Number(c.start_revision ?? 0) >= compactRev) return req;
  raised(compactRev);
  return { ...req, create_request: { ...c, start_revision: String(compactRev) } };
}

/** The watch ID of etcd's answer to a progress request (clientv3's InvalidWatchID). */
const PROGRESS_ID = '-1';

/** Most cancel requests of one stream waiting for etcd's answer. */
const MAX_CANCELS = 1000;

/** `etcdToken`: the token the application's stream carries to etcd (with auth on, etcd is asked as it). */
export function watchCall(ctx: ShadowContext, rpc: string, codec: Codec, call: CallContext | undefined, etcdToken: string | undefined): TappedCall {
  const stream = ctx.nextStream();
  const simCall = ctx.sim.services.watch.watch(call);
  const cmp = new StreamCompare(rpc, simCall, (r) => watchItems(r as M.WatchResponse), ctx.diverge, ctx.report);
  ctx.streams.add(cmp);
  const creates: M.WatchRequest[] = [];
  const cancels: M.WatchRequest[] = [];
  const progress: M.WatchRequest[] = [];
  const hold = new BelowCompaction(ctx, etcdToken, (r) => handle(r), () => end(), (why) => cmp.stop(why));

  function handle(r: M.WatchResponse): void {
    const rev = Number(r.header?.revision ?? 0);
    // A watch from a revision etcd may have compacted beyond the simulator: the stream waits until etcd says.
    if (r.created && !r.canceled && hold.needed(creates[0], rev, r)) return;
    if (r.canceled && r.compact_revision !== '0' && hold.takenAsSynced(String(r.watch_id))) {
      // etcd's cancel of a watch the stream took as synced before the compaction came after two of etcd's
      // sync passes (BelowCompaction.settle): the simulator's watch streams on, etcd's ended.
      cmp.skip(String(r.watch_id), 'etcd canceled a watch after two sync passes');
      return;
    }
    if (r.created && r.canceled && r.cancel_reason.endsWith(ErrInvalidAuthToken.message)) {
      // etcd dropped the stream's token (unused for its TTL, or auth turned off) and refuses the stream's new
      // watches; the simulator, whose clock never moves, still knows its counterpart, and the stream keeps
      // the token it opened with: the creation is not asked of it, nor compared. The stream's watches go on.
      creates.shift();
      ctx.report.notCompared(rpc, 'a watch refused for a token etcd dropped');
      return;
    }
    // Answers reach the proxy in any order: a response etcd gave at a revision the simulator has already
    // passed (a write on another connection came first) has its request taken by the simulator now, at
    // its later revision — a watch from "now" starting where etcd's started — and is compared at that
    // revision, which is all that differs.
    const late = rev < ctx.follower.revision;
    let answered = false;
    const write = (req: unknown): void => {
      answered = true;
      const asked = late ? startingAt(req as M.WatchRequest, rev + 1) : req;
      const synced = r.created && hold.syncedFirst(r);
      ctx.follower.add(
        at(rev, () => {
          // etcd synced this watch before a compaction the simulator may have applied already: the simulator's
          // watch starts at its compaction revision, and etcd's events below it are not compared.
          const taken = synced ? fromCompaction(asked as M.WatchRequest, ctx.sim.mvcc.compactRevision, (floor) => cmp.floor(String(r.watch_id), floor)) : asked;
          ctx.log.add(rpc, taken, { ok: r }, stream);
          simCall.write(taken as M.WatchRequest);
        }),
      );
    };
    if (r.created) {
      const req = creates.shift();
      if (req !== undefined) write(req);
    } else if (r.canceled && r.compact_revision === '0' && r.cancel_reason === '') {
      // The answer to the cancel of this watch: etcd does not answer a cancel naming no watch of the stream.
      const i = cancels.findIndex((c) => String(c.cancel_request?.watch_id) === String(r.watch_id));
      if (i >= 0) write(cancels.splice(i, 1)[0]);
    } else if (!r.canceled && r.events.length === 0) {
      // A progress request's answer names no watch (-1); one naming a watch is that watch's timer.
      const req = r.watch_id === PROGRESS_ID ? progress.shift() : undefined;
      if (req === undefined) {
        ctx.report.notCompared(rpc, "progress notification (etcd's timer)");
        return;
      }
      write(req);
    }
    ctx.report.events += r.events.length;
    if (r.events.length > 0) ctx.log.add(rpc, undefined, { ok: r }, stream);
    cmp.etcd(late && answered && r.header != null ? { ...r, header: { ...r.header, revision: String(ctx.follower.revision) } } : r);
    ctx.follower.pump();
  }

  function end(): void {
    ctx.follower.add(
      at(undefined, () => {
        cmp.compare();
        ctx.streams.delete(cmp);
        simCall.cancel();
      }),
    );
  }

  return {
    path: '/etcdserverpb.Watch/Watch',
    headers: {},
    onRequest: (m) => {
      const req = codec.req(m) as M.WatchRequest;
      if (req.create_request != null) creates.push(req);
      else if (req.cancel_request != null) {
        // Bounded: cancels of watches the stream never had stay unanswered.
        if (cancels.push(req) > MAX_CANCELS) cancels.shift();
      }
      else if (req.progress_request != null) progress.push(req);
    },
    onResponse: (m) => {
      const r = codec.res(m) as M.WatchResponse;
      if (!hold.take(r)) handle(r);
    },
    onUntapped: (why) => cmp.stop(why),
    onEnd: () => {
      hold.ended();
    },
  };
}

/** Most etcd responses one watch stream holds while it waits to learn whether etcd compacted beyond a watch. */
const MAX_HELD = 10_000;
/** Most watch IDs of one stream taken as synced for etcd's silence, whose cancel may still come. */
const MAX_SILENT = 1000;
/** When etcd's sync passes cannot be seen: how long its silence is waited for instead (ten of its 100 ms passes). */
const SYNC_FALLBACK_MS = 1000;

/**
 * A watch created from a revision the simulator still holds but etcd may have compacted (a compaction
 * beside the shadow it has not followed yet: compaction.ts) would stream events on the simulator where
 * etcd cancels it, naming its compaction revision. So the stream's responses from etcd's answer to such a
 * creation on are held (in order: the simulator numbers a stream's watches as they come) while etcd is
 * asked whether it still answers reads at the watch's start revision. It does: they are handled as they
 * came. It does not: etcd's cancel of the watch, which names the compaction revision, is waited for, and
 * once the simulator reached the revision etcd was at, it compacts there first and then takes the held
 * responses, so both cancel the watch alike.
 *
 * Unless etcd synced the watch before it compacted (mvcc's sync loop takes a watch behind within 100 ms;
 * a compaction after that leaves it streaming, observed with 3.4.23): then no cancel comes. etcd says so
 * by the watch's events, when its range had any, or else by its silence over two passes of the same sync
 * loop — the shadow's own watch from below the compaction is canceled at each (compaction.ts, syncPassed),
 * and a pass that cancels it cancels every watch behind the compaction. Either way the watch is taken as
 * etcd's synced one: the simulator creates it from the watch's start, or from its own compaction revision
 * if it already compacted past the start (etcd's events below that are then not compared), and it streams
 * on as etcd's does. A cancel that still comes after the two passes ends that watch's comparison.
 */
class BelowCompaction {
  private held: M.WatchResponse[] | undefined;
  /** etcd's watch ID and its revision then, once etcd refused reads at the watch's start revision; `passing`: etcd's sync passes are being waited for. */
  private refused: { id: string; at: number; passing?: boolean } | undefined;
  /** etcd's cancel of that watch, naming its compaction revision, once it is among the held responses. */
  private cancel: M.WatchResponse | undefined;
  private streamEnded = false;
  private dropped = false;
  /** The creation asked about last: handled as it is once released. */
  private asked: M.WatchResponse | undefined;
  /** Its start revision. */
  private start = 0;
  /** etcd sent events of the refused watch instead of its cancel: it synced the watch before it compacted. */
  private streamed = false;
  /** What etcd is asked as (with auth on: the stream's token, on the watch's key). */
  private as: Reader | undefined;
  /** Creations taken as synced by etcd before its compaction (their simulator watch may start later: fromCompaction). */
  private readonly synced = new WeakSet<M.WatchResponse>();
  /** Watch IDs taken as synced for etcd's silence over two sync passes: a cancel of one may still come. */
  private readonly silent = new Set<string>();

  constructor(
    private readonly ctx: ShadowContext,
    private readonly token: string | undefined,
    private readonly handle: (r: M.WatchResponse) => void,
    private readonly end: () => void,
    private readonly stop: (why: string) => void,
  ) {}

  /** Whether the creation etcd answered with `created` needs asking first; then the stream holds from it on. */
  needed(req: M.WatchRequest | undefined, rev: number, created: M.WatchResponse): boolean {
    if (this.held !== undefined || created === this.asked) return false;
    const start = Number(req?.create_request?.start_revision ?? 0);
    // From "now" or from a revision to come: nothing of it can have been compacted.
    if (start <= 0 || start > rev) return false;
    this.held = [created];
    this.asked = created;
    this.start = start;
    this.streamed = false;
    this.ctx.follower.holds++;
    // etcd let the stream watch its key: with auth on, it lets the same token read it (compaction.ts).
    const key = req?.create_request?.key;
    const as = this.token === undefined ? undefined : { key: key !== undefined && key.length > 0 ? key : Buffer.from([0]), token: this.token };
    this.as = as;
    // A Compact through the shadow in flight now may be what etcd applies before this watch's first sync:
    // etcd is asked once it answered, so its answer says so, and its step is the simulator's first.
    this.ctx.follower.afterCompactions(() => {
      void this.ctx.compactedBeyond(start, as).then((at) => {
        if (at === undefined) return this.release();
        const id = String(created.watch_id);
        this.refused = { id, at };
        this.cancel = this.held?.find((h) => this.isCancelOf(h, id));
        this.streamed = this.held?.some((h) => this.isEventsOf(h, id)) ?? false;
        this.settle();
      });
    });
    return true;
  }

  /** Whether etcd's answer `created` was taken as a watch etcd synced before its compaction. */
  syncedFirst(created: M.WatchResponse): boolean {
    return this.synced.has(created);
  }

  /** Whether watch `id` was taken as synced for etcd's silence (once: its cancel ends it). */
  takenAsSynced(id: string): boolean {
    return this.silent.delete(id);
  }

  /** Holds `r` while the stream waits; false when it does not. */
  take(r: M.WatchResponse): boolean {
    if (this.dropped) return true;
    if (this.held === undefined) return false;
    this.held.push(r);
    if (this.held.length > MAX_HELD) return this.drop(`more than ${MAX_HELD} responses while asking etcd for its compaction`);
    if (this.refused !== undefined && this.cancel === undefined && this.isCancelOf(r, this.refused.id)) {
      this.cancel = r;
      this.settle();
    } else if (this.refused !== undefined && !this.streamed && this.isEventsOf(r, this.refused.id)) {
      this.streamed = true;
      this.settle();
    }
    return true;
  }

  /** The stream ended: its end comes now, or after the held responses. */
  ended(): void {
    this.streamEnded = true;
    if (this.held === undefined) this.end();
    else this.settle();
  }

  private isCancelOf(r: M.WatchResponse, id: string): boolean {
    return r.canceled && r.compact_revision !== '0' && String(r.watch_id) === id;
  }

  private isEventsOf(r: M.WatchResponse, id: string): boolean {
    return r.events.length > 0 && String(r.watch_id) === id;
  }

  /**
   * etcd refused the start revision: once its cancel is here, the simulator compacts there — at etcd's
   * revision when it was sent, after any Compact through the shadow still in flight, which may be the
   * compaction the cancel names and then applies it first — and takes the held responses. etcd may also have
   * synced the watch before it compacted (a compaction in the same instant, after the watch's first sync):
   * its events come instead, or nothing over two of etcd's sync passes, and the watch is taken as synced.
   * A stream that ended without either will not get it, and has nothing more to compare.
   */
  private settle(): void {
    const r = this.refused;
    if (r === undefined) return;
    const cancel = this.cancel;
    if (cancel === undefined) {
      if (this.streamed) {
        this.refused = undefined;
        this.takeAsSynced();
      } else if (this.streamEnded) {
        this.dropEnding('ended before etcd canceled a watch below its compaction');
      } else if (!r.passing) {
        r.passing = true;
        void this.ctx.syncPassed(this.start, this.as).then((passed) => {
          const decide = (): void => {
            // Decided meanwhile: its cancel or its events came, or the stream ended.
            if (this.refused !== r || this.dropped) return;
            this.refused = undefined;
            this.silent.add(r.id);
            if (this.silent.size > MAX_SILENT) this.silent.delete(this.silent.values().next().value!);
            this.takeAsSynced();
          };
          // A pass not seen (etcd refused the shadow's watch, or was slow past the bound): ten of etcd's intervals more.
          if (passed) decide();
          else afterHostTime(SYNC_FALLBACK_MS, decide);
        });
      }
      return;
    }
    this.refused = undefined;
    this.cancel = undefined;
    const seenAt = Math.max(r.at, Number(cancel.header?.revision ?? 0));
    this.ctx.follower.afterCompactions(() =>
      this.ctx.follower.add(
        at(seenAt, () => {
          followCompaction(this.ctx, Number(cancel.compact_revision), seenAt);
          this.release();
        }),
      ),
    );
  }

  /** The creation asked about is etcd's synced watch: the simulator takes it in the follower's order (fromCompaction). */
  private takeAsSynced(): void {
    if (this.asked !== undefined) this.synced.add(this.asked);
    this.ctx.follower.add(at(undefined, () => this.release()));
  }

  /** Not compared any more, and ended now if the stream already did. */
  private dropEnding(why: string): void {
    this.drop(why);
    if (this.streamEnded) this.end();
  }

  /** The stream is not compared any more (memory stays bounded; or nothing is left to compare). */
  private drop(why: string): true {
    this.dropped = true;
    this.refused = undefined;
    this.unhold();
    this.stop(why);
    return true;
  }

  private unhold(): void {
    if (this.held === undefined) return;
    this.held = undefined;
    this.ctx.follower.holds--;
  }

  private holding(): boolean {
    return this.held !== undefined;
  }

  private release(): void {
    if (this.dropped) return;
    const rs = this.held ?? [];
    this.unhold();
    while (rs.length > 0) {
      this.handle(rs.shift()!);
      if (this.holding()) {
        // Another watch from an old revision: the rest waits behind it.
        this.held!.push(...rs);
        return;
      }
    }
    if (this.streamEnded) this.end();
  }
}

export function keepAliveCall(ctx: ShadowContext, rpc: string, codec: Codec, call: CallContext | undefined): TappedCall {
  const stream = ctx.nextStream();
  const simCall = ctx.sim.services.lease.leaseKeepAlive(call);
  const cmp = new StreamCompare(rpc, simCall, (r) => [{ key: String((r as M.LeaseKeepAliveResponse).ID), item: text(canon(r, NO_LEASES)) }], ctx.diverge, ctx.report);
  ctx.streams.add(cmp);
  return {
    path: '/etcdserverpb.Lease/LeaseKeepAlive',
    headers: {},
    onRequest: (m) => void codec.req(m),
    onResponse: (m) => {
      const r = codec.res(m) as M.LeaseKeepAliveResponse;
      ctx.follower.add(
        at(Number(r.header?.revision ?? 0), (late) => {
          if (r.TTL === '0') ctx.leaseGone(r.ID);
          ctx.log.add(rpc, { ID: r.ID }, { ok: r }, stream);
          // A keep-alive answered before a write that reached the simulator first (answers arrive in any
          // order) is renewed there after it: the simulator answers at its own revision, which is all that
          // differs — a keep-alive writes nothing, so the lease's TTL is still compared.
          cmp.etcd(late && r.header != null ? { ...r, header: { ...r.header, revision: String(ctx.follower.revision) } } : r);
          simCall.write({ ID: r.ID });
        }),
      );
    },
    onUntapped: (why) => cmp.stop(why),
    onEnd: () => {
      ctx.follower.add(
        at(undefined, () => {
          ctx.streams.delete(cmp);
          simCall.cancel();
        }),
      );
    },
  };
}
