/**
 * How the shadow reads one method's messages off the wire, for each of etcd's two front doors: gRPC's
 * protobuf messages, and the JSON of etcd's gateway (the same messages as grpc-gateway writes them). Both
 * end in the same form — the protobuf message as @grpc/proto-loader decodes it (bytes as Buffers, int64 as
 * decimal strings, enums by name, fields at their defaults present) — so a call that came as JSON is
 * compared, logged and replayed exactly as one that came over gRPC.
 */
import type { Buffer } from 'node:buffer';
import { etcdService } from '../grpc/index.js';
import type { EtcdServiceName } from '../proto/index.js';
import { messageFromJson, readJsonValue, type JsonValue } from '../http/index.js';

/** A method's messages: decoded from the wire, and a response put through the wire form. */
export interface Codec {
  req(b: Buffer): unknown;
  res(b: Buffer): unknown;
  wire(res: unknown): unknown;
  /** etcd's answers are its protobuf bytes (gRPC), which the simulator's can be compared with (wire_answer.ts); the gateway's are JSON. */
  readonly protobuf: boolean;
}

/** One method's protobuf forms, for a path `/etcdserverpb.KV/Range`. */
interface MethodForms {
  readonly codec: Codec;
  /** A request in any form protobufjs's fromObject takes (base64 bytes, numbers for int64) → the decoded form. */
  readonly reqWire: (m: unknown) => unknown;
}

const methods = new Map<string, MethodForms>();

function formsOf(path: string): MethodForms | undefined {
  if (!methods.has(path)) {
    const m = /^\/(?:etcdserverpb|v3lockpb|v3electionpb)\.(\w+)\/(\w+)$/.exec(path);
    let f: MethodForms | null = null;
    if (m !== null) {
      try {
        const methodsOf = etcdService(m[1] as EtcdServiceName).service;
        const def = Object.hasOwn(methodsOf, m[2]!) ? methodsOf[m[2]!] : undefined; // not `constructor` or `__proto__`
        if (def !== undefined) {
          f = {
            codec: { req: (b) => def.requestDeserialize(b), res: (b) => def.responseDeserialize(b), wire: (x) => def.responseDeserialize(def.responseSerialize(x)), protobuf: true },
            reqWire: (x) => def.requestDeserialize(def.requestSerialize(x)),
          };
        }
      } catch {
        f = null;
      }
    }
    // Only etcd's own methods are kept: any path a client sends would otherwise grow the map without bound.
    if (f === null) return undefined;
    methods.set(path, f);
  }
  return methods.get(path) ?? undefined;
}

/** The gRPC codec of the method at `path`; undefined for a path that names none of etcd's methods. */
export function grpcCodec(path: string): Codec | undefined {
  return formsOf(path)?.codec;
}

/**
 * The gateway's codec of the method at `path` (its gRPC path), whose request and response messages are
 * `requestType` and `responseType`. A request body is read as the gateway reads it (json.ts: one JSON value,
 * an empty body an empty request, a 64-bit integer literal kept whole); a response is etcd's JSON as written,
 * or for a stream one line's `result`. Both then go through the protobuf form, so they equal what a gRPC
 * client decodes.
 */
export function jsonCodec(path: string, requestType: string, responseType: string, streamed: boolean): Codec | undefined {
  const f = formsOf(path);
  if (f === undefined) return undefined;
  return {
    req: (b) => {
      const text = b.toString('utf8');
      const r = readJsonValue(text, 0);
      if ('error' in r) throw new Error(r.error);
      if ('incomplete' in r && text.trim() !== '') throw new Error('unexpected EOF');
      return f.reqWire(messageFromJson(requestType, 'value' in r ? r.value : null));
    },
    res: (b) => {
      const v = JSON.parse(b.toString('utf8')) as JsonValue;
      const msg = streamed && v !== null && typeof v === 'object' && !Array.isArray(v) ? (v['result'] ?? null) : v;
      return f.codec.wire(messageFromJson(responseType, msg));
    },
    wire: f.codec.wire,
    protobuf: false,
  };
}
