/**
 * `etcdsim serve`: flags (named like etcd's, read as etcd 3.4.23 reads them) → serve() options, and the
 * process lifecycle. Every flag is checked before anything binds; what etcd rejects is rejected with
 * etcd's words and exit code, what etcd accepts (with a warning or a substitute value) is accepted the
 * same way. docs/cli-errors.md has the table.
 */
import { readFileSync } from 'node:fs';
import { isLoopback, serve, type ServedClusterMember, type ServeOptions } from '../grpc/index.js';
import { SnapshotFormatError, readEtcdSnapshot } from '../snapshot/index.js';
import { FlagValueError, parseEtcdUrl, parseGoDuration, parseGoInt, parseGoUint, type EtcdUrl } from './go_flags.js';
import { CliError, consoleIo, type CliIo } from './io.js';
import { CLOCK_SPEED_MAX, CLOCK_SPEED_MIN, MEMBERS_MAX, SERVE_FLAG_DEFAULTS, type ServeFlags } from './serve_flags.js';
import { ETCD_VERSIONS, isEtcdVersion, type EtcdVersion } from '../etcd/index.js';

export { SERVE_FLAG_DEFAULTS, type ServeFlags } from './serve_flags.js';

/**
 * What `etcdsim serve` runs: serve()'s options, and with --members N > 1 the cluster's members (one port
 * each; host/port above are the first member's) and --pre-vote.
 */
export type ServeCommandOptions = ServeOptions & {
  readonly members?: readonly ServedClusterMember[] | undefined;
  readonly preVote?: boolean | undefined;
  /**
   * --initial-cluster of a member of a cluster of processes (ServeFlags.clusterOfProcesses): every member's
   * name and peer URLs, this member's among them; undefined for a single member.
   */
  readonly initialCluster?: ReadonlyArray<{ readonly name: string; readonly peerUrls: readonly string[] }> | undefined;
  /** --listen-peer-urls, for a member of a cluster of processes. */
  readonly listenPeerUrls?: readonly string[] | undefined;
};

/** etcd's simple-token TTL when --auth-token-ttl is 0 (auth/simple_token.go: a TTL <= 0 means 300 s). */
const DEFAULT_TOKEN_TTL_S = 300;
/** etcd's --bcrypt-cost range (bcrypt.MinCost..MaxCost) and what it uses outside it. */
const BCRYPT_MIN = 4;
const BCRYPT_MAX = 31;
const BCRYPT_DEFAULT = 10;
/** etcd's watch progress notify interval: the default (for <= 0) and the minimum it adjusts to. */
const PROGRESS_DEFAULT_MS = 10 * 60_000;
const PROGRESS_MIN_MS = 100;
/** etcd warns above 10 MiB of --max-request-bytes. */
const MAX_REQUEST_BYTES_RECOMMENDED = 10 * 1024 * 1024;
/** etcd's MaxQuotaBytes: a larger --quota-backend-bytes is taken, with a warning. */
const MAX_QUOTA_BYTES = 8n * 1024n * 1024n * 1024n;
/** etcd's upper bound of --election-timeout (embed.maxElectionMs). */
const MAX_ELECTION_MS = 50_000n;
const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** Go's flag-package error: usage, exit 2. */
function invalid(flag: string, value: string, reason: string): CliError {
  return new CliError(`invalid value ${JSON.stringify(value)} for flag ${flag}: ${reason}`, 2);
}

/** etcd's "error verifying flags" (etcdmain, exit 1). */
function unverified(what: string): CliError {
  return new CliError(`error verifying flags, ${what}. See 'etcdsim serve --help'.`, 1);
}

/** A flag's value as one of Go's parsers reads it (go_flags.ts); a bad one is a usage error, in Go's words. */
function goFlag<T>(flag: string, value: string, parse: (s: string) => T): T {
  try {
    return parse(value);
  } catch (err) {
    if (err instanceof FlagValueError) throw invalid(flag, value, err.reason);
    throw err;
  }
}

