/**
 * `etcdsim playground [--out DIR] [--port N]`: the browser playground (src/playground/), a page that runs
 * the scenario runner itself in the browser. With --out it writes DIR/index.html, one self-contained file
 * that works offline from a file:// URL; without, it serves that page on loopback and prints its URL until
 * SIGINT / SIGTERM. The page is the one `npm run build` wrote to dist/playground/index.html; running from
 * src/ (no build, or an edit since) it is bundled now with esbuild.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { CliError, type CliIo } from './io.js';
import { listBundledScenarios } from './run_command.js';

/** `etcdsim playground`'s options as commander hands them over. */
export interface PlaygroundOptions {
  out?: string | undefined;
  port: string;
}

/** The built page next to the compiled CLI (dist/playground/index.html), when this is the compiled CLI. */
const BUILT_PAGE = fileURLToPath(new URL('../playground/index.html', import.meta.url));

/** The playground page: the built one, or one bundled now from src/. */
export async function playgroundPage(): Promise<string> {
  if (existsSync(BUILT_PAGE)) return readFileSync(BUILT_PAGE, 'utf8');
  const { buildPlaygroundPage } = await import('../playground/build_page.js');
  return buildPlaygroundPage(listBundledScenarios());
}

/** `etcdsim playground` after commander parsed it; resolves once the page is written or served. */
export async function executePlayground(opts: PlaygroundOptions, io: CliIo): Promise<number> {
  if (!/^\d+$/.test(opts.port) || Number(opts.port) > 65535) throw new CliError(`--port must be a port number 0..65535 (0: any free port), got ${JSON.stringify(opts.port)}`);
  if (opts.out !== undefined) {
    const dir = resolve(opts.out);
    if (existsSync(dir) && !statSync(dir).isDirectory()) throw new CliError(`--out ${opts.out}: not a directory`);
    const page = await playgroundPage();
    try {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'index.html'), page);
    } catch (e) {
      throw new CliError(`cannot write ${join(dir, 'index.html')}: ${e instanceof Error ? e.message : String(e)}`, 1);
    }
    io.out(`# playground written to ${join(dir, 'index.html')}`);
    io.out(`# open ${pathToFileURL(join(dir, 'index.html')).href}`);
    return 0;
  }
  const page = await playgroundPage();
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split(/[?#]/)[0];
    if ((req.method === 'GET' || req.method === 'HEAD') && (path === '/' || path === '/index.html')) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : page);
    } else {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('not found: the playground is at /\n');
    }
  });
  await new Promise<void>((ok, fail) => {
    server.once('error', (e: NodeJS.ErrnoException) => fail(new CliError(`cannot listen on 127.0.0.1:${opts.port}: ${e.code ?? e.message}`, 1)));
    server.listen(Number(opts.port), '127.0.0.1', () => ok());
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : Number(opts.port);
  io.out(`# playground at http://127.0.0.1:${port}/ (Ctrl-C stops it)`);
  const stop = (): void => {
    server.close();
    server.closeAllConnections();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return 0;
}
