/**
 * One worker thread of `etcdsim diff --seeds` (seeds.ts): gets its etcd (starts a throwaway one, or
 * connects to the endpoint it was given), says it is ready, then runs each seed it is sent as one
 * differential check and posts the result, until told to stop — then stops the etcd it started and exits.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { connectEtcd, type EtcdGrpcClient } from '../grpc/client.js';
import { runDiffCheck } from './check.js';
import { startEtcd, type EtcdProcess } from './etcd_process.js';
import type { FromWorker, SeedResult, SeedWorkerData, ToWorker } from './seeds.js';

function message(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).replace(/\s*\n\s*/g, ' ');
}

async function main(): Promise<void> {
  const port = parentPort;
  if (port === null) throw new Error('seeds_worker.ts runs in a worker thread');
  const data = workerData as SeedWorkerData;
  const post = (m: FromWorker): void => port.postMessage(m);
  let proc: EtcdProcess | undefined;
  let client: EtcdGrpcClient | undefined;
  const shutdown = async (): Promise<void> => {
    client?.close();
    await proc?.stop();
    process.exit(0); // ends this thread only
  };
  try {
    if (data.target.kind === 'start-etcd') proc = await startEtcd({ bin: data.target.bin });
    const address = proc?.address ?? (data.target.kind === 'endpoint' ? data.target.address : '');
    client = connectEtcd(address);
    post({ type: 'ready', address, pid: proc?.pid });
  } catch (err) {
    post({ type: 'failed', message: `could not start etcd: ${message(err)}` });
    await shutdown();
    return;
  }
  const etcd = client;
  // Messages are handled one at a time: a stop that arrives during a seed takes effect after it.
  let chain = Promise.resolve();
  port.on('message', (m: ToWorker) => {
    chain = chain.then(async () => {
      if (m.type === 'stop') return shutdown();
      let result: SeedResult;
      try {
        const r = await runDiffCheck({ etcd, etcdVersion: data.etcdVersion, ops: data.ops, seed: m.seed });
        result = { seed: m.seed, runs: r.runs, opsRun: r.opsRun, responsesCompared: r.responsesCompared, failure: r.failure, error: undefined };
      } catch (err) {
        result = { seed: m.seed, runs: 0, opsRun: 0, responsesCompared: 0, failure: undefined, error: message(err) };
      }
      post({ type: 'result', result });
    });
  });
}

void main();
