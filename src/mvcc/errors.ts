/**
 * etcd's error contract: every error the simulator produces carries the gRPC status code and the exact
 * message etcd sends (api/v3rpc/rpctypes/error.go), so a client sees the same thing it would see from etcd.
 */

/** gRPC status codes (numeric, as on the wire). */
export const GrpcCode = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;
export type GrpcCode = (typeof GrpcCode)[keyof typeof GrpcCode];

/** One kind of etcd error: its gRPC code and the exact message etcd puts in the status details. */
export interface EtcdErrorKind {
  readonly code: GrpcCode;
  readonly message: string;
}

/** Defines an error kind (each layer defines its own: mvcc here, auth and lease in their folders). */
export function errorKind(code: GrpcCode, message: string): EtcdErrorKind {
  return Object.freeze({ code, message });
}

// Apply-time errors of the MVCC store (server/storage/mvcc/kvstore.go, mapped by v3rpc/util.go).
export const ErrCompacted = errorKind(GrpcCode.OUT_OF_RANGE, 'etcdserver: mvcc: required revision has been compacted');
export const ErrFutureRev = errorKind(GrpcCode.OUT_OF_RANGE, 'etcdserver: mvcc: required revision is a future revision');
// Request validation (v3rpc/key.go) and txn checks (etcdserver/txn).
export const ErrEmptyKey = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: key is not provided');
export const ErrKeyNotFound = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: key not found');
export const ErrValueProvided = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: value is provided');
export const ErrLeaseProvided = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: lease is provided');
export const ErrTooManyOps = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: too many operations in txn request');
export const ErrDuplicateKey = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: duplicate key given in txn request');
export const ErrInvalidSortOption = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: invalid sort option');
export const ErrRequestTooLarge = errorKind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: request is too large');
// A put naming an unknown lease (server/lease/lessor.go via rpctypes); the other lease errors: src/lease/errors.ts.
export const ErrLeaseNotFound = errorKind(GrpcCode.NOT_FOUND, 'etcdserver: requested lease not found');
// Watch errors (server/storage/mvcc/watcher.go); surfaced as cancel reasons, not as RPC failures.
export const ErrEmptyWatcherRange = errorKind(GrpcCode.INVALID_ARGUMENT, 'mvcc: watcher range is empty');
export const ErrWatcherDuplicateID = errorKind(GrpcCode.INVALID_ARGUMENT, 'mvcc: duplicate watch ID provided on the WatchStream');
export const ErrWatcherNotExist = errorKind(GrpcCode.INVALID_ARGUMENT, 'mvcc: watcher does not exist');

// Auth errors: src/auth/errors.ts.

/** An error etcd would return: `code` is the gRPC status code, `message` etcd's exact text. */
export class EtcdError extends Error {
  override readonly name = 'EtcdError';
  readonly code: GrpcCode;
  readonly kind: EtcdErrorKind;
  constructor(kind: EtcdErrorKind) {
    super(kind.message);
    this.code = kind.code;
    this.kind = kind;
  }
}

/** Throws the etcd error of the given kind. Typed `never` so callers read as guard clauses. */
export function fail(kind: EtcdErrorKind): never {
  throw new EtcdError(kind);
}

/** True when `err` is an EtcdError of exactly this kind (useful in tests and in the error mapping). */
export function isEtcdError(err: unknown, kind?: EtcdErrorKind): err is EtcdError {
  return err instanceof EtcdError && (kind === undefined || err.kind === kind);
}
