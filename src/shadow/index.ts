/**
 * Shadow mode (`etcdsim shadow`): the simulator checked against an application's own traffic to a real
 * etcd. A door at the level of grpc / http / diff: it uses the cluster's member, the gRPC protos and the
 * differential's normalisation; only the cli imports it.
 */
export { startShadow, type ShadowHandle, type ShadowOptions, type ShadowRetained } from './shadow.js';
export { ShadowReport, type DivergenceRecord, type RpcCounts } from './report.js';
export { parseScenario, type ScenarioEntry, type ScenarioFile } from './scenario.js';
export { replayScenario, type ReplayResult } from './replay.js';

// For the floors above, which import this folder only through this index (test/layout/index_imports.test.ts).
export type { TlsFiles } from './proxy.js';
export type { ShadowUser } from './own_auth.js';
