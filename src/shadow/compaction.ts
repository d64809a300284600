/**
 * etcd's compactions, followed into the simulator. A Compact an application sends through the shadow is a
 * step like any other call (unary.ts). A compaction that does not pass through the shadow — etcd's own
 * `--auto-compaction-retention`, a client or operator beside the shadow — reaches no call and no watch
 * event, so it is asked for: etcd refuses a read below its compaction revision ("required revision has been
 * compacted") and answers one at or above it, so one read at the simulator's compaction revision says
 * whether etcd compacted further, and a bisection between there and etcd's current revision finds the exact
 * revision (about log2 of the revisions between, each a count-only read of one key).
 *
 * Why it matters: the simulator keeps every revision etcd keeps, and etcd keeps what it has not compacted —
 * a simulator that missed etcd's compactions grows without bound under a long run etcd itself holds flat,
 * and would answer reads etcd refuses. The simulator compacts at etcd's revision once it has reached the
 * revision etcd was at when the compaction was seen, after the steps answered before it (follower.ts).
 *
 * A watch from an old revision is the other place a compaction the simulator has not followed yet shows:
 * etcd cancels it naming its compaction revision, while the simulator would stream the revisions it still
 * holds. stream_calls.ts asks here first whether etcd still answers reads at the watch's start revision
 * (`refusing`), and when it does not, follows the compaction the cancel names (`followCompaction`) before
 * the simulator's watch is created.
 *
 * With auth on, etcd refuses a read without a token ("user name is empty"; observed with 3.4.23, whose
 * Status and MemberList, which need none, say nothing of compactions) and checks a token's permission
 * before the revision, so any key the token may read answers the probe. A shadow given a user of its own
 * (--user, own_auth.ts) reads as that user. One without reads as an application did — the key and token of
 * the last Range etcd let through the shadow, or for a watch from an old revision its own key and token —
 * and falls back to no token when that one is refused (expired, or auth was turned off and etcd now refuses
 * any token it does not know).
 */
import { Buffer } from 'node:buffer';
import type { EtcdGrpcClient } from '../grpc/index.js';
import { afterHostTime } from '../sim/index.js';
import type { ShadowContext } from './context.js';
import type { OwnAuth } from './own_auth.js';

const COMPACTED = 'etcdserver: mvcc: required revision has been compacted';
/** etcd's refusals of a read for want of auth (rpctypes' texts). */
const AUTH_REFUSED = /^etcdserver: (user name is empty|invalid auth token|permission denied|revision of auth store is old)$/;
/** A key no read of the probe finds: only the revision it is read at matters. */
const PROBE_KEY = Buffer.from([0]);
/** How long a sync pass is waited for (etcd's loop runs every 100 ms; a loaded etcd may take longer). */
const SYNC_PASS_TIMEOUT_MS = 5_000;

/** Whether `err` is etcd's refusal of a read below its compaction revision. */
export function isCompactedError(details: string | undefined): boolean {
  return details === COMPACTED;
}

/** A read etcd let through with auth on: a key an application read, with the token it read it with. */
export interface Reader {
  readonly key: Uint8Array;
  readonly token: string;
}

export class CompactionFollower {
  private timer: { cancel(): void } | undefined;
  private running: Promise<void> | undefined;
  private closed = false;
  /** Compactions found by asking (not through the shadow) and handed to the follower. */
  found = 0;
  /** The last application read etcd let through, to read as when etcd refuses the shadow's own (auth on). */
  private reader: Reader | undefined;

  constructor(
    private readonly client: EtcdGrpcClient,
    private readonly ctx: ShadowContext,
    /** The shadow's own user, when it has one: every probe reads as it. */
    private readonly auth: OwnAuth,
    /** How often etcd is asked (host time); 0: only when `probe` is called. */
    private readonly intervalMs: number,
  ) {
    this.arm();
  }

  /** Asks etcd now (one probe at a time: a caller during one waits for it) and follows what it finds. */
  probe(): Promise<void> {
    this.running ??= this.ask().finally(() => (this.running = undefined));
    return this.running;
  }

  close(): void {
    this.closed = true;
    this.timer?.cancel();
  }

  private arm(): void {
    if (this.intervalMs <= 0 || this.closed) return;
    this.timer = afterHostTime(this.intervalMs, () => {
      void this.probe().finally(() => this.arm());
    });
  }

  /**
   * etcd's current revision when it refuses reads at `rev` (it compacted beyond it); undefined when it
   * answers them — or is unreachable, which no watch can wait for.
   */
  async refusing(rev: number, as?: Reader): Promise<number | undefined> {
    try {
      if (await this.readable(rev, as)) return undefined;
      return await this.currentRevision(as);
    } catch {
      return undefined;
    }
  }

  /**
   * Resolves once etcd's watch sync loop has run twice since now (true), or when that cannot be seen
   * (false, after at most SYNC_PASS_TIMEOUT_MS): see syncPass.
   */
  async syncPassed(below: number, as?: Reader): Promise<boolean> {
    return (await this.syncPass(below, as)) && (await this.syncPass(below, as));
  }

