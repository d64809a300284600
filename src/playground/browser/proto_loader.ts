/**
 * The browser's stand-in for src/proto/loader.ts: proto-loader reads etcd's .proto files from disk with
 * Node's fs, and a page has neither the files nor Node. The simulator in a page needs none of them — it
 * answers through its services, and the names of their calls come from src/proto/calls.ts, generated at
 * build time — so the playground bundle resolves the loader to this module, and whatever would still ask
 * for the protos (a gRPC door, a Raft entry's encoding) says why it cannot instead of pulling Node in.
 */
import type { Options, PackageDefinition } from '@grpc/proto-loader';
import type { ServiceDefinition } from '@grpc/grpc-js';

/** No folder of .proto files in a page. */
export const PROTO_DIR = '';

/** No .proto file is read in a page. */
export const PROTO_FILES: readonly string[] = Object.freeze([]);

/** No loader runs in a page, so no options. */
export const PROTO_LOADER_OPTIONS: Options = Object.freeze({});

function noProtos(): never {
  throw new Error('etcd’s .proto files are read on Node only; the playground drives the simulator through its services');
}

/** The stand-in for the loaded protos: a page has none. */
export function etcdPackageDefinition(): PackageDefinition {
  return noProtos();
}

/** The stand-in for a service's method definitions: a page has none. */
export function etcdServiceDefinition(): ServiceDefinition {
  return noProtos();
}
