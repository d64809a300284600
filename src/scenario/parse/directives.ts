/**
 * The simulator's directives: what a lab does around etcdctl rather than through it. `advance 500ms`
 * moves the member's virtual clock; `cancel`, `break`, `resume`, `slow`, `drain`, `progress` act on a
 * named watch as a client or its network would; `snapshot` / `restore` take and apply a member snapshot
 * as a follower does; `NAME = revision | lease | next_key | VALUE` captures a value; `repeat N CMD`
 * runs a put, get or del N times; `## text` is a note shown in the transcript.
 */
import { needName, noMore } from './arguments.js';
import { parseKvCommand, type KvCommand } from './commands.js';
import { intFlag, parseFlags } from './flags.js';
import { couldBeInt, plain, VARIABLE_NAME, type Word } from './lexer.js';
import { ScenarioSyntaxError } from './syntax_error.js';
import { parseMemberDirective, type MemberDirective } from './member_directives.js';

/** Every directive a scenario can give. */
export type Directive =
  | { readonly kind: 'advance'; readonly ms: number; readonly raw: string }
  | { readonly kind: 'cancel'; readonly name: string }
  | { readonly kind: 'break'; readonly name: string }
  | { readonly kind: 'resume'; readonly name: string; readonly rev: Word }
  | { readonly kind: 'slow'; readonly name: string }
  | { readonly kind: 'drain'; readonly name: string }
  | { readonly kind: 'progress'; readonly name: string }
  | { readonly kind: 'snapshot'; readonly name: string }
  | { readonly kind: 'restore'; readonly name: string }
  | { readonly kind: 'note'; readonly text: string }
  | { readonly kind: 'capture'; readonly name: string; readonly what: 'revision' | 'lease' | 'next_key' | 'expr'; readonly expr: Word | undefined }
  | { readonly kind: 'repeat'; readonly count: Word; readonly body: KvCommand; readonly raw: string }
  | MemberDirective;

const VAR_RE = new RegExp(`^${VARIABLE_NAME}$`);

/** `500ms`, `2s`, `1.5s`, `1m` → milliseconds. */
export function parseDuration(s: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(s);
  if (m === null) return undefined;
  const v = Number(m[1]);
  const ms = m[2] === 'ms' ? v : m[2] === 's' ? v * 1000 : v * 60_000;
  return Number.isInteger(ms) ? ms : undefined;
}

/** `NAME = revision | lease | next_key | VALUE`; undefined when the line is not a capture. */
export function parseCapture(words: readonly Word[], lineNo: number): Directive | undefined {
  const name = plain(words[0]);
  if (name === undefined || words.length < 3 || plain(words[1]) !== '=' || !VAR_RE.test(name)) return undefined;
  if (words.length > 3) throw new ScenarioSyntaxError(lineNo, `a capture is NAME = revision | lease | next_key | VALUE (quote a value with spaces, or use $((...)))`);
  const what = plain(words[2]);
  if (what === 'revision' || what === 'lease' || what === 'next_key') return { kind: 'capture', name, what, expr: undefined };
  return { kind: 'capture', name, what: 'expr', expr: words[2]! };
}

/**
 * The directive `verb ARGS` (the line as written is `text`); undefined when `verb` is not a directive.
 */
export function parseDirective(verb: string, args: readonly Word[], lineNo: number, text: string): Directive | undefined {
  switch (verb) {
    case 'advance': {
      const d = plain(args[0]);
      const ms = d === undefined ? undefined : parseDuration(d);
      if (args.length !== 1 || ms === undefined) throw new ScenarioSyntaxError(lineNo, `advance expects a duration like 500ms, 2s or 1m, got ${args[0]?.raw ?? 'nothing'}`);
      return { kind: 'advance', ms, raw: d! };
    }
    case 'cancel':
    case 'break':
    case 'slow':
    case 'drain':
    case 'progress':
    case 'snapshot':
    case 'restore': {
      const what = verb === 'snapshot' || verb === 'restore' ? 'a snapshot name' : 'a watch name';
      const name = needName(args[0], lineNo, what);
      noMore(args, 1, lineNo, verb);
      return { kind: verb, name };
    }
    case 'resume': {
      const name = needName(args[0], lineNo, 'a watch name');
      const f = parseFlags(args.slice(1), { bool: [], value: ['--rev'] }, lineNo, 'resume NAME --rev=N');
      const rev = intFlag(f, '--rev', lineNo);
      if (rev === undefined || f.positional.length > 0) throw new ScenarioSyntaxError(lineNo, 'resume expects a watch name and --rev=N (usage: resume NAME --rev=N)');
      return { kind: 'resume', name, rev };
    }
    case 'repeat': {
      const count = args[0];
      if (count === undefined || !couldBeInt(count) || args.length < 2) throw new ScenarioSyntaxError(lineNo, 'repeat expects a count and a command, e.g. repeat 20 put /k ${i}');
      const inner = plain(args[1]);
      if (inner !== 'put' && inner !== 'del' && inner !== 'get') throw new ScenarioSyntaxError(lineNo, 'repeat supports put, get and del');
      return { kind: 'repeat', count, body: parseKvCommand(inner, args.slice(2), lineNo), raw: text };
    }
    case 'restart':
    case 'crash-during-compact':
      return parseMemberDirective(verb, args, lineNo);
    default:
      return undefined;
  }
}