  /**
   * One pass of etcd's watch sync loop (mvcc's syncWatchersLoop: every 100 ms while a watch is behind):
   * a watch of the shadow's own from `below`, a revision etcd has compacted past, is behind, and etcd's
   * next pass cancels it naming the compaction — in the same pass as every other watch behind it, an
   * application's among them. Its cancel says that pass ran. With auth on it is the shadow's user's watch,
   * or one on the key and with the token an application watched with (`as`).
   */
  private async syncPass(below: number, as: Reader | undefined): Promise<boolean> {
    // As the shadow's user when it has one (or auth is off), else as the application watched.
    const reader = this.auth.user === undefined ? as : undefined;
    let watch: ReturnType<EtcdGrpcClient['watch']['watch']>;
    try {
      watch = this.client.watch.watch(reader === undefined ? await this.auth.options() : { token: reader.token });
    } catch {
      return false;
    }
    const passed = await new Promise<boolean>((resolve) => {
      const timer = afterHostTime(SYNC_PASS_TIMEOUT_MS, () => resolve(false));
      const done = (v: boolean): void => {
        timer.cancel();
        resolve(v);
      };
      watch.onResponse((rs) => {
        for (const r of rs) if (r.canceled) done(r.compact_revision !== '0');
      });
      watch.onEnd(() => done(false));
      watch.write({ create_request: { key: reader === undefined ? PROBE_KEY : reader.key, start_revision: String(Math.max(below, 1)) } });
    });
    watch.cancel();
    return passed;
  }

  /** An application's read etcd let through (answered, or refused only as compacted): the probe may read as it. */
  permitted(r: Reader): void {
    this.reader = r;
  }

  /** etcd's current revision (read as `as` or the last reader when etcd refuses the shadow's own reads). */
  async currentRevision(as?: Reader): Promise<number> {
    return Number((await this.read(0, as)).header.revision);
  }

  /** The read at `rev`: true answered, false compacted; any other error (etcd gone, a future revision) throws. */
  private async readable(rev: number, as?: Reader): Promise<boolean> {
    try {
      await this.read(rev, as);
      return true;
    } catch (err) {
      if (isCompactedError((err as { details?: string }).details)) return false;
      throw err;
    }
  }

  /**
   * A count-only read at `rev` (0: now): as the shadow's own user when it has one; else as `as`, else the
   * last reader, else without a token — the first etcd lets through.
   */
  private async read(rev: number, as: Reader | undefined): Promise<{ header: { revision: string } }> {
    if (this.auth.user !== undefined) return this.auth.call((o) => this.client.kv.range({ key: PROBE_KEY, revision: String(rev), count_only: true }, o));
    const readers = [as, this.reader].filter((r): r is Reader => r !== undefined);
    for (const r of readers) {
      try {
        return await this.client.kv.range({ key: r.key, revision: String(rev), count_only: true }, { token: r.token });
      } catch (err) {
        if (!AUTH_REFUSED.test((err as { details?: string }).details ?? '')) throw err;
        // Refused for want of auth: a newer read of the application's will say what etcd lets through.
        if (r === this.reader) this.reader = undefined;
      }
    }
    return this.client.kv.range({ key: PROBE_KEY, revision: String(rev), count_only: true });
  }

  private async ask(): Promise<void> {
    const sim = this.ctx.sim.mvcc;
    let below = Math.max(sim.compactRevision, 1);
    try {
      if (await this.readable(below)) return;
      // etcd compacted past the simulator: its current revision is readable, `below` is not.
      const now = await this.currentRevision();
      let readable = now;
      while (readable - below > 1) {
        const mid = below + Math.floor((readable - below) / 2);
        if (await this.readable(mid)) readable = mid;
        else below = mid;
      }
      // A Compact through the shadow may be the one found: its own step applies it, in its order (it may
      // have done so while the probe asked, from the revision read before it).
      if (this.closed || this.ctx.follower.inflightCompactions > 0 || sim.compactRevision >= readable) return;
      this.found++;
      this.follow(readable, now);
    } catch {
      // etcd unreachable or closing: the next probe asks again.
    }
  }

  /** The simulator compacts at `rev` once it reached `seenAt`, etcd's revision when the compaction was seen. */
  private follow(rev: number, seenAt: number): void {
    const { ctx } = this;
    ctx.follower.add({
      rev: seenAt,
      makesRevision: () => false,
      skip: () => {},
      run: () => followCompaction(ctx, rev, seenAt),
    });
  }
}

/**
 * The simulator compacts at etcd's compaction revision `rev` (unless it already did), now — a step of the
 * follower, run once the simulator reached `seenAt`, where etcd was when the compaction was seen — and the
 * replayable log records it as the Compact a replay needs.
 */
export function followCompaction(ctx: ShadowContext, rev: number, seenAt: number): void {
  if (ctx.sim.mvcc.compactRevision >= rev) return;
  ctx.sim.services.kv.compact({ revision: String(rev), physical: false }, ctx.follower.asRoot());
  ctx.log.add('KV.Compact', { revision: String(rev), physical: false }, { ok: { header: { revision: String(seenAt) } } });
}