/** A Go uint flag. */
const uintFlag = (flag: string, value: string): bigint => goFlag(flag, value, parseGoUint);
/** A Go int64 flag. */
const intFlag = (flag: string, value: string): bigint => goFlag(flag, value, parseGoInt);
/** A Go duration flag, in milliseconds. */
const durationFlag = (flag: string, value: string): number => goFlag(flag, value, parseGoDuration);

/** A uint64 as a JS number: values past 2^53 mean "no limit" here and are clamped. */
function clamp(v: bigint): number {
  return Number(v > SAFE ? SAFE : v);
}

/** A comma-separated list of URLs, each checked as etcd's types.NewURLs checks it. */
const urlsFlag = (flag: string, value: string): EtcdUrl[] => goFlag(flag, value, (v) => v.split(',').map((p) => parseEtcdUrl(p)));

/** Go's text for a failed open/read of `path` (etcd prints it as is). */
function readError(err: unknown, path: string): string {
  const code = (err as { code?: string }).code;
  const text: Record<string, string> = {
    ENOENT: 'no such file or directory',
    EACCES: 'permission denied',
    EISDIR: 'is a directory',
    ENOTDIR: 'not a directory',
  };
  if (code === 'EISDIR') return `read ${path}: is a directory`;
  return `open ${path}: ${(code !== undefined ? text[code] : undefined) ?? (err instanceof Error ? err.message : String(err))}`;
}

function readPem(path: string, what: 'certificate' | 'key' | 'CA'): Buffer {
  let buf: Buffer;
  try {
    buf = readFileSync(path);
  } catch (err) {
    throw new CliError(readError(err, path), 1);
  }
  if (!buf.includes('-----BEGIN')) {
    // Go's tls.X509KeyPair (etcd exits 1 with it); a CA bundle without certificates fails etcd's start too.
    throw new CliError(what === 'CA' ? `failed to find any PEM data in CA file ${path}` : `tls: failed to find any PEM data in ${what === 'key' ? 'key' : 'certificate'} input`, 1);
  }
  return buf;
}

/**
 * --from-snapshot: the file's bytes, checked before anything binds (exit 1 naming what is wrong: a file that
 * cannot be read, or one that is no etcd snapshot).
 */
function readSnapshotFile(path: string): Uint8Array {
  let buf: Buffer;
  try {
    buf = readFileSync(path);
  } catch (err) {
    throw new CliError(readError(err, path), 1);
  }
  try {
    readEtcdSnapshot(buf);
  } catch (err) {
    if (err instanceof SnapshotFormatError) throw new CliError(`--from-snapshot ${path}: ${err.message}`, 1);
    throw err;
  }
  return buf;
}

/**
 * Validates the flags and turns them into serve() options, before anything binds. Throws a CliError
 * (one line; exit 2 where etcd's flag parser rejects the value, 1 where etcd's start-up checks do);
 * `warn` gets what etcd only warns about (default: stderr).
 */
