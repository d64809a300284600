/**
 * The hand-written TypeScript of the repository, as the layout checks read it: generated code
 * (src/proto/generated), test fixtures and installed packages are not written here and not judged.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root directory. */
export const root = fileURLToPath(new URL('../..', import.meta.url));

const NOT_WRITTEN_HERE = new Set(['generated', 'fixtures', 'node_modules']);

/** Every .ts file under `dir`, as absolute paths. */
export function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (!NOT_WRITTEN_HERE.has(e.name)) out.push(...tsFiles(p));
    } else if (e.name.endsWith('.ts')) out.push(p);
  }
  return out;
}
