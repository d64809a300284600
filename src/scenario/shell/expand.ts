/**
 * The shell's parameter expansion, done when a step runs: `$NAME` and `${NAME}` become the captured value
 * (an unset variable is an error rather than the empty string, as under `set -u`), `$((expr))` its value
 * (shell/arithmetic.ts). Quoted parts that the lexer marked literal stay as written.
 */
import { INTEGER_RE, VARIABLE_NAME, type Word } from '../parse/lexer.js';
import { RunError } from '../run_error.js';
import { evaluateArithmetic } from './arithmetic.js';

const EXPANSION_RE = new RegExp(String.raw`\$\(\((.*?)\)\)|\$\{(${VARIABLE_NAME})\}|\$(${VARIABLE_NAME})`, 'g');

/** The run's shell variables (captures and `repeat`'s `i`) and the expansion of words against them. */
export class ShellVariables {
  private readonly values = new Map<string, string>();

  set(name: string, value: string): void {
    this.values.set(name, value);
  }

  /** A variable's value; an unset one stops the run. */
  lookup(name: string): string {
    const v = this.values.get(name);
    if (v === undefined) throw new RunError('error', `variable ${name} is not set (capture it first, e.g. ${name} = revision)`);
    return v;
  }

  /** Expands `$NAME`, `${NAME}` and `$((expr))` in a text. */
  interpolate(s: string): string {
    return s.replace(EXPANSION_RE, (_m, expr: string | undefined, a: string | undefined, b: string | undefined) =>
      expr !== undefined ? String(evaluateArithmetic(expr, (name) => this.lookup(name))) : this.lookup((a ?? b)!),
    );
  }

  /** A word as the command receives it. */
  expand(w: Word): string {
    return w.segments.map((s) => (s.expand ? this.interpolate(s.text) : s.text)).join('');
  }

  /** A word that must be an integer once expanded; `what` names it in the error. */
  int(w: Word, what: string): number {
    const s = this.expand(w);
    if (!INTEGER_RE.test(s)) throw new RunError('error', `${what}: expected an integer, got ${JSON.stringify(s)} (from ${w.raw})`);
    return Number(s);
  }
}
