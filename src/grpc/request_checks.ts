/**
 * Requests checked as etcd's gogo-generated Unmarshal checks them (gogo_check.ts) before protobuf.js
 * decodes them, for every service serve() registers: a body etcd would refuse becomes a MalformedRequest,
 * which the handler answers with Go's error text instead of running the call.
 */
import type * as grpc from '@grpc/grpc-js';
import type { GogoCheck } from './gogo_check.js';
import { installVarintFix } from './protobuf_varint.js';

/** What a request deserializer returns for bytes etcd cannot decode; the handler refuses the call with Go's error text. */
export class MalformedRequest {
  constructor(readonly error: string) {}
}

/** `def` with every request checked by `checkFor(its request message's name)` before it is decoded. */
export function withRequestChecks(def: grpc.ServiceDefinition, checkFor: (requestType: string) => GogoCheck): grpc.ServiceDefinition {
  installVarintFix();
  const out: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const [method, m] of Object.entries(def)) {
    const requestType = (m as unknown as { requestType?: { type?: { name?: string } } }).requestType?.type?.name;
    if (requestType === undefined) throw new Error(`etcdsim: no request type for ${method}`);
    const check = checkFor(requestType);
    const decode = m.requestDeserialize;
    out[method] = {
      ...m,
      requestDeserialize: (buf: Buffer): unknown => {
        const err = check(buf);
        if (err !== undefined) return new MalformedRequest(err);
        try {
          return decode(buf);
        } catch (e) {
          // Not expected: what gogo accepts, protobuf.js decodes.
          return new MalformedRequest(e instanceof Error ? e.message : String(e));
        }
      },
    };
  }
  return out;
}
