/**
 * One run of a script: a fresh simulated member (createEtcdSim on virtual time, seeded) configured with
 * one variant's settings — started from an etcd snapshot file when the script says `from-snapshot` — the
 * script's steps for that variant in order, each followed by the member's pending work (`flush`), stopping
 * at the first step that fails.
 */
import { createEtcdSim, type EtcdSim } from '../../client/index.js';
import type { EtcdVersion } from '../../etcd/index.js';
import type { ParsedScenario, Step } from '../parser.js';
import { RunError } from '../run_error.js';
import { emptyTimeline, type TimelineModel } from '../timeline/index.js';
import { runCommand } from './commands.js';
import type { RunContext } from './context.js';
import { runDirective } from './directives.js';
import { checkExpectation } from './expectations.js';
import { ScenarioLeases } from './leases.js';
import { ScenarioSnapshots } from './snapshots.js';
import { ScenarioCluster } from './cluster.js';
import { memberEngine, RunState, type ScenarioEngine, type ScenarioSim } from './state.js';
import { ScenarioWatches } from './watches.js';
import { shownValue, str } from '../format.js';
import { recordWrites, resyncWrites } from './writes.js';

/** Why a run stopped: a malformed line, a failed expectation, or an error while a step ran. */
export interface ScenarioFailure {
  readonly line: number;
  readonly message: string;
  readonly variant: string | undefined;
  readonly kind: 'syntax' | 'expectation' | 'error';
}

/** One variant's run: its settings, transcript and timeline. */
export interface VariantRun {
  readonly variant: string | undefined;
  readonly settings: readonly string[];
  readonly transcript: readonly string[];
  readonly timeline: TimelineModel;
  readonly ok: boolean;
  readonly failure: ScenarioFailure | undefined;
}

/** Runs `parsed` for `variant` on a member configured with `opts` (the script's options with the variant's over them). */
export function runVariant(
  parsed: ParsedScenario,
  variant: string | undefined,
  opts: ReadonlyMap<string, string>,
  seed: number,
  title: string,
  readFile?: (path: string) => Uint8Array,
): VariantRun {
  const num = (k: string): number | undefined => (opts.has(k) ? Number(opts.get(k)) : undefined);
  const bool = (k: string): boolean | undefined => (opts.has(k) ? opts.get(k) === 'true' : undefined);
  const from = parsed.settings.fromSnapshot;
  let snapshotBytes: Uint8Array | undefined;
  let loadFailure: string | undefined;
  if (from !== undefined) {
    if (readFile === undefined) loadFailure = `from-snapshot ${from.path}: this run has no files to read (etcdsim run FILE reads it relative to the scenario file)`;
    else {
      try {
        snapshotBytes = readFile(from.path);
      } catch (err) {
        loadFailure = `from-snapshot ${from.path}: cannot read it (${err instanceof Error ? err.message : String(err)})`;
      }
    }
  }
  // The member's settings: the single member's, or every member's of a cluster.
  const memberOptions = {
    time: 'virtual',
    seed,
    etcdVersion: opts.get('etcd-version') as EtcdVersion | undefined,
    minLeaseTTL: num('minLeaseTTL'),
    watchChanBufLen: num('watchChanBufLen'),
    watchSendWindowBytes: num('watchSendWindowBytes'),
    watchProgressNotifyIntervalMs: num('watchProgressNotifyIntervalMs'),
    quotaBackendBytes: num('quotaBackendBytes'),
    restoreKeepsFutureMinRev: bool('restoreKeepsFutureMinRev'),
    progressRespectsStartRev: bool('progressRespectsStartRev'),
    restoreLoneTombstone: bool('restoreLoneTombstone'),
  } as const;
  const make = (fromSnapshot: Uint8Array | undefined): EtcdSim => createEtcdSim({ ...memberOptions, fromSnapshot });
  const members = parsed.settings.members;
  let sim: ScenarioSim;
  let engine: ScenarioEngine;
  let cluster: ScenarioCluster | undefined;
  if (members !== undefined) {
    // A cluster: the same member settings on every member, one clock, one seed (from-snapshot is refused by the parser).
    cluster = new ScenarioCluster(createEtcdSim({ ...memberOptions, members, preVote: bool('preVote') }));
    sim = cluster.sim;
    engine = cluster;
  } else {
    let member: EtcdSim;
    try {
      member = make(snapshotBytes);
    } catch (err) {
      // A bad or truncated file: the loader names what is wrong; the run stops at the from-snapshot line.
      if (from === undefined) throw err;
      loadFailure = `from-snapshot ${from.path}: ${err instanceof Error ? err.message : String(err)}`;
      member = make(undefined);
    }
    sim = member;
    engine = memberEngine(member);
  }
  const settings = [...opts].map(([k, v]) => `${k}=${v}`);
  const s = new RunState(sim, emptyTimeline(title, variant, settings, parsed.settings.preamble), engine);
  cluster?.attach(s);
  recordWrites(s);
  const ctx: RunContext = { state: s, watches: new ScenarioWatches(s), leases: new ScenarioLeases(s), snapshots: new ScenarioSnapshots(s), cluster };

  if (members !== undefined) {
    const c = cluster!.cs.cluster;
    s.out(`# a simulated cluster of ${members} member${members === 1 ? '' : 's'} (${c.members.map((m) => m.name).join(', ')}); leader ${c.leader?.name ?? 'none'} (term ${c.term}); etcdctl talks to ${c.members[0]!.name} (127.0.0.1:2379) unless told otherwise`);
  }
  if (settings.length > 0 && variant === undefined) s.out(`# options: ${settings.join(', ')}`);
  let failure: ScenarioFailure | undefined;
  if (from !== undefined) {
    s.line = from.line;
    if (loadFailure !== undefined) {
      failure = { line: from.line, message: loadFailure, variant, kind: 'error' };
      s.out(`# ✗ line ${from.line}: ${loadFailure}`);
    } else {
      try {
        startFromSnapshot(s, from.path, from.user);
      } catch (err) {
        if (!(err instanceof RunError)) throw err;
        failure = { line: from.line, message: `from-snapshot ${from.path}: ${err.message}`, variant, kind: err.kind };
        s.out(`# ✗ line ${from.line}: ${failure.message}`);
      }
    }
  }
  for (const step of failure === undefined ? parsed.steps : []) {
    if (step.variant !== undefined && step.variant !== variant) continue;
    s.line = step.line;
    try {
      runStep(ctx, step);
      s.flush();
    } catch (err) {
      if (!(err instanceof RunError)) throw err;
      failure = { line: step.line, message: err.message, variant, kind: err.kind };
      s.out(`# ✗ line ${step.line}: ${err.message}`);
      break;
    }
  }
  s.timeline.failure = failure === undefined ? undefined : `line ${failure.line}: ${failure.message}`;
  s.timeline.endMs = sim.clock.now();
  ctx.watches.settleCursors();
  return { variant, settings, transcript: s.transcript, timeline: s.timeline, ok: failure === undefined, failure };
}

