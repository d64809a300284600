/** etcdsim: etcd v3 semantics, simulated in-process. The package's public entry point. */
export * from './mvcc/index.js';
export * from './watch/index.js';
export * from './lease/index.js';
export * from './sim/index.js';
export * from './server/index.js';
export * from './client/index.js';
