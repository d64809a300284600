/**
 * A folder of src/ is one etcd concept, and its index.ts is what the other floors may use of it: an import
 * from another folder goes through that folder's index, never into its files, so a folder's files can be
 * split, merged or renamed without touching the floors above — and what a folder offers them is read in one
 * place. The exceptions are named here, each with its reason.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { root, tsFiles } from './source_files.js';

const SRC = join(root, 'src');

/** Importers whose imports of another folder's files are by design: the package's entry points. */
const ENTRY_POINTS: ReadonlySet<string> = new Set([
  // The root entry picks the public surface name by name from the files that define them, so a folder's
  // index (which serves the floors above) never decides what is published.
  'src/index.ts',
  // The `etcdsim/grpc` entry, likewise (src/grpc/index.ts is the gRPC floor's index, for the floors above).
  'src/grpc.ts',
]);

/** Imports of a folder's file (not its index) that are allowed, as `importer folder → imported file`. */
const EXCEPTIONS: Readonly<Record<string, string>> = {
  // etcd's message types, imported as one namespace (`import type * as M`): the package publishes that
  // module as `messages`, and a namespace re-exported through server's index would be published as a second.
  '* → src/server/messages.ts': 'one namespace of message types in the published types',
  'server → src/proto/generated/index.ts': 'one namespace of message types in the published types',
  // mvcc reads no clock (test/layout/layers.test.ts): sim's index loads the clocks, its bytes platform does not.
  'mvcc → src/sim/bytes_platform.ts': 'mvcc loads no clock',
  // proto's index also holds the .proto loader, which loads proto-loader and protobufjs (53 modules): the
  // in-process simulator (the root entry, the playground's page) never reads a .proto and lists etcd's calls
  // from their generated declarations alone (held below: it reaches no loader).
  'server → src/proto/calls.ts': 'the in-process simulator loads no .proto loader',
  'client → src/proto/calls.ts': 'the in-process simulator loads no .proto loader',
  // A process member encodes its writes as etcd's InternalRaftRequest, which needs the loaded protos: through
  // server's index the in-process simulator would load the .proto loader (held above) for a file it never uses.
  'peer → src/server/raft_request.ts': 'the in-process simulator loads no .proto loader',
  // etcd reads its flags before anything else: the command's flag readers load one file each, not the
  // member (`etcdsim` starts in about 0.3 s).
  'cli → src/server/urls.ts': 'flags are read before the member loads',
  'cli → src/mvcc/validate.ts': 'flags are read before the member loads',
};

/**
 * Static imports and re-exports. A dynamic `import()` may name a file: it loads that one module when its
 * command runs (the playground's bundler, a cluster seed's workers, a data dir's reader), which is the
 * point — going through the index would load the whole folder at start-up.
 */
const IMPORT = /(?:\bfrom\s+|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;

function folderOf(path: string): string {
  const parts = relative(SRC, path).split(/[\\/]/);
  return parts.length === 1 ? '(root)' : parts[0]!;
}

/** Every import of another folder's file that is not its index, as `importer: imported`. */
function pastTheIndex(): { found: string[]; excepted: Set<string> } {
  const found: string[] = [];
  const excepted = new Set<string>();
  for (const f of tsFiles(SRC)) {
    const importer = relative(root, f);
    if (ENTRY_POINTS.has(importer)) continue;
    for (const m of readFileSync(f, 'utf8').matchAll(IMPORT)) {
      const target = resolve(dirname(f), m[1]!);
      const to = folderOf(target);
      if (to === folderOf(f) || to === '(root)') continue;
      if (relative(join(SRC, to), target) === 'index.js') continue;
      const imported = relative(root, target).replace(/\.js$/, '.ts');
      const key = [`${folderOf(f)} → ${imported}`, `* → ${imported}`].find((k) => EXCEPTIONS[k] !== undefined);
      if (key !== undefined) excepted.add(key);
      else found.push(`${importer}: ${imported}`);
    }
  }
  return { found, excepted };
}

/** A static import or re-export statement, with `type` when it loads nothing at run time. */
const STATEMENT = /^(?:import|export)\s+(type\s+)?[^;]*?\bfrom\s+['"](\.{1,2}\/[^'"]+)['"]|^import\s+['"](\.{1,2}\/[^'"]+)['"]/gms;

/** Every file `entry` loads through static imports (not type-only ones; dynamic ones load on demand), as paths from the root. */
function reachedFrom(entry: string): Set<string> {
  const seen = new Set<string>();
  const todo = [join(root, entry)];
  for (let f = todo.pop(); f !== undefined; f = todo.pop()) {
    const name = relative(root, f);
    if (seen.has(name)) continue;
    seen.add(name);
    for (const m of readFileSync(f, 'utf8').matchAll(STATEMENT)) {
      if (m[1] === undefined) todo.push(resolve(dirname(f), (m[2] ?? m[3])!).replace(/\.js$/, '.ts'));
    }
  }
  return seen;
}

test('the in-process simulator (the root entry) reaches no .proto loader, which is why two floors import proto’s calls.ts', () => {
  const reached = reachedFrom('src/index.ts');
  assert.ok(reached.has('src/proto/calls.ts'), 'the simulator lists its calls from src/proto/calls.ts');
  assert.ok(!reached.has('src/proto/loader.ts'), 'the root entry now loads the .proto loader: the calls.ts exceptions lost their reason');
});

test('a process member’s raft_request.ts loads the .proto loader, which is why it is not exported through server’s index', () => {
  assert.ok(reachedFrom('src/server/raft_request.ts').has('src/proto/loader.ts'), 'raft_request.ts no longer loads the loader: export it through server’s index and drop its exception');
  assert.ok(reachedFrom('src/server/index.ts').has('src/server/raft_request.ts') === false, 'server’s index loads raft_request.ts: peer may import it from there');
});

test('imports between src/ folders go through the imported folder’s index.ts', () => {
  const { found, excepted } = pastTheIndex();
  assert.deepEqual(found, [], 'import it from the folder’s index.ts (export it there), or name a justified exception here');
  // An exception nothing needs any more is dropped, so the list stays the list of reasons.
  assert.deepEqual(
    Object.keys(EXCEPTIONS).filter((k) => !excepted.has(k)),
    [],
  );
});
