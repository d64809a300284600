// Whether dist/ holds a build at least as new as every file under src/ — the one test of "fresh" shared by the
// etcdsim command (bin/etcdsim.js: run dist/ or src/ through tsx) and the build (scripts/build.mjs: `prepare`
// leaves a fresh build alone). An installed package has no src/: its dist/ is always what runs.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('..', import.meta.url));
export const stampPath = join(root, 'dist', '.build-stamp');

/** The newest modification time of any file under `dir`. */
function newest(dir) {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

/** dist/ is stamped no older than src/ (or there is no src/). */
export function buildIsFresh() {
  const src = join(root, 'src');
  return !existsSync(src) || (existsSync(stampPath) && statSync(stampPath).mtimeMs >= newest(src));
}
