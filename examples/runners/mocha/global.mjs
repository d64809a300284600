// Mocha's global fixtures run once in the main process, before the parallel workers start: they inherit the
// endpoint through the environment (not ETCD_*: etcd reads those as flags).
import { serve } from 'etcdsim/grpc';

let served;
export async function mochaGlobalSetup() {
  served = await serve({ port: 0 });
  process.env.ETCDSIM_ENDPOINT = served.endpoint;
}
export async function mochaGlobalTeardown() {
  await served.close();
}
