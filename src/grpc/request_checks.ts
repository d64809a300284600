/**
 * Requests checked as etcd's decoder checks them (gogo's generated Unmarshal, gogo_check.ts, or from 3.7
 * protobuf-go, protobuf_go_check.ts; request_decoding.ts picks) before protobuf.js
 * decodes them, for every service serve() registers: a body etcd would refuse becomes a MalformedRequest,
 * which the handler answers with Go's error text instead of running the call.
 */
import type * as grpc from '@grpc/grpc-js';
import type { RequestCheck } from './request_decoding.js';
import { installVarintFix } from './protobuf_varint.js';

/** What a request deserializer returns for bytes etcd cannot decode; the handler refuses the call with Go's error text. */
export class MalformedRequest {
  constructor(readonly error: string) {}
}

/** grpc-go's status text for a unary request it cannot decode (code INTERNAL). */
export function unaryUnmarshalError(req: MalformedRequest): string {
  return `grpc: error unmarshalling request: ${req.error}`;
}

/** `def` with every request checked by `checkFor(its request message's name)` before it is decoded. */
export function withRequestChecks(def: grpc.ServiceDefinition, checkFor: (requestType: string) => RequestCheck): grpc.ServiceDefinition {
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
        if (typeof err === 'string') return new MalformedRequest(err);
        try {
          // protobuf-go's decoding may leave fields out (a known field with another wire type): decode the rest.
          return decode(err === undefined ? buf : Buffer.from(err.buffer, err.byteOffset, err.byteLength));
        } catch (e) {
          // Not expected: what gogo accepts, protobuf.js decodes.
          return new MalformedRequest(e instanceof Error ? e.message : String(e));
        }
      },
    };
  }
  return out;
}
