/**
 * The MVCC store's errors (etcd's server/storage/mvcc and the request checks of v3rpc/key.go), each with
 * the gRPC code and the exact message etcd sends; the contract they follow is src/etcd/errors.ts.
 */
import { GrpcCode, errorKind } from '../etcd/index.js';

// Apply-time errors of the MVCC store (server/storage/mvcc/kvstore.go, mapped by v3rpc/util.go).
/** @public */
export const ErrCompacted = errorKind(GrpcCode.OUT_OF_RANGE, 'etcdserver: mvcc: required revision has been compacted');
/** @public */
export const ErrFutureRev = errorKind(GrpcCode.OUT_OF_RANGE, 'etcdserver: mvcc: required revision is a future revision');
// Request validation (v3rpc/key.go) and txn checks (etcdserver/txn).
/** @public */
export const ErrEmptyKey = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: key is not provided');
/** @public */
export const ErrKeyNotFound = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: key not found');
/** @public */
export const ErrValueProvided = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: value is provided');
/** @public */
export const ErrLeaseProvided = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: lease is provided');
/** @public */
export const ErrTooManyOps = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: too many operations in txn request');
/** @public */
export const ErrDuplicateKey = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: duplicate key given in txn request');
/** @public */
export const ErrInvalidSortOption = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: invalid sort option');
/** @public */
export const ErrRequestTooLarge = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: request is too large');
// A put naming an unknown lease (server/lease/lessor.go via rpctypes); the other lease errors: src/lease/errors.ts.
/** @public */
export const ErrLeaseNotFound = errorKind(GrpcCode.NOT_FOUND, 'etcdserver: requested lease not found');
// Watch errors (server/storage/mvcc/watcher.go); surfaced as cancel reasons, not as RPC failures.
/** @public */
export const ErrEmptyWatcherRange = errorKind(GrpcCode.INVALID_ARGUMENT, 'mvcc: watcher range is empty');
/** @public */
export const ErrWatcherDuplicateID = errorKind(GrpcCode.INVALID_ARGUMENT, 'mvcc: duplicate watch ID provided on the WatchStream');
/** @public */
export const ErrWatcherNotExist = errorKind(GrpcCode.INVALID_ARGUMENT, 'mvcc: watcher does not exist');

// Auth errors: src/auth/errors.ts.
