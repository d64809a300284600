/**
 * One worker thread of `etcdsim diff --cluster --seeds` (cluster_seeds.ts, on worker_pool.ts): runs each
 * seed it is sent as one cluster differential — its own real 3-member etcd started and stopped by the
 * seed, unless sim-only — and posts the result, until told to stop.
 */
import { runClusterSeed, type ClusterSeedOptions, type ClusterSeedResult, type ClusterSeedWorkerData } from './cluster_seeds.js';
import { serveJobs } from './worker_pool.js';

let options: ClusterSeedOptions = {};

serveJobs<ClusterSeedWorkerData, number, null, ClusterSeedResult>({
  async setup(data) {
    options = data.options;
    return null;
  },
  run: (seed) => runClusterSeed(seed, options),
  async teardown() {},
});
