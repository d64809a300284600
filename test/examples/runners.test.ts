/**
 * The runner recipes of examples/runners (README, "Use it in your tests") run as a user runs them: node:test,
 * jest, vitest and mocha, each with one simulator per test, one served simulator shared by the run's workers,
 * and (jest, vitest) fake timers around etcdsim in both orders. The examples import the built package
 * (dist/), so the quick build runs first; it does nothing when dist/ is already fresh.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify, stripVTControlCharacters } from 'node:util';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const bin = (pkg: string, path: string): string => join(root, 'node_modules', pkg, path);

/** Runs a runner from the repository root; resolves to its whole output, rejects with it on failure. */
async function runner(args: string[], env: Record<string, string> = {}): Promise<string> {
  // Without NODE_TEST_CONTEXT: node:test would take the example's own `node --test` for a recursive call.
  const { NODE_TEST_CONTEXT: _, ...outer } = process.env;
  try {
    const { stdout, stderr } = await run(process.execPath, args, { cwd: root, env: { ...outer, ...env }, maxBuffer: 16 << 20 });
    // Plain text: vitest colours its summary whenever CI is set (as in CI), tty or not.
    return stripVTControlCharacters(stdout + stderr);
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    throw new Error(`${args.join(' ')} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}

before(async () => {
  await run(process.execPath, ['scripts/build.mjs', '--js'], { cwd: root });
});

test('node:test: a simulator per test, and one served for the run by run.mjs', async () => {
  const out = await runner(['examples/runners/node-test/run.mjs']);
  assert.match(out, /# pass 2\n# fail 0/);
});

test('mocha (parallel): a simulator per test, and one served by the global fixtures', async () => {
  const out = await runner([bin('mocha', 'bin/mocha.js'), '--config', 'examples/runners/mocha/.mocharc.json']);
  assert.match(out, /2 passing/);
  assert.doesNotMatch(out, /failing/);
});

test('jest: a simulator per test, one served by globalSetup, fake timers before and after import', async () => {
  const out = await runner([bin('jest', 'bin/jest.js'), '-c', 'examples/runners/jest/jest.config.mjs'], { NODE_OPTIONS: '--experimental-vm-modules' });
  assert.match(out, /Tests:\s+4 passed, 4 total/);
});

test('vitest: a simulator per test, one served by globalSetup, fake timers before and after import', async () => {
  const out = await runner([bin('vitest', 'vitest.mjs'), 'run', '-c', 'examples/runners/vitest/vitest.config.mjs']);
  assert.match(out, /Tests\s+4 passed \(4\)/);
});