export function parseServeFlags(f: ServeFlags, warn: (msg: string) => void = (m) => consoleIo.err(`etcdsim serve: ${m}`)): ServeCommandOptions {
  // 1. What Go's flag package parses (etcd: usage, exit 2), then etcdsim's own flags.
  const etcd = parseEtcdFlags(f);
  const { listen, advertise, peerAdvertise, heartbeat, election } = etcd;
  const sim = parseSimFlags(f, etcd);
  const url = listen[0]!;

  // 2. etcd's checks after parsing (etcdmain: "error verifying flags", exit 1), in etcd's order.
  if (heartbeat === 0n) throw unverified('--heartbeat-interval must be >0 (set to 0ms)');
  if (election === 0n) throw unverified('--election-timeout must be >0 (set to 0ms)');
  if (5n * heartbeat > election) throw unverified(`--election-timeout[${election}ms] should be at least as 5 times as --heartbeat-interval[${heartbeat}ms]`);
  if (election > MAX_ELECTION_MS) throw unverified(`--election-timeout[${election}ms] is too long, and should be set less than ${MAX_ELECTION_MS}ms`);

  // 3. What etcd finds when it starts (exit 1).
  const initialCluster = sim.memberCount > 1 ? undefined : checkInitialCluster(f, peerAdvertise);
  const clusterIdentities = sim.memberCount > 1 ? initialClusterMembers(f, sim.memberCount) : undefined;
  const tlsWanted = url.scheme === 'https';
  checkListen(f, listen);

  // 4. What etcd accepts, with a warning or a value of its own.
  const accepted = acceptedValues(f, etcd, sim.memberCount, warn);
  const fromSnapshot = f.fromSnapshot === undefined ? undefined : readSnapshotFile(f.fromSnapshot);
  const tls =
    tlsWanted && f.certFile !== undefined && f.keyFile !== undefined
      ? {
          cert: readPem(f.certFile, 'certificate'),
          key: readPem(f.keyFile, 'key'),
          ca: f.trustedCaFile === undefined ? undefined : readPem(f.trustedCaFile, 'CA'),
          clientCertAuth: f.clientCertAuth === true,
        }
      : undefined;
  return {
    host: url.host,
    port: portOf(url),
    allowNonLoopback: f.allowNonLoopback,
    memberName: f.name,
    maxTxnOps: clamp(etcd.maxTxnOps),
    maxRequestBytes: clamp(etcd.maxRequestBytes),
    watchProgressNotifyIntervalMs: accepted.watchProgressNotifyIntervalMs,
    grpcKeepAliveMinTimeMs: etcd.keepAliveMinMs,
    quotaBackendBytes: Number(etcd.quotaBytes),
    heartbeatIntervalMs: Number(heartbeat),
    electionTicks: Number(election / heartbeat),
    seed: sim.seed,
    clockSpeed: sim.clockSpeed,
    etcdVersion: f.etcdVersion as EtcdVersion,
    // etcd: a TTL of 0 is the default (300 s); past ~285,000 years a TTL is as good as forever.
    authTokenTTL: etcd.tokenTtl === 0n ? DEFAULT_TOKEN_TTL_S : Math.min(clamp(etcd.tokenTtl), Math.floor(Number.MAX_SAFE_INTEGER / 1000)),
    authHashCost: accepted.authHashCost,
    clientUrls: advertise?.map((u) => u.raw),
    peerUrls: peerAdvertise.map((u) => u.raw),
    initialClusterToken: f.initialClusterToken,
    tls,
    fromSnapshot,
    ...(initialCluster === undefined || initialCluster.length < 2
      ? {}
      : { initialCluster, listenPeerUrls: etcd.listenPeer.map((u) => u.raw), preVote: f.preVote ?? f.etcdVersion !== '3.4' }),
    ...(clusterIdentities === undefined
      ? {}
      : {
          members: listen.map((u, i) => ({
            host: u.host,
            port: portOf(u),
            name: clusterIdentities[i]?.name,
            peerUrls: clusterIdentities[i]?.peerUrls,
            clientUrls: advertise === undefined ? undefined : [advertise[i]!.raw],
          })),
          // etcd's --pre-vote: off by default in 3.4, on from 3.5.
          preVote: f.preVote ?? f.etcdVersion !== '3.4',
        }),
  };
}

