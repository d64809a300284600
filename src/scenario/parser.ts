/**
 * The scenario script format: one etcdctl-like command per line, `#` comments, `##` notes that appear in the
 * transcript, and a few simulator directives, captures and expectations (see docs in scenarios/README.md).
 *
 * Parsing is purely syntactic: every line is checked here, with its line number and what was expected, so a
 * malformed script fails before anything runs. Values that may depend on captures (`${R}`, `$((R - 10))`)
 * stay as words and are expanded when the step runs.
 */

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

export class ScenarioSyntaxError extends Error {
  constructor(
    readonly line: number,
    readonly detail: string,
  ) {
    super(`line ${line}: ${detail}`);
    this.name = 'ScenarioSyntaxError';
  }
}

// ---------------------------------------------------------------------------------------------------
// Steps

export interface GetCmd {
  readonly kind: 'get';
  readonly key: Word;
  readonly rangeEnd: Word | undefined;
  readonly prefix: boolean;
  readonly fromKey: boolean;
  readonly rev: Word | undefined;
  readonly limit: Word | undefined;
  readonly keysOnly: boolean;
  readonly printValueOnly: boolean;
  readonly json: boolean;
}

export interface PutCmd {
  readonly kind: 'put';
  readonly key: Word;
  readonly value: Word;
  readonly lease: Word | undefined;
  readonly prevKv: boolean;
  readonly json: boolean;
}

export interface DelCmd {
  readonly kind: 'del';
  readonly key: Word;
  readonly rangeEnd: Word | undefined;
  readonly prefix: boolean;
  readonly fromKey: boolean;
  readonly prevKv: boolean;
  readonly json: boolean;
}

export type TxnOp = GetCmd | PutCmd | DelCmd;

export interface TxnCompare {
  readonly target: 'VALUE' | 'MOD' | 'CREATE' | 'VERSION' | 'LEASE';
  readonly key: Word;
  readonly op: '=' | '!=' | '>' | '<';
  readonly operand: Word;
  readonly raw: string;
}

export interface TxnCmd {
  readonly kind: 'txn';
  readonly compares: readonly TxnCompare[];
  readonly success: readonly TxnOp[];
  readonly failure: readonly TxnOp[];
  /** The block's lines as written, for the transcript. */
  readonly body: readonly { readonly text: string; readonly words: readonly Word[] }[];
}

export type EtcdCommand =
  | GetCmd
  | PutCmd
  | DelCmd
  | TxnCmd
  | { readonly kind: 'compact'; readonly rev: Word; readonly physical: boolean }
  | {
      readonly kind: 'watch';
      readonly name: string;
      readonly key: Word;
      readonly rangeEnd: Word | undefined;
      readonly prefix: boolean;
      readonly rev: Word | undefined;
      readonly prevKv: boolean;
      readonly progressNotify: boolean;
    }
  | { readonly kind: 'lease-grant'; readonly ttl: Word }
  | { readonly kind: 'lease-keep-alive'; readonly id: Word }
  | { readonly kind: 'lease-revoke'; readonly id: Word }
  | { readonly kind: 'lease-timetolive'; readonly id: Word; readonly keys: boolean };

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
  | { readonly kind: 'repeat'; readonly count: Word; readonly body: EtcdCommand; readonly raw: string };

export type CompareOp = '==' | '!=' | '<' | '<=' | '>' | '>=';

export interface EventPattern {
  readonly type: 'PUT' | 'DELETE';
  readonly key: Word;
  readonly rev: Word;
}

export type Expectation =
  | { readonly kind: 'ok' }
  | { readonly kind: 'error'; readonly message: Word | undefined }
  | { readonly kind: 'revision'; readonly op: CompareOp; readonly value: Word }
  | { readonly kind: 'output'; readonly op: '==' | 'contains'; readonly text: Word }
  | { readonly kind: 'keys'; readonly keys: readonly Word[] }
  | { readonly kind: 'more'; readonly value: boolean }
  | { readonly kind: 'count'; readonly op: CompareOp; readonly value: Word }
  | { readonly kind: 'get'; readonly key: Word; readonly rev: Word | undefined; readonly value: Word | undefined }
  | { readonly kind: 'watch-events'; readonly name: string; readonly events: readonly EventPattern[] }
  | { readonly kind: 'watch-last'; readonly name: string; readonly op: CompareOp; readonly value: Word }
  | { readonly kind: 'watch-canceled'; readonly name: string; readonly compactRevision: Word | undefined }
  | { readonly kind: 'watch-open'; readonly name: string }
  | { readonly kind: 'watch-progress'; readonly name: string; readonly value: Word | undefined }
  | { readonly kind: 'lease-ttl'; readonly id: Word; readonly op: CompareOp; readonly value: Word }
  | { readonly kind: 'lease-state'; readonly id: Word; readonly state: 'alive' | 'expired' };

