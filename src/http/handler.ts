/**
 * The HTTP side of etcd's client port (its `/` mux behind the access controller), for one member:
 *
 * - every answer carries etcd's CORS headers (etcd's default --cors is `*`), and OPTIONS answers 200 empty;
 * - `/health` (GET): `{"health":"true"}` (3.6+ adds `"reason":""`) — a single simulated member always has a
 *   leader; any raised alarm whose type `?exclude=` does not name makes it `503 {"health":"false"}` (3.6+:
 *   with `"reason":"ALARM NOSPACE"`), NOSPACE included on every release; other methods 405 with `Allow: GET`;
 * - `/version` (GET): `{"etcdserver":"3.4.23","etcdcluster":"3.4.0"}` from the member's version;
 * - `/livez`, `/readyz` and their checks (3.5+ profiles; 404 on 3.4, as 3.4.23 answers): `ok`, and with
 *   `?verbose` each check's line first; readyz's data_corruption fails (503, every check's line) while a
 *   CORRUPT alarm is raised;
 * - `/metrics`: Prometheus text (metrics.ts);
 * - `/v3/...` (and `/v3beta/...` on 3.4 and 3.5): the gRPC gateway (gateway.ts);
 * - anything else: Go's `404 page not found`.
 */
import { posix } from 'node:path';
import { gatewayBodyLimit } from './request_body.js';
import { goSniffs } from './go_server.js';
import { createGateway, plainError, type Gateway, type HttpRequest, type HttpResponse } from './gateway.js';
import { clusterVersionOf, createMemberMetrics, type MemberMetrics } from './metrics.js';
import { type EtcdServer, type MemberView, serverCompat, ALARM_CORRUPT, alarmTypeName } from '../server/index.js';

/** What serve() needs of the HTTP side: a request handler and a way to stop it. */
export interface ClientHttp {
  handle(req: HttpRequest, res: HttpResponse): void;
  /** Ends open gateway streams and stops the metrics' listeners. */
  close(): void;
}

/** etcd 3.5's readiness checks (health.go), in a fixed order (etcd lists them in Go's map order); 3.6 adds non_learner. */
const READYZ_CHECKS_35 = ['data_corruption', 'serializable_read', 'linearizable_read'] as const;
const READYZ_CHECKS = [...READYZ_CHECKS_35, 'non_learner'] as const;
const LIVEZ_CHECKS = ['serializable_read'] as const;

/**
 * The HTTP handler of a member's client port (create it with the member: its counters see every commit).
 * The gateway calls `served` (default: the member itself; a cluster member's services otherwise).
 */
