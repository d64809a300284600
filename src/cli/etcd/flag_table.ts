/**
 * Every flag the etcd binary accepts, 3.4 through 3.7, with the kind of value Go's flag package (or etcd's
 * own flag types) reads for it and what the simulator does with it. A harness that starts `etcd` passes any
 * of them; each is parsed and refused exactly as etcd refuses its value, whatever it means here.
 *
 * `effect` says what a flag does in etcdsim: 'served' flags change behaviour as in etcd; 'accepted' ones have
 * no meaning in a simulator (disk, WAL, snapshots of the raft log, tracing, pprof, the v2 API and its proxy,
 * discovery services, peer transport of a single member) and are read, checked and otherwise ignored —
 * docs/etcd-binary.md lists them with the reason. `since` / `until` bound the releases that know a flag: an
 * older or newer profile refuses it as etcd of that release does (`flag provided but not defined`).
 */
import { ETCD_VERSIONS, type EtcdVersion } from '../../etcd/index.js';

/**
 * How a value is read: Go's bool/uint/int/duration/string, etcd's uint32 (max-concurrent-streams), a
 * comma-separated URL list (types.NewURLs), a comma-separated string list, or one of a fixed set of words.
 */
export type FlagKind = 'bool' | 'uint' | 'int' | 'uint32' | 'duration' | 'string' | 'urls' | 'strings' | 'float' | { readonly oneOf: readonly string[] };

export interface EtcdFlag {
  readonly name: string;
  readonly kind: FlagKind;
  readonly effect: 'served' | 'accepted';
  readonly since?: EtcdVersion | undefined;
  readonly until?: EtcdVersion | undefined;
}

const served = (name: string, kind: FlagKind, since?: EtcdVersion): EtcdFlag => ({ name, kind, effect: 'served', since });
const accepted = (name: string, kind: FlagKind, since?: EtcdVersion, until?: EtcdVersion): EtcdFlag => ({ name, kind, effect: 'accepted', since, until });

