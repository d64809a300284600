/**
 * etcd's error contract, shared by every floor: every error the simulator produces carries the gRPC status
 * code and the exact message etcd sends (api/v3rpc/rpctypes/error.go), so a client sees what it would see
 * from etcd. The kinds themselves live with the rule that raises them (src/mvcc/errors.ts,
 * src/lease/errors.ts, src/auth/errors.ts, ...).
 */

/** gRPC status codes (numeric, as on the wire). @public */
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
/** @public */
export type GrpcCode = (typeof GrpcCode)[keyof typeof GrpcCode];

/** One kind of etcd error: its gRPC code and the exact message etcd puts in the status details. @public */
export interface EtcdErrorKind {
  readonly code: GrpcCode;
  readonly message: string;
}

/** Defines an error kind (each floor defines its own: mvcc, auth and lease in their folders). */
export function errorKind(code: GrpcCode, message: string): EtcdErrorKind {
  return Object.freeze({ code, message });
}

/** An error etcd would return: `code` is the gRPC status code, `message` etcd's exact text. @public */
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

/** True when `err` is an EtcdError of exactly this kind (useful in tests and in the error mapping). @public */
export function isEtcdError(err: unknown, kind?: EtcdErrorKind): err is EtcdError {
  return err instanceof EtcdError && (kind === undefined || err.kind === kind);
}