export type Step =
  | { readonly line: number; readonly variant: string | undefined; readonly text: string; readonly type: 'command'; readonly command: EtcdCommand }
  | { readonly line: number; readonly variant: string | undefined; readonly text: string; readonly type: 'directive'; readonly directive: Directive }
  | { readonly line: number; readonly variant: string | undefined; readonly text: string; readonly type: 'expect'; readonly expect: Expectation };

/** A step without its position. */
type StepBody =
  | { readonly type: 'command'; readonly command: EtcdCommand }
  | { readonly type: 'directive'; readonly directive: Directive }
  | { readonly type: 'expect'; readonly expect: Expectation };

/** Settings that must come before the first step: `option K=V`, `etcd-version V`, `variant NAME K=V...`. */
export interface ScenarioSettings {
  readonly options: ReadonlyMap<string, string>;
  readonly variants: readonly { readonly name: string; readonly options: ReadonlyMap<string, string>; readonly line: number }[];
  /** `##` notes before the first step: the scenario's description. */
  readonly preamble: readonly string[];
}

export interface ParsedScenario {
  readonly settings: ScenarioSettings;
  readonly steps: readonly Step[];
}

/** Options a scenario may set, with a check of the value. */
export const OPTION_KEYS: Readonly<Record<string, (v: string) => boolean>> = {
  'etcd-version': (v) => ['3.4', '3.5', '3.6', '3.7'].includes(v),
  restoreKeepsFutureMinRev: isBool,
  progressRespectsStartRev: isBool,
  watchChanBufLen: isPosInt,
  watchSendWindowBytes: (v) => /^(0|[1-9][0-9]*)$/.test(v),
  minLeaseTTL: isPosInt,
  watchProgressNotifyIntervalMs: isPosInt,
};

function isBool(v: string): boolean {
  return v === 'true' || v === 'false';
}
function isPosInt(v: string): boolean {
  return /^[1-9]\d*$/.test(v);
}

// ---------------------------------------------------------------------------------------------------
// Words

