#!/usr/bin/env node
// The etcdsim command. `npm ci` / `npm install` compile src/ into dist/ (the `prepare` script, ~1 s), and a
// compiled CLI starts in about half the time: that is what runs while dist/ is at least as new as every
// file under src/. After an edit (or without a build) tsx compiles src/ on load instead, so the command
// never runs stale code and there is no build step to forget.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildIsFresh } from './build_fresh.js';

if (buildIsFresh()) {
  const bundle = fileURLToPath(new URL('../dist/etcd.cjs', import.meta.url));
  if (process.argv[2] === 'etcd' && existsSync(bundle)) {
    // The etcd command starts once per test in a harness: its one-file bundle, from V8's code cache.
    const { runEtcdBundle } = await import('./etcd_bundle.js');
    await runEtcdBundle(bundle, process.argv.slice(3));
  } else {
    await import('../dist/cli/main.js');
  }
} else {
  // Compiling src/ on load takes a second or two: say so to a person at a terminal (never into a pipe,
  // where tests and scripts read exactly etcd's output).
  if (process.stderr.isTTY) process.stderr.write('etcdsim: src/ changed since the last build; running it through tsx (`npm run build` starts faster)\n');
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
