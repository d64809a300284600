/** etcd's lease errors (server/lease), with the gRPC codes v3rpc maps them to (rpctypes). */
import { errorKind, GrpcCode } from '../etcd/index.js';

/** Also the store's: a put naming a lease the lessor does not know. */
export { ErrLeaseNotFound } from '../mvcc/index.js';
/** @public */
export const ErrLeaseExist = errorKind(GrpcCode.FAILED_PRECONDITION, 'etcdserver: lease already exists');
/** @public */
export const ErrLeaseTTLTooLarge = errorKind(GrpcCode.OUT_OF_RANGE, 'etcdserver: too large lease TTL');
