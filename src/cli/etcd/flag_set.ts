/**
 * etcd's command line as Go's flag package reads it (etcd 3.4–3.7 all use it): `-flag` or `--flag`, a value
 * after `=` or as the next word, a bool set by its bare name, the last of repeated flags winning, parsing
 * stopping at the first word that is no flag (etcd then refuses it: "'x' is not a valid flag"). Then etcd's
 * `ETCD_*` environment variables fill the flags the command line left unset (pkg/flags.SetFlagsFromEnv): one
 * that names a flag also given on the command line stops etcd, one that names no flag is warned about.
 */
import { FlagValueError, parseEtcdUrl, parseGoDuration, parseGoInt, parseGoUint } from '../go_flags.js';
import type { EtcdFlag, FlagKind } from './flag_table.js';

/** What ends the parse: `exit` 2 (Go's usage errors, usage printed), 1 (etcd's checks), 0 (--help). */
export class EtcdFlagError extends Error {
  constructor(
    message: string,
    readonly exitCode: 0 | 1 | 2,
    /** The package etcd logs it from (capnslog), when not etcdmain. */
    readonly pkg: string = 'etcdmain',
  ) {
    super(message);
  }
}

/** The parsed flags: each value as given (checked), and which came from the command line. */
export interface ParsedFlags {
  readonly values: Map<string, string>;
  readonly fromCommandLine: ReadonlySet<string>;
  /** What etcd logs about the environment (used or unrecognized variables). */
  readonly notes: readonly { level: 'info' | 'warn'; text: string }[];
}

/** strconv.ParseBool's words. */
const TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/** Checks `value` as the flag's Set would; throws a FlagValueError carrying Go's reason. */
export function checkFlagValue(kind: FlagKind, value: string): void {
  if (typeof kind === 'object') {
    if (!kind.oneOf.includes(value)) throw new FlagValueError('invalid value');
    return;
  }
  switch (kind) {
    case 'bool':
      if (!TRUE.has(value) && !FALSE.has(value)) throw new FlagValueError('parse error');
      return;
    case 'uint':
      parseGoUint(value);
      return;
    case 'int':
      parseGoInt(value);
      return;
    case 'uint32': {
      // etcd's own flag type: strconv.ParseUint(s, 0, 32), its error as it prints.
      let v: bigint;
      try {
        v = parseGoUint(value);
      } catch {
        throw new FlagValueError(`strconv.ParseUint: parsing ${JSON.stringify(value)}: invalid syntax`);
      }
      if (v > 0xffffffffn) throw new FlagValueError(`strconv.ParseUint: parsing ${JSON.stringify(value)}: value out of range`);
      return;
    }
    case 'duration':
      parseGoDuration(value);
      return;
    case 'float':
      if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(value)) throw new FlagValueError('parse error');
      return;
    case 'urls':
      for (const u of value.split(',')) parseEtcdUrl(u);
      return;
    case 'string':
    case 'strings':
      return;
  }
}

/** A bool flag's value as true/false. */
export function boolValue(v: string | undefined): boolean {
  return v !== undefined && TRUE.has(v);
}

/** etcd's FlagToEnv: ETCD_ and the name upper-cased, dashes as underscores. */
export function envName(flag: string): string {
  return `ETCD_${flag.toUpperCase().replace(/-/g, '_')}`;
}

/**
 * Reads `argv` as Go's flag.FlagSet.Parse does, then the environment as etcd's SetFlagsFromEnv does (unless
 * `skipEnv`: with a config file, etcd reads neither). Throws an EtcdFlagError in the words etcd prints.
 */
export function parseEtcdCommandLine(argv: readonly string[], known: ReadonlyMap<string, EtcdFlag>): ParsedFlags {
  const values = new Map<string, string>();
  const fromCommandLine = new Set<string>();
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg.length < 2 || arg[0] !== '-') break;
    let name = arg.slice(1);
    if (name[0] === '-') {
      name = name.slice(1);
      if (name === '') {
        i++;
        break;
      }
    }
    if (name === '' || name[0] === '-' || name[0] === '=') throw new EtcdFlagError(`bad flag syntax: ${arg}`, 2);
    const eq = name.indexOf('=');
    const value = eq < 0 ? undefined : name.slice(eq + 1);
    if (eq >= 0) name = name.slice(0, eq);
    const flag = known.get(name);
    if (flag === undefined) {
      if (name === 'help' || name === 'h') throw new EtcdFlagError('', 0);
      throw new EtcdFlagError(`flag provided but not defined: -${name}`, 2);
    }
    let v: string;
    if (flag.kind === 'bool') {
      v = value ?? 'true';
      if (!TRUE.has(v) && !FALSE.has(v)) throw new EtcdFlagError(`invalid boolean value ${JSON.stringify(v)} for -${name}: parse error`, 2);
    } else {
      if (value !== undefined) v = value;
      else if (i + 1 < argv.length) v = argv[++i]!;
      else throw new EtcdFlagError(`flag needs an argument: -${name}`, 2);
      try {
        checkFlagValue(flag.kind, v);
      } catch (err) {
        if (err instanceof FlagValueError) throw new EtcdFlagError(`invalid value ${JSON.stringify(v)} for flag -${name}: ${err.reason}`, 2);
        throw err;
      }
    }
    values.set(name, v);
    fromCommandLine.add(name);
  }
  if (i < argv.length) throw new EtcdFlagError(`'${argv[i]!}' is not a valid flag`, 1);
  return { values, fromCommandLine, notes: [] };
}

/** etcd's SetFlagsFromEnv over the flags the command line left unset; throws as etcd stops. */
export function applyEnvironment(parsed: ParsedFlags, known: ReadonlyMap<string, EtcdFlag>, env: Readonly<Record<string, string | undefined>>): ParsedFlags {
  const values = new Map(parsed.values);
  const notes: Array<{ level: 'info' | 'warn'; text: string }> = [];
  const used = new Set<string>();
  for (const flag of known.values()) {
    const key = envName(flag.name);
    if (parsed.fromCommandLine.has(flag.name)) continue;
    const v = env[key];
    if (v === undefined || v === '') continue;
    used.add(key);
    try {
      if (flag.kind === 'bool') {
        if (!TRUE.has(v) && !FALSE.has(v)) throw new FlagValueError(`strconv.ParseBool: parsing ${JSON.stringify(v)}: invalid syntax`);
      } else checkFlagValue(flag.kind, v);
    } catch (err) {
      if (err instanceof FlagValueError) throw new EtcdFlagError(`error verifying flags, invalid value ${JSON.stringify(v)} for ${key}: ${err.reason}. See 'etcd --help'.`, 1);
      throw err;
    }
    values.set(flag.name, v);
    notes.push({ level: 'info', text: `recognized and used environment variable ${key}=${v}` });
  }
  const onCommandLine = new Set([...parsed.fromCommandLine].map(envName));
  for (const [key, v] of Object.entries(env)) {
    if (v === undefined || used.has(key)) continue;
    if (onCommandLine.has(key)) {
      throw new EtcdFlagError(`conflicting environment variable ${JSON.stringify(key)} is shadowed by corresponding command-line flag (either unset environment variable or disable flag)`, 1, 'pkg/flags');
    }
    if (key.startsWith('ETCD_')) notes.push({ level: 'warn', text: `unrecognized environment variable ${key}=${v}` });
  }
  return { values, fromCommandLine: parsed.fromCommandLine, notes };
}
