/**
 * One etcdctl request to the member's services: its response, or the gRPC error etcd returned, becomes the
 * last response, with the lines etcdctl prints for it (`Error: <details>` for an error, as etcdctl 3.4).
 */
import { shouldRefreshToken } from '../../client/retry_policy.js';
import { isGrpcError, type messages as M } from '../../server/index.js';
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
    s.last = { revision: undefined, error: err.details, output: [errorText(err.details)], range: undefined, what };
    return undefined;
  }
}
