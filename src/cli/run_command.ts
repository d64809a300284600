/**
 * `etcdsim run FILE [--html OUT] [--seed N] [--variant NAME]` and `etcdsim run --list`: runs a scenario
 * script (see scenarios/README.md), prints its transcript, optionally writes the timeline page; with
 * `--script`, prints instead the bash script that does the lab's steps with etcdctl against a real etcd.
 * FILE may be a path or the name of a bundled scenario (`etcdsim run watch-from-the-past`).
 *
 * Exit codes: 0 every expectation held; 1 an expectation failed or a step errored (or the timeline could
 * not be written); 2 usage or syntax error. The transcript goes to stdout, errors to stderr. The options are
 * declared in program.ts (commander).
 */
import { accessSync, constants, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli, type RunOptions } from './program.js';
import { CliError, type CliIo } from './io.js';

/** Where the bundled scenarios live (the package's scenarios/ folder). */
export const SCENARIO_DIR = fileURLToPath(new URL('../../scenarios/', import.meta.url));

export interface BundledScenario {
  /** Name to pass to `etcdsim run` (path under scenarios/ without the extension). */
  readonly name: string;
  readonly path: string;
  /** The first sentence of the description (its `##` lines up to the first `.`, `?` or `!` that ends one). */
  readonly summary: string;
  /** Its place on the suggested path (scenarios/path.txt), from 1; undefined when it is not on it. */
  readonly step: number | undefined;
}

