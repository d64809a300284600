// node:test on Node 20 has no global setup: this script serves one simulator, runs the test files with its
// endpoint in the environment (not ETCD_*: etcd reads those as flags), and closes it.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { serve } from 'etcdsim/grpc';

const here = fileURLToPath(new URL('.', import.meta.url));
const served = await serve({ port: 0 });
const child = spawn(process.execPath, ['--test', 'sim.test.mjs', 'served.test.mjs'], {
  cwd: here,
  stdio: 'inherit',
  env: { ...process.env, ETCDSIM_ENDPOINT: served.endpoint },
});
const code = await new Promise((resolve) => child.on('exit', resolve));
await served.close();
process.exitCode = code ?? 1;
