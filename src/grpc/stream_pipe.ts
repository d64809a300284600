/**
 * A service-layer stream call (WatchCall, KeepAliveCall, ObserveCall) piped into a served call's response
 * stream with etcd's backpressure: its send loop blocks while grpc-go's per-stream write quota (64 KiB) is
 * used up, and the quota comes back as the transport puts bytes on the wire within the client's HTTP/2
 * window. So responses are encoded one at a time as they are taken, and the call stops handing them over
 * once the quota is used; what a client does not read then waits in the stream's window and channel, and
 * a Watch's watchers become victims, as in etcd.
 */
import type { BidiStream, FlowControl } from '../server/index.js';
import type { CallResponses } from './call.js';

/** The part of a service-layer stream call the pipe uses. */
export type PausableCall<Res> = Pick<BidiStream<unknown, Res>, 'onResponse'> & FlowControl & { listenerBatch: number };

/** Sends every response of `sc` on `call` as `frame` encodes it, pausing `sc` while the write quota is used up. */
export function pipeResponses<Res>(sc: PausableCall<Res>, call: CallResponses, frame: (r: Res) => Buffer): void {
  sc.listenerBatch = 1;
  sc.onResponse((rs) => {
    let more = true;
    for (const r of rs) more = call.send(frame(r));
    if (!more && !sc.isPaused) sc.pause();
  });
  call.onDrain = () => {
    if (sc.isPaused) sc.resume();
  };
}