export function createClientHttp(s: EtcdServer, served: () => MemberView = () => s, opts: { readonly maxConcurrentStreams?: number | undefined } = {}): ClientHttp {
  const metrics: MemberMetrics = createMemberMetrics(s);
  const gateway: Gateway = createGateway(served, gatewayBodyLimit(s.mvcc.maxRequestBytes), opts.maxConcurrentStreams);
  return {
    handle(req, res) {
      res.setHeader('Access-Control-Allow-Methods', 'POST, GET, OPTIONS, PUT, DELETE');
      res.setHeader('Access-Control-Allow-Origin', '*');
      res.setHeader('Access-Control-Allow-Headers', 'accept, content-type, authorization');
      if (req.method === 'OPTIONS') {
        res.writeHead(200, { 'Content-Length': 0 });
        res.end();
        return;
      }
      // The request target as sent (not resolved as a URL: `//x` is a path here, not a host).
      const target = req.url ?? '/';
      // Go's ServeMux refuses `*` for any method but OPTIONS (answered above), closing the connection.
      if (target === '*') {
        res.writeHead(400, { Connection: 'close', 'Content-Length': 0 });
        res.end();
        return;
      }
      const q = target.indexOf('?');
      let path = q < 0 ? target : target.slice(0, q);
      const query = new URLSearchParams(q < 0 ? '' : target.slice(q + 1));
      // etcd's access controller rewrites /v3beta/ to /v3/.
      if (serverCompat(s.etcdVersion).gatewayServesV3beta && path.startsWith('/v3beta/')) path = `/v3/${path.slice('/v3beta/'.length)}`;
      // Go's ServeMux answers a path that is not in clean form (`//health`, `/./health`) with a redirect to it;
      // a CONNECT's target (`host:port`) is left as it is.
      const clean = req.method === 'CONNECT' ? path : cleanPath(path);
      if (clean !== path) return redirect(req, res, q < 0 || q === target.length - 1 ? clean : `${clean}?${target.slice(q + 1)}`);
      if (path.startsWith('/v3/')) {
        // etcd's access controller: with --client-cert-auth and auth enabled, a gateway request over TLS whose
        // verified client certificate names a CN is refused (the gateway would not pass the CN on).
        if (s.clientCertAuth && s.auth.enabled && verifiedCommonName(req) !== '') {
          plainError(res, 400, 'CommonName of client sending a request against gateway will be ignored and not used as expected');
          return;
        }
        if (!gateway.handle(path.slice('/v3/'.length), req, res)) plainError(res, 404, 'Not Found');
        return;
      }
      if (path === '/health') return health(s, metrics, req, res, query);
      if (path === '/version') return version(s, req, res);
      if (path === '/metrics') {
        metrics.scrape().then(
          ({ body, contentType }) => {
            res.writeHead(200, { 'Content-Type': contentType });
            res.end(body);
          },
          (err: unknown) => plainError(res, 500, err instanceof Error ? err.message : String(err)),
        );
        return;
      }
      const probes = serverCompat(s.etcdVersion).probes;
      if (probes !== 'none') {
        const probe = probeChecks(path, probes === '3.5' ? READYZ_CHECKS_35 : READYZ_CHECKS);
        if (probe !== undefined) return healthProbe(s, probe, req, res, query);
      }
      plainError(res, 404, '404 page not found');
    },
    close() {
      gateway.closeStreams();
      metrics.close();
    },
  };
}

/** What /health says of an alarm of each type (etcd 3.6's checkAlarms). */
const ALARM_REASONS: Readonly<Record<string, string>> = { NOSPACE: 'ALARM NOSPACE', CORRUPT: 'ALARM CORRUPT' };

/**
 * etcd's first /health check (checkAlarms): the reason a raised alarm whose type `?exclude=` does not name
 * (NOSPACE is not left out by default on any release) makes the member unhealthy, or undefined.
 */
export function alarmUnhealthy(s: EtcdServer, query: URLSearchParams): string | undefined {
  const excluded = new Set(query.getAll('exclude').filter((x) => x !== ''));
  const alarm = s.services.maintenance.alarms.list().find((a) => !excluded.has(alarmTypeName(a.type)));
  return alarm === undefined ? undefined : (ALARM_REASONS[alarmTypeName(alarm.type)] ?? 'ALARM UNKNOWN');
}

/** An unhealthy /health answer as Go's http.Error writes it; releases whose health carries a reason (3.6+) name it. */
export function answerUnhealthy(s: EtcdServer, res: HttpResponse, reason: string): void {
  plainError(res, 503, serverCompat(s.etcdVersion).healthReason ? `{"health":"false","reason":${JSON.stringify(reason)}}` : '{"health":"false"}');
}

function health(s: EtcdServer, metrics: MemberMetrics, req: HttpRequest, res: HttpResponse, query: URLSearchParams): void {
  if (req.method !== 'GET') {
    plainError(res, 405, 'Method Not Allowed', { Allow: 'GET' });
    return;
  }
  const alarm = alarmUnhealthy(s, query);
  if (alarm !== undefined) {
    metrics.healthChecked(false);
    answerUnhealthy(s, res, alarm);
    return;
  }
  // A single simulated member has a leader (itself) and answers reads: healthy.
  metrics.healthChecked(true);
  const body = serverCompat(s.etcdVersion).healthReason ? '{"health":"true","reason":""}' : '{"health":"true"}';
  // etcd's health handler sets no Content-Type: Go sniffs this one from the body.
  goSniffs(res);
  res.writeHead(200, { 'Content-Length': Buffer.byteLength(body), 'Content-Type': 'text/plain; charset=utf-8' });
  res.end(body);
}

