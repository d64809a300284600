/**
 * The test command's TypeScript loader (ts_loader.mjs): every other test file runs through it, so these rows
 * pin what the suite relies on — a `.js` import finds its `.ts` file, a real `.js` file is still itself, a
 * missing module is still an error, `import.meta.url` is the .ts file's own, an edited file is transpiled
 * again (the cache is keyed by the text, never stale), and a failure's stack names the .ts file's lines.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const LOADER = fileURLToPath(new URL('./ts_loader.mjs', import.meta.url));

function run(dir: string, file: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((res) => {
    const child = execFile(process.execPath, ['--import', LOADER, join(dir, file)], { cwd: dir }, (err, stdout, stderr) =>
      res({ code: err === null ? 0 : child.exitCode, stdout, stderr }),
    );
  });
}

test('the loader: .js imports find .ts files, real .js files and errors stay, edits are seen, stacks name .ts lines', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-ts-loader-'));
  try {
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
    // The cache key holds the file's path, and this folder is new: the first import of dep.ts is a miss.
    writeFileSync(join(dir, 'dep.ts'), `export const value: string = 'one';\n`);
    writeFileSync(join(dir, 'plain.js'), `export const plain = 'plain js';\n`);
    writeFileSync(
      join(dir, 'main.ts'),
      [
        `import { value } from './dep.js';`,
        `import { plain } from './plain.js';`,
        `import type { Shape } from './types.js';`,
        `const s: Shape = { n: 1 };`,
        `console.log(JSON.stringify({ value, plain, n: s.n, url: import.meta.url }));`,
      ].join('\n'),
    );
    writeFileSync(join(dir, 'types.ts'), `export interface Shape {\n  n: number;\n}\n`);
    const first = await run(dir, 'main.ts');
    assert.equal(first.code, 0, first.stderr);
    const out = JSON.parse(first.stdout) as { value: string; plain: string; n: number; url: string };
    assert.deepEqual({ value: out.value, plain: out.plain, n: out.n }, { value: 'one', plain: 'plain js', n: 1 });
    assert.ok(out.url.endsWith('/main.ts'), out.url);

    writeFileSync(join(dir, 'dep.ts'), `export const value: string = 'two';\n`);
    const edited = await run(dir, 'main.ts');
    assert.equal((JSON.parse(edited.stdout) as { value: string }).value, 'two');

    writeFileSync(join(dir, 'missing.ts'), `import { x } from './nowhere.js';\nconsole.log(x);\n`);
    const missing = await run(dir, 'missing.ts');
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /ERR_MODULE_NOT_FOUND/);

    // Eight lines of types vanish in the transpiled code: only a source map puts the throw back on line 10.
    writeFileSync(join(dir, 'throws.ts'), ['interface A {', '  a: number;', '  b: number;', '  c: number;', '}', 'type B = A & {', '  d: string;', '};', `const b: B | undefined = undefined;`, `throw new Error('here ' + String(b));`, ''].join('\n'));
    const thrown = await run(dir, 'throws.ts');
    assert.notEqual(thrown.code, 0);
    assert.match(thrown.stderr, /throws\.ts:10:\d+/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
