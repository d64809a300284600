/**
 * Checks on a step's arguments that every kind of step shares: a name (of a watch, a snapshot, a
 * variant) and "nothing more after this". Each names the line and what was expected, as etcdctl's usage
 * errors do.
 */
import { plain, type Word } from './lexer.js';
import { ScenarioSyntaxError } from './syntax_error.js';

const NAME_RE = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** The word as a name (`W`, `behind-1`); `what` says whose name, for the message. */
export function needName(w: Word | undefined, lineNo: number, what: string): string {
  const p = plain(w);
  if (p === undefined || !NAME_RE.test(p)) throw new ScenarioSyntaxError(lineNo, `expected ${what} (a name like A or behind-1), got ${w === undefined ? 'nothing' : w.raw}`);
  return p;
}

/** Fails when there are words at or after index `from`. */
export function noMore(words: readonly Word[], from: number, lineNo: number, ctx: string): void {
  if (words.length > from) throw new ScenarioSyntaxError(lineNo, `${ctx}: unexpected ${words[from]!.raw}`);
}
