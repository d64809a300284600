/**
 * The one entry point of request decoding, in the order etcd's member decodes a request: the release picks
 * its Go decoder (ServerCompat.protobufGoDecoding: gogo's generated Unmarshal up to 3.6, gogo_check.ts;
 * protobuf-go from 3.7, protobuf_go_check.ts), that decoder's checks run on the bytes, and only a request
 * they accept is decoded by protobuf.js (with protobuf_varint.ts's fix of its reader). A body etcd would
 * refuse becomes a MalformedRequest, which the handler answers with Go's error text instead of running the
 * call. checkedService() gives each served service's methods with their requests decoded this way.
 */
import type * as grpc from '@grpc/grpc-js';
import type { PackageDefinition } from '@grpc/proto-loader';
import { etcdPackageDefinition, etcdServiceDefinition, SERVICE_PACKAGES, type EtcdServiceName } from '../proto/index.js';
import type { EtcdVersion } from '../etcd/index.js';
import { serverCompat } from '../server/index.js';
import { compileMessageTables, compileGogoChecks, type GogoCheck, type MessageCheck } from './gogo_check.js';
import { checkProtobufGo, protoErrorPrefix, type RequestCheck } from './protobuf_go_check.js';
import { installVarintFix } from './protobuf_varint.js';

export type { RequestCheck } from './protobuf_go_check.js';

/** How one member decodes requests. */
export interface RequestDecoding {
  /** protobuf-go's rules (3.7) rather than gogo's. */
  readonly protobufGo: boolean;
  /** protobuf-go's `proto:` prefix uses a non-breaking space (see requestDecodingOf). */
  readonly nonBreakingSpace: boolean;
}

/** What a request deserializer returns for bytes etcd cannot decode; the handler refuses the call with Go's error text. */
export class MalformedRequest {
  constructor(readonly error: string) {}
}

/** grpc-go's status text for a unary request it cannot decode (code INTERNAL). */
export function unaryUnmarshalError(req: MalformedRequest): string {
  return `grpc: error unmarshalling request: ${req.error}`;
}

/**
 * The decoding of a member of release `version` started with `seed`. protobuf-go picks the space after
 * `proto:` once per Go binary (a hash of the executable), so two builds of the same etcd may differ; the
 * simulator lets the seed play the build: an odd seed gives the non-breaking space (U+00A0), an even one
 * (the default, 0) a regular space. Clients can rely on the text after it only.
 */
export function requestDecodingOf(version: EtcdVersion, seed: number | bigint | undefined): RequestDecoding {
  const s = typeof seed === 'bigint' ? seed : Number.isSafeInteger(seed) ? BigInt(seed as number) : 0n;
  return { protobufGo: serverCompat(version).protobufGoDecoding, nonBreakingSpace: (s & 1n) === 1n };
}

/** Service `name`'s method definitions (grpc's codecs) with every request checked as `decoding` checks it before it is decoded. */
export function checkedService(name: EtcdServiceName, decoding: RequestDecoding): grpc.ServiceDefinition {
  return withRequestChecks(etcdServiceDefinition(name), requestChecks(etcdPackageDefinition(), SERVICE_PACKAGES[name], decoding));
}

const tablesOf = new WeakMap<PackageDefinition, ReadonlyMap<string, MessageCheck>>();
const gogoOf = new WeakMap<PackageDefinition, (fullName: string) => GogoCheck>();

/** The request check of each message of `pkg` (by its name without the package) in `pd`, as `decoding` decodes it. */
export function requestChecks(pd: PackageDefinition, pkg: string, decoding: RequestDecoding): (requestType: string) => RequestCheck {
  if (!decoding.protobufGo) {
    let gogo = gogoOf.get(pd);
    if (gogo === undefined) gogoOf.set(pd, (gogo = compileGogoChecks(pd)));
    const checks = gogo;
    return (requestType) => checks(`${pkg}.${requestType}`);
  }
  let tables = tablesOf.get(pd);
  if (tables === undefined) tablesOf.set(pd, (tables = compileMessageTables(pd)));
  const all = tables;
  const prefix = protoErrorPrefix(decoding.nonBreakingSpace);
  return (requestType) => {
    const table = all.get(`${pkg}.${requestType}`);
    if (table === undefined) throw new Error(`protobuf-go check: no message ${pkg}.${requestType}`);
    return (buf) => checkProtobufGo(buf, table, prefix);
  };
}

/** `def` with every request checked by `checkFor(its request message's name)` before it is decoded. */
function withRequestChecks(def: grpc.ServiceDefinition, checkFor: (requestType: string) => RequestCheck): grpc.ServiceDefinition {
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