/** etcd 3.4's flags (etcdmain/config.go), then what 3.5, 3.6 and 3.7 added. */
export const ETCD_FLAGS: readonly EtcdFlag[] = [
  // Member
  served('config-file', 'string'),
  served('name', 'string'),
  served('data-dir', 'string'),
  accepted('wal-dir', 'string'),
  served('snapshot-count', 'uint'),
  served('heartbeat-interval', 'uint'),
  served('election-timeout', 'uint'),
  served('initial-election-tick-advance', 'bool'),
  served('listen-peer-urls', 'urls'),
  served('listen-client-urls', 'urls'),
  accepted('listen-client-http-urls', 'urls', '3.5'),
  accepted('listen-metrics-urls', 'urls'),
  served('max-snapshots', 'uint'),
  served('max-wals', 'uint'),
  served('quota-backend-bytes', 'int'),
  accepted('backend-batch-interval', 'duration'),
  accepted('backend-batch-limit', 'int'),
  accepted('backend-bbolt-freelist-type', 'string', '3.6'),
  served('max-txn-ops', 'uint'),
  served('max-request-bytes', 'uint'),
  served('grpc-keepalive-min-time', 'duration'),
  accepted('grpc-keepalive-interval', 'duration'),
  accepted('grpc-keepalive-timeout', 'duration'),
  served('max-concurrent-streams', 'uint32'),
  accepted('socket-reuse-port', 'bool', '3.5'),
  accepted('socket-reuse-address', 'bool', '3.5'),
  accepted('unsafe-no-fsync', 'bool'),
  // Clustering
  served('initial-advertise-peer-urls', 'urls'),
  served('advertise-client-urls', 'urls'),
  served('initial-cluster', 'string'),
  served('initial-cluster-token', 'string'),
  served('initial-cluster-state', { oneOf: ['new', 'existing'] }),
  served('strict-reconfig-check', 'bool'),
  served('pre-vote', 'bool'),
  accepted('auto-compaction-retention', 'string'),
  accepted('auto-compaction-mode', 'string'),
  accepted('enable-v2', 'bool', undefined, '3.5'),
  accepted('v2-deprecation', 'string', '3.5'),
  accepted('discovery', 'string'),
  accepted('discovery-fallback', { oneOf: ['exit', 'proxy'] }),
  accepted('discovery-proxy', 'string'),
  accepted('discovery-srv', 'string'),
  accepted('discovery-srv-name', 'string'),
  accepted('discovery-token', 'string', '3.6'),
  accepted('discovery-endpoints', 'string', '3.6'),
  accepted('discovery-dial-timeout', 'duration', '3.6'),
  accepted('discovery-request-timeout', 'duration', '3.6'),
  accepted('discovery-keepalive-time', 'duration', '3.6'),
  accepted('discovery-keepalive-timeout', 'duration', '3.6'),
  accepted('discovery-insecure-transport', 'bool', '3.6'),
  accepted('discovery-insecure-skip-tls-verify', 'bool', '3.6'),
  accepted('discovery-cert', 'string', '3.6'),
  accepted('discovery-key', 'string', '3.6'),
  accepted('discovery-cacert', 'string', '3.6'),
  accepted('discovery-user', 'string', '3.6'),
  accepted('discovery-password', 'string', '3.6'),
  accepted('force-new-cluster', 'bool'),
  accepted('max-learners', 'int', '3.6'),
  // Proxy (etcd's v2 proxy, gone in 3.6)
  accepted('proxy', { oneOf: ['off', 'readonly', 'on'] }, undefined, '3.5'),
  accepted('proxy-failure-wait', 'uint', undefined, '3.5'),
  accepted('proxy-refresh-interval', 'uint', undefined, '3.5'),
  accepted('proxy-dial-timeout', 'uint', undefined, '3.5'),
  accepted('proxy-write-timeout', 'uint', undefined, '3.5'),
  accepted('proxy-read-timeout', 'uint', undefined, '3.5'),
  // Security
  served('cert-file', 'string'),
  served('key-file', 'string'),
  accepted('client-cert-file', 'string', '3.5'),
  accepted('client-key-file', 'string', '3.5'),
  served('client-cert-auth', 'bool'),
  served('client-crl-file', 'string'),
  accepted('client-cert-allowed-hostname', 'string'),
  served('trusted-ca-file', 'string'),
  served('auto-tls', 'bool'),
  accepted('peer-cert-file', 'string'),
  accepted('peer-key-file', 'string'),
  accepted('peer-client-cert-file', 'string', '3.5'),
  accepted('peer-client-key-file', 'string', '3.5'),
  accepted('peer-client-cert-auth', 'bool'),
  accepted('peer-trusted-ca-file', 'string'),
  served('peer-auto-tls', 'bool'),
  accepted('peer-crl-file', 'string'),
  accepted('peer-cert-allowed-cn', 'string'),
  accepted('peer-cert-allowed-hostname', 'string'),
  accepted('experimental-peer-skip-client-san-verification', 'bool'),
  accepted('peer-skip-client-san-verification', 'bool', '3.6'),
  served('cipher-suites', 'strings'),
  served('tls-min-version', 'string', '3.5'),
  served('tls-max-version', 'string', '3.5'),
  served('self-signed-cert-validity', 'uint', '3.5'),
  accepted('cors', 'strings'),
  accepted('host-whitelist', 'strings'),
  // Auth
  served('auth-token', 'string'),
  served('bcrypt-cost', 'uint'),
  served('auth-token-ttl', 'uint'),
  // Logging
  served('logger', 'string'),
  served('log-outputs', 'strings'),
  accepted('log-output', 'strings', undefined, '3.4'),
  served('log-level', 'string'),
  accepted('log-format', 'string', '3.6'),
  accepted('debug', 'bool', undefined, '3.4'),
  accepted('log-package-levels', 'string', undefined, '3.4'),
  accepted('enable-log-rotation', 'bool', '3.5'),
  accepted('log-rotation-config-json', 'string', '3.5'),
  // Profiling and monitoring
  accepted('enable-pprof', 'bool'),
  accepted('metrics', 'string'),
  // Version
  served('version', 'bool'),
  accepted('enable-grpc-gateway', 'bool'),
  // Experimental features (and their 3.6 graduates)
  accepted('experimental-initial-corrupt-check', 'bool'),
  accepted('experimental-corrupt-check-time', 'duration'),
  accepted('corrupt-check-time', 'duration', '3.6'),
  accepted('experimental-compact-hash-check-enabled', 'bool', '3.5'),
  accepted('experimental-compact-hash-check-time', 'duration', '3.5'),
  accepted('compact-hash-check-time', 'duration', '3.6'),
  accepted('experimental-enable-v2v3', 'string', undefined, '3.5'),
  accepted('experimental-backend-bbolt-freelist-type', 'string'),
  served('experimental-enable-lease-checkpoint', 'bool'),
  served('experimental-enable-lease-checkpoint-persist', 'bool'),
  accepted('experimental-compaction-batch-limit', 'int'),
  accepted('compaction-batch-limit', 'int', '3.6'),
  accepted('experimental-compaction-sleep-interval', 'duration', '3.5'),
  accepted('compaction-sleep-interval', 'duration', '3.6'),
  served('experimental-watch-progress-notify-interval', 'duration'),
  served('watch-progress-notify-interval', 'duration', '3.6'),
  accepted('experimental-warning-apply-duration', 'duration'),
  accepted('warning-apply-duration', 'duration', '3.6'),
  accepted('experimental-warning-unary-request-duration', 'duration', '3.5'),
  accepted('warning-unary-request-duration', 'duration', '3.6'),
  accepted('experimental-downgrade-check-time', 'duration', '3.5'),
  accepted('downgrade-check-time', 'duration', '3.6'),
  accepted('experimental-memory-mlock', 'bool', '3.5'),
  accepted('memory-mlock', 'bool', '3.6'),
  accepted('experimental-txn-mode-write-with-shared-buffer', 'bool', '3.5'),
  accepted('experimental-bootstrap-defrag-threshold-megabytes', 'uint', '3.5'),
  accepted('bootstrap-defrag-threshold-megabytes', 'uint', '3.6'),
  accepted('experimental-max-learners', 'int', '3.5'),
  accepted('experimental-wait-cluster-ready-timeout', 'duration', '3.5'),
  served('experimental-snapshot-catchup-entries', 'uint', '3.5'),
  served('snapshot-catchup-entries', 'uint', '3.6'),
  accepted('experimental-stop-grpc-service-on-defrag', 'bool', '3.5'),
  accepted('experimental-local-address', 'string', '3.5'),
  accepted('experimental-enable-distributed-tracing', 'bool', '3.5'),
  accepted('experimental-distributed-tracing-address', 'string', '3.5'),
  accepted('experimental-distributed-tracing-service-name', 'string', '3.5'),
  accepted('experimental-distributed-tracing-instance-id', 'string', '3.5'),
  accepted('experimental-distributed-tracing-sampling-rate', 'int', '3.5'),
  accepted('enable-distributed-tracing', 'bool', '3.6'),
  accepted('distributed-tracing-address', 'string', '3.6'),
  accepted('distributed-tracing-service-name', 'string', '3.6'),
  accepted('distributed-tracing-instance-id', 'string', '3.6'),
  accepted('distributed-tracing-sampling-rate', 'int', '3.6'),
  accepted('feature-gates', 'string', '3.6'),
  // etcd 1.x/2.x flags etcd still accepts and ignores (etcdmain's `ignored` list)
  ...['cluster-active-size', 'cluster-remove-delay', 'cluster-sync-interval', 'config', 'force', 'max-result-buffer', 'max-retry-attempts', 'peer-heartbeat-interval', 'peer-election-timeout', 'retry-interval', 'snapshot', 'v', 'vv', 'experimental-v3demo'].map(
    (name) => accepted(name, 'string'),
  ),
];

const ORDER: readonly EtcdVersion[] = ETCD_VERSIONS;

/** The flags a release knows, by name. */
export function flagsOf(version: EtcdVersion): ReadonlyMap<string, EtcdFlag> {
  const at = ORDER.indexOf(version);
  const known = ETCD_FLAGS.filter((f) => (f.since === undefined || ORDER.indexOf(f.since) <= at) && (f.until === undefined || ORDER.indexOf(f.until) >= at));
  return new Map(known.map((f) => [f.name, f]));
}
