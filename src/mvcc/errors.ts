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

function kind(code: GrpcCode, message: string): EtcdErrorKind {
  return Object.freeze({ code, message });
}

// Apply-time errors of the MVCC store (server/storage/mvcc/kvstore.go, mapped by v3rpc/util.go).
export const ErrCompacted = kind(GrpcCode.OUT_OF_RANGE, 'etcdserver: mvcc: required revision has been compacted');
export const ErrFutureRev = kind(GrpcCode.OUT_OF_RANGE, 'etcdserver: mvcc: required revision is a future revision');
// Request validation (v3rpc/key.go) and txn checks (etcdserver/txn).
export const ErrEmptyKey = kind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: key is not provided');
export const ErrKeyNotFound = kind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: key not found');
export const ErrValueProvided = kind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: value is provided');
export const ErrLeaseProvided = kind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: lease is provided');
export const ErrTooManyOps = kind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: too many operations in txn request');
export const ErrDuplicateKey = kind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: duplicate key given in txn request');
export const ErrInvalidSortOption = kind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: invalid sort option');
export const ErrRequestTooLarge = kind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: request is too large');
// Lease errors (server/lease/lessor.go via rpctypes).
export const ErrLeaseNotFound = kind(GrpcCode.NOT_FOUND, 'etcdserver: requested lease not found');
export const ErrLeaseExist = kind(GrpcCode.FAILED_PRECONDITION, 'etcdserver: lease already exists');
export const ErrLeaseTTLTooLarge = kind(GrpcCode.OUT_OF_RANGE, 'etcdserver: too large lease TTL');
// Watch errors (server/storage/mvcc/watcher.go); surfaced as cancel reasons, not as RPC failures.
export const ErrEmptyWatcherRange = kind(GrpcCode.INVALID_ARGUMENT, 'mvcc: watcher range is empty');
export const ErrWatcherDuplicateID = kind(GrpcCode.INVALID_ARGUMENT, 'mvcc: duplicate watch ID provided on the WatchStream');
export const ErrWatcherNotExist = kind(GrpcCode.INVALID_ARGUMENT, 'mvcc: watcher does not exist');

// Auth errors (server/auth/store.go, mapped to api/v3rpc/rpctypes/error.go by v3rpc/util.go togRPCError).
export const ErrRootUserNotExist = kind(GrpcCode.FAILED_PRECONDITION, 'etcdserver: root user does not exist');
export const ErrRootRoleNotExist = kind(GrpcCode.FAILED_PRECONDITION, 'etcdserver: root user does not have root role');
export const ErrUserAlreadyExist = kind(GrpcCode.FAILED_PRECONDITION, 'etcdserver: user name already exists');
export const ErrUserEmpty = kind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: user name is empty');
export const ErrUserNotFound = kind(GrpcCode.FAILED_PRECONDITION, 'etcdserver: user name not found');
export const ErrRoleAlreadyExist = kind(GrpcCode.FAILED_PRECONDITION, 'etcdserver: role name already exists');
export const ErrRoleNotFound = kind(GrpcCode.FAILED_PRECONDITION, 'etcdserver: role name not found');
export const ErrRoleEmpty = kind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: role name is empty');
export const ErrAuthFailed = kind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: authentication failed, invalid user ID or password');
export const ErrPermissionNotGiven = kind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: permission not given');
export const ErrPermissionDenied = kind(GrpcCode.PERMISSION_DENIED, 'etcdserver: permission denied');
export const ErrRoleNotGranted = kind(GrpcCode.FAILED_PRECONDITION, 'etcdserver: role is not granted to the user');
export const ErrPermissionNotGranted = kind(GrpcCode.FAILED_PRECONDITION, 'etcdserver: permission is not granted to the role');
export const ErrAuthNotEnabled = kind(GrpcCode.FAILED_PRECONDITION, 'etcdserver: authentication is not enabled');
export const ErrInvalidAuthToken = kind(GrpcCode.UNAUTHENTICATED, 'etcdserver: invalid auth token');
export const ErrInvalidAuthMgmt = kind(GrpcCode.INVALID_ARGUMENT, 'etcdserver: invalid auth management');
/** auth.ErrNoPasswordUser has no rpctypes mapping: togRPCError sends it as Unknown with the auth package's text. */
export const ErrNoPasswordUser = kind(GrpcCode.UNKNOWN, 'auth: authentication failed, password was given for no password user');

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
