#!/usr/bin/env node
// The etcdsim command. `npm ci` / `npm install` compile src/ into dist/ (the `prepare` script, ~2 s with the
// member's start-up snapshot), and a compiled CLI starts in a fraction of the time: that is what runs. In a
// development checkout, after an edit under src/ (dist/ older than src/), the command first builds dist/ again
// (scripts/build.mjs --js, a few seconds, one build at a time however many processes start together) rather than
// run stale code — or, as before, compile src/ through tsx at every start (~0.8 s of CPU each: a harness that
// starts a member per test paid it silently for every member). Only when that build fails, or a build with type
// declarations is under way, does tsx run src/. An installed package has no src/ and never builds.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildIsFresh, root } from './build_fresh.js';
import { buildInProgress } from './build_lock.js';

/**
 * Builds dist/ from src/ when this is a checkout that can (its build script and esbuild are there), telling a
 * person at a terminal (never a pipe, where tests and harnesses read exactly etcd's output — except the
 * build's own error, which is this run's).
 */
function rebuild() {
  const script = join(root, 'scripts', 'build.mjs');
  if (!existsSync(script) || !existsSync(join(root, 'node_modules', 'esbuild'))) return;
  // A build with type declarations (`npm run build`, the package test's) takes a minute on a loaded machine:
  // rather than wait that long, this start compiles src/ itself, as it did before.
  if (buildInProgress() === 'types') return;
  const tty = process.stderr.isTTY;
  if (tty) process.stderr.write('etcdsim: src/ changed since the last build; building dist/ again\n');
  try {
    execFileSync(process.execPath, [script, '--js'], { cwd: root, stdio: ['ignore', 'ignore', tty ? 'inherit' : 'pipe'] });
  } catch (err) {
    process.stderr.write(`etcdsim: building dist/ failed; running src/ through tsx\n${err.stderr ?? ''}`);
  }
}

let fresh = buildIsFresh();
if (!fresh) {
  rebuild();
  fresh = buildIsFresh();
}
if (fresh) {
  const bundle = fileURLToPath(new URL('../dist/etcd.cjs', import.meta.url));
  if (process.argv[2] === 'etcd' && existsSync(bundle)) {
    // The etcd command starts once per test in a harness: its one-file bundle, from V8's code cache.
    const { runEtcdBundle } = await import('./etcd_bundle.js');
    await runEtcdBundle(bundle, process.argv.slice(3));
  } else {
    await import('../dist/cli/main.js');
  }
} else {
  // Compiling src/ on load takes a second or two: say so to a person at a terminal.
  if (process.stderr.isTTY) process.stderr.write('etcdsim: src/ changed since the last build; running it through tsx (`npm run build` starts faster)\n');
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
