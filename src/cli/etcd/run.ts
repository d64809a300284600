/**
 * `etcdsim etcd [etcd's flags]`: the simulator started exactly as the etcd binary is started, so a harness
 * that runs `etcd` (etcd's own e2e framework, CI scripts, fixtures that look for `etcd` in a bin directory)
 * needs no wrapper. The release it behaves as comes from `ETCDSIM_ETCD_VERSION` (3.4, 3.5, 3.6, 3.7; default
 * 3.7), since etcd has no flag for that. Flags, `ETCD_*` variables and `--config-file` are read and refused as
 * etcd reads them (flag_set.ts, config_file.ts), errors end the process with etcd's words and exit code, and
 * the log on stderr is etcd's, line for line where harnesses wait for a line (log.ts, start_log.ts).
 *
 * Then the member is `etcdsim serve`'s (parseServeFlags, serve()): the same checks at start-up, the same
 * server. Shutdown on SIGINT / SIGTERM logs etcd's lines and exits.
 */
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Clock } from '../../sim/index.js';
import { CliError, type CliIo } from '../io.js';
import { SERVE_FLAG_DEFAULTS, type ServeFlags } from '../serve_flags.js';
import { DEFAULT_ETCD_VERSION, ETCD_RELEASES, ETCD_VERSIONS, isEtcdVersion, type EtcdVersion } from '../../etcd/index.js';
import { flagsOf } from './flag_table.js';
import { EtcdFlagError, applyEnvironment, boolValue, parseEtcdCommandLine, type ParsedFlags } from './flag_set.js';
import { EtcdLog, LOG_LEVELS, logLevelOf } from './log.js';
import { startupLines, readyLines, shutdownLines, type StartedMember } from './start_log.js';
import { autoTlsFiles } from './auto_tls.js';
import { checkPeerTls, tlsFlagOptions } from './tls_flags.js';
import type { TokenProvider } from '../../auth/index.js';
import { parseGoDuration } from '../go_flags.js';
import type { KeptMemberHooks, KeptMemberStart, KeptState } from '../../server/index.js';

/** A start-up failure already logged in etcd's words: the process ends with this code. */
class CliExit extends Error {
  constructor(readonly exitCode: number) {
    super(`exit ${exitCode}`);
  }
}

/** The release `ETCDSIM_ETCD_VERSION` names (default 3.7, as `etcdsim serve`). */
export function etcdVersionFromEnv(env: Readonly<Record<string, string | undefined>>): EtcdVersion {
  const v = env['ETCDSIM_ETCD_VERSION'];
  if (v === undefined || v === '') return DEFAULT_ETCD_VERSION;
  const short = /^(3\.[4-7])(\.\d+)?$/.exec(v)?.[1];
  if (short === undefined || !isEtcdVersion(short)) {
    throw new EtcdFlagError(`ETCDSIM_ETCD_VERSION=${v}: must be one of ${ETCD_VERSIONS.join(', ')}`, 2);
  }
  return short as EtcdVersion;
}

/** What Go's flag package prints after a usage error (etcd's usage text is long; this names where it is). */
const USAGE = ['Usage:', '', '  etcd [flags]', '    Start an etcd server (here: etcdsim; `etcdsim etcd --help` lists the flags it serves).'];

/** What the caller of runEtcd hears besides the log. */
export interface EtcdRunHooks {
  /** The member logged that it serves (after its ready lines), once. */
  serving?(): void;
}

/**
 * Runs `etcdsim etcd ARGV...`; resolves with the exit code when it fails to start, or never settles while it
 * serves (the process exits on SIGINT / SIGTERM).
 */
