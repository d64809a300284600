// One build of dist/ at a time. A build starts by removing dist/, so two at once (a 3-member cluster's three
// processes finding src/ newer than dist/ together, or one of them beside `npm run build`) would delete each
// other's output, and a process must not run from a dist/ that is being written. scripts/build.mjs holds
// this lock from before it decides whether to build until its stamp is written; whoever waited then finds
// dist/ fresh and builds nothing. The lock is a file holding its holder's pid and the kind of build, made
// whole (written aside, then hard-linked into place, which fails if it exists), so the lock of a build that
// was killed is taken over instead of waited for, and a command can tell a quick build (`--js`, seconds)
// worth waiting for from one with type declarations (tsc, a minute on a loaded machine), which it does not
// wait for (bin/etcdsim.js).
import { existsSync, linkSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './build_fresh.js';

export const lockPath = join(root, '.build-lock');

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

/** The lock's holder, if it is alive: its pid and kind of build. */
function holderOf(path) {
  let text;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined; // none, or released meanwhile
  }
  const [pid, kind] = text.split(' ');
  const n = Number(pid);
  return Number.isInteger(n) && n > 0 && alive(n) ? { pid: n, kind } : undefined;
}

/** The kind of build (`js` or `types`) that holds the lock now, if any. */
export function buildInProgress(path = lockPath) {
  return holderOf(path)?.kind;
}

/** Takes the lock now if it is free or its holder is gone. */
function tryLock(path, kind) {
  const mine = `${path}.${process.pid}`;
  writeFileSync(mine, `${process.pid} ${kind}`);
  try {
    linkSync(mine, path);
    return true;
  } catch (err) {
    if (err.code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(mine);
  }
  if (!existsSync(path) || holderOf(path) !== undefined) return false; // released meanwhile: the next try takes it
  try {
    unlinkSync(path);
  } catch {
    // another waiter removed it first; its exclusive create decides
  }
  return false;
}

/**
 * Resolves once this process holds the build lock for a build of `kind` (`js` or `types`; `say` is told once
 * if it has to wait), to the function that releases it.
 */
export async function acquireBuildLock(kind, say = () => {}, path = lockPath) {
  let told = false;
  while (!tryLock(path, kind)) {
    if (!told) say('another build of dist/ is running: waiting for it');
    told = true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    try {
      unlinkSync(path);
    } catch {
      // already gone
    }
  };
}
