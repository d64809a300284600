/**
 * After an edit under src/, bin/etcdsim.js builds dist/ again before it runs (it used to run src/ through tsx
 * at every start, ~0.8 s of CPU each, silently: a harness starting a member per test paid it for each), one
 * build at a time however many processes find it stale together (bin/build_lock.js), and falls back to tsx
 * only when the build fails or a build with type declarations (a minute of tsc) holds the lock. Tried on a package of the test's own: the real launcher files, a build script
 * that takes the real lock and checks freshness as scripts/build.mjs does but writes a one-line dist/ (the
 * real build takes seconds and would rewrite this checkout's dist/ under every other test), and src/ with one
 * command file for the tsx fallback.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

const STUB_BUILD = `
import { appendFileSync, mkdirSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { buildIsFresh, root, stampPath } from '../bin/build_fresh.js';
import { acquireBuildLock } from '../bin/build_lock.js';
const release = await acquireBuildLock('js');
if (!buildIsFresh()) {
  appendFileSync(join(root, 'builds'), 'build\\n');
  await new Promise((r) => setTimeout(r, 800));
  if (existsSync(join(root, 'fail'))) { process.stderr.write('stub build: broken source\\n'); process.exit(1); }
  mkdirSync(join(root, 'dist', 'cli'), { recursive: true });
  writeFileSync(join(root, 'dist', 'cli', 'main.js'), "console.log('dist', process.argv.slice(2).join(' '));\\n");
  writeFileSync(stampPath, 'stub\\n');
}
release();
`;

/** A package with the real launcher, the stub build and src/; `etcdsim(args)` runs its command. */
function stubPackage(): { root: string; etcdsim: (...args: string[]) => Promise<{ stdout: string; stderr: string }>; builds: () => number } {
  const root = mkdtempSync(join(tmpdir(), 'etcdsim-stale-'));
  mkdirSync(join(root, 'bin'));
  for (const f of ['etcdsim.js', 'build_fresh.js', 'build_lock.js']) cpSync(resolve('bin', f), join(root, 'bin', f));
  writeFileSync(join(root, 'package.json'), JSON.stringify({ type: 'module' }));
  mkdirSync(join(root, 'scripts'));
  writeFileSync(join(root, 'scripts', 'build.mjs'), STUB_BUILD);
  mkdirSync(join(root, 'node_modules', 'esbuild'), { recursive: true });
  symlinkSync(resolve('node_modules', 'tsx'), join(root, 'node_modules', 'tsx'));
  mkdirSync(join(root, 'src', 'cli'), { recursive: true });
  writeFileSync(join(root, 'src', 'cli', 'main.ts'), "console.log('src', process.argv.slice(2).join(' '));\n");
  return {
    root,
    etcdsim: async (...args) => run(process.execPath, [join(root, 'bin', 'etcdsim.js'), ...args], { encoding: 'utf8' }),
    builds: () => (existsSync(join(root, 'builds')) ? readFileSync(join(root, 'builds'), 'utf8').split('\n').filter(Boolean).length : 0),
  };
}

test('a stale dist/ is built once by the first of several processes, and every one runs it', { timeout: 120_000 }, async () => {
  const p = stubPackage();
  try {
    const outs = await Promise.all([1, 2, 3].map((n) => p.etcdsim('serve', String(n))));
    assert.deepEqual(outs.map((o) => o.stdout), ['dist serve 1\n', 'dist serve 2\n', 'dist serve 3\n']);
    assert.deepEqual(outs.map((o) => o.stderr), ['', '', ''], 'nothing on a pipe: harnesses read exactly the command output');
    assert.equal(p.builds(), 1);
    assert.equal((await p.etcdsim('serve')).stdout, 'dist serve\n');
    assert.equal(p.builds(), 1, 'a fresh build is left as it is');
    assert.ok(!existsSync(join(p.root, '.build-lock')), 'the lock is released');

    utimesSync(join(p.root, 'dist', '.build-stamp'), 1, 1); // as if src/ was edited after the build

    assert.equal((await p.etcdsim('etcd', '--version')).stdout, 'dist etcd --version\n');
    assert.equal(p.builds(), 2, 'an edit under src/ builds again');
  } finally {
    rmSync(p.root, { recursive: true, force: true });
  }
});

test('a build that fails, or a build with type declarations under way, leaves the command to tsx; a dead build does not hold the lock', { timeout: 120_000 }, async () => {
  const p = stubPackage();
  try {
    writeFileSync(join(p.root, 'fail'), '');
    const failed = await p.etcdsim('serve');
    assert.equal(failed.stdout, 'src serve\n');
    assert.match(failed.stderr, /^etcdsim: building dist\/ failed; running src\/ through tsx\nstub build: broken source\n$/);

    rmSync(join(p.root, 'fail'));
    writeFileSync(join(p.root, '.build-lock'), `${process.pid} types`);
    assert.deepEqual(await p.etcdsim('serve'), { stdout: 'src serve\n', stderr: '' }, 'not waiting a minute for tsc');
    assert.equal(p.builds(), 1);

    const dead = spawnSync(process.execPath, ['-e', '0']).pid;
    writeFileSync(join(p.root, '.build-lock'), `${dead} js`);
    assert.equal((await p.etcdsim('serve')).stdout, 'dist serve\n');
    assert.equal(p.builds(), 2);
  } finally {
    rmSync(p.root, { recursive: true, force: true });
  }
});
