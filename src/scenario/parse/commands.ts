/**
 * The etcdctl 3.4 commands a scenario runs, as etcdctl's command line takes them: put, get, del, txn,
 * compact, watch (named, running in the background like `etcdctl watch ... &`) and lease
 * grant / keep-alive --once / revoke / timetolive. Parsing is syntactic: words that may hold variables
 * (`${R}`, `$((R - 1))`) stay words until the step runs.
 */
import { needName } from './arguments.js';
import { intFlag, jsonFlag, parseFlags, type ParsedFlags } from './flags.js';
import { couldBeInt, plain, type Word } from './lexer.js';
import { ScenarioSyntaxError } from './syntax_error.js';

/** The key range of get and del as etcdctl takes it: `KEY [RANGE_END] [--prefix] [--from-key]`. */
export interface KeyRangeArgs {
  readonly key: Word;
  readonly rangeEnd: Word | undefined;
  readonly prefix: boolean;
  readonly fromKey: boolean;
}

/** `etcdctl get`: a Range request. */
export interface GetCmd extends KeyRangeArgs {
  readonly kind: 'get';
  readonly rev: Word | undefined;
  readonly limit: Word | undefined;
  readonly keysOnly: boolean;
  readonly printValueOnly: boolean;
  readonly json: boolean;
  /** `--consistency=s`: a serializable read (the member's own state at once); default `l`, linearizable (ReadIndex). */
  readonly serializable: boolean;
}

/** `etcdctl put`: a Put request. */
export interface PutCmd {
  readonly kind: 'put';
  readonly key: Word;
  readonly value: Word;
  readonly lease: Word | undefined;
  readonly prevKv: boolean;
  readonly json: boolean;
}

/** `etcdctl del`: a DeleteRange request. */
export interface DelCmd extends KeyRangeArgs {
  readonly kind: 'del';
  readonly prevKv: boolean;
  readonly json: boolean;
}

/** put, get or del: the commands a txn branch or `repeat` may hold. */
export type KvCommand = GetCmd | PutCmd | DelCmd;

/** An op of a txn's success or failure branch. */
export type TxnOp = KvCommand;

/** One compare of etcdctl's interactive txn: `value("k") = "v"`, `mod("k") > "3"`, ... */
export interface TxnCompare {
  readonly target: 'VALUE' | 'MOD' | 'CREATE' | 'VERSION' | 'LEASE';
  readonly key: Word;
  readonly op: '=' | '!=' | '>' | '<';
  readonly operand: Word;
  readonly raw: string;
}

/** `etcdctl txn` with its interactive input: compares, success ops, failure ops (see parse/txn.ts). */
export interface TxnCmd {
  readonly kind: 'txn';
  readonly compares: readonly TxnCompare[];
  readonly success: readonly TxnOp[];
  readonly failure: readonly TxnOp[];
  /** The block's lines as written, for the transcript. */
  readonly body: readonly { readonly text: string; readonly words: readonly Word[] }[];
}

/** `etcdctl watch NAME ...`: a watch kept open, by name, while the script goes on. */
export interface WatchCmd {
  readonly kind: 'watch';
  readonly name: string;
  readonly key: Word;
  readonly rangeEnd: Word | undefined;
  readonly prefix: boolean;
  readonly rev: Word | undefined;
  readonly prevKv: boolean;
  readonly progressNotify: boolean;
  /**
   * `--fragment`: the create request asks for `fragment: true` (clientv3's `WithFragment()`; etcdctl has no
   * flag for it): a response too large for one message comes in several, and the client joins them.
   */
  readonly fragment: boolean;
  /**
   * `--stream=S`: the watch is typed into one interactive `etcdctl watch -i` session named S, so every watch
   * given the same S shares one Watch stream (etcd multiplexes them by watch ID). Without it, each watch is an
   * `etcdctl watch ... &` of its own, on its own stream.
   */
  readonly stream: string | undefined;
}

