/**
 * One run of a script: a fresh simulated member (createEtcdSim on virtual time, seeded) configured with
 * one variant's settings, the script's steps for that variant in order, each followed by the member's
 * pending work (`flush`), stopping at the first step that fails.
 */
import { createEtcdSim } from '../../client/index.js';
import type { EtcdVersion } from '../../mvcc/index.js';
import type { ParsedScenario, Step } from '../parser.js';
import { RunError } from '../run_error.js';
import { emptyTimeline, type TimelineModel } from '../timeline.js';
import { runCommand } from './commands.js';
import type { RunContext } from './context.js';
import { runDirective } from './directives.js';
import { checkExpectation } from './expectations.js';
import { ScenarioLeases } from './leases.js';
import { ScenarioSnapshots } from './snapshots.js';
import { RunState } from './state.js';
import { ScenarioWatches } from './watches.js';
import { recordWrites } from './writes.js';

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
export function runVariant(parsed: ParsedScenario, variant: string | undefined, opts: ReadonlyMap<string, string>, seed: number, title: string): VariantRun {
  const num = (k: string): number | undefined => (opts.has(k) ? Number(opts.get(k)) : undefined);
  const bool = (k: string): boolean | undefined => (opts.has(k) ? opts.get(k) === 'true' : undefined);
  const sim = createEtcdSim({
    time: 'virtual',
    seed,
    etcdVersion: opts.get('etcd-version') as EtcdVersion | undefined,
    minLeaseTTL: num('minLeaseTTL'),
    watchChanBufLen: num('watchChanBufLen'),
    watchSendWindowBytes: num('watchSendWindowBytes'),
    watchProgressNotifyIntervalMs: num('watchProgressNotifyIntervalMs'),
    restoreKeepsFutureMinRev: bool('restoreKeepsFutureMinRev'),
    progressRespectsStartRev: bool('progressRespectsStartRev'),
  });
  const settings = [...opts].map(([k, v]) => `${k}=${v}`);
  const s = new RunState(sim, emptyTimeline(title, variant, settings, parsed.settings.preamble));
  recordWrites(s);
  const ctx: RunContext = { state: s, watches: new ScenarioWatches(s), leases: new ScenarioLeases(s), snapshots: new ScenarioSnapshots(s) };

  if (settings.length > 0 && variant === undefined) s.out(`# options: ${settings.join(', ')}`);
  let failure: ScenarioFailure | undefined;
  for (const step of parsed.steps) {
    if (step.variant !== undefined && step.variant !== variant) continue;
    s.line = step.line;
    try {
      runStep(ctx, step);
      sim.server.flush();
    } catch (err) {
      if (!(err instanceof RunError)) throw err;
      failure = { line: step.line, message: err.message, variant, kind: err.kind };
      s.out(`# ✗ line ${step.line}: ${err.message}`);
      break;
    }
  }
  s.timeline.failure = failure === undefined ? undefined : `line ${failure.line}: ${failure.message}`;
  ctx.watches.settleCursors();
  return { variant, settings, transcript: s.transcript, timeline: s.timeline, ok: failure === undefined, failure };
}

/** One step; writes it makes are the step's (its line), those between steps the lessor's (`lease expiry`). */
function runStep(ctx: RunContext, step: Step): void {
  ctx.state.cause = `line ${step.line}`;
  switch (step.type) {
    case 'command':
      runCommand(ctx, step.command);
      break;
    case 'directive':
      runDirective(ctx, step.directive);
      break;
    case 'expect':
      checkExpectation(ctx, step.expect, step.text);
      break;
  }
  ctx.state.cause = 'lease expiry';
}