export async function runEtcd(argv: readonly string[], io: CliIo, env: Readonly<Record<string, string | undefined>> = process.env, hooks: EtcdRunHooks = {}): Promise<number> {
  let version: EtcdVersion | undefined;
  let parsed: ParsedFlags;
  try {
    version = etcdVersionFromEnv(env);
    parsed = parseEtcdCommandLine(argv, flagsOf(version));
  } catch (err) {
    if (!(err instanceof EtcdFlagError)) throw err;
    if (err.exitCode === 0) {
      for (const l of helpText()) io.out(l);
      return 0;
    }
    if (err.exitCode === 2) {
      io.err(err.message);
      for (const l of USAGE) io.err(l);
      return 2;
    }
    return fatal(loggerOf(new Map(), version ?? DEFAULT_ETCD_VERSION, io), `error verifying flags, ${err.message}. See 'etcd --help'.`, 1, 'etcdmain');
  }
  if (boolValue(parsed.values.get('version'))) {
    for (const l of versionLines(version)) io.out(l);
    return 0;
  }
  // The logger comes first: etcd logs every later failure through it.
  const configFile = parsed.values.get('config-file') ?? env['ETCD_CONFIG_FILE'];
  let log = loggerOf(parsed.values, version, io);
  let values: Map<string, string>;
  try {
    if (configFile !== undefined && configFile !== '') {
      const { readConfigFile } = await import('./config_file.js'); // YAML only for a config file
      values = readConfigFile(configFile, flagsOf(version));
      log = loggerOf(values, version, io);
    } else {
      const withEnv = applyEnvironment(parsed, flagsOf(version), env);
      for (const n of withEnv.notes) log.log({ level: n.level, pkg: 'pkg/flags', text: n.text, caller: 'flags/flag.go:113', msg: n.text });
      values = withEnv.values;
    }
  } catch (err) {
    if (err instanceof EtcdFlagError) return fatal(log, err.message, err.exitCode === 0 ? 1 : err.exitCode, err.pkg);
    throw err;
  }
  if (log === undefined) return 1;
  try {
    return await start(values, version, log, env, hooks);
  } catch (err) {
    if (err instanceof CliExit) return err.exitCode;
    if (err instanceof CliError) return fatal(log, err.message.replace("See 'etcdsim serve --help'", "See 'etcd --help'"), err.exitCode, 'etcdmain');
    throw err;
  }
}

/**
 * --auth-token: `simple` (with options, ignored) or `jwt,key=value,...` (jwt_token.ts); anything else stops
 * etcd, with its log lines. Resolves to the JWT token provider, undefined for simple tokens (then neither
 * jwt_token.ts nor jsonwebtoken is loaded: a member starts without them).
 */
async function jwtTokenProvider(value: string, log: EtcdLog): Promise<((clock: Clock) => TokenProvider) | undefined> {
  const [kind = '', ...rest] = value.split(',');
  const options = new Map(rest.map((kv) => [kv.slice(0, kv.indexOf('=') < 0 ? kv.length : kv.indexOf('=')), kv.indexOf('=') < 0 ? '' : kv.slice(kv.indexOf('=') + 1)]));
  if (kind === 'simple') return undefined;
  const invalid = 'auth: invalid auth options';
  if (kind !== 'jwt') {
    log.log({ level: 'error', pkg: 'auth', text: `unknown token type: ${kind}`, caller: 'auth/store.go:1395', msg: 'unknown token type', fields: { type: kind } });
    throw new CliError(invalid, 1);
  }
  const { AuthTokenOptionsError, JwtTokens, parseJwtOptions } = await import('../../auth/jwt_token.js');
  try {
    const jwt = parseJwtOptions(options, parseGoDuration);
    return (clock) => new JwtTokens(clock, jwt);
  } catch (err) {
    if (!(err instanceof AuthTokenOptionsError)) throw err;
    const loading = err.message.startsWith('problem loading JWT options: ');
    if (loading) log.log({ level: 'error', pkg: 'auth', text: err.message, caller: 'auth/jwt.go:152', msg: 'problem loading JWT options', fields: { error: err.message.slice('problem loading JWT options: '.length) } });
    const reason = loading ? invalid : err.message;
    log.log({ level: 'warn', pkg: 'etcdserver', text: `failed to create token provider,err is ${reason}`, caller: 'etcdserver/server.go:298', msg: 'failed to create token provider', fields: { error: reason } });
    throw new CliError(reason, 1);
  }
}

