/**
 * How etcd (Go's flag package) reads the values of its flags, so `etcdsim serve` accepts and rejects
 * exactly what etcd 3.4.23 does, with etcd's words: unsigned integers as strconv.ParseUint(s, 0, 64),
 * durations as time.ParseDuration, URLs as etcd's types.NewURLs (the rule lives in src/server/urls.ts, which
 * Cluster.MemberAdd shares).
 *
 * A value etcd's flag parser rejects is a usage error there (Go's flag package prints
 * `invalid value "V" for flag -NAME: REASON` and the usage, exit 2); the functions here throw a
 * {@link FlagValueError} carrying that REASON.
 */
import { EtcdUrlError, parseEtcdUrl as parseUrl, type EtcdUrl } from '../server/urls.js';

/** A flag value that does not parse: `reason` is what Go's flag package (or etcd's URL parser) says. */
export class FlagValueError extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

const UINT64_MAX = 2n ** 64n - 1n;

/** Go's underscoreOK: underscores only between digits (or after a base prefix). */
function underscoreOK(s: string): boolean {
  let saw = '^';
  let i = 0;
  let hex = false;
  if (s.length >= 2 && s[0] === '0' && 'bBoOxX'.includes(s[1]!)) {
    i = 2;
    saw = '0';
    hex = s[1] === 'x' || s[1] === 'X';
  }
  for (; i < s.length; i++) {
    const c = s[i]!;
    if ((c >= '0' && c <= '9') || (hex && /[a-fA-F]/.test(c))) {
      saw = '0';
      continue;
    }
    if (c === '_') {
      if (saw !== '0') return false;
      saw = '_';
      continue;
    }
    if (saw === '_') return false;
    saw = '!';
  }
  return saw !== '_';
}

/**
 * A Go `uint` flag (strconv.ParseUint(s, 0, 64)): decimal, 0x / 0o / 0b prefixes, a leading 0 for
 * octal, underscores between digits; no sign. Throws "parse error" or "value out of range" as Go's flag
 * package words them.
 */
export function parseGoUint(s: string): bigint {
  if (s === '') throw new FlagValueError('parse error');
  let base = 10;
  let digits = s;
  if (s[0] === '0' && s.length > 1) {
    const p = s[1]!.toLowerCase();
    if (p === 'x') base = 16;
    else if (p === 'o') base = 8;
    else if (p === 'b') base = 2;
    else base = 8;
    digits = p === 'x' || p === 'o' || p === 'b' ? s.slice(2) : s.slice(1);
  }
  if (!underscoreOK(s)) throw new FlagValueError('parse error');
  digits = digits.replace(/_/g, '');
  if (digits === '') throw new FlagValueError('parse error');
  const valid = base === 16 ? /^[0-9a-fA-F]+$/ : base === 8 ? /^[0-7]+$/ : base === 2 ? /^[01]+$/ : /^[0-9]+$/;
  if (!valid.test(digits)) throw new FlagValueError('parse error');
  let v = 0n;
  const b = BigInt(base);
  for (const c of digits) v = v * b + BigInt(parseInt(c, 16));
  if (v > UINT64_MAX) throw new FlagValueError('value out of range');
  return v;
}

/**
 * A Go `int64` flag (strconv.ParseInt(s, 0, 64)): an optional sign, then what parseGoUint reads; the value
 * must fit an int64. Throws "parse error" or "value out of range" as Go's flag package words them.
 */
export function parseGoInt(s: string): bigint {
  const neg = s.startsWith('-');
  const magnitude = parseGoUint(neg || s.startsWith('+') ? s.slice(1) : s);
  if (magnitude > (neg ? INT64_LIMIT : INT64_LIMIT - 1n)) throw new FlagValueError('value out of range');
  return neg ? -magnitude : magnitude;
}

/** 2^63: one past int64's largest value, and the magnitude of its smallest. */
const INT64_LIMIT = 1n << 63n;

const UNIT_NS: Readonly<Record<string, number>> = { ns: 1, us: 1e3, 'µs': 1e3, 'μs': 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };
const MAX_DURATION_NS = 2 ** 63 - 1;

/**
 * A Go duration (time.ParseDuration: "10m", "1h30m", "1.5s", "500us", "-5s", "0") in milliseconds
 * (fractional below 1 ms). Throws "parse error", as Go's flag package says for any bad duration.
 */
export function parseGoDuration(s: string): number {
  let rest = s;
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    if (rest[0] === '-') sign = -1;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') throw new FlagValueError('parse error');
  let ns = 0;
  const part = /^(\d*)(?:\.(\d*))?([^\d.]+)/;
  while (rest !== '') {
    const m = part.exec(rest);
    if (m === null) throw new FlagValueError('parse error');
    const [whole, int = '', frac, unit = ''] = m;
    if (int === '' && (frac === undefined || frac === '')) throw new FlagValueError('parse error');
    const scale = UNIT_NS[unit];
    if (scale === undefined) throw new FlagValueError('parse error');
    ns += Number(`${int === '' ? '0' : int}.${frac ?? ''}0`) * scale;
    if (ns > MAX_DURATION_NS) throw new FlagValueError('parse error');
    rest = rest.slice(whole.length);
  }
  return (sign * ns) / 1e6;
}

/** One URL of an etcd URL-list flag, as etcd's types.NewURLs accepts it (the rule lives in the server layer). */
export type { EtcdUrl } from '../server/urls.js';

/** etcd's types.NewURLs for one element of a URL-list flag; throws a FlagValueError with etcd's reason. */
export function parseEtcdUrl(input: string): EtcdUrl {
  try {
    return parseUrl(input);
  } catch (err) {
    if (err instanceof EtcdUrlError) throw new FlagValueError(err.reason);
    throw err;
  }
}
