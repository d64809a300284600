/**
 * A scenario on a simulated cluster (`members N` before the first step): which member etcdctl talks to
 * (`use M`, or etcdctl's own `--endpoints=M` on a command) and the fault levers of docs/cluster.md as
 * directives — what a lab does to the members from outside, as SIGSTOP, iptables, SIGKILL or
 * `etcdctl move-leader` would on a real cluster. A member is named as etcd names a cluster's members by
 * default, `infra1` .. `infraN` (etcd's Procfile), or by its client address `127.0.0.1:2379`,
 * `127.0.0.1:22379`, `127.0.0.1:32379`, ... (the Procfile's ports, as etcdctl's `--endpoints` takes them).
 */
import { parseDuration } from './directives.js';
import { plain, type Word } from './lexer.js';
import { ScenarioSyntaxError } from './syntax_error.js';

/** A member by its index (0-based), checked against the cluster's size when the script is read. */
export type MemberIndex = number;

/** Every cluster directive. */
export type ClusterDirective =
  | { readonly kind: 'use'; readonly member: MemberIndex }
  | { readonly kind: 'pause' | 'resume' | 'isolate' | 'crash' | 'restart' | 'move-leader' | 'install-snapshot' | 'drop-link' | 'restore-link'; readonly member: MemberIndex }
  | { readonly kind: 'elect'; readonly member: MemberIndex | undefined }
  | { readonly kind: 'heal' }
  | { readonly kind: 'partition'; readonly groups: readonly (readonly MemberIndex[])[] }
  | { readonly kind: 'lag' | 'delay-link'; readonly member: MemberIndex; readonly ms: number; readonly raw: string }
  | { readonly kind: 'compact-log'; readonly keep: number };

/** The verbs of ClusterDirective, with their usage. */
export const CLUSTER_VERBS: Readonly<Record<ClusterDirective['kind'], string>> = {
  use: 'use MEMBER',
  pause: 'pause MEMBER',
  resume: 'resume MEMBER',
  isolate: 'isolate MEMBER',
  crash: 'crash MEMBER',
  restart: 'restart MEMBER',
  'move-leader': 'move-leader MEMBER',
  'install-snapshot': 'install-snapshot MEMBER',
  'drop-link': 'drop-link MEMBER',
  'restore-link': 'restore-link MEMBER',
  elect: 'elect [MEMBER]',
  heal: 'heal',
  partition: 'partition MEMBER... | MEMBER...',
  lag: 'lag MEMBER DURATION',
  'delay-link': 'delay-link MEMBER DURATION',
  'compact-log': 'compact-log [KEEP]',
};

/** The client port of member i in etcd's Procfile (2379, 22379, 32379, ...), as the cluster model assigns it. */
export function procfileClientPort(i: MemberIndex): number {
  return i === 0 ? 2379 : 10000 * (i + 1) + 2379;
}

/** `infraN` or `127.0.0.1:PORT` → the member's index; a syntax error naming the members otherwise. */
export function parseMemberRef(w: Word | undefined, members: number, lineNo: number, ctx: string): MemberIndex {
  const p = plain(w);
  const known = Array.from({ length: members }, (_, i) => `infra${i + 1}`);
  const bad = (): never => {
    throw new ScenarioSyntaxError(lineNo, `${ctx}: expected a member (${known.join(', ')}, or its address 127.0.0.1:${procfileClientPort(0)} ...), got ${w === undefined ? 'nothing' : w.raw}`);
  };
  if (p === undefined) return bad();
  const byName = /^infra([1-9]\d*)$/.exec(p);
  if (byName !== null && Number(byName[1]) <= members) return Number(byName[1]) - 1;
  const addr = /^(?:https?:\/\/)?(?:127\.0\.0\.1|localhost):(\d+)$/.exec(p);
  if (addr !== null) {
    for (let i = 0; i < members; i++) if (procfileClientPort(i) === Number(addr[1])) return i;
  }
  return bad();
}

/**
 * The cluster directive `verb ARGS`, or undefined when `verb` is none (or, for `resume` and `restart`, when the
 * line is the single-member or watch form of the same word: `resume W --rev=N`, a bare `restart`). `members`
 * is the cluster's size (undefined: the script runs on one member, and a cluster directive is an error).
 */
