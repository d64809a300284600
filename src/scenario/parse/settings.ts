/**
 * The member's configuration for a run, written before the first step: `option KEY=VALUE` (etcd server
 * settings and the simulator's switches for known etcd bugs), `etcd-version V` (which etcd release's
 * behaviour to model), `variant NAME KEY=VALUE...` (run the script once per variant, each with its
 * own settings, to show a behaviour with and without a fix), `from-snapshot FILE` (the member starts
 * from an etcd snapshot file, as `etcdsim serve --from-snapshot` does) and `members N` (the run is a
 * simulated cluster of N members, as `etcdsim serve --members N`).
 */
import { needName } from './arguments.js';
import { plain, type Word } from './lexer.js';
import { ScenarioSyntaxError } from './syntax_error.js';
import { isEtcdVersion } from '../../etcd/index.js';

/** One `variant NAME KEY=VALUE...` line. */
export interface VariantSettings {
  readonly name: string;
  readonly options: ReadonlyMap<string, string>;
  readonly line: number;
}

/**
 * `from-snapshot FILE [--user=NAME:PASSWORD]`: the member starts from an etcd snapshot (a bbolt file that
 * `etcdctl snapshot save` wrote, from a real etcd or from etcdsim), FILE resolved relative to the scenario
 * file. On a member whose snapshot has auth enabled, `--user` is what etcdctl's `--user` flag would be on
 * every command of the run (the run authenticates once, and again when its token expires).
 */
export interface FromSnapshot {
  readonly path: string;
  readonly user: { readonly name: string; readonly password: string } | undefined;
  readonly line: number;
}

/** Settings that must come before the first step: `option K=V`, `etcd-version V`, `variant NAME K=V...`, `from-snapshot FILE`. */
export interface ScenarioSettings {
  readonly options: ReadonlyMap<string, string>;
  readonly variants: readonly VariantSettings[];
  readonly fromSnapshot?: FromSnapshot | undefined;
  /** `##` notes before the first step: the scenario's description. */
  readonly preamble: readonly string[];
  /** `members N`: the run is a simulated cluster of N members (docs/cluster.md); undefined: one member. */
  readonly members?: number | undefined;
}

/** The largest cluster a scenario may ask for (etcd recommends at most 7 voting members). */
export const MAX_MEMBERS = 7;

/** Options a scenario may set, with a check of the value. */
export const OPTION_KEYS: Readonly<Record<string, (v: string) => boolean>> = {
  'etcd-version': (v) => isEtcdVersion(v),
  restoreKeepsFutureMinRev: isBool,
  progressRespectsStartRev: isBool,
  restoreLoneTombstone: isBool,
  watchChanBufLen: isPosInt,
  watchSendWindowBytes: (v) => /^(0|[1-9][0-9]*)$/.test(v),
  minLeaseTTL: isPosInt,
  watchProgressNotifyIntervalMs: isPosInt,
  /** etcd's --quota-backend-bytes (0: 2 GiB; below 0: none). */
  quotaBackendBytes: (v) => /^-?(0|[1-9]\d*)$/.test(v),
  /** etcd's --pre-vote (a cluster's; default off on 3.4, on from 3.5). */
  preVote: isBool,
};

function isBool(v: string): boolean {
  return v === 'true' || v === 'false';
}
function isPosInt(v: string): boolean {
  return /^[1-9]\d*$/.test(v);
}

/** One `KEY=VALUE`, checked against OPTION_KEYS. */
function parseSetting(w: Word, lineNo: number): [string, string] {
  const p = plain(w);
  const eq = p?.indexOf('=') ?? -1;
  if (p === undefined || eq <= 0) throw new ScenarioSyntaxError(lineNo, `expected KEY=VALUE, got ${w.raw}`);
  const k = p.slice(0, eq);
  const v = p.slice(eq + 1);
  const check = OPTION_KEYS[k];
  if (check === undefined) throw new ScenarioSyntaxError(lineNo, `unknown option ${k}; known: ${Object.keys(OPTION_KEYS).join(', ')}`);
  if (!check(v)) throw new ScenarioSyntaxError(lineNo, `option ${k}: invalid value ${v}`);
  return [k, v];
}

