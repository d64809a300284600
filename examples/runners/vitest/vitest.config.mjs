// globalSetup serves one simulator for the run and provides its endpoint to the workers (inject('endpoint')).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const repo = fileURLToPath(new URL('../../..', import.meta.url));
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  test: { include: ['*.test.mjs'], globalSetup: ['./global-setup.mjs'] },
  // Only because these examples live inside etcdsim's own repository; your project resolves 'etcdsim' itself.
  resolve: { alias: { 'etcdsim/grpc': `${repo}/dist/grpc.js`, etcdsim: `${repo}/dist/index.js` } },
});
