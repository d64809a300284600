// Runs the `etcd` command from its one-file bundle (dist/etcd.cjs, scripts/build.mjs) compiled from V8's code
// cache: etcd's e2e suite starts a member for every test, and compiling some 3 MB of JavaScript anew each
// time was most of our start-up. Node 20 has no built-in compile cache for this (module.enableCompileCache
// is Node 22's), so this does what it does: the first run writes the cache once its member serves (not at
// exit: harnesses often end members with SIGKILL, which runs no exit handler), every later one reads it. The
// cache is named after the Node that made it and the bundle it was made from, and V8 itself refuses one made
// by another V8 or with other flags — then the bundle compiles as usual and the cache is written again. A
// cache that cannot be written (a read-only install) only costs the speed.
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Script } from 'node:vm';

/** Loads `bundle` (a CommonJS file) through the code cache and resolves to its exports. */
function loadWithCodeCache(bundle) {
  const stat = statSync(bundle);
  const cacheFile = join(dirname(bundle), '.v8-cache', `etcd-${process.version}-${process.arch}-${stat.size}-${Math.trunc(stat.mtimeMs)}.bin`);
  let cachedData;
  try {
    cachedData = readFileSync(cacheFile);
  } catch {
    cachedData = undefined;
  }
  const source = readFileSync(bundle, 'utf8');
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, { filename: bundle, cachedData });
  const module = { exports: {} };
  script.runInThisContext()(module.exports, createRequire(bundle), module, bundle, dirname(bundle));
  const fresh = cachedData === undefined || script.cachedDataRejected === true;
  let saved = false;
  /** Once the member serves: the functions its start-up compiled are in the cache too. */
  const saveCache = () => {
    if (!fresh || saved) return;
    saved = true;
    try {
      mkdirSync(dirname(cacheFile), { recursive: true });
      const tmp = `${cacheFile}.${process.pid}.tmp`;
      writeFileSync(tmp, script.createCachedData());
      renameSync(tmp, cacheFile);
    } catch {
      // not writable: the next run compiles again
    }
  };
  return { exports: module.exports, saveCache };
}

/** `etcd ARGV...` from the bundle; the exit code is the command's, or the signal's while it serves. */
export async function runEtcdBundle(bundle, argv) {
  const { exports, saveCache } = loadWithCodeCache(bundle);
  // Written right after the ready lines have gone out (a harness waiting for them does not wait for the
  // cache) and before any signal can be handled; a run that stops on its own (a bad flag, --version)
  // compiled too little to be worth caching.
  const code = await exports.runEtcdCommand(argv, { serving: saveCache });
  process.exitCode = code;
}
