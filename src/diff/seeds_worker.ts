/**
 * One worker thread of `etcdsim diff --seeds` (seeds.ts, on worker_pool.ts): gets its etcd (starts a
 * throwaway one, or connects to the endpoint it was given), says it is ready, then runs each seed it is
 * sent as one differential check and posts the result, until told to stop — then stops the etcd it
 * started and exits.
 */
import { connectEtcd, type EtcdGrpcClient } from '../grpc/index.js';
import { runDiffCheck } from './check.js';
import { startEtcd, type EtcdProcess } from './etcd_process.js';
import type { SeedResult, SeedWorkerData, SeedWorkerReady } from './seeds.js';
import { oneLineMessage, serveJobs } from './worker_pool.js';

let proc: EtcdProcess | undefined;
let client: EtcdGrpcClient | undefined;
let version: SeedWorkerData['etcdVersion'] = '3.4';
let ops = 0;

serveJobs<SeedWorkerData, number, SeedWorkerReady, SeedResult>({
  async setup(data) {
    version = data.etcdVersion;
    ops = data.ops;
    try {
      if (data.target.kind === 'start-etcd') proc = await startEtcd({ bin: data.target.bin });
    } catch (err) {
      throw new Error(`could not start etcd: ${oneLineMessage(err)}`);
    }
    const address = proc?.address ?? (data.target.kind === 'endpoint' ? data.target.address : '');
    client = connectEtcd(address);
    return { address, pid: proc?.pid };
  },
  async run(seed) {
    try {
      const r = await runDiffCheck({ etcd: client!, etcdVersion: version, ops, seed });
      return { seed, runs: r.runs, opsRun: r.opsRun, responsesCompared: r.responsesCompared, failure: r.failure, error: undefined };
    } catch (err) {
      return { seed, runs: 0, opsRun: 0, responsesCompared: 0, failure: undefined, error: oneLineMessage(err) };
    }
  },
  async teardown() {
    client?.close();
    await proc?.stop();
  },
});
