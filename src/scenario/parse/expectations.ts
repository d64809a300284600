/**
 * Expectations: `expect ...` lines that check what etcd answered or delivered: the last response (ok or
 * error, its header revision, its output as etcdctl printed it, a get's keys, more and count), a key's
 * value at a revision, a named watch's events, last revision, cancelation (with compact_revision),
 * progress notifications, and a lease's remaining TTL. A failed expectation stops the run at its line.
 */
import { needName, noMore } from './arguments.js';
import { parseMemberRef, type MemberIndex } from './cluster_directives.js';
import { couldBeInt, plain, splitWords, unquotedWord, type Word } from './lexer.js';
import { ScenarioSyntaxError } from './syntax_error.js';

/** The comparisons of `expect revision OP N` and the like. */
export type CompareOp = '==' | '!=' | '<' | '<=' | '>' | '>=';

/** `PUT KEY@REV` / `DELETE KEY@REV` in `expect watch NAME events == [...]`. */
export interface EventPattern {
  readonly type: 'PUT' | 'DELETE';
  readonly key: Word;
  readonly rev: Word;
}

/** Every expectation a scenario can state. */
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
  | { readonly kind: 'watch-count'; readonly name: string; readonly op: CompareOp; readonly value: Word }
  | { readonly kind: 'watch-responses'; readonly name: string; readonly op: CompareOp; readonly value: Word }
  | { readonly kind: 'watch-canceled'; readonly name: string; readonly compactRevision: Word | undefined }
  | { readonly kind: 'watch-open'; readonly name: string }
  | { readonly kind: 'watch-progress'; readonly name: string; readonly value: Word | undefined }
  | { readonly kind: 'lease-ttl'; readonly id: Word; readonly op: CompareOp; readonly value: Word }
  | { readonly kind: 'lease-state'; readonly id: Word; readonly state: 'alive' | 'expired' }
  /** On a cluster: which member leads now (undefined: none), as `etcdctl endpoint status` shows it. */
  | { readonly kind: 'leader'; readonly member: MemberIndex | undefined }
  /** On a cluster: a member's store revision, raft term or applied index (what Status reports of it). */
  | { readonly kind: 'member'; readonly member: MemberIndex; readonly what: MemberFigure; readonly op: CompareOp; readonly value: Word }
  | { readonly kind: 'member-role'; readonly member: MemberIndex; readonly role: 'leader' | 'follower' | 'candidate' };

/** What `expect member M WHAT OP N` compares. */
export type MemberFigure = 'revision' | 'applied-index' | 'raft-index' | 'term';

const COMPARE_OPS: readonly CompareOp[] = ['==', '!=', '<=', '>=', '<', '>'];

/** A comparison operator word. */
function needOp(w: Word | undefined, lineNo: number, ctx: string): CompareOp {
  const p = plain(w);
  if (p !== undefined && (COMPARE_OPS as readonly string[]).includes(p)) return p as CompareOp;
  throw new ScenarioSyntaxError(lineNo, `${ctx}: expected one of ${COMPARE_OPS.join(' ')}, got ${w === undefined ? 'nothing' : w.raw}`);
}

