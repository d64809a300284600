/**
 * etcdctl's flag syntax (cobra/pflag): `--flag`, `--flag=true|false` for booleans, `--flag=VALUE` or
 * `--flag VALUE` for values, `-w` for `--write-out`; a word that starts with `-` and a digit is a
 * positional argument (a negative number), and an unknown flag is an error with the command's usage.
 */
import { couldBeInt, plain, unquotedWord, type Word } from './lexer.js';
import { ScenarioSyntaxError } from './syntax_error.js';

/** The flags one command accepts: booleans and flags that take a value. */
export interface FlagSpec {
  readonly bool: readonly string[];
  readonly value: readonly string[];
}

/** A command's words sorted into positional arguments, booleans set, and flag values. */
export interface ParsedFlags {
  readonly positional: Word[];
  readonly bools: Set<string>;
  readonly values: Map<string, Word>;
}

/** Sorts a command's words by `spec`; `usage` is shown with every error. */
export function parseFlags(words: readonly Word[], spec: FlagSpec, lineNo: number, usage: string): ParsedFlags {
  const positional: Word[] = [];
  const bools = new Set<string>();
  const values = new Map<string, Word>();
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    const p = plain(w);
    if (p === undefined || !p.startsWith('-') || /^-\d/.test(p)) {
      positional.push(w);
      continue;
    }
    let name = p;
    let value: Word | undefined;
    const eq = p.indexOf('=');
    if (eq >= 0) {
      name = p.slice(0, eq);
      value = unquotedWord(p.slice(eq + 1));
    }
    if (name === '-w') name = '--write-out';
    if (spec.bool.includes(name)) {
      if (value !== undefined) {
        const v = plain(value);
        if (v !== 'true' && v !== 'false') throw new ScenarioSyntaxError(lineNo, `${name} takes true or false, got ${value.raw} (usage: ${usage})`);
        if (v === 'true') bools.add(name);
      } else bools.add(name);
    } else if (spec.value.includes(name)) {
      if (value === undefined) {
        const next = words[i + 1];
        if (next === undefined) throw new ScenarioSyntaxError(lineNo, `${name} needs a value (usage: ${usage})`);
        value = next;
        i++;
      }
      values.set(name, value);
    } else {
      throw new ScenarioSyntaxError(lineNo, `unknown flag ${name} (usage: ${usage})`);
    }
  }
  return { positional, bools, values };
}

/** A flag that takes an integer (`--rev`, `--limit`): checked now as far as it can be before expansion. */
export function intFlag(f: ParsedFlags, name: string, lineNo: number): Word | undefined {
  const w = f.values.get(name);
  if (w !== undefined && !couldBeInt(w)) throw new ScenarioSyntaxError(lineNo, `${name} expects an integer, got ${w.raw}`);
  return w;
}

/** `-w json` (true) or `-w simple` / no `-w` (false): the two output formats the transcript prints. */
export function jsonFlag(f: ParsedFlags, lineNo: number): boolean {
  const w = f.values.get('--write-out');
  if (w === undefined) return false;
  const v = plain(w);
  if (v === 'json') return true;
  if (v === 'simple') return false;
  throw new ScenarioSyntaxError(lineNo, `-w supports simple or json, got ${w.raw}`);
}
