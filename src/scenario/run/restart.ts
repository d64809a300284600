/**
 * The single member killed and started again. `restart`: SIGKILL, then etcd starts and rebuilds itself from
 * its backend. `crash-during-compact REV --after-batches=N`: `etcdctl compact REV` (answered once the
 * compaction is scheduled), then the kill lands after the backend committed N batches of the compaction's
 * deletions, and the member restarts from what that backend holds — the compaction scheduled but not
 * finished, which it runs again (etcd issue #19179's setting). The transcript says, in `#` lines, what the
 * backend held and what the rebuild made of it. Running `etcdctl watch`es lose their stream with the member
 * and, as clientv3 does, reconnect by themselves and resume after the last revision they saw.
 */
import type { CompactionCrash, MemberRestart } from '../../server/index.js';
import { str } from '../format.js';
import type { MemberDirective } from '../parse/member_directives.js';
import { RunError } from '../run_error.js';
import { callService } from './calls.js';
import type { RunContext } from './context.js';
import { echo } from './echo.js';
import type { WatchState } from './watches.js';

/** Runs `restart` or `crash-during-compact`. */
export function runMemberDirective(ctx: RunContext, d: MemberDirective): void {
  const s = ctx.state;
  if (s.engine.currentEndpoint() !== undefined) {
    throw new RunError('error', `${d.kind} acts on the single member; on a cluster, crash MEMBER and restart MEMBER kill and start one member`);
  }
  const server = s.sim.server;
  const watches = openWatches(ctx);
  if (d.kind === 'restart') {
    const from = s.sim.mvcc.currentRevision;
    s.out('# restart: SIGKILL, then the member starts again and rebuilds itself from its backend');
    report(ctx, server.restart(), watches, from, 'restart');
    return;
  }
  const rev = s.vars.int(d.rev, 'crash-during-compact');
  const after = s.vars.int(d.afterBatches, 'crash-during-compact --after-batches');
  if (after < 0) throw new RunError('error', `crash-during-compact: --after-batches must be 0 or more, got ${after}`);
  const from = s.sim.mvcc.currentRevision;
  let crash: CompactionCrash | undefined;
  callService(
    s,
    'compact',
    () => {
      crash = server.crashDuringCompaction(rev, after, s.ctx());
      return crash.response;
    },
    () => [`compacted revision ${rev}`],
  );
  echo(s, `compact ${rev}`);
  if (crash === undefined) return; // etcd refused the compaction: nothing was scheduled, nothing killed
  s.timeline.compactions.push({ rev, line: s.line, atMs: s.sim.clock.now() });
  const p = crash.progress;
  const limit = server.compactionBatchLimit;
  s.out(
    `# the compaction is scheduled (meta scheduledCompactRev = ${rev}) and the index compacted; the backend then deletes what the index no longer keeps, ` +
      `walking its revisions up to ${rev} in batches of ${limit}, each committed on its own: ${p.batches} batch${p.batches === 1 ? '' : 'es'} here`,
  );
  if (p.finished) {
    s.out(`# SIGKILL after ${p.committed} batch${p.committed === 1 ? '' : 'es'}: the compaction had finished (finishedCompactRev = ${rev}); nothing is left to resume`);
  } else {
    const finished = crash.restart.finishedCompactRevision;
    s.out(
      `# SIGKILL after ${p.committed} batch${p.committed === 1 ? '' : 'es'}${p.walkedTo > 0 ? ` (revisions up to ${p.walkedTo})` : ''}: ${p.deleted} revision${p.deleted === 1 ? '' : 's'} deleted, ` +
        `${p.remaining} still to delete; finishedCompactRev ${finished > 0 ? `= ${finished}` : 'not recorded'}`,
    );
  }
  report(ctx, crash.restart, watches, from, p.finished ? 'restart' : 'crash-during-compact', p.finished ? undefined : `killed after ${p.committed} of ${p.batches} batch${p.batches === 1 ? '' : 'es'} of the compaction at ${rev}`);
}

/** A running watch (on a stream of its own) and the revision clientv3 resumes it from after a reconnect. */
interface RunningWatch {
  readonly w: WatchState;
  readonly next: number;
}

