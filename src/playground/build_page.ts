/**
 * Builds the playground page: app.ts and the scenario runner beneath it bundled for the browser with
 * esbuild, inlined with the bundled labs into one self-contained HTML file that works offline from a
 * file:// URL. `npm run build` writes it to dist/playground/index.html (scripts/build.mjs); `etcdsim
 * playground` copies that file, or builds it here when running from src/ (esbuild is a devDependency).
 *
 * The engine reaches Node's byte and hash functions through src/sim/bytes_platform.ts and
 * crypto_platform.ts, the host's time and timers through host_platform.ts; the bundle resolves those to
 * src/playground/browser/, and leaves the Node-only etcd3 client (src/client/etcd3.ts) out the same way. Any
 * other Node built-in the bundle reaches fails the build, naming the module and its importer: the page must
 * never need Node.
 */
import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EmbeddedLab } from './app.js';

/** src/ when running from source, dist/ when compiled: the build always bundles the TypeScript in src/. */
const HERE = dirname(fileURLToPath(import.meta.url));
const SRC = resolve(HERE, '..', '..', 'src');

/** Node-only modules on the runner's path and the browser modules that stand in for them. */
const BROWSER_STAND_INS: ReadonlyMap<string, string> = new Map([
  [join(SRC, 'sim', 'bytes_platform.ts'), join(SRC, 'playground', 'browser', 'bytes_platform.ts')],
  [join(SRC, 'sim', 'crypto_platform.ts'), join(SRC, 'playground', 'browser', 'crypto_platform.ts')],
  [join(SRC, 'sim', 'host_platform.ts'), join(SRC, 'playground', 'browser', 'host_platform.ts')],
  [join(SRC, 'client', 'etcd3.ts'), join(SRC, 'playground', 'browser', 'etcd3_client.ts')],
]);

const NODE_BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

/** Thrown when the bundle would need Node: the build stops with this message. */
export class PlaygroundBuildError extends Error {}

