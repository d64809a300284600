/**
 * One etcdctl request to the member's services: its response, or the gRPC error etcd returned, becomes the
 * last response, with the lines etcdctl prints for it: for an error, clientv3's warning on stderr (its retry
 * interceptor logs every failed unary call, retried or not: retry_interceptor.go), then `Error: <details>`,
 * as etcdctl 3.4.23 prints them.
 */
import { shouldRefreshToken } from '../../client/index.js';
import { isGrpcError, statusName } from '../../server/index.js';
import type * as M from '../../server/messages.js';
import { procfileClientPort } from '../parse/cluster_directives.js';
import type { RunState } from './state.js';

/** Runs `fn`; records its header revision and `print`ed lines, or the error, as the last response. */
export function callService<T extends { header: M.ResponseHeader | null }>(
  s: RunState,
  what: string,
  fn: () => T,
  print: (r: T) => string[],
  errorText: (d: string) => string = (d) => `Error: ${d}`,
): T | undefined {
  try {
    let r: T;
    try {
      r = fn();
    } catch (err) {
      // etcdctl's clientv3 (which has the --user credentials) authenticates again and retries when its token is no longer valid.
      if (!isGrpcError(err) || !shouldRefreshToken(err, true) || !s.authenticate()) throw err;
      r = fn();
    }
    const lines = print(r);
    // Some answers carry no header (3.4's Defragment and Alarm): no revision to capture then.
    s.last = { revision: r.header === null ? undefined : Number(r.header.revision), error: undefined, output: lines, range: undefined, what };
    return r;
  } catch (err) {
    if (!isGrpcError(err)) throw err;
    s.last = { revision: undefined, error: err.details, output: [clientWarning(err.code, err.details, s.engine.currentEndpoint() ?? 0), errorText(err.details)], range: undefined, what };
    return undefined;
  }
}

/**
 * The line clientv3 3.4 logs on stderr for a failed unary call (zap's JSON): its time and the client's ID are
 * etcdctl's own each run, so they are shown as `…`; the error is grpc-go's (`code = OutOfRange desc = ...`).
 */
export function clientWarning(code: number, details: string, member: number): string {
  const name = code === 1 ? 'Canceled' : statusName(code).toLowerCase().replace(/(^|_)([a-z])/g, (_m, _u: string, c: string) => c.toUpperCase());
  return JSON.stringify({
    level: 'warn',
    ts: '…',
    caller: 'clientv3/retry_interceptor.go:62',
    msg: 'retrying of unary invoker failed',
    target: `endpoint://client-…/127.0.0.1:${procfileClientPort(member)}`,
    attempt: 0,
    error: `rpc error: code = ${name} desc = ${details}`,
  });
}

/** Whether a printed line is clientv3's log (see clientWarning), not etcdctl's answer: `expect output` leaves it out. */
export function isClientLog(line: string): boolean {
  return line.startsWith('{"level":');
}
