// jest globalSetup: one served simulator for the whole run, its endpoint handed to the workers by the environment.
import { serve } from 'etcdsim/grpc';

export default async function globalSetup() {
  globalThis.etcdsimServed = await serve({ port: 0 }); // read back by global-teardown.mjs, same process
  process.env.ETCDSIM_ENDPOINT = globalThis.etcdsimServed.endpoint;
}
