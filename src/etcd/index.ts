/**
 * What every floor shares and no floor owns, a leaf importing nothing: etcd's error contract (gRPC codes,
 * EtcdError) and the one list of etcd releases.
 */
export { GrpcCode, EtcdError, errorKind, fail, isEtcdError, type EtcdErrorKind } from './errors.js';
export { ETCD_RELEASES, ETCD_VERSIONS, DEFAULT_ETCD_VERSION, isEtcdVersion, type EtcdVersion } from './versions.js';