/** etcd's flags as Go's flag package reads them, in the order it reports a bad one (usage, exit 2). */
function parseEtcdFlags(f: ServeFlags) {
  return {
    listen: urlsFlag('--listen-client-urls', f.listenClientUrls),
    advertise: f.advertiseClientUrls === undefined ? undefined : urlsFlag('--advertise-client-urls', f.advertiseClientUrls),
    peerAdvertise: urlsFlag('--initial-advertise-peer-urls', f.initialAdvertisePeerUrls),
    listenPeer: urlsFlag('--listen-peer-urls', f.listenPeerUrls),
    maxTxnOps: uintFlag('--max-txn-ops', f.maxTxnOps),
    maxRequestBytes: uintFlag('--max-request-bytes', f.maxRequestBytes),
    heartbeat: uintFlag('--heartbeat-interval', f.heartbeatInterval),
    election: uintFlag('--election-timeout', f.electionTimeout),
    tokenTtl: uintFlag('--auth-token-ttl', f.authTokenTtl),
    bcryptCost: f.bcryptCost === undefined ? undefined : uintFlag('--bcrypt-cost', f.bcryptCost),
    progressMs: durationFlag('--experimental-watch-progress-notify-interval', f.experimentalWatchProgressNotifyInterval),
    keepAliveMinMs: durationFlag('--grpc-keepalive-min-time', f.grpcKeepaliveMinTime),
    quotaBytes: intFlag('--quota-backend-bytes', f.quotaBackendBytes),
  };
}

type EtcdFlags = ReturnType<typeof parseEtcdFlags>;

/** etcdsim's own flags, and how --members fits the client URLs (usage, exit 2). */
function parseSimFlags(f: ServeFlags, { listen, advertise }: EtcdFlags): { seed: bigint; clockSpeed: number; memberCount: number } {
  if (!isEtcdVersion(f.etcdVersion)) throw invalid('--etcd-version', f.etcdVersion, `must be one of ${ETCD_VERSIONS.join(', ')}`);
  const seed = /^\d+$/.test(f.seed) ? BigInt(f.seed) : undefined;
  if (seed === undefined || seed >= 2n ** 64n) throw invalid('--seed', f.seed, 'must be an integer from 0 to 18446744073709551615');
  const clockSpeed = /^\s*$/.test(f.clockSpeed) ? NaN : Number(f.clockSpeed);
  if (!(clockSpeed >= CLOCK_SPEED_MIN && clockSpeed <= CLOCK_SPEED_MAX)) {
    throw invalid('--clock-speed', f.clockSpeed, `must be a number from ${CLOCK_SPEED_MIN} to ${CLOCK_SPEED_MAX}`);
  }
  const memberCount = f.members === undefined ? 1 : /^\d+$/.test(f.members) ? Number(f.members) : NaN;
  if (!(memberCount >= 1 && memberCount <= MEMBERS_MAX)) throw invalid('--members', f.members ?? '', `must be an integer from 1 to ${MEMBERS_MAX}`);
  if (listen.length !== memberCount) {
    throw invalid(
      '--listen-client-urls',
      f.listenClientUrls,
      memberCount === 1 ? 'etcdsim serves exactly one client URL' : `--members ${memberCount} takes one client URL per member`,
    );
  }
  for (const u of listen) {
    if (u.scheme !== 'http' && u.scheme !== 'https') throw invalid('--listen-client-urls', f.listenClientUrls, 'etcdsim serves http:// and https:// URLs only, not unix sockets');
  }
  if (new Set(listen.map((u) => u.scheme)).size > 1) throw invalid('--listen-client-urls', f.listenClientUrls, 'every member serves the same scheme');
  if (memberCount > 1 && advertise !== undefined && advertise.length !== memberCount) {
    throw invalid('--advertise-client-urls', f.advertiseClientUrls ?? '', `--members ${memberCount} takes one advertised client URL per member`);
  }
  if (memberCount > 1 && f.fromSnapshot !== undefined) throw invalid('--from-snapshot', f.fromSnapshot, 'a simulated cluster starts empty (--from-snapshot serves one member)');
  return { seed, clockSpeed, memberCount };
}

const portOf = (u: EtcdUrl): number => (u.port === '' ? 0 : Number(u.port));