const NAME_RE = /^[A-Za-z_][A-Za-z0-9_-]*$/;
const VAR_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

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
      } else if (c === '$' && line.startsWith('$((', i)) {
        const end = line.indexOf('))', i);
        if (end < 0) throw new ScenarioSyntaxError(lineNo, `unterminated $(( ... )) in ${line.slice(start)}`);
        lit += line.slice(i, end + 2);
        i = end + 2;
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
function plain(w: Word | undefined): string | undefined {
  if (w === undefined) return undefined;
  return w.segments.length === 1 && w.segments[0]!.expand ? w.segments[0]!.text : w.segments.length === 0 ? '' : undefined;
}

export function literalWord(text: string): Word {
  return { segments: [{ text, expand: false }], raw: text };
}

/** Whether a word could be an integer once expanded (a literal integer, or containing `$`). */
function couldBeInt(w: Word): boolean {
  const p = plain(w);
  if (p === undefined) return w.segments.some((s) => s.expand && s.text.includes('$'));
  return /^-?\d+$/.test(p) || p.includes('$');
}

// ---------------------------------------------------------------------------------------------------
// Durations

/** `500ms`, `2s`, `1.5s`, `1m` → milliseconds. */
export function parseDuration(s: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(s);
  if (m === null) return undefined;
  const v = Number(m[1]);
  const ms = m[2] === 'ms' ? v : m[2] === 's' ? v * 1000 : v * 60_000;
  return Number.isInteger(ms) ? ms : undefined;
}

// ---------------------------------------------------------------------------------------------------
// Flags

interface FlagSpec {
  readonly bool: readonly string[];
  readonly value: readonly string[];
}

interface ParsedFlags {
  readonly positional: Word[];
  readonly bools: Set<string>;
  readonly values: Map<string, Word>;
}

function parseFlags(words: readonly Word[], spec: FlagSpec, lineNo: number, usage: string): ParsedFlags {
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
      value = { segments: [{ text: p.slice(eq + 1), expand: true }], raw: p.slice(eq + 1) };
    } else if (w.segments.length === 1 && w.raw.includes('=')) {
      // e.g. --rev=$((R+1)) kept in one literal segment: handled above
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

function intFlag(f: ParsedFlags, name: string, lineNo: number): Word | undefined {
  const w = f.values.get(name);
  if (w !== undefined && !couldBeInt(w)) throw new ScenarioSyntaxError(lineNo, `${name} expects an integer, got ${w.raw}`);
  return w;
}

function jsonFlag(f: ParsedFlags, lineNo: number): boolean {
  const w = f.values.get('--write-out');
  if (w === undefined) return false;
  const v = plain(w);
  if (v === 'json') return true;
  if (v === 'simple') return false;
  throw new ScenarioSyntaxError(lineNo, `-w supports simple or json, got ${w.raw}`);
}

// ---------------------------------------------------------------------------------------------------
// Commands

const USAGE = {
  put: 'put KEY VALUE [--lease=ID] [--prev-kv] [-w json]',
  get: 'get KEY [RANGE_END] [--prefix] [--from-key] [--rev=N] [--limit=N] [--keys-only] [--print-value-only] [-w json]',
  del: 'del KEY [RANGE_END] [--prefix] [--from-key] [--prev-kv] [-w json]',
  compact: 'compact REVISION [--physical]',
  watch: 'watch NAME KEY [RANGE_END] [--prefix] [--rev=N] [--prev-kv] [--progress-notify]',
  lease: 'lease grant TTL | lease keep-alive ID --once | lease revoke ID | lease timetolive ID [--keys]',
} as const;

function needName(w: Word | undefined, lineNo: number, what: string): string {
  const p = plain(w);
  if (p === undefined || !NAME_RE.test(p)) throw new ScenarioSyntaxError(lineNo, `expected ${what} (a name like A or behind-1), got ${w === undefined ? 'nothing' : w.raw}`);
  return p;
}

function parseKvCommand(verb: string, args: readonly Word[], lineNo: number): GetCmd | PutCmd | DelCmd {
  switch (verb) {
    case 'put': {
      const f = parseFlags(args, { bool: ['--prev-kv'], value: ['--lease', '--write-out'] }, lineNo, USAGE.put);
      if (f.positional.length !== 2) throw new ScenarioSyntaxError(lineNo, `put expects a key and a value (usage: ${USAGE.put})`);
      return { kind: 'put', key: f.positional[0]!, value: f.positional[1]!, lease: f.values.get('--lease'), prevKv: f.bools.has('--prev-kv'), json: jsonFlag(f, lineNo) };
    }
    case 'get': {
      const f = parseFlags(args, { bool: ['--prefix', '--from-key', '--keys-only', '--print-value-only'], value: ['--rev', '--limit', '--write-out'] }, lineNo, USAGE.get);
      if (f.positional.length < 1 || f.positional.length > 2) throw new ScenarioSyntaxError(lineNo, `get expects a key and an optional range end (usage: ${USAGE.get})`);
      const g: GetCmd = {
        kind: 'get',
        key: f.positional[0]!,
        rangeEnd: f.positional[1],
        prefix: f.bools.has('--prefix'),
        fromKey: f.bools.has('--from-key'),
        rev: intFlag(f, '--rev', lineNo),
        limit: intFlag(f, '--limit', lineNo),
        keysOnly: f.bools.has('--keys-only'),
        printValueOnly: f.bools.has('--print-value-only'),
        json: jsonFlag(f, lineNo),
      };
      if ((g.prefix || g.fromKey) && g.rangeEnd !== undefined) throw new ScenarioSyntaxError(lineNo, 'get: a range end cannot be combined with --prefix or --from-key');
      return g;
    }
    case 'del': {
      const f = parseFlags(args, { bool: ['--prefix', '--from-key', '--prev-kv'], value: ['--write-out'] }, lineNo, USAGE.del);
      if (f.positional.length < 1 || f.positional.length > 2) throw new ScenarioSyntaxError(lineNo, `del expects a key and an optional range end (usage: ${USAGE.del})`);
      const d: DelCmd = {
        kind: 'del',
        key: f.positional[0]!,
        rangeEnd: f.positional[1],
        prefix: f.bools.has('--prefix'),
        fromKey: f.bools.has('--from-key'),
        prevKv: f.bools.has('--prev-kv'),
        json: jsonFlag(f, lineNo),
      };
      if ((d.prefix || d.fromKey) && d.rangeEnd !== undefined) throw new ScenarioSyntaxError(lineNo, 'del: a range end cannot be combined with --prefix or --from-key');
      return d;
    }
    default:
      throw new ScenarioSyntaxError(lineNo, `expected put, get or del, got ${verb}`);
  }
}

function parseCommand(verb: string, args: readonly Word[], lineNo: number): EtcdCommand {
  switch (verb) {
    case 'put':
    case 'get':
    case 'del':
      return parseKvCommand(verb, args, lineNo);
    case 'compact': {
      const f = parseFlags(args, { bool: ['--physical'], value: [] }, lineNo, USAGE.compact);
      const rev = f.positional[0];
      if (f.positional.length !== 1 || rev === undefined || !couldBeInt(rev)) throw new ScenarioSyntaxError(lineNo, `compact expects one revision (usage: ${USAGE.compact})`);
      return { kind: 'compact', rev, physical: f.bools.has('--physical') };
    }
    case 'watch': {
      const f = parseFlags(args, { bool: ['--prefix', '--prev-kv', '--progress-notify'], value: ['--rev'] }, lineNo, USAGE.watch);
      if (f.positional.length < 2 || f.positional.length > 3) throw new ScenarioSyntaxError(lineNo, `watch expects a name and a key (usage: ${USAGE.watch})`);
      const name = needName(f.positional[0], lineNo, 'a watch name');
      const rangeEnd = f.positional[2];
      if (rangeEnd !== undefined && f.bools.has('--prefix')) throw new ScenarioSyntaxError(lineNo, 'watch: a range end cannot be combined with --prefix');
      return {
        kind: 'watch',
        name,
        key: f.positional[1]!,
        rangeEnd,
        prefix: f.bools.has('--prefix'),
        rev: intFlag(f, '--rev', lineNo),
        prevKv: f.bools.has('--prev-kv'),
        progressNotify: f.bools.has('--progress-notify'),
      };
    }
    case 'lease': {
      const sub = plain(args[0]);
      const rest = args.slice(1);
      if (sub === 'grant') {
        if (rest.length !== 1 || !couldBeInt(rest[0]!)) throw new ScenarioSyntaxError(lineNo, `lease grant expects a TTL in seconds (usage: ${USAGE.lease})`);
        return { kind: 'lease-grant', ttl: rest[0]! };
      }
      if (sub === 'keep-alive') {
        const f = parseFlags(rest, { bool: ['--once'], value: [] }, lineNo, USAGE.lease);
        if (f.positional.length !== 1 || !f.bools.has('--once')) {
          throw new ScenarioSyntaxError(lineNo, 'lease keep-alive expects a lease ID and --once (a scenario renews explicitly; there is no background keep-alive)');
        }
        return { kind: 'lease-keep-alive', id: f.positional[0]! };
      }
      if (sub === 'revoke') {
        if (rest.length !== 1) throw new ScenarioSyntaxError(lineNo, `lease revoke expects a lease ID (usage: ${USAGE.lease})`);
        return { kind: 'lease-revoke', id: rest[0]! };
      }
      if (sub === 'timetolive') {
        const f = parseFlags(rest, { bool: ['--keys'], value: [] }, lineNo, USAGE.lease);
        if (f.positional.length !== 1) throw new ScenarioSyntaxError(lineNo, `lease timetolive expects a lease ID (usage: ${USAGE.lease})`);
        return { kind: 'lease-timetolive', id: f.positional[0]!, keys: f.bools.has('--keys') };
      }
      throw new ScenarioSyntaxError(lineNo, `expected lease grant, keep-alive, revoke or timetolive (usage: ${USAGE.lease})`);
    }
    default:
      throw new ScenarioSyntaxError(lineNo, `unknown command ${verb}`);
  }
}

// ---------------------------------------------------------------------------------------------------
// Txn (etcdctl's interactive form)

const COMPARE_RE = /^\s*(value|mod|create|version|lease|val|c|m|ver)\(\s*("(?:[^"\\]|\\.)*"|'[^']*'|\$\{\w+\}|[^\s)]+)\s*\)\s*(!=|=(?!=)|>|<)\s*(.+?)\s*$/;
const TARGETS: Readonly<Record<string, TxnCompare['target']>> = {
  value: 'VALUE',
  val: 'VALUE',
  mod: 'MOD',
  m: 'MOD',
  create: 'CREATE',
  c: 'CREATE',
  version: 'VERSION',
  ver: 'VERSION',
  lease: 'LEASE',
};

function parseCompare(text: string, lineNo: number): TxnCompare {
  const m = COMPARE_RE.exec(text);
  if (m === null) {
    throw new ScenarioSyntaxError(lineNo, `expected a txn compare like value("k") = "v", mod("k") > "3", create("k") = "0", version("k") < "2" or lease("k") = "694d..."; got ${text.trim()}`);
  }
  const keyWords = splitWords(m[2]!, lineNo);
  const valueWords = splitWords(m[4]!, lineNo);
  if (keyWords.length !== 1 || valueWords.length !== 1) throw new ScenarioSyntaxError(lineNo, `a txn compare takes one key and one quoted value; got ${text.trim()}`);
  return { target: TARGETS[m[1]!]!, key: keyWords[0]!, op: m[3] as TxnCompare['op'], operand: valueWords[0]!, raw: text.trim() };
}

// ---------------------------------------------------------------------------------------------------
// Expectations

const COMPARE_OPS: readonly CompareOp[] = ['==', '!=', '<=', '>=', '<', '>'];

function needOp(w: Word | undefined, lineNo: number, ctx: string): CompareOp {
  const p = plain(w);
  if (p !== undefined && (COMPARE_OPS as readonly string[]).includes(p)) return p as CompareOp;
  throw new ScenarioSyntaxError(lineNo, `${ctx}: expected one of ${COMPARE_OPS.join(' ')}, got ${w === undefined ? 'nothing' : w.raw}`);
}

function needInt(w: Word | undefined, lineNo: number, ctx: string): Word {
  if (w === undefined || !couldBeInt(w)) throw new ScenarioSyntaxError(lineNo, `${ctx}: expected an integer, got ${w === undefined ? 'nothing' : w.raw}`);
  return w;
}

function noMore(words: readonly Word[], from: number, lineNo: number, ctx: string): void {
  if (words.length > from) throw new ScenarioSyntaxError(lineNo, `${ctx}: unexpected ${words[from]!.raw}`);
}

const EXPECT_FORMS = [
  'expect ok',
  'expect error ["MESSAGE"]',
  'expect revision OP N',
  'expect output == "TEXT" | expect output contains "TEXT"',
  'expect keys == [K1, K2]',
  'expect more == true|false',
  'expect count OP N',
  'expect get KEY [--rev=N] == VALUE | expect get KEY [--rev=N] absent',
  'expect watch NAME events == [PUT KEY@REV, DELETE KEY@REV]',
  'expect watch NAME last OP N',
  'expect watch NAME canceled [compact_revision == N]',
  'expect watch NAME open',
  'expect watch NAME progress == N | expect watch NAME progress none',
  'expect lease ID ttl OP N | expect lease ID alive | expect lease ID expired',
];

/** The list between `[` and `]` after `==` in the raw line, split on commas at depth 0. */
function bracketList(rest: string, lineNo: number, ctx: string): string[] {
  const open = rest.indexOf('[');
  const close = rest.lastIndexOf(']');
  if (open < 0 || close < open) throw new ScenarioSyntaxError(lineNo, `${ctx}: expected a list in brackets, like [a, b]`);
  if (rest.slice(close + 1).trim() !== '' && !rest.slice(close + 1).trim().startsWith('#')) {
    throw new ScenarioSyntaxError(lineNo, `${ctx}: unexpected text after the list: ${rest.slice(close + 1).trim()}`);
  }
  const inner = rest.slice(open + 1, close).trim();
  if (inner === '') return [];
  return inner.split(',').map((s) => s.trim());
}

function parseEventPattern(item: string, lineNo: number): EventPattern {
  const at = item.lastIndexOf('@');
  const m = at < 0 ? null : /^(PUT|DELETE)\s+(.+)$/.exec(item.slice(0, at))?.concat(item.slice(at + 1).trim()) ?? null;
  if (m === null) throw new ScenarioSyntaxError(lineNo, `expected an event like PUT /k@3 or DELETE /k@${'${R}'}, got ${item || '(empty)'}`);
  const key = splitWords(m[2]!, lineNo);
  const rev = splitWords(m[3]!, lineNo);
  if (key.length !== 1 || rev.length !== 1 || !couldBeInt(rev[0]!)) throw new ScenarioSyntaxError(lineNo, `expected an event like PUT /k@3, got ${item}`);
  return { type: m[1] as 'PUT' | 'DELETE', key: key[0]!, rev: rev[0]! };
}

function parseExpect(words: readonly Word[], rawAfterExpect: string, lineNo: number): Expectation {
  const subject = plain(words[0]);
  const bad = (): never => {
    throw new ScenarioSyntaxError(lineNo, `malformed expectation; expected one of:\n  ${EXPECT_FORMS.join('\n  ')}`);
  };
  switch (subject) {
    case 'ok':
      noMore(words, 1, lineNo, 'expect ok');
      return { kind: 'ok' };
    case 'error': {
      const msg = words[1] !== undefined && plain(words[1]) === '==' ? words[2] : words[1];
      noMore(words, words[1] !== undefined && plain(words[1]) === '==' ? 3 : 2, lineNo, 'expect error');
      return { kind: 'error', message: msg };
    }
    case 'revision':
      noMore(words, 3, lineNo, 'expect revision');
      return { kind: 'revision', op: needOp(words[1], lineNo, 'expect revision'), value: needInt(words[2], lineNo, 'expect revision') };
    case 'count':
      noMore(words, 3, lineNo, 'expect count');
      return { kind: 'count', op: needOp(words[1], lineNo, 'expect count'), value: needInt(words[2], lineNo, 'expect count') };
    case 'output': {
      const op = plain(words[1]);
      if ((op !== '==' && op !== 'contains') || words[2] === undefined) throw new ScenarioSyntaxError(lineNo, 'expect output: expected == "TEXT" or contains "TEXT"');
      noMore(words, 3, lineNo, 'expect output');
      return { kind: 'output', op, text: words[2] };
    }
    case 'more': {
      const v = plain(words[2]);
      if (plain(words[1]) !== '==' || (v !== 'true' && v !== 'false')) throw new ScenarioSyntaxError(lineNo, 'expect more: expected == true or == false');
      noMore(words, 3, lineNo, 'expect more');
      return { kind: 'more', value: v === 'true' };
    }
    case 'keys': {
      if (plain(words[1]) !== '==') throw new ScenarioSyntaxError(lineNo, 'expect keys: expected == [K1, K2]');
      const items = bracketList(rawAfterExpect, lineNo, 'expect keys');
      return {
        kind: 'keys',
        keys: items.map((s) => {
          const ws = splitWords(s, lineNo);
          if (ws.length !== 1) throw new ScenarioSyntaxError(lineNo, `expect keys: expected one key per item, got ${s}`);
          return ws[0]!;
        }),
      };
    }
    case 'get': {
      const key = words[1];
      if (key === undefined) bad();
      let i = 2;
      let rev: Word | undefined;
      const p = plain(words[i]);
      if (p !== undefined && p.startsWith('--rev')) {
        if (p.startsWith('--rev=')) rev = { segments: [{ text: p.slice(6), expand: true }], raw: p.slice(6) };
        else {
          rev = words[i + 1];
          i++;
        }
        needInt(rev, lineNo, 'expect get --rev');
        i++;
      }
      const what = plain(words[i]);
      if (what === 'absent') {
        noMore(words, i + 1, lineNo, 'expect get');
        return { kind: 'get', key: key!, rev, value: undefined };
      }
      if (what !== '==' || words[i + 1] === undefined) throw new ScenarioSyntaxError(lineNo, 'expect get: expected == VALUE or absent after the key');
      noMore(words, i + 2, lineNo, 'expect get');
      return { kind: 'get', key: key!, rev, value: words[i + 1]! };
    }
    case 'watch': {
      const name = needName(words[1], lineNo, 'a watch name');
      const what = plain(words[2]);
      switch (what) {
        case 'events': {
          if (plain(words[3]) !== '==') throw new ScenarioSyntaxError(lineNo, 'expect watch NAME events: expected == [PUT KEY@REV, ...]');
          const items = bracketList(rawAfterExpect, lineNo, 'expect watch events');
          return { kind: 'watch-events', name, events: items.map((s) => parseEventPattern(s, lineNo)) };
        }
        case 'last':
          noMore(words, 5, lineNo, 'expect watch last');
          return { kind: 'watch-last', name, op: needOp(words[3], lineNo, 'expect watch last'), value: needInt(words[4], lineNo, 'expect watch last') };
        case 'canceled': {
          if (words.length === 3) return { kind: 'watch-canceled', name, compactRevision: undefined };
          if (plain(words[3]) !== 'compact_revision' || plain(words[4]) !== '==') throw new ScenarioSyntaxError(lineNo, 'expect watch NAME canceled: expected nothing more, or compact_revision == N');
          noMore(words, 6, lineNo, 'expect watch canceled');
          return { kind: 'watch-canceled', name, compactRevision: needInt(words[5], lineNo, 'expect watch canceled compact_revision') };
        }
        case 'open':
          noMore(words, 3, lineNo, 'expect watch open');
          return { kind: 'watch-open', name };
        case 'progress': {
          if (plain(words[3]) === 'none') {
            noMore(words, 4, lineNo, 'expect watch progress');
            return { kind: 'watch-progress', name, value: undefined };
          }
          if (plain(words[3]) !== '==') throw new ScenarioSyntaxError(lineNo, 'expect watch NAME progress: expected == N or none');
          noMore(words, 5, lineNo, 'expect watch progress');
          return { kind: 'watch-progress', name, value: needInt(words[4], lineNo, 'expect watch progress') };
        }
        default:
          throw new ScenarioSyntaxError(lineNo, `expect watch ${name}: expected events, last, canceled, open or progress, got ${words[2]?.raw ?? 'nothing'}`);
      }
    }
    case 'lease': {
      const id = words[1];
      if (id === undefined) bad();
      const what = plain(words[2]);
      if (what === 'alive' || what === 'expired') {
        noMore(words, 3, lineNo, 'expect lease');
        return { kind: 'lease-state', id: id!, state: what };
      }
      if (what === 'ttl') {
        noMore(words, 5, lineNo, 'expect lease ttl');
        return { kind: 'lease-ttl', id: id!, op: needOp(words[3], lineNo, 'expect lease ttl'), value: needInt(words[4], lineNo, 'expect lease ttl') };
      }
      throw new ScenarioSyntaxError(lineNo, 'expect lease ID: expected ttl OP N, alive or expired');
    }
    default:
      return bad();
  }
}

// ---------------------------------------------------------------------------------------------------
// The script

/** Parses a whole scenario; throws ScenarioSyntaxError at the first malformed line. */
export function parseScenario(text: string): ParsedScenario {
  const lines = text.split('\n').map((l) => l.replace(/\r$/, ''));
  const steps: Step[] = [];
  const options = new Map<string, string>();
  const variants: { name: string; options: Map<string, string>; line: number }[] = [];
  const preamble: string[] = [];
  const variantNames = new Set<string>();
  const guards: { line: number; name: string }[] = [];
  /** The description: the `##` lines at the top, up to the first blank line. */
  let inPreamble = true;

  const parseSetting = (w: Word, lineNo: number): [string, string] => {
    const p = plain(w);
    const eq = p?.indexOf('=') ?? -1;
    if (p === undefined || eq <= 0) throw new ScenarioSyntaxError(lineNo, `expected KEY=VALUE, got ${w.raw}`);
    const k = p.slice(0, eq);
    const v = p.slice(eq + 1);
    const check = OPTION_KEYS[k];
    if (check === undefined) throw new ScenarioSyntaxError(lineNo, `unknown option ${k}; known: ${Object.keys(OPTION_KEYS).join(', ')}`);
    if (!check(v)) throw new ScenarioSyntaxError(lineNo, `option ${k}: invalid value ${v}`);
    return [k, v];
  };

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
    }
    const verb = plain(words[0]);
    const args = words.slice(1);
    const push = (s: StepBody): void => {
      steps.push({ line: lineNo, variant, text: trimmed, ...s } as Step);
    };
    const beforeFirst = (what: string): void => {
      if (steps.length > 0) throw new ScenarioSyntaxError(lineNo, `${what} must come before the first step`);
      if (variant !== undefined) throw new ScenarioSyntaxError(lineNo, `${what} cannot be limited to a variant; use variant NAME KEY=VALUE`);
    };

    if (verb === undefined) throw new ScenarioSyntaxError(lineNo, `expected a command, got ${words[0]!.raw}`);

    // Settings
    if (verb === 'option') {
      beforeFirst('option');
      if (args.length === 0) throw new ScenarioSyntaxError(lineNo, 'option expects KEY=VALUE');
      for (const a of args) {
        const [k, v] = parseSetting(a, lineNo);
        options.set(k, v);
      }
      continue;
    }
    if (verb === 'etcd-version') {
      beforeFirst('etcd-version');
      const v = plain(args[0]);
      if (args.length !== 1 || v === undefined || !OPTION_KEYS['etcd-version']!(v)) throw new ScenarioSyntaxError(lineNo, 'etcd-version expects 3.4, 3.5, 3.6 or 3.7');
      options.set('etcd-version', v);
      continue;
    }
    if (verb === 'variant') {
      beforeFirst('variant');
      const name = needName(args[0], lineNo, 'a variant name');
      if (variantNames.has(name)) throw new ScenarioSyntaxError(lineNo, `variant ${name} is declared twice`);
      variantNames.add(name);
      const vo = new Map<string, string>();
      for (const a of args.slice(1)) {
        const [k, v] = parseSetting(a, lineNo);
        vo.set(k, v);
      }
      variants.push({ name, options: vo, line: lineNo });
      continue;
    }

    // Captures: NAME = revision | lease | next_key | EXPR
    if (words.length >= 3 && plain(words[1]) === '=' && VAR_RE.test(verb)) {
      const what = plain(words[2]);
      if (words.length === 3 && (what === 'revision' || what === 'lease' || what === 'next_key')) {
        push({ type: 'directive', directive: { kind: 'capture', name: verb, what, expr: undefined } });
      } else if (words.length === 3) {
        push({ type: 'directive', directive: { kind: 'capture', name: verb, what: 'expr', expr: words[2]! } });
      } else {
        throw new ScenarioSyntaxError(lineNo, `a capture is NAME = revision | lease | next_key | VALUE (quote a value with spaces, or use $((...)))`);
      }
      continue;
    }

    switch (verb) {
      case 'expect': {
        const after = rawRest.slice(rawRest.indexOf('expect') + 'expect'.length);
        push({ type: 'expect', expect: parseExpect(args, after, lineNo) });
        continue;
      }
      case 'advance': {
        const d = plain(args[0]);
        const ms = d === undefined ? undefined : parseDuration(d);
        if (args.length !== 1 || ms === undefined) throw new ScenarioSyntaxError(lineNo, `advance expects a duration like 500ms, 2s or 1m, got ${args[0]?.raw ?? 'nothing'}`);
        push({ type: 'directive', directive: { kind: 'advance', ms, raw: d! } });
        continue;
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
        push({ type: 'directive', directive: { kind: verb, name } });
        continue;
      }
      case 'resume': {
        const name = needName(args[0], lineNo, 'a watch name');
        const f = parseFlags(args.slice(1), { bool: [], value: ['--rev'] }, lineNo, 'resume NAME --rev=N');
        const rev = intFlag(f, '--rev', lineNo);
        if (rev === undefined || f.positional.length > 0) throw new ScenarioSyntaxError(lineNo, 'resume expects a watch name and --rev=N (usage: resume NAME --rev=N)');
        push({ type: 'directive', directive: { kind: 'resume', name, rev } });
        continue;
      }
      case 'repeat': {
        const count = args[0];
        if (count === undefined || !couldBeInt(count) || args.length < 2) throw new ScenarioSyntaxError(lineNo, 'repeat expects a count and a command, e.g. repeat 20 put /k ${i}');
        const inner = plain(args[1]);
        if (inner !== 'put' && inner !== 'del' && inner !== 'get') throw new ScenarioSyntaxError(lineNo, 'repeat supports put, get and del');
        const body = parseCommand(inner, args.slice(2), lineNo);
        push({ type: 'directive', directive: { kind: 'repeat', count, body, raw: trimmed } });
        continue;
      }
      case 'txn': {
        if (args.length !== 0) throw new ScenarioSyntaxError(lineNo, 'txn takes no arguments: write compares, a blank line, success ops, a blank line, failure ops, then end');
        const compares: TxnCompare[] = [];
        const success: TxnOp[] = [];
        const failure: TxnOp[] = [];
        const body: { text: string; words: Word[] }[] = [];
        let section = 0;
        let ended = false;
        for (idx++; idx < lines.length; idx++) {
          const bl = lines[idx]!;
          const bt = bl.trim();
          const bNo = idx + 1;
          if (bt === 'end') {
            ended = true;
            break;
          }
          if (bt.startsWith('#')) continue;
          if (bt === '') {
            section++;
            if (section > 2) throw new ScenarioSyntaxError(bNo, 'txn: expected end after the failure ops (a txn has three sections: compares, success ops, failure ops)');
            body.push({ text: '', words: [] });
            continue;
          }
          if (section === 0) {
            compares.push(parseCompare(bt, bNo));
            body.push({ text: bt, words: [] });
          } else {
            const ws = splitWords(bl, bNo);
            const v = plain(ws[0]);
            if (v !== 'put' && v !== 'get' && v !== 'del') throw new ScenarioSyntaxError(bNo, `txn: expected a put, get or del op, got ${ws[0]?.raw ?? bt}`);
            (section === 1 ? success : failure).push(parseKvCommand(v, ws.slice(1), bNo));
            body.push({ text: bt, words: ws });
          }
        }
        if (!ended) throw new ScenarioSyntaxError(lineNo, 'txn: missing end (the block is: compares, blank line, success ops, blank line, failure ops, end)');
        while (body.length > 0 && body[body.length - 1]!.text === '') body.pop();
        push({ type: 'command', command: { kind: 'txn', compares, success, failure, body } });
        continue;
      }
      default:
        push({ type: 'command', command: parseCommand(verb, args, lineNo) });
    }
  }
  for (const g of guards) {
    if (!variantNames.has(g.name)) throw new ScenarioSyntaxError(g.line, `unknown variant [${g.name}]; declare it first with: variant ${g.name} KEY=VALUE`);
  }
  return { settings: { options, variants, preamble }, steps };
}
