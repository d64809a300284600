/**
 * The scenario script format: one etcdctl-like command per line, `#` comments, `##` notes that appear in the
 * transcript, and a few simulator directives, captures and expectations (see docs in scenarios/README.md).
 *
 * Parsing is purely syntactic: every line is checked, with its line number and what was expected, so a
 * malformed script fails before anything runs. Values that may depend on captures (`${R}`, `$((R - 10))`)
 * stay as words and are expanded when the step runs. This file reads the script line by line (comments,
 * notes, the description, `[variant]` guards, the optional `etcdctl` prefix) and hands each line to the
 * parser of its kind under parse/.
 */
import { parseClusterDirective, takeEndpoint, type ClusterDirective, type MemberIndex } from './parse/cluster_directives.js';
import { parseCommand, type EtcdCommand } from './parse/commands.js';
import { parseCapture, parseDirective, type Directive } from './parse/directives.js';
import { parseExpect, type Expectation } from './parse/expectations.js';
import { plain, splitWords } from './parse/lexer.js';
import { parseSettingsLine, type FromSnapshot, type ScenarioSettings, type VariantSettings } from './parse/settings.js';
import { ScenarioSyntaxError } from './parse/syntax_error.js';
import { parseTxnBlock } from './parse/txn.js';

export { ScenarioSyntaxError };

/**
 * One step of the script: its line, the variant it is limited to (`[NAME] ...`), its text and what it does.
 * On a cluster a command may name its member (etcdctl's `--endpoints`; undefined: the current one, see `use`).
 */
export type Step =
  | { readonly line: number; readonly variant: string | undefined; readonly text: string; readonly type: 'command'; readonly command: EtcdCommand; readonly endpoint?: MemberIndex | undefined }
  | { readonly line: number; readonly variant: string | undefined; readonly text: string; readonly type: 'directive'; readonly directive: Directive; readonly endpoint?: MemberIndex | undefined }
  | { readonly line: number; readonly variant: string | undefined; readonly text: string; readonly type: 'cluster'; readonly cluster: ClusterDirective }
  | { readonly line: number; readonly variant: string | undefined; readonly text: string; readonly type: 'expect'; readonly expect: Expectation };

/** A step without its position. */
type StepBody =
  | { readonly type: 'command'; readonly command: EtcdCommand; readonly endpoint?: MemberIndex | undefined }
  | { readonly type: 'directive'; readonly directive: Directive; readonly endpoint?: MemberIndex | undefined }
  | { readonly type: 'cluster'; readonly cluster: ClusterDirective }
  | { readonly type: 'expect'; readonly expect: Expectation };

/** A whole script: the member's settings and the steps in order. */
export interface ParsedScenario {
  readonly settings: ScenarioSettings;
  readonly steps: readonly Step[];
}

