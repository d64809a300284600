/**
 * How etcd (Go's flag package) reads the values of its flags, so `etcdsim serve` accepts and rejects
 * exactly what etcd 3.4.23 does, with etcd's words: unsigned integers as strconv.ParseUint(s, 0, 64),
 * durations as time.ParseDuration, client URLs as etcd's types.NewURLs.
 *
 * A value etcd's flag parser rejects is a usage error there (Go's flag package prints
 * `invalid value "V" for flag -NAME: REASON` and the usage, exit 2); the functions here throw a
 * {@link FlagValueError} carrying that REASON.
 */

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

/** One URL of an etcd URL-list flag, as etcd's types.NewURLs accepts it. */
export interface EtcdUrl {
  /** As given (trimmed). */
  readonly raw: string;
  /** Lower-cased, as Go's url.Parse leaves it: http, https, unix or unixs. */
  readonly scheme: string;
  /** The host without IPv6 brackets. */
  readonly host: string;
  /** The port as written (digits; may be empty: "host:" listens on any free port). */
  readonly port: string;
}

/**
 * etcd's types.NewURLs for one element of a URL-list flag (--listen-client-urls, --advertise-client-urls):
 * Go's url.Parse, then scheme http/https/unix/unixs, a "host:port" address and no path. Query, fragment and
 * user info are accepted and ignored, as etcd does.
 */
export function parseEtcdUrl(input: string): EtcdUrl {
  const raw = input.trim();
  const schemeMatch = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(raw);
  if (schemeMatch === null) {
    if (raw.startsWith(':')) throw new FlagValueError(`parse ${JSON.stringify(raw)}: missing protocol scheme`);
    const firstSegment = raw.split(/[/?#]/, 1)[0] ?? '';
    if (firstSegment.includes(':')) throw new FlagValueError(`parse ${JSON.stringify(raw)}: first path segment in URL cannot contain colon`);
    throw new FlagValueError(`URL scheme must be http, https, unix, or unixs: ${raw}`);
  }
  const scheme = (schemeMatch[1] ?? '').toLowerCase();
  let rest = raw.slice(schemeMatch[0].length).replace(/#.*$/, '').replace(/\?.*$/, '');
  let authority = '';
  if (rest.startsWith('//')) {
    const end = rest.indexOf('/', 2);
    authority = end < 0 ? rest.slice(2) : rest.slice(2, end);
    rest = end < 0 ? '' : rest.slice(end);
  }
  const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
  // Go's url.Parse checks the port of the authority (digits only) before anything else.
  const portPart = hostPort.startsWith('[') ? hostPort.slice(hostPort.indexOf(']') + 1) : hostPort.includes(':') && hostPort.indexOf(':') === hostPort.lastIndexOf(':') ? hostPort.slice(hostPort.indexOf(':')) : '';
  if (portPart !== '' && !/^:\d*$/.test(portPart)) throw new FlagValueError(`parse ${JSON.stringify(raw)}: invalid port ${JSON.stringify(portPart)} after host`);
  if (scheme !== 'http' && scheme !== 'https' && scheme !== 'unix' && scheme !== 'unixs') {
    throw new FlagValueError(`URL scheme must be http, https, unix, or unixs: ${raw}`);
  }
  const split = splitHostPort(hostPort);
  if (split === undefined) throw new FlagValueError(`URL address does not have the form "host:port": ${raw}`);
  if (rest !== '') throw new FlagValueError(`URL must not contain a path: ${raw}`);
  return { raw, scheme, host: split.host, port: split.port };
}

/** Go's net.SplitHostPort: "host:port" or "[v6]:port"; undefined where Go returns an error. */
function splitHostPort(hp: string): { host: string; port: string } | undefined {
  if (hp.startsWith('[')) {
    const close = hp.indexOf(']');
    if (close < 0 || hp[close + 1] !== ':') return undefined;
    const host = hp.slice(1, close);
    const port = hp.slice(close + 2);
    if (host.includes('[') || host.includes(']') || port.includes(']') || port.includes('[') || port.includes(':')) return undefined;
    return { host, port };
  }
  const i = hp.lastIndexOf(':');
  if (i < 0) return undefined;
  const host = hp.slice(0, i);
  if (host.includes(':') || host.includes('[') || host.includes(']')) return undefined;
  return { host, port: hp.slice(i + 1) };
}