/** The suggested path through the labs: the names in scenarios/path.txt, in order (`#` lines are comments). */
export function labPath(dir: string = SCENARIO_DIR): string[] {
  const file = join(dir, 'path.txt');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

/** A lab's summary: the first sentence of its description, whole, however many `##` lines it spans. */
export function summaryOf(text: string): string {
  const lines: string[] = [];
  for (const l of text.split('\n')) {
    const t = l.trim();
    if (!t.startsWith('##')) {
      if (lines.length > 0 || (t !== '' && !t.startsWith('#'))) break;
      continue;
    }
    const body = t.replace(/^##\s?/, '').trim();
    if (body === '') {
      if (lines.length > 0) break;
      continue;
    }
    lines.push(body);
  }
  const para = lines.join(' ');
  const end = /[.?!](?=\s|$)/.exec(para);
  return end === null ? para : para.slice(0, end.index + 1);
}

/** Every bundled scenario: the suggested path's in its order, then any other in name order. */
export function listBundledScenarios(dir: string = SCENARIO_DIR): BundledScenario[] {
  const path = labPath(dir);
  const found: BundledScenario[] = [];
  const walk = (d: string): void => {
    for (const entry of readdirSync(d).sort()) {
      const p = join(d, entry);
      if (statSync(p).isDirectory()) walk(p);
      else if (entry.endsWith('.etcdsim')) {
        const name = relative(dir, p).replace(/\\/g, '/').replace(/\.etcdsim$/, '');
        const at = path.indexOf(name);
        found.push({ name, path: p, summary: summaryOf(readFileSync(p, 'utf8')), step: at < 0 ? undefined : at + 1 });
      }
    }
  };
  if (existsSync(dir)) walk(dir);
  const rank = (s: BundledScenario): number => s.step ?? Number.MAX_SAFE_INTEGER;
  return found.sort((a, b) => rank(a) - rank(b) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function resolveScenario(arg: string): string | undefined {
  if (existsSync(arg) && statSync(arg).isFile()) return arg;
  const bundled = join(SCENARIO_DIR, arg.endsWith('.etcdsim') ? arg : `${arg}.etcdsim`);
  return existsSync(bundled) ? bundled : undefined;
}

/**
 * Runs `etcdsim run ...` in-process; `args` are the words after `run` (a leading `run` is accepted too).
 * Results go to `out`, errors to `err` (default: `out`). Resolves to the exit code.
 */
export async function runCommand(args: string[], out: (line: string) => void, err: (line: string) => void = out): Promise<number> {
  return runCli(['run', ...(args[0] === 'run' ? args.slice(1) : args)], { out, err });
}

/** Where `--html FILE` cannot be written, in words; undefined when it looks writable. */
function unwritable(file: string): string | undefined {
  const path = resolve(file);
  // `--html out/` names a directory (existing or not): writing it would fail with EISDIR after the run.
  if (/[\\/]$/.test(file)) return 'that names a directory; give a file, e.g. ' + join(file, 'timeline.html');
  if (existsSync(path)) {
    if (statSync(path).isDirectory()) return 'is a directory';
    try {
      accessSync(path, constants.W_OK);
    } catch {
      return 'permission denied';
    }
    return undefined;
  }
  const dir = dirname(path);
  if (!existsSync(dir)) return `no such directory: ${dir}`;
  if (!statSync(dir).isDirectory()) return `not a directory: ${dir}`;
  try {
    accessSync(dir, constants.W_OK);
  } catch {
    return `permission denied: ${dir}`;
  }
  return undefined;
}

function errnoText(e: unknown): string {
  const code = (e as { code?: string }).code;
  const words: Record<string, string> = { ENOENT: 'no such file or directory', EACCES: 'permission denied', EISDIR: 'is a directory', ENOTDIR: 'not a directory', ENOSPC: 'no space left on device', EROFS: 'read-only file system' };
  return (code !== undefined ? words[code] : undefined) ?? (e instanceof Error ? e.message : String(e));
}

/** `etcdsim run` after commander parsed it: the scenario, run, with its exit code (see the file comment). */
export async function executeRun(scenario: string | undefined, opts: RunOptions, io: CliIo): Promise<number> {
  if (opts.list === true) {
    // The suggested path, numbered, each lab with the whole first sentence of its description.
    const all = listBundledScenarios();
    const width = Math.max(...all.map((s) => s.name.length), 4);
    for (const s of all) io.out(`${s.step !== undefined ? `${String(s.step).padStart(2)}.` : '   '} ${s.name.padEnd(width)}  ${s.summary}`);
    return 0;
  }
  if (!/^\d+$/.test(opts.seed) || !Number.isSafeInteger(Number(opts.seed))) throw new CliError(`--seed must be a non-negative integer, got ${JSON.stringify(opts.seed)}`);
  const seed = Number(opts.seed);
  if (scenario === undefined) throw new CliError('missing the scenario: a FILE, or the NAME of a bundled one (etcdsim run --list)');
  const path = resolveScenario(scenario);
  if (path === undefined) throw new CliError(`no such scenario file or bundled scenario: ${scenario} (etcdsim run --list shows the bundled ones)`);
  const html = opts.html;
  if (html !== undefined) {
    const why = unwritable(html);
    if (why !== undefined) throw new CliError(`cannot write the timeline to ${html}: ${why}`);
  }
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new CliError(`cannot read ${path}: ${errnoText(e)}`);
  }
  const title = basename(path);
  const { renderHtml, runScenario, parseScenario, labScript, scriptBlockers, scriptNotes } = await import('../scenario/index.js');
  // `from-snapshot FILE` names a file relative to the scenario file.
  const result = runScenario(text, { seed, variant: opts.variant, title, readFile: (p) => readFileSync(resolve(dirname(path), p)) });
  if (opts.script === true && result.failure?.kind !== 'syntax') {
    const why = scriptBlockers(parseScenario(text));
    if (why.length > 0) throw new CliError(`${scenario} has no etcdctl script: it needs what etcdctl cannot do against a real etcd: ${why.join('; ')}`, 1);
    for (const l of labScript(scenario.replace(/\.etcdsim$/, ''), result.transcript, scriptNotes(text).unchecked).split('\n').slice(0, -1)) io.out(l);
    return result.ok ? 0 : 1;
  }
  for (const l of result.transcript) io.out(l);
  if (html !== undefined) {
    const runs = result.runs.length > 0 ? result.runs.map((r) => ({ model: r.timeline, transcript: r.transcript })) : [{ model: result.timeline, transcript: result.transcript }];
    try {
      writeFileSync(html, renderHtml(title, runs));
    } catch (e) {
      throw new CliError(`cannot write the timeline to ${html}: ${errnoText(e)}`, 1);
    }
    io.out(`# timeline written to ${resolve(html)}`);
  }
  if (result.ok) return 0;
  const f = result.failure!;
  io.err(`etcdsim run: ${basename(path)}:${f.line}: ${f.variant !== undefined ? `[${f.variant}] ` : ''}${f.message}`);
  return f.kind === 'syntax' ? 2 : 1;
}
