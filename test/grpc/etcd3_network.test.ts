// etcd3 over the network: every etcd3 feature test (test/etcd3/*.test.ts) again, this time through real
// gRPC — HTTP/2 over loopback TCP — against an in-process `serve({ port: 0 })` on a VirtualClock
// (ETCDSIM_TARGET=serve selects that target in test/etcd3/target.ts, where the choice of clocks is
// explained). The files run in a child `node --test`, because the served target mocks the global timers
// for the whole test process, as the in-process target does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIR = 'test/etcd3';

test('the etcd3 feature tests all pass with etcd3 speaking gRPC to etcdsim serve', async () => {
  const files = readdirSync(new URL(`../../${DIR}/`, import.meta.url))
    .filter((f) => f.endsWith('.test.ts'))
    .sort()
    .map((f) => `${DIR}/${f}`);
  assert.ok(files.length >= 5, `found only ${files.length} etcd3 test files`);
  // how many top-level tests the files declare (subtests come on top): at least these must run, and pass
  const declared = files.map((f) => readFileSync(new URL(`../../${f}`, import.meta.url), 'utf8').match(/^test\(/gm)?.length ?? 0).reduce((a, b) => a + b, 0);

  const env: NodeJS.ProcessEnv = { ...process.env, ETCDSIM_TARGET: 'serve' };
  delete env['ETCD_ENDPOINT']; // never a real etcd here
  delete env['NODE_TEST_CONTEXT']; // the child is a test runner of its own, not a child of ours
  const child = spawn(
    process.execPath,
    ['--import', fileURLToPath(new URL('../support/ts_loader.mjs', import.meta.url)), '--test', '--test-reporter=tap', '--test-concurrency=2', '--test-timeout=60000', ...files],
    { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const guard = setTimeout(() => child.kill('SIGKILL'), 120_000); // a failure guard, not a wait
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearTimeout(guard);

  const failures = out.split('\n').filter((l) => /^\s*not ok /.test(l));
  const summary = (name: string): number => Number(new RegExp(`^# ${name} (\\d+)$`, 'm').exec(out)?.[1] ?? NaN);
  assert.deepEqual(failures, [], `failing etcd3 tests over gRPC:\n${out.slice(-4000)}`);
  assert.equal(code, 0, out.slice(-4000));
  assert.equal(summary('fail'), 0);
  assert.equal(summary('cancelled'), 0);
  assert.equal(summary('skipped'), 0);
  assert.equal(summary('pass'), summary('tests'));
  assert.ok(summary('pass') >= declared, `ran ${summary('pass')} tests, the files declare ${declared}`);
});