/**
 * The data dir, as etcd makes it before anything else: Go's MkdirAll, 0700, one folder at a time (Node's
 * recursive mkdir loops forever under /proc), the error naming the first folder that could not be made.
 */
function mkdirAll(dataDir: string): void {
  const words: Record<string, string> = { ENOENT: 'no such file or directory', ENOTDIR: 'not a directory', EACCES: 'permission denied', EEXIST: 'file exists' };
  const chain: string[] = [];
  for (let p = resolve(dataDir); ; p = dirname(p)) {
    chain.unshift(p);
    if (dirname(p) === p) break;
  }
  for (const p of chain) {
    if (existsSync(p)) {
      if (statSync(p).isDirectory()) continue;
      throw new CliError(`cannot access data directory: mkdir ${p === resolve(dataDir) ? dataDir : p}: not a directory`, 1);
    }
    try {
      mkdirSync(p, { mode: 0o700 });
    } catch (err) {
      const code = (err as { code?: string }).code ?? '';
      throw new CliError(`cannot access data directory: mkdir ${p === resolve(dataDir) ? dataDir : p}: ${words[code] ?? code}`, 1);
    }
  }
}

/**
 * The data dir's member (src/server/kept_member.ts), or etcd's end when it cannot be read: a WAL that is not
 * etcd's (`walpb: crc mismatch`, a `proto:` error) stops etcd with a critical line and exit 1; a db that is
 * not bbolt makes its backend panic (exit 2). A torn last record is repaired, with etcd's two lines.
 */
function readDataDir(kept: typeof import('../../server/kept_member.js'), dataDir: string, walDir: string | undefined, log: EtcdLog): KeptState {
  let state: KeptState;
  try {
    state = kept.readKeptState(dataDir, walDir);
  } catch (err) {
    if (err instanceof kept.BackendOpenError) {
      log.log({ level: 'fatal', pkg: 'mvcc/backend', text: err.message, caller: 'backend/backend.go:160', msg: 'failed to open database', fields: { path: err.path, error: 'invalid database' } });
      log.raw(`panic: ${err.message}`);
      throw new CliExit(2);
    }
    if (err instanceof Error && err.name === 'WalError') throw new CliError(err.message, 1);
    throw err;
  }
  if (state.kind === 'restart' && state.contents.repairedFile !== undefined) {
    const file = state.contents.repairedFile;
    log.log({ level: 'info', pkg: 'wal', text: `repairing ${file}`, caller: 'wal/repair.go:40', msg: 'repairing', fields: { path: file }, notice: true });
    log.log({ level: 'info', pkg: 'etcdserver', text: 'repaired WAL error (unexpected EOF)', caller: 'etcdserver/storage.go:110', msg: 'repaired WAL', fields: { error: 'unexpected EOF' } });
  }
  return state;
}

/** etcd's logger, from --logger / --log-level / --log-outputs (3.5+: zap only). */
function loggerOf(values: ReadonlyMap<string, string>, version: EtcdVersion, io: CliIo): EtcdLog {
  const logger = values.get('logger') ?? (version === '3.4' ? 'capnslog' : 'zap');
  const level = values.get('log-level') ?? 'info';
  const outputs = (values.get('log-outputs') ?? 'default').split(',');
  const write = outputs.includes('stdout') && !outputs.includes('stderr') ? io.out : io.err;
  const log = new EtcdLog(logger === 'zap' ? 'zap' : 'capnslog', LOG_LEVELS.includes(level) ? logLevelOf(level) : 'info', version, write);
  if (logger === 'capnslog') log.raw("[WARNING] Deprecated '--logger=capnslog' flag is set; use '--logger=zap' flag instead");
  return log;
}

/**
 * A start-up failure as etcd ends with it: a critical line (zap: fatal), exit `code`. A flag error is etcdmain's
 * own: capnslog logs it at E ("error verifying flags, ..."), zap at warn ("failed to verify flags", in 3.4.23 as in
 * 3.5+: observed, and etcdmain/etcd.go's lg.Warn), and a listener without an advertised URL adds one more line.
 */