/** What etcd finds when it starts to listen (exit 1): TLS files for https, valid and distinct ports, loopback. */
function checkListen(f: ServeFlags, listen: readonly EtcdUrl[]): void {
  const url = listen[0]!;
  const tlsWanted = url.scheme === 'https';
  if (tlsWanted && f.certFile === undefined && f.keyFile === undefined) {
    // etcd: "TLS key/cert (--cert-file, --key-file) must be provided for client url https://... with HTTPS scheme"
    throw new CliError(`an https:// listen URL needs --cert-file and --key-file (client url ${url.raw})`, 1);
  }
  if (tlsWanted && (f.certFile === undefined) !== (f.keyFile === undefined)) {
    throw new CliError(`--cert-file and --key-file go together (etcd: KeyFile and CertFile must both be present[key: ${f.keyFile ?? ''}, cert: ${f.certFile ?? ''}])`, 1);
  }
  for (const u of listen) {
    if (portOf(u) > 65535) throw new CliError(`listen tcp: address ${u.port}: invalid port`, 1);
    if (!isLoopback(u.host) && !f.allowNonLoopback) {
      throw new CliError(`refusing to bind ${u.host}: not a loopback address (allow it with --allow-non-loopback)`, 1);
    }
  }
  const fixedPorts = listen.map(portOf).filter((p) => p !== 0);
  if (new Set(fixedPorts).size !== fixedPorts.length) throw new CliError(`listen tcp: two members on one port (${f.listenClientUrls})`, 1);
}

/** What etcd accepts with a warning, or replaces with a value of its own, in the order etcd warns. */
function acceptedValues(
  f: ServeFlags,
  { listen, quotaBytes, maxRequestBytes, bcryptCost, progressMs }: EtcdFlags,
  memberCount: number,
  warn: (msg: string) => void,
): { authHashCost: number | undefined; watchProgressNotifyIntervalMs: number } {
  const url = listen[0]!;
  if (memberCount > 1 && (f.name !== SERVE_FLAG_DEFAULTS.name || f.initialAdvertisePeerUrls !== SERVE_FLAG_DEFAULTS.initialAdvertisePeerUrls || f.listenPeerUrls !== SERVE_FLAG_DEFAULTS.listenPeerUrls)) {
    warn('with --members, each member\'s name and peer URLs come from --initial-cluster: ignoring --name, --initial-advertise-peer-urls and --listen-peer-urls');
  }
  // etcd serves plaintext on an http:// URL and only warns that the key/cert files are ignored.
  if (url.scheme !== 'https' && (f.certFile !== undefined || f.keyFile !== undefined)) warn(`the scheme of client url ${url.raw} is HTTP while key/cert files are presented: ignoring them`);
  if (quotaBytes > MAX_QUOTA_BYTES) warn(`quota exceeds the maximum value: ${quotaBytes} bytes (maximum ${MAX_QUOTA_BYTES})`);
  if (maxRequestBytes > BigInt(MAX_REQUEST_BYTES_RECOMMENDED)) warn(`MaxRequestBytes ${maxRequestBytes} exceeds maximum recommended size ${MAX_REQUEST_BYTES_RECOMMENDED}`);
  let authHashCost: number | undefined;
  if (bcryptCost !== undefined) {
    if (bcryptCost < BigInt(BCRYPT_MIN) || bcryptCost > BigInt(BCRYPT_MAX)) {
      warn(`Use default bcrypt-cost ${BCRYPT_DEFAULT} instead of the invalid value ${bcryptCost}`);
      authHashCost = BCRYPT_DEFAULT;
    } else authHashCost = Number(bcryptCost);
  }
  let watchProgressNotifyIntervalMs = PROGRESS_DEFAULT_MS;
  if (progressMs > 0 && progressMs < PROGRESS_MIN_MS) {
    warn(`adjusting watch progress notify interval to minimum period ${PROGRESS_MIN_MS}ms`);
    watchProgressNotifyIntervalMs = PROGRESS_MIN_MS;
  } else if (progressMs > 0) watchProgressNotifyIntervalMs = Math.round(progressMs);
  return { authHashCost, watchProgressNotifyIntervalMs };
}

