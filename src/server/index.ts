/** The server layer: one simulated etcd member, the single home of etcd's request semantics. */
export { EtcdServer, type EtcdServerOptions } from './etcd_server.js';
