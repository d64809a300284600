/**
 * Who makes a call: what a gRPC request carries beside its message. Every service method takes it as an
 * optional last argument; server mode fills it from the `token` metadata and, over TLS with client-cert-auth,
 * from the client certificate; the in-process etcd3 adapter and raw client from the token they got from
 * Auth.Authenticate. No context (or neither field) is a call without credentials, which is all a call needs
 * while auth is disabled.
 */
import type { AuthInfo } from '../auth/index.js';
import type { TxnRequest } from '../mvcc/index.js';

/** Who makes a call: the credentials and options a request carries beside its message. @public */
export interface CallContext {
  /** The simple token from Auth.Authenticate (gRPC metadata `token`). */
  readonly token?: string | undefined;
  /**
   * The Common Name of the verified client certificate the call came over ('' for a certificate without
   * one; with several CN attributes, the last, as Go's crypto/x509 reads it). Undefined without a verified
   * client certificate. The member takes it as the user name only when it was started with client-cert-auth
   * (EtcdServerOptions.clientCertAuth) and the call carries no token (etcd's AuthInfoFromTLS).
   */
  readonly certCommonName?: string | undefined;
  /**
   * The call requires a leader (clientv3.WithRequireLeader; gRPC metadata `hasleader: true`). A member of a
   * simulated cluster refuses it without a leader and cancels such a stream after it stayed leaderless
   * (src/cluster/require_leader.ts); a single member always has one.
   */
  readonly requireLeader?: boolean | undefined;
}

/** Whether a call asked for a leader (clientv3.WithRequireLeader). */
export function requiresLeader(ctx: CallContext | undefined): boolean {
  return ctx?.requireLeader === true;
}

/**
 * The context of a request applied from a Raft entry: the caller the proposing member resolved before it
 * proposed (etcd puts the user name in the entry's header), so every member checks the same user's
 * permissions whatever tokens it holds.
 */
export interface AppliedCallContext extends CallContext {
  readonly appliedAuthInfo: AuthInfo | undefined;
  /**
   * A Txn as the proposing member converted it from its message before proposing (etcd's entry carries the
   * request decoded once): every member applies this form, without converting the message again.
   */
  readonly appliedTxn?: TxnRequest | undefined;
}

/** Whether `ctx` is that of a request applied from a Raft entry (so the proposing member checked it first). */
export function isApplied(ctx: CallContext | undefined): ctx is AppliedCallContext {
  return ctx !== undefined && 'appliedAuthInfo' in ctx;
}

/** The Txn a proposing member converted, when `ctx` is that of a Txn applied from a Raft entry. */
export function appliedTxn(ctx: CallContext | undefined): TxnRequest | undefined {
  return isApplied(ctx) ? ctx.appliedTxn : undefined;
}