/** --initial-cluster's NAME=URL pairs in order, each URL checked as etcd checks it (exit 1, etcd's words). */
function initialClusterPairs(spec: string): Array<{ name: string; url: string }> {
  return (spec === '' ? [] : spec.split(',')).map((pair) => {
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    const url = eq < 0 ? '' : pair.slice(eq + 1);
    try {
      parseEtcdUrl(url);
    } catch (err) {
      if (err instanceof FlagValueError) throw new CliError(`error setting up initial cluster: ${err.reason}`, 1);
      throw err;
    }
    return { name, url };
  });
}

/**
 * --initial-cluster for a served cluster: NAME=PEER-URL, one per member in member order (names distinct), or
 * unset: etcd's Procfile identities (infra1..N). Checked as etcd checks its own entry (exit 1, etcd's words).
 */
function initialClusterMembers(f: ServeFlags, n: number): Array<{ name: string; peerUrls: string[] }> | Array<undefined> {
  if (f.initialCluster === undefined) return new Array<undefined>(n).fill(undefined);
  const out: Array<{ name: string; peerUrls: string[] }> = [];
  for (const { name, url } of initialClusterPairs(f.initialCluster)) {
    const known = out.find((m) => m.name === name);
    if (known !== undefined) known.peerUrls.push(url);
    else out.push({ name, peerUrls: [url] });
  }
  if (out.length !== n) throw invalid('--initial-cluster', f.initialCluster, `--members ${n} takes one NAME=URL per member, in member order (got ${out.length} names)`);
  const all = out.flatMap((m) => m.peerUrls);
  if (new Set(all).size !== all.length) throw new CliError(`--initial-cluster ${f.initialCluster} has duplicate url`, 1);
  return out;
}

/**
 * etcd's start-up checks of --initial-cluster (exit 1, etcd's words): it parses as NAME=URL pairs, names this
 * member, and lists exactly its advertised peer URLs (compared sorted, as written: etcd 3.4.23 also refuses
 * http://127.0.0.1:2380 for http://localhost:2380, observed). Unset, it is etcd's default: `default=http://localhost:2380` for the default name — so changing
 * only --initial-advertise-peer-urls fails, as in etcd — and NAME=each advertised URL for any other name.
 * A cluster of several members is refused (usage, exit 2) unless this is one process of it
 * (ServeFlags.clusterOfProcesses: `etcdsim etcd`). Returns every member's name and peer URLs, in order.
 */
function checkInitialCluster(f: ServeFlags, advertised: readonly EtcdUrl[]): Array<{ name: string; peerUrls: string[] }> {
  const spec = f.initialCluster ?? (f.name === 'default' ? 'default=http://localhost:2380' : advertised.map((u) => `${f.name === '' ? 'default' : f.name}=${u.raw}`).join(','));
  const cluster = new Map<string, string[]>();
  for (const { name, url } of initialClusterPairs(spec)) cluster.set(name, [...(cluster.get(name) ?? []), url]);
  const mine = cluster.get(f.name);
  if (mine === undefined) throw new CliError(`couldn't find local name ${JSON.stringify(f.name)} in the initial cluster configuration`, 1);
  if (cluster.size > 1 && f.clusterOfProcesses !== true) throw invalid('--initial-cluster', spec, 'etcdsim serves a single-member cluster');
  const ap = advertised.map((u) => u.raw);
  const named = mine.map((u) => `${f.name}=${u}`).join(',');
  if (ap.length !== mine.length) {
    const goList = (l: readonly string[]): string => `[${l.map((u) => JSON.stringify(u)).join(' ')}]`;
    throw new CliError(`failed to resolve ${ap.join(',')} to match --initial-cluster=${[...new Set(named.split(','))].join(',')} (len(${goList(ap)}) != len(${goList(mine)}))`, 1);
  }
  const a = [...ap].sort();
  const b = [...mine].sort();
  const i = a.findIndex((u, k) => u !== b[k]);
  if (i >= 0) {
    throw new CliError(`--initial-cluster has ${named} but missing from --initial-advertise-peer-urls=${ap.join(',')} (resolved urls: ${JSON.stringify(a[i])} != ${JSON.stringify(b[i])})`, 1);
  }
  return [...cluster].map(([name, peerUrls]) => ({ name, peerUrls }));
}

