// vitest globalSetup: one served simulator for the whole run; provide() hands its endpoint to the workers.
import { serve } from 'etcdsim/grpc';

export default async function setup({ provide }) {
  const served = await serve({ port: 0 });
  provide('endpoint', served.endpoint);
  return () => served.close();
}