/** The bundled browser script: the runner, the renderer and app.ts (or `entry`), as one IIFE. */
export async function bundlePlayground(entry: string = join(SRC, 'playground', 'app.ts')): Promise<string> {
  const esbuild = await import('esbuild');
  const nodeImports: string[] = [];
  const result = await esbuild.build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
    minify: true,
    legalComments: 'none',
    logLevel: 'silent',
    plugins: [
      {
        name: 'etcdsim-browser',
        setup(build) {
          // bcryptjs (src/auth/password.ts) imports crypto only for random salts of its own, which etcdsim
          // never asks for (salts come from the seed); its package.json maps it to nothing in browsers.
          build.onResolve({ filter: /^crypto$/ }, (args) => (/[\\/]node_modules[\\/]bcryptjs[\\/]/.test(args.importer) ? { path: 'crypto', namespace: 'etcdsim-empty' } : undefined));
          build.onLoad({ filter: /.*/, namespace: 'etcdsim-empty' }, () => ({ contents: 'export default {};', loader: 'js' }));
          build.onResolve({ filter: /.*/ }, (args) => {
            if (NODE_BUILTINS.has(args.path) || args.path.startsWith('node:')) {
              nodeImports.push(`${args.path} (imported by ${args.importer})`);
              return { path: args.path, external: true };
            }
            if (args.path.startsWith('.')) {
              const target = resolve(args.resolveDir, args.path).replace(/\.js$/, '.ts');
              const standIn = BROWSER_STAND_INS.get(target);
              if (standIn !== undefined) return { path: standIn };
            }
            return undefined;
          });
        },
      },
    ],
  });
  if (nodeImports.length > 0) {
    throw new PlaygroundBuildError(`the playground bundle would need Node built-ins: ${nodeImports.join('; ')}. Put them behind src/sim/*_platform.ts with a browser stand-in in src/playground/browser/.`);
  }
  const js = result.outputFiles?.[0]?.text ?? '';
  const leaked = /(?:require\(|from\s*|import\()\s*["']node:[a-z_/]+["']/.exec(js);
  if (leaked !== null) throw new PlaygroundBuildError(`the playground bundle refers to a Node built-in: ${leaked[0]}`);
  return js;
}

/** JavaScript safe inside an HTML <script> element: `</script` would end it (`<\/` means the same in JS). */
function inScript(js: string): string {
  if (js.includes('<!--')) throw new PlaygroundBuildError('the playground bundle contains "<!--", which an inline <script> cannot hold');
  return js.replace(/<\/(script)/gi, '<\\/$1');
}

/** JSON safe inside an HTML <script> element: every `<` as \u003c, which JSON.parse reads back. */
function jsonInScript(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c');
}

/** The page: editor, switches, transcript and the timeline frame around the bundled script. */
export function playgroundHtml(bundle: string, labs: readonly EmbeddedLab[]): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>etcdsim playground</title>
<style>
body { font-family: sans-serif; margin: 0; color: #222; }
header { padding: 0.6em 1em; border-bottom: 1px solid #ddd; display: flex; flex-wrap: wrap; gap: 0.5em 1.5em; align-items: baseline; }
header h1 { font-size: 1.2em; margin: 0; }
#status.ok { color: #2a7a2a; } #status.failed { color: #b00; font-weight: bold; }
#variants { display: flex; gap: 1em; } #variants[hidden] { display: none; }
main { display: grid; grid-template-columns: minmax(20em, 38%) minmax(0, 1fr); gap: 1em; padding: 1em; }
@media (max-width: 900px) { main { grid-template-columns: minmax(0, 1fr); } }
#labs h2 { font-size: 0.9em; margin: 0.4em 0; color: #555; }
.lab-buttons { display: flex; flex-wrap: wrap; gap: 0.3em; margin-bottom: 0.5em; }
.lab-buttons button { font-size: 12px; }
div.editor { display: flex; border: 1px solid #aaa; }
pre#gutter { margin: 0; padding: 2px 0.4em; height: 28em; box-sizing: border-box; overflow: hidden; font: 13px/1.4 monospace; color: #999; background: #f4f4f4; text-align: right; min-width: 2.4em; user-select: none; }
textarea#script { flex: 1; min-width: 0; box-sizing: border-box; height: 28em; font: 13px/1.4 monospace; tab-size: 2; border: 0; padding: 2px 0.4em; }
pre#transcript { background: #f7f7f7; padding: 0.8em 0.8em 0.8em 3.6em; font-size: 12px; overflow: auto; white-space: pre; max-height: 40em; position: relative; }
pre#transcript .tl[data-n]::before { content: attr(data-n); position: absolute; left: 0.4em; width: 2.6em; text-align: right; color: #999; }
pre#transcript .tl:not([data-line="0"]) { cursor: pointer; }
pre#transcript .tl.hl { background: #fff1b8; } pre#transcript .tl.sel { background: #ffd666; }
#seed.invalid { outline: 2px solid #b00; }
iframe#timeline { width: 100%; min-height: 30em; border: 1px solid #ddd; }
</style>
</head>
<body>
<header>
<h1>etcdsim playground</h1>
<span>edit the scenario: it reruns as you type, and the address bar holds a link to share it</span>
<span id="variants" hidden></span>
<label id="seed-control" title="seed of the run's random choices (lease IDs), as etcdsim run --seed; the link carries it">seed <input id="seed" type="text" inputmode="numeric" size="8" value="0" spellcheck="false" autocomplete="off" aria-label="seed"></label>
<span id="status"></span>
</header>
<main>
<section>
<nav id="labs"></nav>
<div class="editor"><pre id="gutter" aria-hidden="true"></pre><textarea id="script" wrap="off" spellcheck="false" autocomplete="off" aria-label="scenario script"></textarea></div>
<h2>transcript <small>(numbers: script lines; hover or click a line, or a mark in the timeline, to see the other)</small></h2>
<pre id="transcript"></pre>
</section>
<section>
<iframe id="timeline" title="timeline"></iframe>
</section>
</main>
<script type="application/json" id="lab-data">${jsonInScript(labs)}</script>
<script>
${inScript(bundle)}
</script>
</body>
</html>
`;
}

/** The labs to embed, read from the bundled scenario files (names as `etcdsim run --list` gives them). */
export function embedLabs(scenarios: readonly { name: string; path: string; summary: string }[]): EmbeddedLab[] {
  return scenarios.map((s) => ({ name: s.name, summary: s.summary, text: readFileSync(s.path, 'utf8') }));
}

/** The whole page for `scenarios`, built now. */
export async function buildPlaygroundPage(scenarios: readonly { name: string; path: string; summary: string }[]): Promise<string> {
  return playgroundHtml(await bundlePlayground(), embedLabs(scenarios));
}