/** etcd's words for a failed listen (`listen tcp ADDR: bind: ...`), from grpc-js's bind error. */
export function bindError(err: unknown, address: string): string {
  const msg = err instanceof Error ? err.message : String(err);
  const words: Record<string, string> = {
    EADDRINUSE: 'address already in use',
    EADDRNOTAVAIL: 'cannot assign requested address',
    EACCES: 'permission denied',
  };
  const code = /\b(EADDRINUSE|EADDRNOTAVAIL|EACCES)\b/.exec(msg)?.[1];
  if (code !== undefined) return `listen tcp ${address}: bind: ${words[code] ?? code}`;
  return msg.replace(/\s*\n\s*/g, ' ');
}

/**
 * Serves until SIGTERM / SIGINT; prints one line (the endpoint) when ready. Throws a CliError (exit 1)
 * when it cannot listen. On the signal the process exits 0 at once, as etcd stops: its gRPC server drops
 * every connection, so an open Watch or LeaseKeepAlive stream ends with 14 UNAVAILABLE at the client
 * (grpc-js: "Connection dropped"), not with a status the server sent.
 */
export async function runServe(opts: ServeCommandOptions, io: CliIo = consoleIo): Promise<void> {
  // etcd's gRPC Stop(): connections are closed under the open streams; nothing is kept to flush. The
  // handlers are in place before the ready line: a client may signal as soon as it reads it.
  const stop = (): void => process.exit(0);
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  if (opts.members !== undefined) {
    await runServeCluster(opts, opts.members, io);
    return;
  }
  let handle;
  try {
    handle = await serve(opts);
  } catch (err) {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    const host = opts.host ?? '127.0.0.1';
    throw new CliError(bindError(err, `${host.includes(':') ? `[${host}]` : host}:${opts.port ?? 2379}`), 1);
  }
  io.out(`etcdsim serving etcd v3 API on ${handle.endpoint}`);
}

/**
 * `etcdsim serve --members N`: N members on N ports (src/grpc/serve_cluster.ts). Prints one line naming
 * every member's endpoint, then where the fault levers are.
 */
async function runServeCluster(opts: ServeCommandOptions, members: readonly ServedClusterMember[], io: CliIo): Promise<void> {
  const { serveCluster } = await import('../grpc/serve_cluster.js');
  const { host: _h, port: _p, memberName: _n, clientUrls: _c, peerUrls: _pu, fromSnapshot: _f, members: _m, clock: _clock, ...shared } = opts;
  let handle;
  try {
    handle = await serveCluster({ ...shared, members });
  } catch (err) {
    const failed = /:(\d+)\b/.exec(err instanceof Error ? err.message : '')?.[1];
    const m = members.find((x) => String(x.port) === failed) ?? members[0]!;
    throw new CliError(bindError(err, `${m.host?.includes(':') === true ? `[${m.host}]` : (m.host ?? '127.0.0.1')}:${m.port}`), 1);
  }
  io.out(`etcdsim serving etcd v3 API on ${handle.endpoints.join(',')} (a simulated cluster of ${members.length} members)`);
  io.out(`cluster control: ${handle.endpoints[0]}/etcdsim/cluster (docs/cluster.md, "Served")`);
}
