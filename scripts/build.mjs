// Compiles src/ into dist/ for the etcdsim command (see bin/etcdsim.js), copies the .proto files the gRPC
// layer loads at run time, and stamps the build last so a half-finished build is never taken as fresh.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
// The .proto files beside the compiled loader (dist/proto/loader.js reads them from its own folder); the
// generated message types are types only and compiled like any source.
const protoSrc = fileURLToPath(new URL('../src/proto', import.meta.url));
cpSync(protoSrc, fileURLToPath(new URL('../dist/proto', import.meta.url)), {
  recursive: true,
  filter: (path) => path.endsWith('.proto') || (statSync(path).isDirectory() && !path.startsWith(`${protoSrc}/generated`)),
});
// The browser playground: the scenario runner bundled with esbuild into one self-contained page, which
// `etcdsim playground` writes or serves. Bundling fails (and so does the build) if the page would need a
// Node built-in (src/playground/build_page.ts).
{
  const { buildPlaygroundPage } = await import('../dist/playground/build_page.js');
  const { listBundledScenarios } = await import('../dist/cli/run_command.js');
  mkdirSync(new URL('../dist/playground', import.meta.url), { recursive: true });
  writeFileSync(new URL('../dist/playground/index.html', import.meta.url), await buildPlaygroundPage(listBundledScenarios()));
}
writeFileSync(new URL('../dist/.build-stamp', import.meta.url), 'built from src/\n');
