/**
 * What a member and its front doors do differently between etcd releases, each switch named after the
 * behaviour and citing what changed it (the store's own switches are src/mvcc/compat.ts's; the auth store's
 * are named by its options and set here). One table per release, built once, so a hot path reads a field.
 */
import type { AuthStoreOptions } from '../auth/index.js';
import type { EtcdVersion } from '../mvcc/index.js';

export interface ServerCompat {
  /** The auth store's release switches (each documented on AuthStoreOptions). */
  readonly auth: Required<Pick<AuthStoreOptions, 'rootPermInRoleGet' | 'tokensCheckedWhileDisabled' | 'checksNestedTxns' | 'checksLeaseAccess'>>;
  /** HashKV's hash_revision came with the compaction hash check (3.5.5+); 3.4's message has no such field. */
  readonly hashKVReportsHashRevision: boolean;
  /**
   * 3.4's maintenance auth check returned the auth package's own errors, which its gRPC layer did not map:
   * code 2 with the raw text (`auth: user not found`), as observed on 3.4.23.
   */
  readonly maintenanceAuthErrorsUnmapped: boolean;
  /** 3.4.23 answers Status and Alarm GET to anyone; 3.5's authMaintenanceServer wants an authenticated user. */
  readonly statusOpenToAnyone: boolean;
  /**
   * 3.4's watch server rewrote a create before its permission check (empty key → "\0"; range_end "\0" →
   * none), so a from-key watch needed READ on its key only (observed on 3.4.23).
   */
  readonly watchAuthAfterRewrite: boolean;
  /** MemberUpdate replaces the member's raft attributes whole in 3.4, so a learner becomes a voter (observed). */
  readonly memberUpdateDropsLearner: boolean;
  /** grpc-go 1.33 (etcd 3.4.23) answers a malformed method name RESOURCE_EXHAUSTED; 1.59+ UNIMPLEMENTED. */
  readonly malformedMethodResourceExhausted: boolean;
  /**
   * A bad content-type or grpc-timeout: RST_STREAM PROTOCOL_ERROR from 3.4's grpc-go (observed on 3.4.23);
   * the grpc-go of 3.5+ answers HTTP 415 / 400 with a status (its earlyAbortStream).
   */
  readonly headerErrorsAnswered: boolean;
  /** The gateway's /v3beta/ prefix: rewritten to /v3/ by 3.4 (observed) and 3.5 (its source); gone later. */
  readonly gatewayServesV3beta: boolean;
  /** grpc-gateway v1's error shapes (3.4, 3.5) rather than v2's Status (3.6+). */
  readonly gatewayV1Errors: boolean;
  /** /livez and /readyz: none in 3.4, 3.5's checks, or the later ones. */
  readonly probes: 'none' | '3.5' | '3.6';
  /** /health carries a `reason` from 3.6 on. */
  readonly healthReason: boolean;
}

function build(v: EtcdVersion): ServerCompat {
  const is34 = v === '3.4';
  const upTo35 = v === '3.4' || v === '3.5';
  return Object.freeze({
    auth: Object.freeze({
      // etcd PR #13006 (v3.6): RoleGet of role root answers READWRITE over every key; before, no permission.
      rootPermInRoleGet: !upTo35,
      tokensCheckedWhileDisabled: is34,
      checksNestedTxns: !is34,
      checksLeaseAccess: !is34,
    }),
    hashKVReportsHashRevision: !is34,
    maintenanceAuthErrorsUnmapped: is34,
    statusOpenToAnyone: is34,
    watchAuthAfterRewrite: is34,
    memberUpdateDropsLearner: is34,
    malformedMethodResourceExhausted: is34,
    headerErrorsAnswered: !is34,
    gatewayServesV3beta: upTo35,
    gatewayV1Errors: upTo35,
    probes: is34 ? 'none' : v === '3.5' ? '3.5' : '3.6',
    healthReason: !upTo35,
  });
}

const PROFILES: Readonly<Record<EtcdVersion, ServerCompat>> = {
  '3.4': build('3.4'),
  '3.5': build('3.5'),
  '3.6': build('3.6'),
  '3.7': build('3.7'),
};

/** The server-level switches of an etcd release. */
export function serverCompat(version: EtcdVersion): ServerCompat {
  return PROFILES[version];
}