function fatal(log: EtcdLog, message: string, code: number, pkg: string): number {
  if (message.startsWith('When listening on specific address')) {
    const error = '--advertise-client-urls is required when --listen-client-urls is set explicitly';
    log.log({ level: 'error', zapLevel: 'warn', pkg, text: message, caller: 'etcdmain/etcd.go:73', msg: 'advertise client URLs are not set', fields: { error } });
  } else if (message.startsWith('error verifying flags, ')) {
    const error = message.replace(/^error verifying flags, /, '').replace(/\. See 'etcd --help'\.$/, '');
    log.log({ level: 'error', zapLevel: 'warn', pkg, text: message, caller: 'etcdmain/etcd.go:66', msg: 'failed to verify flags', fields: { error } });
  } else {
    log.log({ level: 'fatal', pkg, text: message, caller: 'etcdmain/etcd.go:271', msg: 'discovery failed', fields: { error: message } });
  }
  return code;
}

/**
 * etcd's last configuration check on lease checkpoints (embed.Config.Validate, before anything is made):
 * persisting checkpoints needs checkpoints (3.4.23: `--experimental-enable-lease-checkpoint-persist` alone
 * exits 1, observed). From 3.6 both are feature gates, LeaseCheckpoint and LeaseCheckpointPersist, which
 * `--feature-gates` or the old flags set, and the refusal names the gates.
 */
function leaseCheckpointRefusal(get: (flag: string) => string | undefined, version: EtcdVersion): string | undefined {
  const persistFlag = boolValue(get('experimental-enable-lease-checkpoint-persist'));
  const checkpointFlag = boolValue(get('experimental-enable-lease-checkpoint'));
  if (version === '3.4' || version === '3.5') {
    return persistFlag && !checkpointFlag ? 'setting experimental-enable-lease-checkpoint-persist requires experimental-enable-lease-checkpoint' : undefined;
  }
  const gates = new Map<string, string>();
  for (const pair of (get('feature-gates') ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at > 0) gates.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
  }
  const gate = (name: string, flag: boolean): boolean => (gates.has(name) ? boolValue(gates.get(name)) : flag);
  return gate('LeaseCheckpointPersist', persistFlag) && !gate('LeaseCheckpoint', checkpointFlag) ? 'enabling feature gate LeaseCheckpointPersist requires enabling feature gate LeaseCheckpoint' : undefined;
}

function versionLines(version: EtcdVersion): string[] {
  return [`etcd Version: ${ETCD_RELEASES[version]}`, 'Git SHA: Not provided (etcdsim)', 'Go Version: go1.19.8', 'Go OS/Arch: linux/amd64'];
}

function helpText(): string[] {
  return [...USAGE, '', 'etcd\'s flags, 3.4 through 3.7: see docs/etcd-binary.md for what each one does in etcdsim.'];
}

