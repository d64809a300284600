/**
 * `etcdsim run FILE [--html OUT] [--seed N] [--variant NAME]` and `etcdsim run --list`: runs a scenario
 * script (see scenarios/README.md), prints its transcript, optionally writes the timeline page.
 * FILE may be a path or the name of a bundled scenario (`etcdsim run watch-from-the-past`).
 *
 * Exit codes: 0 every expectation held; 1 an expectation failed or a step errored; 2 usage or syntax error.
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderHtml, runScenario } from '../scenario/index.js';

/** Where the bundled scenarios live (the package's scenarios/ folder). */
export const SCENARIO_DIR = fileURLToPath(new URL('../../scenarios/', import.meta.url));

const USAGE = 'usage: etcdsim run FILE|NAME [--html OUT] [--seed N] [--variant NAME]\n       etcdsim run --list';

export interface BundledScenario {
  /** Name to pass to `etcdsim run` (path under scenarios/ without the extension). */
  readonly name: string;
  readonly path: string;
  /** First `##` line of the file. */
  readonly summary: string;
}

/** Every bundled scenario, in name order. */
export function listBundledScenarios(dir: string = SCENARIO_DIR): BundledScenario[] {
  const found: BundledScenario[] = [];
  const walk = (d: string): void => {
    for (const entry of readdirSync(d).sort()) {
      const p = join(d, entry);
      if (statSync(p).isDirectory()) walk(p);
      else if (entry.endsWith('.etcdsim')) {
        const text = readFileSync(p, 'utf8');
        const first = text.split('\n').find((l) => l.trim().startsWith('##'));
        found.push({ name: relative(dir, p).replace(/\\/g, '/').replace(/\.etcdsim$/, ''), path: p, summary: first?.trim().replace(/^##\s*/, '') ?? '' });
      }
    }
  };
  if (existsSync(dir)) walk(dir);
  return found.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function resolveScenario(arg: string): string | undefined {
  if (existsSync(arg) && statSync(arg).isFile()) return arg;
  const bundled = join(SCENARIO_DIR, arg.endsWith('.etcdsim') ? arg : `${arg}.etcdsim`);
  return existsSync(bundled) ? bundled : undefined;
}

/** Runs `etcdsim run ...`; `args` are the words after `run` (a leading `run` is accepted too). */
export async function runCommand(args: string[], out: (line: string) => void): Promise<number> {
  const a = args[0] === 'run' ? args.slice(1) : [...args];
  let file: string | undefined;
  let html: string | undefined;
  let seed = 0;
  let variant: string | undefined;
  let list = false;
  for (let i = 0; i < a.length; i++) {
    const arg = a[i]!;
    const [flag, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const value = (): string | undefined => inline ?? a[++i];
    switch (flag) {
      case '--list':
        list = true;
        break;
      case '--html':
        html = value();
        if (html === undefined) {
          out(`etcdsim run: --html needs a file name\n${USAGE}`);
          return 2;
        }
        break;
      case '--seed': {
        const v = value();
        if (v === undefined || !/^\d+$/.test(v) || !Number.isSafeInteger(Number(v))) {
          out(`etcdsim run: --seed must be a non-negative integer\n${USAGE}`);
          return 2;
        }
        seed = Number(v);
        break;
      }
      case '--variant':
        variant = value();
        if (variant === undefined) {
          out(`etcdsim run: --variant needs a name\n${USAGE}`);
          return 2;
        }
        break;
      case '-h':
      case '--help':
        out(USAGE);
        return 0;
      default:
        if (arg.startsWith('-')) {
          out(`etcdsim run: unknown option ${arg}\n${USAGE}`);
          return 2;
        }
        if (file !== undefined) {
          out(`etcdsim run: one scenario at a time (got ${file} and ${arg})\n${USAGE}`);
          return 2;
        }
        file = arg;
    }
  }
  if (list) {
    const all = listBundledScenarios();
    const width = Math.max(...all.map((s) => s.name.length), 4);
    for (const s of all) out(`${s.name.padEnd(width)}  ${s.summary}`);
    return 0;
  }
  if (file === undefined) {
    out(USAGE);
    return 2;
  }
  const path = resolveScenario(file);
  if (path === undefined) {
    out(`etcdsim run: no such scenario file or bundled scenario: ${file} (etcdsim run --list shows the bundled ones)`);
    return 2;
  }
  const text = readFileSync(path, 'utf8');
  const title = basename(path);
  const result = runScenario(text, { seed, variant, title });
  for (const l of result.transcript) out(l);
  if (html !== undefined) {
    const runs = result.runs.length > 0 ? result.runs.map((r) => ({ model: r.timeline, transcript: r.transcript })) : [{ model: result.timeline, transcript: result.transcript }];
    writeFileSync(html, renderHtml(title, runs));
    out(`# timeline written to ${resolve(html)}`);
  }
  if (result.ok) return 0;
  const f = result.failure!;
  out(`etcdsim run: ${basename(path)}:${f.line}: ${f.variant !== undefined ? `[${f.variant}] ` : ''}${f.message}`);
  return f.kind === 'syntax' ? 2 : 1;
}