/** Every etcdctl command a scenario can run. */
export type EtcdCommand =
  | GetCmd
  | PutCmd
  | DelCmd
  | TxnCmd
  | { readonly kind: 'compact'; readonly rev: Word; readonly physical: boolean }
  | WatchCmd
  | { readonly kind: 'lease-grant'; readonly ttl: Word }
  | { readonly kind: 'lease-keep-alive'; readonly id: Word }
  | { readonly kind: 'lease-revoke'; readonly id: Word }
  | { readonly kind: 'lease-timetolive'; readonly id: Word; readonly keys: boolean }
  /** `etcdctl endpoint status [-w table]` on a cluster: each member's ID, leadership, raft term and indexes. */
  | { readonly kind: 'endpoint-status'; readonly table: boolean; readonly cluster: boolean }
  /** `etcdctl defrag`: Maintenance.Defragment, the db file rewritten to the data in use (one member). */
  | { readonly kind: 'defrag' }
  /** `etcdctl alarm list` / `etcdctl alarm disarm`: the raised alarms; every one of them taken off (one member). */
  | { readonly kind: 'alarm-list' | 'alarm-disarm' };

const USAGE = {
  put: 'put KEY VALUE [--lease=ID] [--prev-kv] [-w json]',
  get: 'get KEY [RANGE_END] [--prefix] [--from-key] [--rev=N] [--limit=N] [--keys-only] [--print-value-only] [--consistency=l|s] [-w json]',
  del: 'del KEY [RANGE_END] [--prefix] [--from-key] [--prev-kv] [-w json]',
  compact: 'compact REVISION [--physical]',
  watch: 'watch NAME KEY [RANGE_END] [--prefix] [--rev=N] [--prev-kv] [--progress-notify] [--fragment] [--stream=S]',
  lease: 'lease grant TTL | lease keep-alive ID --once | lease revoke ID | lease timetolive ID [--keys]',
  endpoint: 'endpoint status [--cluster] [-w table]',
  alarm: 'alarm list | alarm disarm',
} as const;

/** The key range arguments of get or del, their count checked. */
function keyRange(verb: 'get' | 'del', f: ParsedFlags, lineNo: number): KeyRangeArgs {
  if (f.positional.length < 1 || f.positional.length > 2) throw new ScenarioSyntaxError(lineNo, `${verb} expects a key and an optional range end (usage: ${USAGE[verb]})`);
  return { key: f.positional[0]!, rangeEnd: f.positional[1], prefix: f.bools.has('--prefix'), fromKey: f.bools.has('--from-key') };
}

/** etcdctl refuses an explicit range end together with --prefix or --from-key. */
function rangeChecked<C extends KeyRangeArgs>(verb: 'get' | 'del', c: C, lineNo: number): C {
  if ((c.prefix || c.fromKey) && c.rangeEnd !== undefined) throw new ScenarioSyntaxError(lineNo, `${verb}: a range end cannot be combined with --prefix or --from-key`);
  return c;
}

