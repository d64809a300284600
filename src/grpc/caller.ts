/**
 * Who makes a served call, as etcd reads it from the call (its v3rpc interceptors and AuthInfoFromCtx):
 * the simple token from the `token` metadata (or `authorization`), the Common Name of a verified client
 * certificate when --client-cert-auth is on, and clientv3's WithRequireLeader (`hasleader: true`).
 */
import type { PeerCertificate } from 'node:tls';
import type { CallContext } from '../server/index.js';
import type { ServerCall } from './call.js';

/**
 * The caller of a call: etcd reads the simple token from the `token` metadata (or `authorization`) and,
 * when `withCommonName`, the Common Name of the client certificate — only of one the TLS handshake
 * verified (Go's VerifiedChains), and not for a request that came through etcd's gRPC gateway (metadata
 * `grpcgateway-accept`: etcd ignores the CN then).
 */
export function contextOf(call: ServerCall, withCommonName: boolean): CallContext {
  const token = call.header('token') ?? call.header('authorization');
  const cn = withCommonName && call.header('grpcgateway-accept') === undefined ? commonNameOf(call.peerCertificate()) : undefined;
  return requiringLeader(callerContext(token, cn), call.header('hasleader'));
}

/** clientv3's WithRequireLeader: metadata `hasleader: true` (etcd's rpctypes.MetadataRequireLeaderKey / MetadataHasLeader). */
function requiringLeader(ctx: CallContext, hasLeader: string | undefined): CallContext {
  return hasLeader === 'true' ? { ...ctx, requireLeader: true } : ctx;
}

function callerContext(token: string | undefined, cn: string | undefined): CallContext {
  if (cn === undefined) return token === undefined ? {} : { token };
  return token === undefined ? { certCommonName: cn } : { token, certCommonName: cn };
}

/**
 * The verified peer certificate's Common Name: '' when its subject has none; the last of several (Go's
 * pkix.Name keeps the last CN attribute; Node lists them all). Undefined without a verified certificate.
 */
function commonNameOf(cert: PeerCertificate | undefined): string | undefined {
  if (cert === undefined) return undefined;
  const cn: unknown = (cert.subject as Partial<Record<string, unknown>> | undefined)?.['CN'];
  if (typeof cn === 'string') return cn;
  if (Array.isArray(cn)) {
    const last: unknown = cn[cn.length - 1];
    return typeof last === 'string' ? last : '';
  }
  return '';
}