export function parseClusterDirective(verb: string, args: readonly Word[], lineNo: number, members: number | undefined): ClusterDirective | undefined {
  if (!(verb in CLUSTER_VERBS)) return undefined;
  const kind = verb as ClusterDirective['kind'];
  // `resume NAME --rev=N` resumes a watch; `restart` alone restarts the single member.
  if (kind === 'resume' && (args.length !== 1 || !/^infra\d+$|:\d+$/.test(plain(args[0]) ?? ''))) return undefined;
  if (kind === 'restart' && members === undefined && args.length === 0) return undefined;
  const usage = CLUSTER_VERBS[kind];
  if (members === undefined) throw new ScenarioSyntaxError(lineNo, `${verb} acts on a member of a cluster: write members 3 before the first step (usage: ${usage})`);
  const member = (i: number): MemberIndex => parseMemberRef(args[i], members, lineNo, verb);
  const count = (n: number): void => {
    if (args.length !== n) throw new ScenarioSyntaxError(lineNo, `${verb} expects ${n === 0 ? 'nothing more' : n === 1 ? 'a member' : 'a member and a duration'} (usage: ${usage})`);
  };
  switch (kind) {
    case 'heal':
      count(0);
      return { kind };
    case 'elect':
      if (args.length > 1) throw new ScenarioSyntaxError(lineNo, `elect expects at most one member (usage: ${usage})`);
      return { kind, member: args.length === 0 ? undefined : member(0) };
    case 'compact-log': {
      if (args.length > 1) throw new ScenarioSyntaxError(lineNo, `compact-log expects at most a number of entries to keep (usage: ${usage})`);
      const keep = args.length === 0 ? '0' : plain(args[0]);
      if (keep === undefined || !/^\d+$/.test(keep)) throw new ScenarioSyntaxError(lineNo, `compact-log: expected a number of entries to keep, got ${args[0]!.raw} (usage: ${usage})`);
      return { kind, keep: Number(keep) };
    }
    case 'lag':
    case 'delay-link': {
      count(2);
      const raw = plain(args[1]);
      const ms = raw === undefined ? undefined : parseDuration(raw);
      if (ms === undefined) throw new ScenarioSyntaxError(lineNo, `${verb}: expected a duration like 300ms or 2s, got ${args[1]!.raw} (usage: ${usage})`);
      return { kind, member: member(0), ms, raw: raw! };
    }
    case 'partition': {
      const groups: MemberIndex[][] = [[]];
      for (const a of args) {
        if (plain(a) === '|') groups.push([]);
        else groups[groups.length - 1]!.push(parseMemberRef(a, members, lineNo, 'partition'));
      }
      const seen = new Set<number>();
      for (const g of groups) {
        if (g.length === 0) throw new ScenarioSyntaxError(lineNo, `partition: expected members on both sides of each |, e.g. partition infra1 | infra2 infra3 (usage: ${usage})`);
        for (const i of g) {
          if (seen.has(i)) throw new ScenarioSyntaxError(lineNo, `partition: infra${i + 1} is named twice`);
          seen.add(i);
        }
      }
      if (groups.length < 2) throw new ScenarioSyntaxError(lineNo, `partition: expected at least two groups separated by | (usage: ${usage})`);
      return { kind, groups };
    }
    default:
      count(1);
      return { kind, member: member(0) };
  }
}

/**
 * etcdctl's global `--endpoints=M` on a command line: taken out of `args` (it may stand anywhere, as a
 * global flag does) and resolved to a member. One endpoint only: etcdctl spreads a command over several
 * endpoints through its balancer, which the scenario does not model.
 */
export function takeEndpoint(args: readonly Word[], members: number | undefined, lineNo: number): { args: Word[]; endpoint: MemberIndex | undefined } {
  const rest: Word[] = [];
  let endpoint: MemberIndex | undefined;
  for (let i = 0; i < args.length; i++) {
    const p = plain(args[i]);
    if (p === undefined || (p !== '--endpoints' && !p.startsWith('--endpoints='))) {
      rest.push(args[i]!);
      continue;
    }
    let value: string | undefined;
    if (p === '--endpoints') value = plain(args[++i]);
    else value = p.slice('--endpoints='.length);
    if (members === undefined) throw new ScenarioSyntaxError(lineNo, '--endpoints picks a member of a cluster: write members 3 before the first step');
    if (endpoint !== undefined) throw new ScenarioSyntaxError(lineNo, '--endpoints is given twice');
    if (value === undefined || value === '') throw new ScenarioSyntaxError(lineNo, '--endpoints needs a member, e.g. --endpoints=infra2 or --endpoints=127.0.0.1:22379');
    if (value.includes(',')) throw new ScenarioSyntaxError(lineNo, `--endpoints=${value}: one member per command (etcdctl's balancing over several endpoints is not modelled); use --endpoints=infra2`);
    endpoint = parseMemberRef({ segments: [{ text: value, expand: true }], raw: value }, members, lineNo, '--endpoints');
  }
  return { args: rest, endpoint };
}