/**
 * The watches running now, each with the revision clientv3 would resume it from (its watchGrpcStream's
 * nextRev): the start revision it asked for — for a watch from now, the header revision of its created
 * response — moved past each event and progress notification it has received.
 */
function openWatches(ctx: RunContext): RunningWatch[] {
  const out: RunningWatch[] = [];
  for (const lane of ctx.state.timeline.watchers) {
    const w = ctx.watches.get(lane.name);
    if (w.state !== 'open' || w.call === undefined || w.segment === undefined) continue;
    const seg = w.segment;
    let next = seg.startRev > 0 ? seg.startRev : seg.openedAtRev;
    const ev = w.events[w.events.length - 1];
    if (ev !== undefined) next = Math.max(next, ev.rev + 1);
    const pr = w.progress[w.progress.length - 1];
    if (pr !== undefined) next = Math.max(next, pr + 1);
    out.push({ w, next });
  }
  return out;
}

/** What the rebuild did, then each running watch's fate. */
function report(ctx: RunContext, r: MemberRestart, watches: readonly RunningWatch[], from: number, kind: 'restart' | 'crash-during-compact', how?: string): void {
  const s = ctx.state;
  s.out(
    `# the member rebuilds its index from the backend's key bucket: ${r.keys} key${r.keys === 1 ? '' : 's'}, revision ${r.revision}` +
      `${r.finishedCompactRevision > 0 ? `, compacted at ${r.finishedCompactRevision}` : ''}`,
  );
  if (r.loneTombstones.length > 0) {
    const shown = r.loneTombstones.slice(0, 5).map((kv) => `${str(kv.key)}@${kv.modRevision}`).join(', ');
    const more = r.loneTombstones.length > 5 ? ` and ${r.loneTombstones.length - 5} more` : '';
    const n = r.loneTombstones.length;
    s.out(
      r.loneTombstonesRestored
        ? `# ${n === 1 ? 'a key whose first stored revision is a tombstone' : `${n} keys whose first stored revision is a tombstone`} (${shown}${more}): restored into the index as {tombstone}{empty} (etcd PR #19188)`
        : `# ${n === 1 ? 'a key whose first stored revision is a tombstone' : `${n} keys whose first stored revision is a tombstone`} (${shown}${more}): left out of the index, as etcd's rebuild did before PR #19188 (restoreLoneTombstone=false)`,
    );
  }
  const resumed = r.resumedCompactRevision;
  if (resumed !== undefined) {
    s.out(`# scheduledCompactRev ${resumed} > finishedCompactRev: the compaction at ${resumed} runs again; the backend deletes every revision up to ${resumed} the rebuilt index does not keep`);
    if (!r.loneTombstonesRestored) {
      const lost = r.loneTombstones.filter((kv) => kv.modRevision <= resumed).map((kv) => `${str(kv.key)}@${kv.modRevision}`);
      if (lost.length > 0) s.out(`# ... including the tombstone${lost.length === 1 ? '' : 's'} no keyIndex keeps: ${lost.join(', ')} deleted`);
    }
  }
  const leases = s.sim.lessor.leases().length;
  if (leases > 0) s.out(`# ${leases} lease${leases === 1 ? '' : 's'} restored from the backend, each counting its TTL again from now (etcd's lessor promote)`);
  // Drawn as what it is: a kill and a rebuild from the backend (mid-compaction for #19179), not a snapshot restore.
  s.timeline.restores.push({ name: how ?? 'restart', fromRev: from, toRev: r.revision, line: s.line, atMs: s.sim.clock.now(), kind });
  if (r.brokenStreams > 0) s.out(`# ${r.brokenStreams} stream${r.brokenStreams === 1 ? '' : 's'} broke with the member (UNAVAILABLE: transport is closing)`);
  for (const { w, next } of watches) {
    // The old stream ended with the member; its lane segment ends where the watch had got to.
    w.state = 'broken';
    if (w.segment !== undefined && w.segment.end === undefined) w.segment.end = { kind: 'broken', atRev: w.lane.cursor, compactRevision: 0, atMs: s.sim.clock.now(), line: s.line };
    if (w.stream !== undefined) {
      s.out(`# ${w.name}: session ${w.stream}'s stream broke with the member (the model does not resume an etcdctl watch -i session)`);
      continue;
    }
    ctx.watches.reconnect(w.name, next);
  }
}
