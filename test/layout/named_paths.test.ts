/**
 * A comment or a doc that names a file is a signpost a new engineer follows: every `src/….ts`, `test/….ts`
 * and `docs/….md` path named in the source, the tests, the benches and scripts, and in every Markdown page
 * (README.md, docs/, each folder's README) must exist, so a move or a rename that forgets a signpost fails
 * here instead of sending the next reader to a file that is gone.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { root, tsFiles } from './source_files.js';

/** A repository path to a source file, a test or a doc, not part of a longer path or word. */
const NAMED_PATH = /(?<![\w/.-])((?:src\/[\w/.-]+\.ts)|(?:test\/[\w/.-]+\.ts)|(?:docs\/[\w/.-]+\.md))\b/g;

/** Paths written as a pattern for the reader to fill in, not as a file. */
const PLACEHOLDERS: ReadonlySet<string> = new Set(['test/properties/x.property.test.ts']);

/** Files under `dir` (not in node_modules, generated code or fixtures) whose name passes `keep`. */
function filesUnder(dir: string, keep: (name: string) => boolean): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name === 'generated' || e.name === 'fixtures' || e.name.startsWith('.')) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(p, keep));
    else if (keep(e.name)) out.push(p);
  }
  return out;
}

/** Where signposts are written: the code and tests, the benches and scripts, and every Markdown page. */
function signposted(): string[] {
  const code = ['src', 'test', 'bench'].flatMap((d) => tsFiles(join(root, d)));
  const scripts = filesUnder(join(root, 'scripts'), (n) => n.endsWith('.mjs'));
  const pages = [join(root, 'README.md'), ...['docs', 'src', 'test', 'examples', 'scenarios', 'bench'].flatMap((d) => filesUnder(join(root, d), (n) => n.endsWith('.md')))];
  return [...code, ...scripts, ...pages];
}

test('every src/….ts, test/….ts and docs/….md path named in the code and the docs exists', () => {
  const gone: string[] = [];
  const files = signposted();
  for (const f of files) {
    readFileSync(f, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        for (const m of line.matchAll(NAMED_PATH)) {
          if (!PLACEHOLDERS.has(m[1]!) && !existsSync(join(root, m[1]!))) gone.push(`${relative(root, f)}:${i + 1} names ${m[1]}, which does not exist`);
        }
      });
  }
  // The pages are read too: the top README, docs/ and a folder's README.
  for (const page of ['README.md', 'docs/cluster.md', 'src/peer/README.md']) assert.ok(files.includes(join(root, page)), `${page} was not read`);
  assert.deepEqual(gone, []);
});
