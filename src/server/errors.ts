/**
 * The one place where an etcd error becomes what a gRPC call surfaces. grpc-js rejects a call with a
 * plain `Error` carrying the numeric status `code`, the server's message as `details`, the trailing
 * `metadata`, and `message = "<code> <NAME>: <details>"` (grpc-js callErrorFromStatus). The `etcd3`
 * client re-types only errors whose constructor is exactly `Error` (its castGrpcError), so these are
 * plain Errors, not a subclass: `GRPCOutOfRangeError`, `EtcdLeaseInvalidError`, ... come out as they do
 * against a real etcd.
 */
import { EtcdError, GrpcCode } from '../etcd/index.js';

/** Status names by code, as grpc-js spells them in messages (its `Status` enum). */
const STATUS_NAMES: readonly string[] = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
];

/** @public */
export function statusName(code: number): string {
  return STATUS_NAMES[code] ?? 'UNKNOWN';
}

/** The trailing metadata of a failed call: this simulator sends none. @public */
export interface GrpcMetadata {
  get(key: string): unknown[];
  getMap(): Record<string, unknown>;
}

/** What a rejected gRPC call gives the client: an `Error` (constructor exactly `Error`) with these fields. @public */
export interface GrpcError extends Error {
  readonly code: number;
  readonly details: string;
  readonly metadata: GrpcMetadata;
}

const EMPTY_METADATA: GrpcMetadata = Object.freeze({
  get: (): unknown[] => [],
  getMap: (): Record<string, unknown> => ({}),
});

/** A grpc-js-shaped call error; `cause` keeps the error it came from, for debugging. @public */
export function grpcError(code: number, details: string, cause?: unknown): GrpcError {
  const err = new Error(`${code} ${statusName(code)}: ${details}`) as Error & {
    code: number;
    details: string;
    metadata: GrpcMetadata;
  };
  err.code = code;
  err.details = details;
  err.metadata = EMPTY_METADATA;
  if (cause !== undefined) Object.defineProperty(err, 'cause', { value: cause, enumerable: false, configurable: true, writable: true });
  return err;
}

/**
 * Maps anything a service threw to the gRPC error a client would see: an EtcdError keeps its code and
 * etcd's exact message as details; a GrpcError passes unchanged; anything else is what etcd's
 * togRPCError does with an unmapped error: Unknown with the error's text.
 */
export function toGrpcError(err: unknown): GrpcError {
  if (err instanceof EtcdError) return grpcError(err.code, err.message, err);
  if (isGrpcError(err)) return err;
  if (err instanceof Error) return grpcError(GrpcCode.UNKNOWN, err.message, err);
  return grpcError(GrpcCode.UNKNOWN, String(err), err);
}

/** @public */
export function isGrpcError(err: unknown): err is GrpcError {
  return (
    err instanceof Error &&
    err.constructor === Error &&
    typeof (err as { code?: unknown }).code === 'number' &&
    typeof (err as { details?: unknown }).details === 'string'
  );
}

/** A call in flight on a member that crashed: grpc-go's closed-transport error. */
export const errTransportClosing = (): GrpcError => grpcError(GrpcCode.UNAVAILABLE, 'transport is closing');

/** A request whose shape no protobuf decoder would produce (e.g. "abc" in an int64 field). */
export function invalidArgument(details: string): GrpcError {
  return grpcError(GrpcCode.INVALID_ARGUMENT, details);
}

/** What the client side of a stream sees when the stream is canceled (grpc-js's "Cancelled on client"). */
export function cancelledError(details = 'Cancelled on client'): GrpcError {
  return grpcError(GrpcCode.CANCELLED, details);
}

/** Runs `fn`, rethrowing whatever it throws as the gRPC error a client would see. */
export function asGrpc<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw toGrpcError(err);
  }
}
