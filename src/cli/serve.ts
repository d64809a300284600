/** `etcdsim serve`: flags (named like etcd's) → serve() options, and the process lifecycle. */
import { readFileSync } from 'node:fs';
import { serve, type ServeOptions } from '../grpc/server.js';
import type { EtcdVersion } from '../mvcc/index.js';

export { SERVE_FLAG_DEFAULTS, type ServeFlags } from './serve_flags.js';
import type { ServeFlags } from './serve_flags.js';

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A Go-style duration ("10m", "5s", "500ms", "1h") in ms. */
export function parseDuration(v: string): number {
  const m = DURATION.exec(v.trim());
  if (m === null) throw new Error(`invalid duration ${JSON.stringify(v)} (examples: 10m, 5s, 500ms)`);
  const ms = Number(m[1]) * (UNIT_MS[m[2] ?? 'ms'] ?? 1);
  if (!Number.isSafeInteger(ms) || ms <= 0) throw new Error(`duration ${JSON.stringify(v)} must be a positive whole number of ms`);
  return ms;
}

/**
 * Validates the flags and turns them into serve() options (throws with a message for the user); `warn`
 * gets what etcd only warns about (default: stderr).
 */
export function parseServeFlags(f: ServeFlags, warn: (msg: string) => void = (m) => console.error(`etcdsim serve: ${m}`)): ServeOptions {
  const urls = f.listenClientUrls.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (urls.length !== 1) throw new Error('--listen-client-urls: exactly one URL is supported');
  let url: URL;
  try {
    url = new URL(urls[0] ?? '');
  } catch {
    throw new Error(`--listen-client-urls: not a URL: ${JSON.stringify(urls[0])}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('--listen-client-urls: scheme must be http or https');
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = url.port === '' ? 2379 : Number(url.port);
  const tlsWanted = url.protocol === 'https:';
  if ((f.certFile === undefined) !== (f.keyFile === undefined)) throw new Error('--cert-file and --key-file go together');
  if (tlsWanted && f.certFile === undefined) throw new Error('an https:// listen URL needs --cert-file and --key-file');
  // etcd serves plaintext on an http:// URL and only warns that the key/cert files are ignored.
  if (!tlsWanted && f.certFile !== undefined) warn(`the scheme of client url ${urls[0] ?? ''} is HTTP while key/cert files are presented: ignoring them`);
  const seed = /^\d+$/.test(f.seed) ? BigInt(f.seed) : undefined;
  if (seed === undefined) throw new Error('--seed must be a non-negative integer');
  const clockSpeed = Number(f.clockSpeed);
  if (!(Number.isFinite(clockSpeed) && clockSpeed > 0)) throw new Error('--clock-speed must be a positive number');
  if (f.heartbeatInterval <= 0) throw new Error('--heartbeat-interval must be positive');
  if (f.electionTimeout < 5 * f.heartbeatInterval) throw new Error('--election-timeout should be at least 5 times --heartbeat-interval (etcd)');
  return {
    host,
    port,
    allowNonLoopback: f.allowNonLoopback,
    memberName: f.name,
    maxTxnOps: f.maxTxnOps,
    maxRequestBytes: f.maxRequestBytes,
    watchProgressNotifyIntervalMs: parseDuration(f.experimentalWatchProgressNotifyInterval),
    heartbeatIntervalMs: f.heartbeatInterval,
    electionTicks: Math.floor(f.electionTimeout / f.heartbeatInterval),
    seed,
    clockSpeed,
    etcdVersion: f.etcdVersion as EtcdVersion,
    authTokenTTL: f.authTokenTtl,
    authHashCost: f.bcryptCost,
    clientUrls: f.advertiseClientUrls?.split(',').map((s) => s.trim()),
    tls:
      !tlsWanted || f.certFile === undefined || f.keyFile === undefined
        ? undefined
        : {
            cert: readFileSync(f.certFile),
            key: readFileSync(f.keyFile),
            ca: f.trustedCaFile === undefined ? undefined : readFileSync(f.trustedCaFile),
            clientCertAuth: f.clientCertAuth === true,
          },
  };
}

/** Serves until SIGINT/SIGTERM; prints one line (the endpoint) when ready. */
export async function runServe(opts: ServeOptions): Promise<void> {
  let handle;
  try {
    handle = await serve(opts);
  } catch (err) {
    console.error(`etcdsim serve: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
    return;
  }
  const h = handle;
  console.log(`etcdsim serving etcd v3 API on ${h.endpoint}`);
  const stop = (): void => {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    void h.close().then(() => {
      process.exitCode = 0;
    });
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
