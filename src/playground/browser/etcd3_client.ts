/**
 * The browser's stand-in for src/client/etcd3.ts: the npm etcd3 client (an optional peer, loaded with
 * Node's require and driven by Node's EventEmitter) has no place in a page, so the playground bundle
 * resolves that module to this one, and `sim.etcd3()` says why it is missing instead of pulling Node in.
 */
export function createEtcd3Client(): never {
  throw new Error('the etcd3 client runs on Node only; the playground drives the simulator through its services');
}

/** The stand-in for a cluster's etcd3 client (`sim.etcd3({ endpoints })`): Node only, as above. */
export function createEtcd3ClusterClient(): never {
  return createEtcd3Client();
}