/** From checked flags to a serving member: etcd's start-up checks, the data dir, TLS, the log lines. */
async function start(values: ReadonlyMap<string, string>, version: EtcdVersion, log: EtcdLog, env: Readonly<Record<string, string | undefined>>, hooks: EtcdRunHooks): Promise<number> {
  const get = (n: string): string | undefined => values.get(n);
  const logger = get('logger') ?? (version === '3.4' ? 'capnslog' : 'zap');
  if (logger !== 'zap' && !(logger === 'capnslog' && version === '3.4')) throw new CliError(`error verifying flags, unknown logger option ${JSON.stringify(logger)}. See 'etcd --help'.`, 1);
  const level = get('log-level') ?? 'info';
  if (!LOG_LEVELS.includes(level)) throw new CliError(`unknown level ${JSON.stringify(level)}`, 2);
  if (get('listen-client-urls') !== undefined && get('advertise-client-urls') === undefined) {
    fatal(log, "error verifying flags, --advertise-client-urls is required when --listen-client-urls is set explicitly. See 'etcd --help'.", 1, 'etcdmain');
    throw new CliError('When listening on specific address(es), this etcd process must advertise accessible url(s) to each connected client.', 1);
  }
  const leaseRefusal = leaseCheckpointRefusal(get, version);
  if (leaseRefusal !== undefined) return fatal(log, `error verifying flags, ${leaseRefusal}. See 'etcd --help'.`, 1, 'etcdmain');
  const name = get('name') ?? SERVE_FLAG_DEFAULTS.name;
  const dataDir = get('data-dir') ?? `${name}.etcd`;
  if (get('data-dir') === undefined) {
    const text = `no data-dir provided, using default data-dir ./${dataDir}`;
    log.log({ level: 'warn', pkg: 'etcdmain', text, caller: 'etcdmain/etcd.go:115', msg: "'data-dir' was empty; using default", fields: { 'data-dir': dataDir } });
  }
  const { bindError, parseServeFlags } = await import('../serve.js');
  const autoTls = boolValue(get('auto-tls'));
  const listen = get('listen-client-urls') ?? 'http://localhost:2379';
  const flags: ServeFlags = {
    ...SERVE_FLAG_DEFAULTS,
    listenClientUrls: listen,
    advertiseClientUrls: get('advertise-client-urls') ?? (get('listen-client-urls') === undefined ? 'http://localhost:2379' : undefined),
    initialAdvertisePeerUrls: get('initial-advertise-peer-urls') ?? SERVE_FLAG_DEFAULTS.initialAdvertisePeerUrls,
    listenPeerUrls: get('listen-peer-urls') ?? SERVE_FLAG_DEFAULTS.listenPeerUrls,
    initialCluster: get('initial-cluster'),
    initialClusterToken: get('initial-cluster-token') ?? SERVE_FLAG_DEFAULTS.initialClusterToken,
    name,
    maxTxnOps: get('max-txn-ops') ?? SERVE_FLAG_DEFAULTS.maxTxnOps,
    maxRequestBytes: get('max-request-bytes') ?? SERVE_FLAG_DEFAULTS.maxRequestBytes,
    experimentalWatchProgressNotifyInterval: get('watch-progress-notify-interval') ?? get('experimental-watch-progress-notify-interval') ?? SERVE_FLAG_DEFAULTS.experimentalWatchProgressNotifyInterval,
    grpcKeepaliveMinTime: get('grpc-keepalive-min-time') ?? SERVE_FLAG_DEFAULTS.grpcKeepaliveMinTime,
    quotaBackendBytes: get('quota-backend-bytes') ?? SERVE_FLAG_DEFAULTS.quotaBackendBytes,
    heartbeatInterval: get('heartbeat-interval') ?? SERVE_FLAG_DEFAULTS.heartbeatInterval,
    electionTimeout: get('election-timeout') ?? SERVE_FLAG_DEFAULTS.electionTimeout,
    etcdVersion: version,
    certFile: get('cert-file'),
    keyFile: get('key-file'),
    trustedCaFile: get('trusted-ca-file'),
    clientCertAuth: boolValue(get('client-cert-auth')),
    // etcd binds what it is told; the simulator too when started as etcd (its own safety flag is serve's).
    allowNonLoopback: true,
    authTokenTtl: get('auth-token-ttl') ?? SERVE_FLAG_DEFAULTS.authTokenTtl,
    bcryptCost: get('bcrypt-cost'),
    preVote: get('pre-vote') === undefined ? undefined : boolValue(get('pre-vote')),
    clusterOfProcesses: true,
  };
  // Checked before anything is made, as etcd checks them while it reads its configuration.
  const tlsFlags = await tlsFlagOptions(get);
  mkdirAll(dataDir);
  let tlsFiles: Partial<ServeFlags> = {};
  if (autoTls && listen.startsWith('https://') && flags.certFile === undefined && flags.keyFile === undefined) {
    const files = await autoTlsFiles(join(dataDir, 'fixtures', 'client'), listen.split(','), Number(get('self-signed-cert-validity') ?? '1'));
    tlsFiles = { certFile: files.certFile, keyFile: files.keyFile };
    log.log({ level: 'warn', pkg: 'embed', text: `ignoring client auto TLS since certs given`, caller: 'embed/config.go:700', msg: 'automatically generated client certificates' });
  }
  const authJwt = await jwtTokenProvider(get('auth-token') ?? 'simple', log);
  const warnings: string[] = [];
  const streams = get('max-concurrent-streams');
  const served = parseServeFlags({ ...flags, ...tlsFiles }, (m) => warnings.push(m));
  const strict = get('strict-reconfig-check');
  const opts = { ...served, strictReconfigCheck: strict === undefined ? undefined : boolValue(strict), tls: served.tls === undefined ? undefined : { ...served.tls, ...tlsFlags }, maxConcurrentStreams: streams === undefined ? undefined : Number(streams), authTokenProvider: authJwt };
  const member: StartedMember = {
    name,
    dataDir,
    version,
    serverVersion: ETCD_RELEASES[version],
    heartbeatMs: Number(flags.heartbeatInterval),
    electionMs: Number(flags.electionTimeout),
    snapshotCount: get('snapshot-count') ?? '100000',
    advertiseClientUrls: (flags.advertiseClientUrls ?? listen).split(','),
    listenClientUrls: listen.split(','),
    peerUrls: flags.initialAdvertisePeerUrls.split(','),
    authToken: authJwt === undefined ? 'simple' : 'jwt',
    memberId: 0n,
    clusterId: 0n,
    tls: opts.tls !== undefined,
  };
  for (const w of warnings) log.log({ level: 'warn', pkg: 'embed', text: w, caller: 'embed/config.go:600', msg: w });
  const peerTls = await checkPeerTls(get, dataDir);
  if (opts.initialCluster !== undefined) {
    // One process of a cluster of several members (run_cluster.ts).
    const { runProcessMember } = await import('./run_cluster.js');
    return runProcessMember({ opts: { ...opts, initialCluster: opts.initialCluster }, member, get, log, peerTls, serving: hooks.serving });
  }
  const kept = await import('../../server/kept_member.js');
  const state = readDataDir(kept, dataDir, get('wal-dir'), log);
  // --initial-cluster-state existing: join a running cluster, whose members etcd asks at the other peer URLs
  // of --initial-cluster — a single member has none to ask. A data dir with a member ignores the flag.
  if (state.kind === 'new' && get('initial-cluster-state') === 'existing') {
    mkdirSync(state.layout.snapDir, { recursive: true, mode: 0o700 });
    throw new CliError('cannot fetch cluster info from peer urls: could not retrieve cluster information from the given URLs', 1);
  }
  const { serveMember } = await import('../../grpc/server.js');
  let handle;
  let keptStart: KeptMemberStart | undefined;
  try {
    handle = await serveMember(opts, undefined, (o) => (keptStart = kept.startKeptMember(state, o, Number(member.snapshotCount), crashHooks())).server);
  } catch (err) {
    const host = opts.host ?? '127.0.0.1';
    throw new CliError(bindError(err, `${host.includes(':') ? `[${host}]` : host}:${opts.port ?? 2379}`), 1);
  }
  const restarted = keptStart?.restarted === true ? { commitIndex: keptStart.commitIndex, term: handle.server.member.raftTerm } : undefined;
  const started: StartedMember = { ...member, memberId: handle.server.member.memberId, clusterId: handle.server.member.clusterId, restart: restarted };
  const stop = (signal: 'SIGINT' | 'SIGTERM'): void => {
    // etcd's gRPC Stop(): the connections are dropped under any open stream, nothing is left to flush.
    for (const e of shutdownLines(started, signal)) log.log(e);
    process.exit(0);
  };
  // In place before the ready lines: a harness may signal as soon as it reads them.
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  for (const e of startupLines(started)) log.log(e);
  for (const e of readyLines(started)) log.log(e);
  hooks.serving?.();
  return new Promise<number>(() => {});
}

/**
 * etcdsim's own test hook (etcd has gofail points for this): ETCDSIM_TEST_CRASH=conf-change-logged kills the
 * process (SIGKILL, nothing flushed) once a membership change's WAL entry is synced, before the db holds it.
 */
function crashHooks(): KeptMemberHooks {
  if (process.env['ETCDSIM_TEST_CRASH'] !== 'conf-change-logged') return {};
  return { confChangeLogged: () => process.kill(process.pid, 'SIGKILL') };
}
