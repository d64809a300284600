/**
 * The shell's parameter expansion, done when a step runs: `$NAME` and `${NAME}` become the captured value
 * (an unset variable is an error rather than the empty string, as under `set -u`), `$((expr))` its value
 * (shell/arithmetic.ts). One command substitution is understood, the usual way to make a large value in a
 * shell: `$(head -c N /dev/zero | tr '\0' C)`, N copies of the character C. Quoted parts that the lexer
 * marked literal stay as written.
 */
import { INTEGER_RE, VARIABLE_NAME, type Word } from '../parse/lexer.js';
import { RunError } from '../run_error.js';
import { evaluateArithmetic } from './arithmetic.js';

const EXPANSION_RE = new RegExp(String.raw`\$\(\((.*?)\)\)|\$\(([^()]*)\)|\$\{(${VARIABLE_NAME})\}|\$(${VARIABLE_NAME})`, 'g');

/** `head -c N /dev/zero | tr '\0' C`: the one command a script may substitute. */
const REPEAT_CMD_RE = /^\s*head -c (\d+) \/dev\/zero \| tr '\\0' (?:'(.)'|"(.)"|([^\s'"]))\s*$/;

/** The largest value a substitution may make (etcd refuses requests over --max-request-bytes anyway). */
const MAX_SUBSTITUTION = 16 * 1024 * 1024;

/** The output of the command substitution `$(cmd)`. */
function substitute(cmd: string): string {
  const m = REPEAT_CMD_RE.exec(cmd);
  if (m === null) throw new RunError('error', `$(${cmd}): the only command substitution a scenario runs is $(head -c N /dev/zero | tr '\\0' C)`);
  const n = Number(m[1]);
  if (n > MAX_SUBSTITUTION) throw new RunError('error', `$(${cmd}): at most ${MAX_SUBSTITUTION} bytes`);
  return (m[2] ?? m[3] ?? m[4]!).repeat(n);
}

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
    return s.replace(EXPANSION_RE, (_m, expr: string | undefined, cmd: string | undefined, a: string | undefined, b: string | undefined) =>
      expr !== undefined ? String(evaluateArithmetic(expr, (name) => this.lookup(name))) : cmd !== undefined ? substitute(cmd) : this.lookup((a ?? b)!),
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
