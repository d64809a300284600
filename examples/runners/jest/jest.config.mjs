// Run with NODE_OPTIONS=--experimental-vm-modules (jest's native ESM). globalSetup serves one simulator for
// the run; its endpoint reaches the workers through the environment (not ETCD_*: etcd reads those as flags).
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../../..', import.meta.url));
export default {
  rootDir: fileURLToPath(new URL('.', import.meta.url)),
  testMatch: ['**/*.test.mjs'],
  transform: {},
  globalSetup: './global-setup.mjs',
  globalTeardown: './global-teardown.mjs',
  // Only because these examples live inside etcdsim's own repository; your project resolves 'etcdsim' itself.
  moduleNameMapper: { '^etcdsim$': `${repo}/dist/index.js`, '^etcdsim/grpc$': `${repo}/dist/grpc.js` },
};
