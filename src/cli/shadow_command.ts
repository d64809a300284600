/**
 * `etcdsim shadow --etcd HOST:PORT --listen-client-urls URL`: puts the simulator beside a real etcd your
 * application already uses (src/shadow). The application connects to the shadow's URL in place of its
 * etcd and gets the real etcd's answers, unchanged; the simulator answers the same requests in etcd's
 * revision order and every difference is reported.
 *
 *   --etcd-version 3.4|3.5|3.6|3.7      the release the simulator follows (default 3.4)
 *   --divergence-dir DIR                 each divergence as a directory: request, both answers, scenario.json
 *   --fail-on-divergence                 exit 1 at the end when anything diverged (for CI)
 *   --heartbeat-interval / --election-timeout   the real etcd's, in ms (its minimum lease TTL follows them)
 *   --auth-token-ttl S                   the real etcd's, in seconds (a token unused that long is gone on both)
 *   --user NAME:PASSWORD (or --user NAME --password PASSWORD)   the shadow's own user on an etcd with auth on
 *                                        (or ETCDSIM_SHADOW_USER / ETCDSIM_SHADOW_PASSWORD; a prompt on a terminal)
 *
 * While running, a line of totals goes to stderr when they changed (at most every --stats-interval
 * seconds, default 10; with what the simulator holds); SIGTERM or SIGINT stops it, and the per-RPC summary goes to stdout.
 *
 * Exit codes: 0 stopped by a signal, nothing diverged (or no --fail-on-divergence); 1 a divergence with
 * --fail-on-divergence, or the port could not be opened; 2 usage error or the etcd could not be used.
 */
import { read } from 'read';
import { afterHostTime, hostNextTurn } from '../sim/index.js';
import { parseEtcdUrl } from './go_flags.js';
import { ETCD_VERSIONS, isEtcdVersion, type EtcdVersion } from '../etcd/index.js';
import { CliError, type CliIo } from './io.js';
import type { Buffer } from 'node:buffer';
import type { ShadowRetained, ShadowUser, TlsFiles } from '../shadow/index.js';

/** `etcdsim shadow`'s options as commander hands them over. */
export interface ShadowCommandOptions {
  etcd?: string | undefined;
  listenClientUrls: string;
  etcdVersion: string;
  divergenceDir?: string | undefined;
  failOnDivergence?: boolean | undefined;
  heartbeatInterval: string;
  electionTimeout: string;
  authTokenTtl: string;
  statsInterval: string;
  maxSeedBytes: string;
  allowNonLoopback?: boolean | undefined;
  certFile?: string | undefined;
  keyFile?: string | undefined;
  trustedCaFile?: string | undefined;
  etcdCacert?: string | undefined;
  etcdCert?: string | undefined;
  etcdKey?: string | undefined;
  user?: string | undefined;
  password?: string | undefined;
}

/**
 * The variables that stand for --user and --password, named as etcdctl names its own (ETCDCTL_USER,
 * ETCDCTL_PASSWORD: its prefix and the flag's name) with this command's prefix: a password given so stays
 * out of the command line, which `ps` shows to every user of the machine.
 */
export const USER_ENV = 'ETCDSIM_SHADOW_USER';
export const PASSWORD_ENV = 'ETCDSIM_SHADOW_PASSWORD';

/**
 * A flag's value, or its variable's when the flag is not given. Both given is refused in etcd's words
 * (pkg/flags' verifyEnv: etcdctl exits on it), since which one was meant cannot be told.
 */
function flagOrEnv(value: string | undefined, name: string, env: NodeJS.ProcessEnv): string | undefined {
  const v = env[name];
  if (v === undefined || v === '') return value;
  if (value !== undefined) throw new CliError(`conflicting environment variable "${name}" is shadowed by corresponding command-line flag (either unset environment variable or disable flag)`);
  return v;
}

/**
 * --user and --password (or ETCDSIM_SHADOW_USER and ETCDSIM_SHADOW_PASSWORD) as etcdctl reads them:
 * `NAME:PASSWORD` split at the first colon, or with a password given the whole of the user is the name.
 * Given neither way, etcdctl asks for the password ("Password: ", echo off) and so does the shadow, on a
 * terminal (`ask`); etcdctl reads it from a standard input that is no terminal too, but the shadow runs
 * unattended (nohup, a CI job), where that would wait for nobody: it is a usage error there.
 */