/** Where a settings line stands: after a step already, or behind a `[variant]` guard (both refused). */
export interface SettingsLinePlace {
  readonly lineNo: number;
  readonly afterFirstStep: boolean;
  readonly variant: string | undefined;
}

/**
 * Reads an `option`, `etcd-version`, `variant`, `from-snapshot` or `members` line into `options` /
 * `variants` / `snapshot` / `cluster`; false when `verb` is not one of them.
 */
export function parseSettingsLine(
  verb: string,
  args: readonly Word[],
  at: SettingsLinePlace,
  options: Map<string, string>,
  variants: VariantSettings[],
  snapshot: { value: FromSnapshot | undefined },
  cluster: { members: number | undefined; line: number } = { members: undefined, line: 0 },
): boolean {
  const { lineNo } = at;
  const beforeFirst = (what: string): void => {
    if (at.afterFirstStep) throw new ScenarioSyntaxError(lineNo, `${what} must come before the first step`);
    if (at.variant !== undefined) throw new ScenarioSyntaxError(lineNo, `${what} cannot be limited to a variant; use variant NAME KEY=VALUE`);
  };
  switch (verb) {
    case 'option': {
      beforeFirst('option');
      if (args.length === 0) throw new ScenarioSyntaxError(lineNo, 'option expects KEY=VALUE');
      for (const a of args) {
        const [k, v] = parseSetting(a, lineNo);
        options.set(k, v);
      }
      return true;
    }
    case 'etcd-version': {
      beforeFirst('etcd-version');
      const v = plain(args[0]);
      if (args.length !== 1 || v === undefined || !OPTION_KEYS['etcd-version']!(v)) throw new ScenarioSyntaxError(lineNo, 'etcd-version expects 3.4, 3.5, 3.6 or 3.7');
      options.set('etcd-version', v);
      return true;
    }
    case 'from-snapshot': {
      beforeFirst('from-snapshot');
      if (snapshot.value !== undefined) throw new ScenarioSyntaxError(lineNo, `from-snapshot is given twice (first at line ${snapshot.value.line})`);
      // The file as written (quoted or not); no variables: the member is set up before any step runs.
      const first = args[0];
      const path = first !== undefined && !first.segments.some((sg) => sg.expand && sg.text.includes('$')) ? first.segments.map((sg) => sg.text).join('') : undefined;
      if (path === undefined || path === '' || path.startsWith('-')) throw new ScenarioSyntaxError(lineNo, 'from-snapshot expects a snapshot file (relative to the scenario file) and optionally --user=NAME:PASSWORD');
      let user: FromSnapshot['user'];
      for (const a of args.slice(1)) {
        const m = /^--user=([^:]+):(.*)$/.exec(plain(a) ?? '');
        if (m === null || user !== undefined) throw new ScenarioSyntaxError(lineNo, `from-snapshot: unexpected ${a.raw} (usage: from-snapshot FILE [--user=NAME:PASSWORD])`);
        user = { name: m[1]!, password: m[2]! };
      }
      snapshot.value = { path, user, line: lineNo };
      return true;
    }
    case 'members': {
      beforeFirst('members');
      const n = plain(args[0]);
      if (args.length !== 1 || n === undefined || !/^[1-9]\d*$/.test(n) || Number(n) > MAX_MEMBERS) {
        throw new ScenarioSyntaxError(lineNo, `members expects a number of members from 1 to ${MAX_MEMBERS}, e.g. members 3`);
      }
      if (cluster.members !== undefined) throw new ScenarioSyntaxError(lineNo, `members is given twice (first at line ${cluster.line})`);
      cluster.members = Number(n);
      cluster.line = lineNo;
      return true;
    }
    case 'variant': {
      beforeFirst('variant');
      const name = needName(args[0], lineNo, 'a variant name');
      if (variants.some((v) => v.name === name)) throw new ScenarioSyntaxError(lineNo, `variant ${name} is declared twice`);
      const vo = new Map<string, string>();
      for (const a of args.slice(1)) {
        const [k, v] = parseSetting(a, lineNo);
        vo.set(k, v);
      }
      variants.push({ name, options: vo, line: lineNo });
      return true;
    }
    default:
      return false;
  }
}