/** Parses a whole scenario; throws ScenarioSyntaxError at the first malformed line. */
export function parseScenario(text: string): ParsedScenario {
  const lines = text.split('\n').map((l) => l.replace(/\r$/, ''));
  const steps: Step[] = [];
  const options = new Map<string, string>();
  const variants: VariantSettings[] = [];
  const snapshot: { value: FromSnapshot | undefined } = { value: undefined };
  const preamble: string[] = [];
  const guards: { line: number; name: string }[] = [];
  const cluster: { members: number | undefined; line: number } = { members: undefined, line: 0 };
  /** The description: the `##` lines at the top, up to the first blank line. */
  let inPreamble = true;

  for (let idx = 0; idx < lines.length; idx++) {
    const lineNo = idx + 1;
    const line = lines[idx]!;
    const trimmed = line.trim();
    if (trimmed === '') {
      if (preamble.length > 0) inPreamble = false;
      continue;
    }
    if (trimmed.startsWith('##')) {
      const note = trimmed.slice(2).replace(/^ /, '');
      if (inPreamble && steps.length === 0) preamble.push(note);
      else steps.push({ line: lineNo, variant: undefined, text: trimmed, type: 'directive', directive: { kind: 'note', text: note } });
      continue;
    }
    if (trimmed.startsWith('#')) continue;
    let words = splitWords(line, lineNo);
    if (words.length === 0) continue;
    let rawRest = line;
    let variant: string | undefined;
    const g = /^\[([A-Za-z0-9_-]+)\]$/.exec(plain(words[0]) ?? '');
    if (g !== null) {
      variant = g[1]!;
      guards.push({ line: lineNo, name: variant });
      words = words.slice(1);
      rawRest = rawRest.slice(rawRest.indexOf(']') + 1);
      if (words.length === 0) throw new ScenarioSyntaxError(lineNo, `expected a step after [${variant}]`);
    }
    if (plain(words[0]) === 'etcdctl') {
      words = words.slice(1);
      rawRest = rawRest.replace(/^\s*etcdctl\b/, '');
      // etcdctl with no command prints its help; in a script it is a step that says nothing.
      if (words.length === 0) throw new ScenarioSyntaxError(lineNo, 'expected an etcdctl command after etcdctl');
    }
    const verb = plain(words[0]);
    // etcdctl's global --endpoints may stand anywhere on a command line; on a cluster it picks the member.
    const { args, endpoint } = takeEndpoint(words.slice(1), cluster.members, lineNo);
    const push = (s: StepBody): void => {
      steps.push({ line: lineNo, variant, text: trimmed, ...s } as Step);
    };

    if (verb === undefined) throw new ScenarioSyntaxError(lineNo, `expected a command, got ${words[0]!.raw}`);
    if (parseSettingsLine(verb, args, { lineNo, afterFirstStep: steps.length > 0, variant }, options, variants, snapshot, cluster)) continue;
    const commandOnly = (): void => {
      if (endpoint !== undefined) throw new ScenarioSyntaxError(lineNo, `--endpoints belongs to an etcdctl command, not to ${verb}`);
    };

    const capture = parseCapture(words, lineNo);
    if (capture !== undefined) {
      commandOnly();
      push({ type: 'directive', directive: capture });
      continue;
    }
    if (verb === 'expect') {
      commandOnly();
      const after = rawRest.slice(rawRest.indexOf('expect') + 'expect'.length);
      push({ type: 'expect', expect: parseExpect(args, after, lineNo, cluster.members) });
      continue;
    }
    if (verb === 'txn') {
      const { command, end } = parseTxnBlock(lines, idx, args, lineNo);
      idx = end;
      push({ type: 'command', command, endpoint });
      continue;
    }
    const clusterDirective = parseClusterDirective(verb, args, lineNo, cluster.members);
    if (clusterDirective !== undefined) {
      commandOnly();
      push({ type: 'cluster', cluster: clusterDirective });
      continue;
    }
    const directive = parseDirective(verb, args, lineNo, trimmed);
    // `repeat N put ... --endpoints=M` repeats an etcdctl command: the flag is the command's.
    if (directive !== undefined && directive.kind !== 'repeat') commandOnly();
    push(directive !== undefined ? { type: 'directive', directive, endpoint } : { type: 'command', command: checkedOnCluster(parseCommand(verb, args, lineNo), cluster.members, lineNo), endpoint });
  }
  for (const g of guards) {
    if (!variants.some((v) => v.name === g.name)) throw new ScenarioSyntaxError(g.line, `unknown variant [${g.name}]; declare it first with: variant ${g.name} KEY=VALUE`);
  }
  if (cluster.members !== undefined) {
    if (snapshot.value !== undefined) throw new ScenarioSyntaxError(snapshot.value.line, 'from-snapshot starts one member; it cannot be combined with members N');
    for (const st of steps) {
      if (st.type === 'directive' && (st.directive.kind === 'snapshot' || st.directive.kind === 'restore')) {
        throw new ScenarioSyntaxError(st.line, `${st.directive.kind} acts on the single member; on a cluster a follower gets the leader's snapshot with install-snapshot MEMBER`);
      }
    }
  } else if (options.has('preVote')) {
    const at = lines.findIndex((l) => /^\s*option\b.*\bpreVote=/.test(l));
    throw new ScenarioSyntaxError(at + 1, 'option preVote is a cluster setting: write members 3 before the first step');
  }
  return { settings: { options, variants, preamble, fromSnapshot: snapshot.value, members: cluster.members }, steps };
}

/**
 * Commands that only a cluster has (`endpoint status`) fail on one member, and those modelled on one member
 * only (`defrag`, `alarm`) on a cluster, as the script is read.
 */
function checkedOnCluster(c: EtcdCommand, members: number | undefined, lineNo: number): EtcdCommand {
  if (c.kind === 'endpoint-status' && members === undefined) throw new ScenarioSyntaxError(lineNo, 'endpoint status reports the members of a cluster: write members 3 before the first step');
  if ((c.kind === 'defrag' || c.kind === 'alarm-list' || c.kind === 'alarm-disarm') && members !== undefined) {
    throw new ScenarioSyntaxError(lineNo, `${c.kind === 'defrag' ? 'defrag' : 'alarm'} runs on a single member in a scenario (not with members N)`);
  }
  return c;
}