function version(s: EtcdServer, req: HttpRequest, res: HttpResponse): void {
  if (req.method !== 'GET') {
    plainError(res, 405, 'Method Not Allowed', { Allow: 'GET' });
    return;
  }
  const body = JSON.stringify({ etcdserver: s.member.version, etcdcluster: clusterVersionOf(s.member.version) });
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

/** The checks a /livez or /readyz path runs, or undefined for another path. */
function probeChecks(path: string, readyz: readonly string[]): readonly string[] | undefined {
  for (const [root, checks] of [['/livez', LIVEZ_CHECKS], ['/readyz', readyz]] as const) {
    if (path === root) return checks;
    for (const c of checks) if (path === `${root}/${c}`) return [c];
  }
  return undefined;
}

function healthProbe(s: EtcdServer, checks: readonly string[], req: HttpRequest, res: HttpResponse, query: URLSearchParams): void {
  if (req.method !== 'GET') {
    plainError(res, 405, 'Method Not Allowed', { Allow: 'GET' });
    return;
  }
  const excluded = new Set(query.getAll('exclude'));
  // Reads are always served on a single simulated member; data_corruption fails while a CORRUPT alarm is raised.
  const corrupt = s.services.maintenance.alarms.list(ALARM_CORRUPT).length > 0;
  const line = (c: string): string => (c === 'data_corruption' && corrupt ? `[-]${c} failed: alarm activated: CORRUPT\n` : `[+]${c} ok\n`);
  const lines = (checks.length > 1 ? checks.filter((c) => !excluded.has(c)) : checks).map(line);
  // A failed check: 503 with every check's line, verbose or not (etcd's newHealthHandler, through http.Error).
  if (lines.some((l) => l.startsWith('[-]'))) {
    plainError(res, 503, lines.join(''));
    return;
  }
  const body = (query.has('verbose') ? lines.join('') : '') + 'ok\n';
  res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

/**
 * Go's ServeMux's cleanPath: one leading slash, no empty, `.` or `..` segments, a trailing slash kept
 * (path.posix.normalize folds the same segments and keeps the trailing slash).
 */
function cleanPath(p: string): string {
  if (p === '') return '/';
  return posix.normalize(p.startsWith('/') ? p : `/${p}`);
}

/** Go's http.Redirect with 301: the Location, and for a GET a small HTML body naming it. */
function redirect(req: HttpRequest, res: HttpResponse, location: string): void {
  const headers: Record<string, string | number> = { Location: location };
  if (req.method === 'GET' || req.method === 'HEAD') headers['Content-Type'] = 'text/html; charset=utf-8';
  const body = req.method === 'GET' ? `<a href="${htmlEscape(location)}">Moved Permanently</a>.\n\n` : '';
  headers['Content-Length'] = Buffer.byteLength(body);
  res.writeHead(301, headers);
  res.end(body);
}

/** Go's html.EscapeString for the five characters it escapes. */
function htmlEscape(s: string): string {
  return s.replace(/[&'<>"]/g, (c) => ({ '&': '&amp;', "'": '&#39;', '<': '&lt;', '>': '&gt;', '"': '&#34;' })[c]!);
}

/** The CN of the client certificate the TLS handshake verified ('' without one, or without a CN). */
function verifiedCommonName(req: HttpRequest): string {
  const sock = req.socket as { authorized?: unknown; getPeerCertificate?: () => { subject?: Record<string, unknown> } } | null;
  if (sock?.authorized !== true || typeof sock.getPeerCertificate !== 'function') return '';
  const cn = sock.getPeerCertificate().subject?.['CN'];
  if (Array.isArray(cn)) return String(cn[cn.length - 1] ?? '');
  return typeof cn === 'string' ? cn : '';
}
