/**
 * A comment that names a file is a signpost a new engineer follows: every `src/….ts` and `docs/….md` path
 * named in the source and the tests must exist, so a move or a rename that forgets a comment fails here
 * instead of sending the next reader to a file that is gone.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { root, tsFiles as files } from './source_files.js';

/** A repository path to a source file or a doc, not part of a longer path or word. */
const NAMED_PATH = /(?<![\w/.-])((?:src\/[\w/.-]+\.ts)|(?:docs\/[\w/.-]+\.md))\b/g;

test('every src/….ts and docs/….md path named in src/ and test/ exists', () => {
  const gone: string[] = [];
  for (const f of [...files(join(root, 'src')), ...files(join(root, 'test'))]) {
    const lines = readFileSync(f, 'utf8').split('\n');
    lines.forEach((line, i) => {
      for (const m of line.matchAll(NAMED_PATH)) {
        if (!existsSync(join(root, m[1]!))) gone.push(`${relative(root, f)}:${i + 1} names ${m[1]}, which does not exist`);
      }
    });
  }
  assert.deepEqual(gone, []);
});
