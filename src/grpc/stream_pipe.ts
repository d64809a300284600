/**
 * A service-layer stream call piped into a grpc-js server stream with grpc-js's backpressure: the call
 * stops handing over responses once grpc-js buffers past its high-water mark, and resumes on 'drain' —
 * so a client that does not read holds the server's send path as it would hold etcd's.
 */
import type { BidiStream, FlowControl } from '../server/index.js';

/** The part of a service-layer stream call (WatchCall, KeepAliveCall, ObserveCall) the pipe uses. */
export type PausableCall<Res> = Pick<BidiStream<unknown, Res>, 'onResponse'> & FlowControl;

/** The part of a grpc-js server stream the pipe writes to. */
export interface WritableCall<Res> {
  write(r: Res): boolean;
  once(event: 'drain', listener: () => void): unknown;
}

/** Writes every response of `sc` to `call`, pausing `sc` while `call` is over its high-water mark. */
export function pipeResponses<Res>(sc: PausableCall<Res>, call: WritableCall<Res>): void {
  const resume = (): void => sc.resume();
  sc.onResponse((rs) => {
    let more = true;
    for (const r of rs) more = call.write(r);
    if (!more && !sc.isPaused) {
      sc.pause();
      call.once('drain', resume);
    }
  });
}
