/**
 * etcd's URL rule (pkg/types.NewURLs), shared by the member's configuration (--listen-client-urls,
 * --advertise-client-urls, --initial-advertise-peer-urls, ... read by the command line) and Cluster.MemberAdd /
 * MemberUpdate, which refuse what it refuses: Go's url.Parse, then scheme http/https/unix/unixs, a
 * "host:port" address and no path.
 */

/** A URL etcd's NewURLs refuses: `reason` is etcd's (or Go's url.Parse's) wording. */
export class EtcdUrlError extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
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
 * etcd's types.NewURLs for one URL (one element of a URL-list flag, or of a MemberAdd's peer URLs):
 * Go's url.Parse, then scheme http/https/unix/unixs, a "host:port" address and no path. Query, fragment and
 * user info are accepted and ignored, as etcd does.
 */
export function parseEtcdUrl(input: string): EtcdUrl {
  const raw = input.trim();
  const schemeMatch = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(raw);
  if (schemeMatch === null) {
    if (raw.startsWith(':')) throw new EtcdUrlError(`parse ${JSON.stringify(raw)}: missing protocol scheme`);
    const firstSegment = raw.split(/[/?#]/, 1)[0] ?? '';
    if (firstSegment.includes(':')) throw new EtcdUrlError(`parse ${JSON.stringify(raw)}: first path segment in URL cannot contain colon`);
    throw new EtcdUrlError(`URL scheme must be http, https, unix, or unixs: ${raw}`);
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
  if (portPart !== '' && !/^:\d*$/.test(portPart)) throw new EtcdUrlError(`parse ${JSON.stringify(raw)}: invalid port ${JSON.stringify(portPart)} after host`);
  if (scheme !== 'http' && scheme !== 'https' && scheme !== 'unix' && scheme !== 'unixs') {
    throw new EtcdUrlError(`URL scheme must be http, https, unix, or unixs: ${raw}`);
  }
  const split = splitHostPort(hostPort);
  if (split === undefined) throw new EtcdUrlError(`URL address does not have the form "host:port": ${raw}`);
  if (rest !== '') throw new EtcdUrlError(`URL must not contain a path: ${raw}`);
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