export async function userOf(
  o: Pick<ShadowCommandOptions, 'user' | 'password'>,
  env: NodeJS.ProcessEnv = process.env,
  ask: (prompt: string) => Promise<string | undefined> = askPassword,
): Promise<ShadowUser | undefined> {
  const user = flagOrEnv(o.user, USER_ENV, env);
  const password = flagOrEnv(o.password, PASSWORD_ENV, env);
  if (user === undefined) {
    if (password !== undefined) throw new CliError(`--password needs --user NAME (or ${USER_ENV})`);
    return undefined;
  }
  if (password !== undefined) return { name: user, password };
  const colon = user.indexOf(':');
  if (colon >= 0) return { name: user.slice(0, colon), password: user.slice(colon + 1) };
  const asked = await ask('Password: ');
  if (asked === undefined) throw new CliError(`--user ${user}: no password (--user NAME:PASSWORD, --password PASSWORD, ${PASSWORD_ENV}, or typed at the prompt on a terminal)`);
  return { name: user, password: asked };
}

/**
 * The password typed on the terminal, not echoed, up to Enter: npm's `read` (readline on the terminal, in raw
 * mode from before the prompt shows, its echo muted), the prompt on stderr. Undefined without a terminal, or
 * when the typing is given up: Ctrl-C (read's "canceled"), or Ctrl-D on nothing, where readline closes
 * without a line and read would wait on — its close pauses stdin, and a pause not followed on the same turn
 * by the typed line gives up.
 */
async function askPassword(prompt: string): Promise<string | undefined> {
  const stdin = process.stdin;
  if (stdin.isTTY !== true) return undefined;
  const closed = new Promise<undefined>((resolve) => stdin.once('pause', () => hostNextTurn(() => resolve(undefined))));
  try {
    return await Promise.race([read({ prompt, silent: true, input: stdin, output: process.stderr, terminal: true }), closed]);
  } catch {
    return undefined;
  } finally {
    stdin.pause();
    process.stderr.write('\n');
  }
}

