// Module hooks of the test command's TypeScript loader (registered by ts_loader.mjs; why it is not tsx is said
// there). Two rules, nothing else:
// - resolve: a relative `./x.js` imported from a .ts file is `./x.ts` when that file exists — checked first, with
//   one stat, because letting Node's resolver fail first costs an exception per import;
// - load: a .ts file is transpiled by esbuild (the transpiler tsx uses, with the tsconfig options that change
//   emitted code) and the result kept in node_modules/.cache, keyed by the file's path and text, esbuild's version
//   and the options below, so the next process — each test file is one — reads it instead of transpiling again.
// Type checking is not this loader's job: `npm test` runs `tsc --noEmit` first.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// esbuild is found as Node finds any package, walking up from this file, not at <root>/node_modules: a copy of
// the tree without node_modules of its own (Stryker's sandbox, inside the project) uses its parent's.
const ESBUILD_PACKAGE = createRequire(import.meta.url).resolve('esbuild/package.json');
const CACHE = join(dirname(dirname(ESBUILD_PACKAGE)), '.cache', 'etcdsim-ts');
const ESBUILD_VERSION = JSON.parse(readFileSync(ESBUILD_PACKAGE, 'utf8')).version;
// The tsconfig options that change what esbuild emits (tsconfig.json: target es2022, verbatimModuleSyntax).
const OPTIONS = {
  loader: 'ts',
  format: 'esm',
  target: 'es2022',
  sourcemap: 'inline',
  tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true, useDefineForClassFields: true } },
};
const OPTIONS_KEY = `${ESBUILD_VERSION}\0${JSON.stringify(OPTIONS)}`;
mkdirSync(CACHE, { recursive: true });

/** @type {typeof import('esbuild') | undefined} loaded on the first cache miss only. */
let esbuild;

export async function resolve(specifier, context, next) {
  const parent = context.parentURL;
  if (parent !== undefined && parent.endsWith('.ts') && specifier.endsWith('.js') && (specifier.startsWith('./') || specifier.startsWith('../'))) {
    const ts = new URL(`${specifier.slice(0, -3)}.ts`, parent);
    if (existsSync(ts)) return { url: ts.href, format: 'module', shortCircuit: true };
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return next(url, context);
  const path = fileURLToPath(url);
  const text = readFileSync(path, 'utf8');
  const key = createHash('sha256').update(OPTIONS_KEY).update('\0').update(path).update('\0').update(text).digest('hex');
  const cached = join(CACHE, `${key}.js`);
  let source;
  try {
    source = readFileSync(cached, 'utf8');
  } catch {
    esbuild ??= await import('esbuild');
    source = esbuild.transformSync(text, { ...OPTIONS, sourcefile: path }).code;
    // Written whole under a name of this process's own, then renamed: test files start side by side.
    const partial = `${cached}.${process.pid}`;
    writeFileSync(partial, source);
    renameSync(partial, cached);
  }
  return { format: 'module', source, shortCircuit: true };
}
