/**
 * Differential testing against a real etcd (`etcdsim diff`): what the command (src/cli/diff_command.ts) and
 * shadow mode (src/shadow, which compares a real etcd's answers with the simulator's by the same rules) take
 * of it. The floors above import it only through this index (test/layout/index_imports.test.ts).
 */

// For the floors above, which import this folder only through this index (test/layout/index_imports.test.ts).
export { canon, sameCanon, text } from './normalise.js';
export type { Canon, LeaseNames } from './normalise.js';
export { simTarget } from './target.js';
export { runDiffCheck } from './check.js';
export type { DiffReport } from './check.js';
export { DIFF_ELECTION_MS, DIFF_HEARTBEAT_MS, startEtcd } from './etcd_process.js';
export type { EtcdProcess } from './etcd_process.js';
export { keyspaceEmpty } from './reset.js';
export { parseSeedRange, runSeeds, seedsOf } from './seeds.js';
export type { SeedRange, SeedResult, SeedTarget } from './seeds.js';
export type { ClusterSeedOptions, ClusterSeedResult } from './cluster_seeds.js';
