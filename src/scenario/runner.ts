/**
 * Runs a scenario script on one simulated member (createEtcdSim) through its services in etcd's message
 * form — the same path every front door takes, so no etcd rule is re-implemented here. The run is
 * deterministic: virtual time moves only on `advance`, random choices (lease IDs) come from the seed.
 *
 * Output: a transcript (what etcdctl 3.4 prints for each step, watch events as they arrive, directives and
 * expectations as `#` lines) and a timeline model for the picture. This file runs the script once per
 * variant (run/variant_run.ts) and puts the runs' transcripts together; a malformed script is a failure
 * of kind 'syntax', never an exception.
 */
import { parseScenario, ScenarioSyntaxError, type ParsedScenario } from './parser.js';
import { runVariant, type ScenarioFailure, type VariantRun } from './run/variant_run.js';
import { emptyTimeline, type TimelineModel } from './timeline/index.js';

export type { ScenarioFailure, VariantRun };

/** How `runScenario` runs a script. */
export interface RunOptions {
  /** Seed of every random choice (lease IDs). Default 0. */
  readonly seed?: number | undefined;
  /** Run only this variant (default: every declared variant, in order). */
  readonly variant?: string | undefined;
  /** Title for the timeline (e.g. the file name). */
  readonly title?: string | undefined;
  /**
   * Reads a file the script names (`from-snapshot FILE`), FILE as written: the caller resolves it relative to
   * the scenario file (`etcdsim run` does). Without it such a script fails at that line, saying so (the
   * playground has no files).
   */
  readonly readFile?: ((path: string) => Uint8Array) | undefined;
}

/** Every variant's run, and the transcript they make together. */
export interface ScenarioResult {
  /** The whole transcript: the scenario's description, then every run (one per variant). */
  readonly transcript: readonly string[];
  /**
   * For each transcript line, the run (index in `runs`; -1: the description or a variant's header) and the
   * script line that printed it (0: none): what links a line to its marks on that run's timeline.
   */
  readonly transcriptLinks: readonly TranscriptLink[];
  /** The timeline of the first run (see `runs` for every variant's). */
  readonly timeline: TimelineModel;
  readonly runs: readonly VariantRun[];
  readonly ok: boolean;
  /** The first failure (a malformed line, an expectation, an unexpected runtime error). */
  readonly failure: ScenarioFailure | undefined;
}

/** Where a line of the whole transcript comes from. */
export interface TranscriptLink {
  readonly run: number;
  readonly line: number;
}

/** Parses and runs a scenario: every variant in turn (or the one asked for). Never throws for a bad script. */
export function runScenario(text: string, options: RunOptions = {}): ScenarioResult {
  const title = options.title ?? 'scenario';
  let parsed: ParsedScenario;
  try {
    parsed = parseScenario(text);
  } catch (err) {
    if (!(err instanceof ScenarioSyntaxError)) throw err;
    const failure: ScenarioFailure = { line: err.line, message: err.detail, variant: undefined, kind: 'syntax' };
    const timeline = emptyTimeline(title, undefined, []);
    timeline.failure = `line ${err.line}: ${err.detail}`;
    const transcript = [`# syntax error at line ${err.line}: ${err.detail}`];
    return { transcript, transcriptLinks: [{ run: -1, line: err.line }], timeline, runs: [], ok: false, failure };
  }
  const { settings } = parsed;
  let variants: { name: string | undefined; options: ReadonlyMap<string, string> }[] =
    settings.variants.length === 0 ? [{ name: undefined, options: new Map() }] : settings.variants.map((v) => ({ name: v.name, options: v.options }));
  if (options.variant !== undefined) {
    variants = variants.filter((v) => v.name === options.variant);
    if (variants.length === 0) {
      const message = `no variant named ${options.variant} (declared: ${settings.variants.map((v) => v.name).join(', ') || 'none'})`;
      const timeline = emptyTimeline(title, options.variant, []);
      timeline.failure = message;
      return { transcript: [`# ${message}`], transcriptLinks: [{ run: -1, line: 0 }], timeline, runs: [], ok: false, failure: { line: 0, message, variant: options.variant, kind: 'syntax' } };
    }
  }
  const runs: VariantRun[] = [];
  for (const v of variants) {
    const merged = new Map(settings.options);
    for (const [k, val] of v.options) merged.set(k, val);
    runs.push(runVariant(parsed, v.name, merged, options.seed ?? 0, title, options.readFile));
  }
  const transcript: string[] = settings.preamble.map((l) => `## ${l}`.trimEnd());
  const transcriptLinks: TranscriptLink[] = transcript.map(() => ({ run: -1, line: 0 }));
  const header = (text: string): void => {
    transcript.push(text);
    transcriptLinks.push({ run: -1, line: 0 });
  };
  runs.forEach((r, i) => {
    if (transcript.length > 0) header('');
    if (r.variant !== undefined) header(`=== variant ${r.variant}${r.settings.length > 0 ? `: ${r.settings.join(', ')}` : ''} ===`);
    transcript.push(...r.transcript);
    const lines = r.timeline.transcriptLines;
    transcriptLinks.push(...r.transcript.map((_t, j) => ({ run: i, line: lines[j] ?? 0 })));
  });
  const failed = runs.find((r) => !r.ok);
  return { transcript, transcriptLinks, timeline: runs[0]!.timeline, runs, ok: failed === undefined, failure: failed?.failure };
}