/** put, get or del (the commands a txn branch or `repeat` may hold). */
export function parseKvCommand(verb: string, args: readonly Word[], lineNo: number): KvCommand {
  switch (verb) {
    case 'put': {
      const f = parseFlags(args, { bool: ['--prev-kv'], value: ['--lease', '--write-out'] }, lineNo, USAGE.put);
      if (f.positional.length !== 2) throw new ScenarioSyntaxError(lineNo, `put expects a key and a value (usage: ${USAGE.put})`);
      return { kind: 'put', key: f.positional[0]!, value: f.positional[1]!, lease: f.values.get('--lease'), prevKv: f.bools.has('--prev-kv'), json: jsonFlag(f, lineNo) };
    }
    case 'get': {
      const f = parseFlags(args, { bool: ['--prefix', '--from-key', '--keys-only', '--print-value-only'], value: ['--rev', '--limit', '--write-out', '--consistency'] }, lineNo, USAGE.get);
      const consistency = f.values.get('--consistency');
      // etcdctl: `unknown consistency flag "x"` for anything but l and s.
      if (consistency !== undefined && plain(consistency) !== 'l' && plain(consistency) !== 's') throw new ScenarioSyntaxError(lineNo, `get: unknown consistency flag ${JSON.stringify(consistency.raw)} (l: linearizable, s: serializable)`);
      const g: GetCmd = {
        kind: 'get',
        ...keyRange('get', f, lineNo),
        rev: intFlag(f, '--rev', lineNo),
        limit: intFlag(f, '--limit', lineNo),
        keysOnly: f.bools.has('--keys-only'),
        printValueOnly: f.bools.has('--print-value-only'),
        json: jsonFlag(f, lineNo),
        serializable: consistency !== undefined && plain(consistency) === 's',
      };
      return rangeChecked('get', g, lineNo);
    }
    case 'del': {
      const f = parseFlags(args, { bool: ['--prefix', '--from-key', '--prev-kv'], value: ['--write-out'] }, lineNo, USAGE.del);
      const d: DelCmd = { kind: 'del', ...keyRange('del', f, lineNo), prevKv: f.bools.has('--prev-kv'), json: jsonFlag(f, lineNo) };
      return rangeChecked('del', d, lineNo);
    }
    default:
      throw new ScenarioSyntaxError(lineNo, `expected put, get or del, got ${verb}`);
  }
}

/** Any command but txn (whose input spans lines: parse/txn.ts). */
export function parseCommand(verb: string, args: readonly Word[], lineNo: number): EtcdCommand {
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
      const f = parseFlags(args, { bool: ['--prefix', '--prev-kv', '--progress-notify', '--fragment'], value: ['--rev', '--stream'] }, lineNo, USAGE.watch);
      const streamWord = f.values.get('--stream');
      const stream = streamWord === undefined ? undefined : needName(streamWord, lineNo, 'a stream name after --stream=');
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
        fragment: f.bools.has('--fragment'),
        stream,
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
    case 'endpoint': {
      if (plain(args[0]) !== 'status') throw new ScenarioSyntaxError(lineNo, `expected endpoint status (usage: ${USAGE.endpoint})`);
      const f = parseFlags(args.slice(1), { bool: ['--cluster'], value: ['--write-out'] }, lineNo, USAGE.endpoint);
      if (f.positional.length > 0) throw new ScenarioSyntaxError(lineNo, `endpoint status: unexpected ${f.positional[0]!.raw} (usage: ${USAGE.endpoint})`);
      const w = f.values.get('--write-out');
      if (w !== undefined && plain(w) !== 'table' && plain(w) !== 'simple') throw new ScenarioSyntaxError(lineNo, `endpoint status: -w supports simple or table, got ${w.raw}`);
      return { kind: 'endpoint-status', table: w !== undefined && plain(w) === 'table', cluster: f.bools.has('--cluster') };
    }
    case 'defrag':
      if (args.length > 0) throw new ScenarioSyntaxError(lineNo, `defrag: unexpected ${args[0]!.raw} (usage: defrag)`);
      return { kind: 'defrag' };
    case 'alarm': {
      const sub = plain(args[0]);
      if ((sub !== 'list' && sub !== 'disarm') || args.length > 1) throw new ScenarioSyntaxError(lineNo, `expected ${USAGE.alarm}`);
      return { kind: sub === 'list' ? 'alarm-list' : 'alarm-disarm' };
    }
    default:
      // A lab written for a real shell waits with sleep; here time is virtual and moves only when told to.
      if (verb === 'sleep') throw new ScenarioSyntaxError(lineNo, 'unknown command sleep: time is virtual and moves only on advance (e.g. advance 1s, advance 100ms)');
      throw new ScenarioSyntaxError(lineNo, `unknown command ${verb}`);
  }
}
