/**
 * Shell-style words, as the shell splits an etcdctl command line before etcdctl sees it: whitespace
 * separates words; `"..."` (with `\"`, `\\`, `\$`), `'...'` and `$'...'` (ANSI-C escapes such as `\x00`)
 * quote; `#` at the start of a word begins a comment. Which parts of a word expand `$NAME`, `${NAME}` and
 * `$((expr))` is decided here; the expansion itself happens when the step runs (shell/expand.ts).
 */
import { ScenarioSyntaxError } from './syntax_error.js';

/** A piece of a word: literal text, or text in which `$NAME`, `${NAME}` and `$((expr))` are expanded. */
export interface Segment {
  readonly text: string;
  readonly expand: boolean;
}

/** One shell-like word: `abc`, `"a b"`, `'a b'`, `$'\x00'`, or a concatenation of them. */
export interface Word {
  readonly segments: readonly Segment[];
  /** The word as written (for messages). */
  readonly raw: string;
}

/** A shell variable's name (`R`, `rev_1`): the rule shared by captures and by `$NAME` expansion. */
export const VARIABLE_NAME = '[A-Za-z_][A-Za-z0-9_]*';

/** An integer as the shell and etcdctl read one: optional minus, decimal digits. */
export const INTEGER_RE = /^-?\d+$/;

/** Splits a line into words, shell style; `#` at the start of a word begins a comment. */
export function splitWords(line: string, lineNo: number): Word[] {
  const words: Word[] = [];
  let i = 0;
  const n = line.length;
  while (i < n) {
    while (i < n && /\s/.test(line[i]!)) i++;
    if (i >= n) break;
    if (line[i] === '#') break;
    const start = i;
    const segs: Segment[] = [];
    let lit = '';
    const pushLit = (): void => {
      if (lit !== '') segs.push({ text: lit, expand: true });
      lit = '';
    };
    while (i < n && !/\s/.test(line[i]!)) {
      const c = line[i]!;
      if (c === '"') {
        pushLit();
        let s = '';
        i++;
        while (i < n && line[i] !== '"') {
          if (line[i] === '\\' && i + 1 < n && (line[i + 1] === '"' || line[i + 1] === '\\' || line[i + 1] === '$')) {
            s += line[i + 1];
            i += 2;
          } else s += line[i++];
        }
        if (i >= n) throw new ScenarioSyntaxError(lineNo, `unterminated double quote in ${line.slice(start)}`);
        i++;
        segs.push({ text: s, expand: true });
        if (s === '') segs.push({ text: '', expand: false });
      } else if (c === "'") {
        pushLit();
        const end = line.indexOf("'", i + 1);
        if (end < 0) throw new ScenarioSyntaxError(lineNo, `unterminated single quote in ${line.slice(start)}`);
        segs.push({ text: line.slice(i + 1, end), expand: false });
        i = end + 1;
      } else if (c === '$' && line[i + 1] === "'") {
        pushLit();
        const end = line.indexOf("'", i + 2);
        if (end < 0) throw new ScenarioSyntaxError(lineNo, `unterminated $'...' in ${line.slice(start)}`);
        segs.push({ text: unescapeAnsiC(line.slice(i + 2, end), lineNo), expand: false });
        i = end + 1;
      } else if (c === '$' && line[i + 1] === '{' && !new RegExp(`^\\$\\{${VARIABLE_NAME}\\}`).test(line.slice(i))) {
        // `${R+1}` is a common slip for `$((R + 1))`: bash would not add either.
        const end = line.indexOf('}', i);
        const inner = end < 0 ? line.slice(i) : line.slice(i, end + 1);
        throw new ScenarioSyntaxError(lineNo, `${inner} is not arithmetic: write $((${inner.slice(2, -1) || 'R + 1'})); \${NAME} only substitutes a captured value`);
      } else if (c === '$' && line.startsWith('$((', i)) {
        const end = line.indexOf('))', i);
        if (end < 0) throw new ScenarioSyntaxError(lineNo, `unterminated $(( ... )) in ${line.slice(start)}`);
        lit += line.slice(i, end + 2);
        i = end + 2;
      } else if (c === '$' && line[i + 1] === '(') {
        // A command substitution, kept whole (its words are the command's, not this line's); shell/expand.ts runs it.
        const end = line.indexOf(')', i);
        if (end < 0) throw new ScenarioSyntaxError(lineNo, `unterminated $( ... ) in ${line.slice(start)}`);
        lit += line.slice(i, end + 1);
        i = end + 1;
      } else {
        lit += c;
        i++;
      }
    }
    pushLit();
    words.push({ segments: segs, raw: line.slice(start, i) });
  }
  return words;
}

/** The escapes of bash's `$'...'` quoting that a key or value may need (`\x00`, `\n`, ...). */
function unescapeAnsiC(s: string, lineNo: number): string {
  return s.replace(/\\(x[0-9a-fA-F]{2}|[ntr0\\'"]|.)/g, (m, e: string) => {
    if (e.startsWith('x')) return String.fromCharCode(parseInt(e.slice(1), 16));
    switch (e) {
      case 'n':
        return '\n';
      case 't':
        return '\t';
      case 'r':
        return '\r';
      case '0':
        return '\0';
      case '\\':
        return '\\';
      case "'":
        return "'";
      case '"':
        return '"';
      default:
        throw new ScenarioSyntaxError(lineNo, `unknown escape ${m} in $'...'`);
    }
  });
}

/** A word that is plain literal text (no quotes or variables), e.g. a flag or a keyword. */
export function plain(w: Word | undefined): string | undefined {
  if (w === undefined) return undefined;
  return w.segments.length === 1 && w.segments[0]!.expand ? w.segments[0]!.text : w.segments.length === 0 ? '' : undefined;
}

/** The unquoted text after `=` in `--flag=TEXT`, as a word of its own (it still expands `${R}`). */
export function unquotedWord(text: string): Word {
  return { segments: [{ text, expand: true }], raw: text };
}

/** Whether a word could be an integer once expanded (a literal integer, or containing `$`). */
export function couldBeInt(w: Word): boolean {
  const p = plain(w);
  if (p === undefined) return w.segments.some((s) => s.expand && s.text.includes('$'));
  return INTEGER_RE.test(p) || p.includes('$');
}
