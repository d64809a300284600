/**
 * What a client of the simulated cluster sees of its network rather than of a member (a member's own
 * errors — no leader, request timed out, … — are etcdserver's: src/server/raft_errors.ts): grpc-go's
 * errors for a member it cannot reach and for its own deadline.
 */
import { GrpcCode } from '../etcd/index.js';
import { grpcError, type GrpcError } from '../server/index.js';

/** What a client sees when its own deadline passes first. */
export const errDeadlineExceeded = (): GrpcError => grpcError(GrpcCode.DEADLINE_EXCEEDED, 'context deadline exceeded');
/** A member that is down: the client's connection is refused (grpc-go's transport error). */
export const errMemberDown = (name: string): GrpcError =>
  grpcError(GrpcCode.UNAVAILABLE, `connection error: desc = "transport: Error while dialing: member ${name} is down"`);