/** A word that can be an integer once expanded. */
function needInt(w: Word | undefined, lineNo: number, ctx: string): Word {
  if (w === undefined || !couldBeInt(w)) throw new ScenarioSyntaxError(lineNo, `${ctx}: expected an integer, got ${w === undefined ? 'nothing' : w.raw}`);
  return w;
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
  'expect watch NAME count OP N',
  'expect watch NAME responses OP N',
  'expect watch NAME canceled [compact_revision == N]',
  'expect watch NAME open',
  'expect watch NAME progress == N | expect watch NAME progress none',
  'expect lease ID ttl OP N | expect lease ID alive | expect lease ID expired',
  'expect leader MEMBER | expect leader none   (members N)',
  'expect member MEMBER revision|applied-index|raft-index|term OP N | expect member MEMBER role leader|follower|candidate   (members N)',
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

/** `PUT KEY@REV` or `DELETE KEY@REV`: one event a watch is expected to have received. */
function parseEventPattern(item: string, lineNo: number): EventPattern {
  const at = item.lastIndexOf('@');
  const m = at < 0 ? null : /^(PUT|DELETE)\s+(.+)$/.exec(item.slice(0, at))?.concat(item.slice(at + 1).trim()) ?? null;
  if (m === null) throw new ScenarioSyntaxError(lineNo, `expected an event like PUT /k@3 or DELETE /k@${'${R}'}, got ${item || '(empty)'}`);
  const key = splitWords(m[2]!, lineNo);
  const rev = splitWords(m[3]!, lineNo);
  if (key.length !== 1 || rev.length !== 1 || !couldBeInt(rev[0]!)) throw new ScenarioSyntaxError(lineNo, `expected an event like PUT /k@3, got ${item}`);
  return { type: m[1] as 'PUT' | 'DELETE', key: key[0]!, rev: rev[0]! };
}

/** An `expect` line as a parser of one kind reads it: its words after `expect`, the rest of the line as written. */
interface ExpectLine {
  readonly words: readonly Word[];
  /** The rest of the line as written, for bracketed lists. */
  readonly raw: string;
  readonly lineNo: number;
  /** The cluster's size (`members N`), undefined on a single member. */
  readonly members: number | undefined;
}

function malformed(lineNo: number): never {
  throw new ScenarioSyntaxError(lineNo, `malformed expectation; expected one of:\n  ${EXPECT_FORMS.join('\n  ')}`);
}

/** `expect OP N` after a subject of one word (`revision`, `count`). */
const compared =
  (kind: 'revision' | 'count') =>
  ({ words, lineNo }: ExpectLine): Expectation => {
    noMore(words, 3, lineNo, `expect ${kind}`);
    return { kind, op: needOp(words[1], lineNo, `expect ${kind}`), value: needInt(words[2], lineNo, `expect ${kind}`) };
  };

function parseError({ words, lineNo }: ExpectLine): Expectation {
  const withOp = words[1] !== undefined && plain(words[1]) === '==';
  noMore(words, withOp ? 3 : 2, lineNo, 'expect error');
  return { kind: 'error', message: withOp ? words[2] : words[1] };
}

function parseOutput({ words, lineNo }: ExpectLine): Expectation {
  const op = plain(words[1]);
  if ((op !== '==' && op !== 'contains') || words[2] === undefined) throw new ScenarioSyntaxError(lineNo, 'expect output: expected == "TEXT" or contains "TEXT"');
  noMore(words, 3, lineNo, 'expect output');
  return { kind: 'output', op, text: words[2] };
}

function parseMore({ words, lineNo }: ExpectLine): Expectation {
  const v = plain(words[2]);
  if (plain(words[1]) !== '==' || (v !== 'true' && v !== 'false')) throw new ScenarioSyntaxError(lineNo, 'expect more: expected == true or == false');
  noMore(words, 3, lineNo, 'expect more');
  return { kind: 'more', value: v === 'true' };
}

function parseKeys({ words, raw, lineNo }: ExpectLine): Expectation {
  if (plain(words[1]) !== '==') throw new ScenarioSyntaxError(lineNo, 'expect keys: expected == [K1, K2]');
  const keys = bracketList(raw, lineNo, 'expect keys').map((item) => {
    const ws = splitWords(item, lineNo);
    if (ws.length !== 1) throw new ScenarioSyntaxError(lineNo, `expect keys: expected one key per item, got ${item}`);
    return ws[0]!;
  });
  return { kind: 'keys', keys };
}

function parseGet({ words, lineNo }: ExpectLine): Expectation {
  const key = words[1] ?? malformed(lineNo);
  let i = 2;
  let rev: Word | undefined;
  const p = plain(words[i]);
  if (p !== undefined && p.startsWith('--rev')) {
    if (p.startsWith('--rev=')) rev = unquotedWord(p.slice(6));
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
    return { kind: 'get', key, rev, value: undefined };
  }
  if (what !== '==' || words[i + 1] === undefined) throw new ScenarioSyntaxError(lineNo, 'expect get: expected == VALUE or absent after the key');
  noMore(words, i + 2, lineNo, 'expect get');
  return { kind: 'get', key, rev, value: words[i + 1]! };
}

/** `expect watch NAME WHAT OP N` (`count`, `responses`, `last`). */
const watchCompared =
  (what: 'count' | 'responses' | 'last') =>
  ({ words, lineNo }: ExpectLine, name: string): Expectation => {
    noMore(words, 5, lineNo, `expect watch ${what}`);
    return { kind: `watch-${what}`, name, op: needOp(words[3], lineNo, `expect watch ${what}`), value: needInt(words[4], lineNo, `expect watch ${what}`) };
  };

/** `expect watch NAME ...`, by the word after the name. */
const WATCH_PARSERS: ReadonlyMap<string, (l: ExpectLine, name: string) => Expectation> = new Map([
  [
    'events',
    ({ words, raw, lineNo }: ExpectLine, name: string): Expectation => {
      if (plain(words[3]) !== '==') throw new ScenarioSyntaxError(lineNo, 'expect watch NAME events: expected == [PUT KEY@REV, ...]');
      return { kind: 'watch-events', name, events: bracketList(raw, lineNo, 'expect watch events').map((item) => parseEventPattern(item, lineNo)) };
    },
  ],
  ['count', watchCompared('count')],
  ['responses', watchCompared('responses')],
  ['last', watchCompared('last')],
  [
    'canceled',
    ({ words, lineNo }: ExpectLine, name: string): Expectation => {
      if (words.length === 3) return { kind: 'watch-canceled', name, compactRevision: undefined };
      if (plain(words[3]) !== 'compact_revision' || plain(words[4]) !== '==') throw new ScenarioSyntaxError(lineNo, 'expect watch NAME canceled: expected nothing more, or compact_revision == N');
      noMore(words, 6, lineNo, 'expect watch canceled');
      return { kind: 'watch-canceled', name, compactRevision: needInt(words[5], lineNo, 'expect watch canceled compact_revision') };
    },
  ],
  [
    'open',
    ({ words, lineNo }: ExpectLine, name: string): Expectation => {
      noMore(words, 3, lineNo, 'expect watch open');
      return { kind: 'watch-open', name };
    },
  ],
  [
    'progress',
    ({ words, lineNo }: ExpectLine, name: string): Expectation => {
      if (plain(words[3]) === 'none') {
        noMore(words, 4, lineNo, 'expect watch progress');
        return { kind: 'watch-progress', name, value: undefined };
      }
      if (plain(words[3]) !== '==') throw new ScenarioSyntaxError(lineNo, 'expect watch NAME progress: expected == N or none');
      noMore(words, 5, lineNo, 'expect watch progress');
      return { kind: 'watch-progress', name, value: needInt(words[4], lineNo, 'expect watch progress') };
    },
  ],
]);

function parseWatch(l: ExpectLine): Expectation {
  const name = needName(l.words[1], l.lineNo, 'a watch name');
  const parse = WATCH_PARSERS.get(plain(l.words[2]) ?? '');
  if (parse === undefined) throw new ScenarioSyntaxError(l.lineNo, `expect watch ${name}: expected events, count, last, canceled, open or progress, got ${l.words[2]?.raw ?? 'nothing'}`);
  return parse(l, name);
}

function parseLease({ words, lineNo }: ExpectLine): Expectation {
  const id = words[1] ?? malformed(lineNo);
  const what = plain(words[2]);
  if (what === 'alive' || what === 'expired') {
    noMore(words, 3, lineNo, 'expect lease');
    return { kind: 'lease-state', id, state: what };
  }
  if (what === 'ttl') {
    noMore(words, 5, lineNo, 'expect lease ttl');
    return { kind: 'lease-ttl', id, op: needOp(words[3], lineNo, 'expect lease ttl'), value: needInt(words[4], lineNo, 'expect lease ttl') };
  }
  throw new ScenarioSyntaxError(lineNo, 'expect lease ID: expected ttl OP N, alive or expired');
}

/** The cluster's size, or the error of an expectation about members on a single member. */
function clusterSize({ words, lineNo, members }: ExpectLine): number {
  if (members === undefined) throw new ScenarioSyntaxError(lineNo, `expect ${plain(words[0])} is about a cluster's members: write members 3 before the first step`);
  return members;
}

function parseLeader(l: ExpectLine): Expectation {
  const members = clusterSize(l);
  noMore(l.words, 2, l.lineNo, 'expect leader');
  if (plain(l.words[1]) === 'none') return { kind: 'leader', member: undefined };
  return { kind: 'leader', member: parseMemberRef(l.words[1], members, l.lineNo, 'expect leader') };
}

function parseMember(l: ExpectLine): Expectation {
  const { words, lineNo } = l;
  const member = parseMemberRef(words[1], clusterSize(l), lineNo, 'expect member');
  const what = plain(words[2]);
  if (what === 'role') {
    const role = plain(words[3]);
    noMore(words, 4, lineNo, 'expect member role');
    if (role !== 'leader' && role !== 'follower' && role !== 'candidate') throw new ScenarioSyntaxError(lineNo, `expect member ${words[1]!.raw} role: expected leader, follower or candidate, got ${words[3]?.raw ?? 'nothing'}`);
    return { kind: 'member-role', member, role };
  }
  if (what !== 'revision' && what !== 'applied-index' && what !== 'raft-index' && what !== 'term') {
    throw new ScenarioSyntaxError(lineNo, `expect member ${words[1]!.raw}: expected revision, applied-index, raft-index, term or role, got ${words[2]?.raw ?? 'nothing'}`);
  }
  noMore(words, 5, lineNo, `expect member ${what}`);
  return { kind: 'member', member, what, op: needOp(words[3], lineNo, `expect member ${what}`), value: needInt(words[4], lineNo, `expect member ${what}`) };
}

/** The parser of each expectation, by the word after `expect`. */
const EXPECT_PARSERS: ReadonlyMap<string, (l: ExpectLine) => Expectation> = new Map([
  [
    'ok',
    ({ words, lineNo }: ExpectLine): Expectation => {
      noMore(words, 1, lineNo, 'expect ok');
      return { kind: 'ok' };
    },
  ],
  ['error', parseError],
  ['revision', compared('revision')],
  ['count', compared('count')],
  ['output', parseOutput],
  ['more', parseMore],
  ['keys', parseKeys],
  ['get', parseGet],
  ['watch', parseWatch],
  ['lease', parseLease],
  ['leader', parseLeader],
  ['member', parseMember],
]);

/** The words after `expect` (`rawAfterExpect`: the rest of the line as written, for bracketed lists). */
export function parseExpect(words: readonly Word[], rawAfterExpect: string, lineNo: number, members?: number): Expectation {
  const parse = EXPECT_PARSERS.get(plain(words[0]) ?? '');
  if (parse === undefined) return malformed(lineNo);
  return parse({ words, raw: rawAfterExpect, lineNo, members });
}
