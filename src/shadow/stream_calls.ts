/**
 * The shadowed bidirectional streams, Watch and LeaseKeepAlive: each opens the same stream on the
 * simulator and hands it the client's requests at the revision etcd answered them at. A watch request is
 * given to the simulator when etcd's response to it arrives (its creation, its cancel, the answer to a
 * progress request), so the simulator's watch starts where etcd's did; a progress notification nobody
 * asked for is etcd's timer and not compared. The responses of both sides are compared item by item
 * (streams.ts).
 */
import { canon, text } from '../diff/index.js';
import type { CallContext } from '../server/index.js';
import type * as M from '../server/messages.js';
import type { Codec } from './codecs.js';
import { NO_LEASES, type ShadowContext } from './context.js';
import type { TappedCall } from './proxy.js';
import { StreamCompare, watchItems } from './streams.js';

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

/** The watch ID of etcd's answer to a progress request (clientv3's InvalidWatchID). */
const PROGRESS_ID = '-1';

/** Most cancel requests of one stream waiting for etcd's answer. */
const MAX_CANCELS = 1000;

export function watchCall(ctx: ShadowContext, rpc: string, codec: Codec, call: CallContext | undefined): TappedCall {
  const stream = ctx.nextStream();
  const simCall = ctx.sim.services.watch.watch(call);
  const cmp = new StreamCompare(rpc, simCall, (r) => watchItems(r as M.WatchResponse), ctx.diverge, ctx.report);
  ctx.streams.add(cmp);
  const creates: M.WatchRequest[] = [];
  const cancels: M.WatchRequest[] = [];
  const progress: M.WatchRequest[] = [];
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
      const rev = Number(r.header?.revision ?? 0);
      // Answers reach the proxy in any order: a response etcd gave at a revision the simulator has already
      // passed (a write on another connection came first) has its request taken by the simulator now, at
      // its later revision — a watch from "now" starting where etcd's started — and is compared at that
      // revision, which is all that differs.
      const late = rev < ctx.follower.revision;
      let answered = false;
      const write = (req: unknown): void => {
        answered = true;
        const asked = late ? startingAt(req as M.WatchRequest, rev + 1) : req;
        ctx.follower.add(at(rev, () => (ctx.log.add(rpc, asked, { ok: r }, stream), simCall.write(asked as M.WatchRequest))));
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
    },
    onUntapped: (why) => cmp.stop(why),
    onEnd: () => {
      ctx.follower.add(
        at(undefined, () => {
          cmp.compare();
          ctx.streams.delete(cmp);
          simCall.cancel();
        }),
      );
    },
  };
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
