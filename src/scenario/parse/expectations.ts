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

/** The words after `expect` (`rawAfterExpect`: the rest of the line as written, for bracketed lists). */
export function parseExpect(words: readonly Word[], rawAfterExpect: string, lineNo: number, members?: number): Expectation {
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
        case 'count':
          noMore(words, 5, lineNo, 'expect watch count');
          return { kind: 'watch-count', name, op: needOp(words[3], lineNo, 'expect watch count'), value: needInt(words[4], lineNo, 'expect watch count') };
        case 'responses':
          noMore(words, 5, lineNo, 'expect watch responses');
          return { kind: 'watch-responses', name, op: needOp(words[3], lineNo, 'expect watch responses'), value: needInt(words[4], lineNo, 'expect watch responses') };
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
          throw new ScenarioSyntaxError(lineNo, `expect watch ${name}: expected events, count, last, canceled, open or progress, got ${words[2]?.raw ?? 'nothing'}`);
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
    case 'leader':
    case 'member': {
      if (members === undefined) throw new ScenarioSyntaxError(lineNo, `expect ${subject} is about a cluster's members: write members 3 before the first step`);
      if (subject === 'leader') {
        noMore(words, 2, lineNo, 'expect leader');
        if (plain(words[1]) === 'none') return { kind: 'leader', member: undefined };
        return { kind: 'leader', member: parseMemberRef(words[1], members, lineNo, 'expect leader') };
      }
      const member = parseMemberRef(words[1], members, lineNo, 'expect member');
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
    default:
      return bad();
  }
}
