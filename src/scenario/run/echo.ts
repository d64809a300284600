/**
 * The `$ etcdctl ...` lines of a transcript: each command as a shell user would have typed it (words
 * expanded, quoted where the shell needs it), annotated with the revision etcd answered at, followed by
 * what etcdctl printed; a txn is shown with its input as a here-document.
 */
import { hasNul, NOT_PASTEABLE_SHORT, shellQuote } from '../format.js';
import type { KvCommand, TxnCmd, WatchCmd } from '../parse/commands.js';
import type { Word } from '../parse/lexer.js';
import type { ShellVariables } from '../shell/expand.js';
import type { RunState } from './state.js';

/**
 * The command line `etcdctl CMD` (after `STDIN |` when etcdctl reads the value from a pipe), then the last
 * response's lines; `note` adds to the `# rev N` annotation.
 */
export function echo(s: RunState, cmd: string, note?: string, stdin?: string): void {
  const ann: string[] = [];
  if (s.last.revision !== undefined) ann.push(`rev ${s.last.revision}`);
  if (note !== undefined) ann.push(note);
  if (hasNul(cmd)) ann.push(NOT_PASTEABLE_SHORT);
  s.command(`$ ${stdin !== undefined ? `${stdin} | ` : ''}etcdctl ${s.engine.endpointFlag()}${cmd}${ann.length > 0 ? `   # ${ann.join(', ')}` : ''}`, s.last.output);
}

/**
 * The command of a put whose whole value is a command substitution (`"$(head -c N /dev/zero | tr '\0' a)"`):
 * shown as a pipe into `etcdctl put KEY`, which reads its value from stdin, since Linux refuses a single
 * argument over 128 KiB and such values are usually larger. Undefined for any other value.
 */
export function putStdin(c: KvCommand): string | undefined {
  if (c.kind !== 'put') return undefined;
  const m = /^"?\$\(([^()]*)\)"?$/.exec(c.value.raw);
  return m === null ? undefined : m[1]!.trim();
}

/** `etcdctl txn <<EOF`, the block with its words expanded, `EOF`, then what etcdctl printed. */
export function echoTxn(s: RunState, c: TxnCmd): void {
  const ann = s.last.revision !== undefined ? `   # rev ${s.last.revision}` : '';
  const body = c.body.map((b) => (b.text === '' || b.words.length === 0 ? s.vars.interpolate(b.text) : [b.text.split(/\s+/)[0], ...txnOpArgs(s.vars, b.words)].join(' ')));
  // etcdctl reads three sections (compares, success ops, failure ops), each ended by a blank line; at the end of
  // its input without that line it stops with `Error: EOF` (exit 3): the here-document ends every section.
  const ended = body.filter((l) => l.trim() === '').length;
  const closing = Array.from({ length: Math.max(1, 3 - ended) }, () => '');
  s.command(`$ etcdctl ${s.engine.endpointFlag()}txn <<EOF${ann}`, s.last.output, [...body, ...closing, 'EOF']);
}

/** A txn op's arguments (after its verb) as shown: flags as they are, other words quoted. */
function txnOpArgs(vars: ShellVariables, words: readonly Word[]): string[] {
  return words.slice(1).map((w) => {
    const s = vars.expand(w);
    return s.startsWith('-') ? s : shellQuote(s);
  });
}

/**
 * A word as the command line shows it: expanded and quoted, except a command substitution, shown as typed
 * (`"x$(head -c 10 /dev/zero | tr '\0' a)"`: a shell makes the same value from it).
 */
function shownWord(vars: ShellVariables, w: Word): string {
  return /\$\((?!\()/.test(w.raw) ? w.raw : shellQuote(vars.expand(w));
}

/** put, get or del as a command line (without `etcdctl`; a put's value read from stdin is left out, see putStdin). */
export function kvCommandLine(vars: ShellVariables, c: KvCommand): string {
  const parts: string[] = [c.kind, shellQuote(vars.expand(c.key))];
  if (c.kind === 'put') {
    if (putStdin(c) === undefined) parts.push(shownWord(vars, c.value));
    if (c.lease !== undefined) parts.push(`--lease=${vars.expand(c.lease)}`);
    if (c.prevKv) parts.push('--prev-kv');
  } else {
    if (c.rangeEnd !== undefined) parts.push(shellQuote(vars.expand(c.rangeEnd)));
    if (c.prefix) parts.push('--prefix');
    if (c.fromKey) parts.push('--from-key');
    if (c.kind === 'get') {
      if (c.rev !== undefined) parts.push(`--rev=${vars.expand(c.rev)}`);
      if (c.limit !== undefined) parts.push(`--limit=${vars.expand(c.limit)}`);
      if (c.keysOnly) parts.push('--keys-only');
      if (c.printValueOnly) parts.push('--print-value-only');
      if (c.serializable) parts.push('--consistency=s');
    } else if (c.prevKv) parts.push('--prev-kv');
  }
  if (c.json) parts.push('-w json');
  return parts.join(' ');
}

/** A watch's key range and flags as typed after `etcdctl watch` (its `--rev` is added per stream). */
export function watchArgs(vars: ShellVariables, c: WatchCmd): string {
  return [shellQuote(vars.expand(c.key)), c.rangeEnd !== undefined ? shellQuote(vars.expand(c.rangeEnd)) : undefined, c.prefix ? '--prefix' : undefined, c.prevKv ? '--prev-kv' : undefined, c.progressNotify ? '--progress-notify' : undefined]
    .filter((x) => x !== undefined)
    .join(' ');
}