/**
 * The member was loaded from a snapshot: say what it holds (etcd's restore: every revision from the compaction
 * point on), draw that history and the compaction point, and log in when the script gave `--user`.
 */
function startFromSnapshot(s: RunState, path: string, user: { readonly name: string; readonly password: string } | undefined): void {
  const mvcc = s.sim.mvcc;
  s.cause = `from-snapshot ${path}`;
  resyncWrites(s, mvcc.currentRevision);
  // Below the compaction point a snapshot keeps each key's revision that was current there: drawn too, so a
  // key that existed all along has its put (the history before it is gone, as the cliff shows).
  if (mvcc.compactRevision > 0) {
    const all = new Uint8Array([0]);
    for (const kv of mvcc.range({ key: all, rangeEnd: all, revision: mvcc.compactRevision }).kvs) {
      if (kv.modRevision < mvcc.compactRevision) s.timeline.writes.push({ key: str(kv.key), rev: kv.modRevision, type: 'PUT', value: shownValue(kv.value), cause: s.cause, line: s.line });
    }
    s.timeline.writes.sort((a, b) => a.rev - b.rev);
  }
  s.timeline.maxRevision = Math.max(s.timeline.maxRevision, mvcc.currentRevision);
  if (mvcc.compactRevision > 0) s.timeline.compactions.push({ rev: mvcc.compactRevision, line: s.line, atMs: s.sim.clock.now() });
  const leases = s.sim.lessor.leases().length;
  s.out(
    `# from-snapshot ${path}: the member starts from this etcd snapshot (as etcdsim serve --from-snapshot): revision ${mvcc.currentRevision}, compacted at ${mvcc.compactRevision}, ${leases} lease${leases === 1 ? '' : 's'}${s.sim.server.auth.enabled ? ', auth enabled' : ''}`,
  );
  if (user !== undefined) {
    s.logIn(user.name, user.password);
    s.out(`# every etcdctl command below runs with --user ${user.name}:${'*'.repeat(user.password.length)}`);
  }
}

/** One step; writes it makes are the step's (its line), those between steps the lessor's (`lease expiry`). */
function runStep(ctx: RunContext, step: Step): void {
  ctx.state.cause = `line ${step.line}`;
  ctx.state.endWait();
  switch (step.type) {
    case 'command':
      // etcdctl --endpoints=M: this command alone goes to M.
      ctx.state.engine.withEndpoint(step.endpoint ?? ctx.state.engine.currentEndpoint(), () => runCommand(ctx, step.command));
      break;
    case 'directive':
      // `repeat ... --endpoints=M`: its commands go to M.
      ctx.state.engine.withEndpoint(step.endpoint ?? ctx.state.engine.currentEndpoint(), () => runDirective(ctx, step.directive));
      break;
    case 'cluster':
      // The parser admits these only on a cluster.
      ctx.cluster!.run(ctx.state, step.cluster);
      break;
    case 'expect':
      checkExpectation(ctx, step.expect, step.text);
      break;
  }
  ctx.state.cause = 'lease expiry';
}
