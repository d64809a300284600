/**
 * `etcdsim etcd` runs from its one-file bundle (dist/etcd.cjs) compiled from V8's code cache
 * (bin/etcd_bundle.js): the first run that serves writes the cache once it serves — a member a harness
 * then ends with SIGKILL leaves it too — later runs read it
 * and leave it alone, a cache V8 refuses (another Node, a damaged file) is compiled past and written again,
 * and a run that stops on its own (`--version`) writes none. Each case serves for real: the bundle and the
 * .proto files it reads are copied to a folder of the test's own, so its cache is the test's alone.
 * Needs a fresh build (`npm ci` makes one); without it the test skips, in CI it fails.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { freePort } from '../../src/diff/etcd_process.js';
import { inCI } from '../support/prerequisites.js';

const DIST = resolve('dist');
/** The launcher's own test of a fresh build (bin/build_fresh.js, plain JavaScript without declarations). */
const { buildIsFresh } = (await import(pathToFileURL(resolve('bin/build_fresh.js')).href)) as { buildIsFresh(): boolean };

function prerequisites(): string | false {
  if (buildIsFresh() && existsSync(join(DIST, 'etcd.cjs'))) return false;
  if (inCI) throw new Error('dist/ is not a fresh build with dist/etcd.cjs: `npm ci` should have built it (scripts/build.mjs)');
  return 'dist/ is older than src/ (run `npm run build`)';
}
const skip = prerequisites();

/**
 * Runs `etcd ARGS...` from `bundle`; with `serve`, waits for the ready lines and sends SIGTERM — or, with
 * `killOnce`, waits (bounded) until it holds while the member serves, then sends SIGKILL.
 */
function run(bundle: string, args: readonly string[], serve: boolean, killOnce?: () => boolean): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string; stdout: string }> {
  const loader = pathToFileURL(resolve('bin/etcd_bundle.js')).href;
  const script = `import(${JSON.stringify(loader)}).then((m) => m.runEtcdBundle(${JSON.stringify(bundle)}, ${JSON.stringify(args)}))`;
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, ETCDSIM_ETCD_VERSION: '3.4' } });
    let stderr = '';
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (!serve || ready || !stderr.includes('ready to serve client requests')) return;
      ready = true;
      if (killOnce === undefined) child.kill('SIGTERM');
      else void waitFor(killOnce).then(() => child.kill('SIGKILL'));
    });
    let ready = false;
    child.on('error', rej);
    const guard = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code, signal) => {
      clearTimeout(guard);
      res({ code, signal, stderr, stdout });
    });
  });
}

/** Resolves once `cond()` holds, looking every 20 ms for at most 30 s (then resolves anyway: the caller's assertions say what was missed). */
async function waitFor(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 1500 && !cond(); i++) await new Promise((r) => setTimeout(r, 20));
}

test('the etcd command writes its code cache after serving, reads it after, and writes it again when V8 refuses it', { skip, timeout: 240_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-bundle-'));
  try {
    const bundle = join(dir, 'etcd.cjs');
    cpSync(join(DIST, 'etcd.cjs'), bundle);
    cpSync(join(DIST, 'proto'), join(dir, 'proto'), { recursive: true });
    const cacheDir = join(dir, '.v8-cache');
    const caches = (): string[] => (existsSync(cacheDir) ? readdirSync(cacheDir) : []);

    const version = await run(bundle, ['--version'], false);
    assert.equal(version.code, 0);
    assert.match(version.stdout, /^etcd Version: 3\.4\.23$/m);
    assert.deepEqual(caches(), [], 'a run that did not serve writes no cache');

    const port = await freePort();
    const peer = await freePort();
    const serveArgs = (n: number): string[] => [
      '--name', 'b', '--data-dir', join(dir, `data${n}`),
      '--listen-client-urls', `http://127.0.0.1:${port}`, '--advertise-client-urls', `http://127.0.0.1:${port}`,
      '--listen-peer-urls', `http://127.0.0.1:${peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
    ];
    // Written while it serves: SIGKILL (no exit handler runs) once the cache is there does not lose it.
    const first = await run(bundle, serveArgs(1), true, () => caches().some((f) => f.endsWith('.bin')));
    assert.match(first.stderr, /enabled capabilities for version 3\.4/);
    assert.equal(first.signal, 'SIGKILL');
    assert.equal(caches().length, 1, `one cache after the first run that served: ${caches().join(', ')}`);
    const cacheFile = join(cacheDir, caches()[0]!);
    const written = readFileSync(cacheFile);
    const writtenAt = statSync(cacheFile).mtimeMs;

    const second = await run(bundle, serveArgs(2), true);
    assert.match(second.stderr, /ready to serve client requests/);
    assert.equal(statSync(cacheFile).mtimeMs, writtenAt, 'a cache V8 accepted is left as it is');
    assert.deepEqual(readFileSync(cacheFile), written);

    writeFileSync(cacheFile, Buffer.alloc(written.length, 7));
    const third = await run(bundle, serveArgs(3), true);
    assert.match(third.stderr, /ready to serve client requests/, 'a damaged cache is compiled past');
    assert.notDeepEqual(readFileSync(cacheFile), Buffer.alloc(written.length, 7), 'and written again');
    assert.deepEqual(caches(), [caches()[0]], 'no temporary file is left');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