/** A PEM file's contents, or a usage error naming the flag. */
async function pemFile(flag: string, path: string | undefined): Promise<Buffer | undefined> {
  if (path === undefined) return undefined;
  const { readFileSync } = await import('node:fs');
  try {
    return readFileSync(path);
  } catch (err) {
    throw new CliError(`${flag}: cannot read ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * The TLS of both sides: the listener's as etcd takes it (an https:// URL wants --cert-file and
 * --key-file; on an http:// URL they are ignored with a warning, as etcd ignores them), and the etcd's, used
 * when --etcd is an https:// URL or any --etcd-* file is given.
 */
async function tlsOf(o: ShadowCommandOptions, scheme: string, io: CliIo): Promise<{ tls: TlsFiles | undefined; etcdTls: TlsFiles | undefined }> {
  let tls: TlsFiles | undefined;
  if (scheme === 'https') {
    if (o.certFile === undefined || o.keyFile === undefined) throw new CliError('--listen-client-urls: an https:// URL needs --cert-file and --key-file');
    tls = { cert: await pemFile('--cert-file', o.certFile), key: await pemFile('--key-file', o.keyFile), ca: await pemFile('--trusted-ca-file', o.trustedCaFile) };
  } else if (o.certFile !== undefined || o.keyFile !== undefined || o.trustedCaFile !== undefined) {
    io.err('etcdsim shadow: --cert-file, --key-file and --trusted-ca-file are ignored on an http:// --listen-client-urls');
  }
  const upstream = /^https:\/\//.test(o.etcd ?? '') || o.etcdCacert !== undefined || o.etcdCert !== undefined || o.etcdKey !== undefined;
  const etcdTls = upstream ? { ca: await pemFile('--etcd-cacert', o.etcdCacert), cert: await pemFile('--etcd-cert', o.etcdCert), key: await pemFile('--etcd-key', o.etcdKey) } : undefined;
  return { tls, etcdTls };
}

function int(name: string, v: string, min: number): number {
  const n = /^\s*\d+\s*$/.test(v) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < min) throw new CliError(`${name} must be an integer >= ${min}, got ${JSON.stringify(v)}`);
  return n;
}

export async function executeShadow(o: ShadowCommandOptions, io: CliIo, signals: NodeJS.EventEmitter = process): Promise<number> {
  if (o.etcd === undefined || o.etcd.trim() === '') throw new CliError('--etcd HOST:PORT is required: the real etcd to shadow');
  const etcd = o.etcd.replace(/^https?:\/\//, '');
  if (!isEtcdVersion(o.etcdVersion)) throw new CliError(`--etcd-version must be one of ${ETCD_VERSIONS.join(', ')}, got ${JSON.stringify(o.etcdVersion)}`);
  let url;
  try {
    url = parseEtcdUrl(o.listenClientUrls);
  } catch (err) {
    throw new CliError(`invalid value ${JSON.stringify(o.listenClientUrls)} for flag --listen-client-urls: ${err instanceof Error ? err.message : String(err)}`);
  }
  const { tls, etcdTls } = await tlsOf(o, url.scheme, io);
  const { isLoopback } = await import('../grpc/server.js');
  if (!isLoopback(url.host) && o.allowNonLoopback !== true) throw new CliError(`--listen-client-urls: ${url.host} is not a loopback address (--allow-non-loopback to bind it)`);
  const heartbeatMs = int('--heartbeat-interval', o.heartbeatInterval, 1);
  const electionMs = int('--election-timeout', o.electionTimeout, 1);
  const authTokenTtlMs = int('--auth-token-ttl', o.authTokenTtl, 1) * 1000;
  const statsMs = int('--stats-interval', o.statsInterval, 1) * 1000;
  const maxSeedBytes = int('--max-seed-bytes', o.maxSeedBytes, 1);
  const user = await userOf(o);
  const { startShadow } = await import('../shadow/index.js');
  let shadow;
  try {
    shadow = await startShadow({
      etcd,
      host: url.host,
      port: url.port === '' ? 0 : Number(url.port),
      etcdVersion: o.etcdVersion as EtcdVersion,
      heartbeatMs,
      electionMs,
      authTokenTtlMs,
      divergenceDir: o.divergenceDir,
      maxSeedBytes,
      tls,
      etcdTls,
      user,
      onDivergence: (where, dir) => io.err(`etcdsim shadow: divergence in ${where}${dir === undefined ? '' : ` (written to ${dir})`}`),
    });
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    throw new CliError(/EADDRINUSE|EACCES|EADDRNOTAVAIL/.test(msg) ? `cannot listen on ${url.host}:${url.port}: ${msg}` : `cannot use the etcd at ${etcd}: ${msg.split('\n')[0]}`, /EADDR|EACCES/.test(msg) ? 1 : 2);
  }
  io.out(`etcdsim shadowing the etcd at ${etcd} on ${shadow.endpoint}`);
  let last = '';
  let timer: { cancel(): void } | undefined;
  const tick = (): void => {
    const line = `${shadow.report.line()}, ${holding(shadow.retained())}`;
    if (line !== last) io.err(line);
    last = line;
    timer = afterHostTime(statsMs, tick);
  };
  timer = afterHostTime(statsMs, tick);
  await new Promise<void>((resolve) => {
    signals.once('SIGINT', resolve);
    signals.once('SIGTERM', resolve);
  });
  timer.cancel();
  await shadow.drained(2000);
  await shadow.close();
  for (const l of shadow.report.summary()) io.out(l);
  return o.failOnDivergence === true && shadow.report.divergences > 0 ? 1 : 0;
}

/**
 * What the shadow holds, on its live line: the revisions and bytes its simulator retains (what etcd keeps:
 * flat under a long run once etcd compacts) and where it is compacted — read by the shadow bench.
 */
function holding(r: ShadowRetained): string {
  return `holding ${r.revisions} revisions (${r.bytes} bytes), compacted at ${r.compactRevision}`;
}

/** `etcdsim diff --replay FILE`: the scenario's requests through a fresh shadow on `address`; 1 when they diverge. */
export async function replayFile(file: string, address: string, etcdVersion: EtcdVersion, timing: { heartbeatMs?: number; electionMs?: number }, io: CliIo): Promise<number> {
  const { readFileSync } = await import('node:fs');
  const { parseScenario, replayScenario } = await import('../shadow/index.js');
  let scenario;
  try {
    scenario = parseScenario(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new CliError(`--replay ${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!scenario.complete) io.err(`etcdsim diff: ${file} does not start from a fresh etcd (older steps were dropped, or the etcd held data when the shadow started); the replay may not reach the same state`);
  const r = await replayScenario(scenario, address, { etcdVersion, ...timing });
  io.out(`replayed ${r.steps} requests of ${file} against etcd ${address} and the simulator (${etcdVersion})`);
  for (const l of r.report.summary()) io.out(l);
  for (const d of r.divergences) io.out(`divergence: ${d}`);
  return r.divergences.length > 0 ? 1 : 0;
}
