// Compiles src/ into dist/ for the etcdsim command (see bin/etcdsim.js), copies the .proto files the gRPC
// layer loads at run time, and stamps the build last so a half-finished build is never taken as fresh.
//
// `npm ci` runs this (the `prepare` script) with --js: each file of src/ transpiled on its own by esbuild
// (type-checking is `npm run typecheck`'s job), about a second, so the README's first command serves at once.
// Plain `npm run build` (and `prepack`, before a publish) also writes the .d.ts files a package consumer's
// TypeScript reads, with tsc: tens of seconds, so it says so first. The stamp records which of the two ran,
// and its time is when the build began reading src/, so a file edited while it ran makes dist/ stale. One build
// at a time (bin/build_lock.js): bin/etcdsim.js runs this too when it finds src/ newer than dist/.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildIsFresh, stampPath as stamp } from '../bin/build_fresh.js';
import { acquireBuildLock } from '../bin/build_lock.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const jsOnly = process.argv.includes('--js');
const started = performance.now();
const say = (line) => process.stderr.write(`etcdsim build: ${line}\n`);

/** Every .ts file under `dir`. */
function sources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

const release = await acquireBuildLock(jsOnly ? 'js' : 'types', say);
process.on('exit', release);
// `prepare` again over a build that is still fresh (a second `npm install`, or `npm pack` right after its
// `prepack` built the types, or the build another process was making while this one waited) leaves it as it is.
if (jsOnly && buildIsFresh()) process.exit(0);
const begun = new Date();

say(`compiling src/ into dist/${jsOnly ? ' (JavaScript only)' : ' with type declarations (tsc: this takes a while)'}...`);
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
const esbuild = await import('esbuild');
await esbuild.build({
  entryPoints: sources(join(root, 'src')),
  outdir: join(root, 'dist'),
  outbase: join(root, 'src'),
  format: 'esm',
  platform: 'node',
  target: 'es2022',
  sourcemap: true,
  logLevel: 'warning',
  tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true, useDefineForClassFields: true } },
});
if (!jsOnly) {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--emitDeclarationOnly'], { cwd: root, stdio: 'inherit' });
}
// The .proto files beside the compiled loader (dist/proto/loader.js reads them from its own folder); the
// generated message types are types only and compiled like any source.
const protoSrc = fileURLToPath(new URL('../src/proto', import.meta.url));
cpSync(protoSrc, fileURLToPath(new URL('../dist/proto', import.meta.url)), {
  recursive: true,
  filter: (path) => path.endsWith('.proto') || (statSync(path).isDirectory() && !path.startsWith(`${protoSrc}/generated`)),
});
// The `etcd` command in one file, every package it reaches included (src/cli/etcd/main.ts): a harness starts
// it once per test, and one file compiled from V8's code cache (bin/etcd_bundle.js) starts in about half the
// CPU time of ~300 modules resolved and compiled one by one (docs/e2e.md, "Start-up"). Each source's
// `import.meta.url` is the URL its own file has in dist/, so what it finds beside itself (the .proto files)
// is found as from dist/.
{
  const distUrls = {
    name: 'dist-urls',
    setup(build) {
      const ownSources = new RegExp(`^${join(root, 'src', sep).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.*\\.ts$`);
      build.onLoad({ filter: ownSources }, (args) => {
        const own = relative(join(root, 'src'), args.path).replace(/\.ts$/, '.js').split(sep).join('/');
        const text = readFileSync(args.path, 'utf8').replaceAll('import.meta.url', `new URL(${JSON.stringify(own)}, __etcdsimDist).href`);
        return { contents: text, loader: 'ts' };
      });
    },
  };
  await esbuild.build({
    entryPoints: [join(root, 'src', 'cli', 'etcd', 'main.ts')],
    outfile: join(root, 'dist', 'etcd.cjs'),
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
    banner: { js: "const __etcdsimDist = require('node:url').pathToFileURL(__dirname + '/').href;" },
    plugins: [distUrls],
    // Without comments (names and syntax kept): esbuild escapes non-ASCII in strings but keeps the
    // comments it carries along, whose dashes and arrows made V8 hold the whole 2.7 MB source as a two-byte
    // string — in every member's heap and in the start-up snapshot (12 MB → 8.3 MB, ~9 ms of CPU a start).
    minifyWhitespace: true,
    tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true, useDefineForClassFields: true } },
  });
}
// The etcd command's V8 start-up snapshot (bin/etcd_snapshot.cjs, started by bin/etcd_launch.sh): the bundle's
// modules evaluated and etcd's proto descriptors built once here rather than in every member (about half of a
// member's CPU to ready, docs/e2e.md "Start-up"). It is this Node's alone, so it gets this Node binary's
// modification time, by which the launcher knows it; a Node whose builder fails leaves no blob, and the code
// cache serves instead.
{
  const blob = join(root, 'dist', 'etcd.blob');
  try {
    execFileSync(process.execPath, ['--snapshot-blob', blob, '--build-snapshot', join(root, 'bin', 'etcd_snapshot.cjs')], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
    const node = statSync(process.execPath);
    utimesSync(blob, node.atime, node.mtime);
  } catch (err) {
    rmSync(blob, { force: true });
    const why = String(err.stderr ?? err.message).split('\n').filter((l) => l.trim() !== '' && !l.includes('Warning') && !l.includes('may still work') && !l.includes('issue tracker') && !l.includes('trace-warnings'));
    say(`no start-up snapshot of the etcd command (it starts from the code cache): ${why.slice(0, 3).join(' / ')}`);
  }
}
// The browser playground: the scenario runner bundled with esbuild into one self-contained page, which
// `etcdsim playground` writes or serves. Bundling fails (and so does the build) if the page would need a
// Node built-in (src/playground/build_page.ts).
{
  const { buildPlaygroundPage } = await import('../dist/playground/build_page.js');
  const { listBundledScenarios } = await import('../dist/cli/run_command.js');
  mkdirSync(new URL('../dist/playground', import.meta.url), { recursive: true });
  writeFileSync(new URL('../dist/playground/index.html', import.meta.url), await buildPlaygroundPage(listBundledScenarios()));
}
writeFileSync(stamp, jsOnly ? 'built from src/ (JavaScript only)\n' : 'built from src/ with types\n');
utimesSync(stamp, begun, begun);
say(`done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
