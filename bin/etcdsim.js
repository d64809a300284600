#!/usr/bin/env node
// The etcdsim command. `npm ci` / `npm install` compile src/ into dist/ (the `prepare` script, ~1 s), and a
// compiled CLI starts in about half the time: that is what runs while dist/ is at least as new as every
// file under src/. After an edit (or without a build) tsx compiles src/ on load instead, so the command
// never runs stale code and there is no build step to forget.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const stamp = join(root, 'dist', '.build-stamp');

/** The newest modification time of any file under `dir`. */
function newest(dir) {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

// An installed package ships dist/ without src/ (package.json "files"): it always runs the compiled CLI.
const src = join(root, 'src');
if (!existsSync(src) || (existsSync(stamp) && statSync(stamp).mtimeMs >= newest(src))) {
  await import('../dist/cli/main.js');
} else {
  // Compiling src/ on load takes a second or two: say so to a person at a terminal (never into a pipe,
  // where tests and scripts read exactly etcd's output).
  if (process.stderr.isTTY) process.stderr.write('etcdsim: src/ changed since the last build; running it through tsx (`npm run build` starts faster)\n');
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
