/**
 * The shell's arithmetic expansion `$((expr))`, as far as a lab needs it: integers, variables (`R`, `$R`,
 * `${R}`), + - * / % with the usual precedence, unary minus and parentheses; `/` truncates toward zero
 * as in bash.
 */
import { INTEGER_RE, VARIABLE_NAME } from '../parse/lexer.js';
import { RunError } from '../run_error.js';

const TOKEN_RE = new RegExp(String.raw`\d+|${VARIABLE_NAME}|\$\{?${VARIABLE_NAME}\}?|[-+*/%()]|\S`, 'g');
const NAME_RE = new RegExp(`^${VARIABLE_NAME}$`);

/** Evaluates `src` (the text between `$((` and `))`); `lookup` gives a variable's value. */
export function evaluateArithmetic(src: string, lookup: (name: string) => string): number {
  const toks = src.match(TOKEN_RE) ?? [];
  let i = 0;
  const fail = (): never => {
    throw new RunError('error', `cannot evaluate $((${src}))`);
  };
  const primary = (): number => {
    const t = toks[i++];
    if (t === undefined) return fail();
    if (t === '(') {
      const v = sum();
      if (toks[i++] !== ')') fail();
      return v;
    }
    if (t === '-') return -primary();
    if (/^\d+$/.test(t)) return Number(t);
    const name = t.replace(/^\$\{?/, '').replace(/\}$/, '');
    if (NAME_RE.test(name)) {
      const v = lookup(name);
      if (!INTEGER_RE.test(v)) throw new RunError('error', `variable ${name} is ${JSON.stringify(v)}, not an integer, in $((${src}))`);
      return Number(v);
    }
    return fail();
  };
  const product = (): number => {
    let v = primary();
    while (toks[i] === '*' || toks[i] === '/' || toks[i] === '%') {
      const op = toks[i++];
      const r = primary();
      v = op === '*' ? v * r : op === '/' ? Math.trunc(v / r) : v % r;
    }
    return v;
  };
  const sum = (): number => {
    let v = product();
    while (toks[i] === '+' || toks[i] === '-') {
      const op = toks[i++];
      const r = product();
      v = op === '+' ? v + r : v - r;
    }
    return v;
  };
  const v = sum();
  if (i !== toks.length) fail();
  return v;
}
