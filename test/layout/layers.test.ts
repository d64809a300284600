/**
 * Imports point down only: each folder of src/ is one floor of etcd's architecture, and a floor may import
 * only floors below it — the doors (cli, grpc, http, client, diff, scenario, shadow) above the simulated
 * cluster, the cluster and a member in a process of its own (peer) side by side above one member (server), the member above watch, lease and auth, and
 * those above mvcc, with the leaves (sim, etcd's shared error contract and releases, the HTTP/2 layer, the
 * proto tables, the per-member Raft) at the bottom. A new folder must be given its floor here, so the
 * architecture is decided when the folder is made, not discovered later in a cycle.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { root, tsFiles } from './source_files.js';

/** Each folder's floor: an import must go to a strictly lower one. `(root)` is src/index.ts, the package. */
const FLOOR: Readonly<Record<string, number>> = {
  sim: 0,
  etcd: 0,
  h2: 0,
  proto: 0,
  raft: 1,
  mvcc: 1,
  watch: 2,
  lease: 2,
  auth: 2,
  snapshot: 3,
  storage: 4,
  server: 5,
  cluster: 6,
  // A member in a process of its own runs Raft as a cluster's member does, with none of the simulated
  // cluster: a floor beside it, so neither loads the other (a member's Raft errors are src/server's).
  peer: 6,
  client: 7,
  http: 7,
  grpc: 8,
  scenario: 8,
  diff: 9,
  playground: 9,
  shadow: 10,
  cli: 11,
  '(root)': 11,
};

const IMPORT = /(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]+)['"]/g;

/** The src/ folder a path under src/ belongs to. */
function folderOf(path: string): string {
  const parts = relative(join(root, 'src'), path).split(/[\\/]/);
  return parts.length === 1 ? '(root)' : parts[0]!;
}

/** Every relative import between two src/ folders, as [from file, to file]. */
function crossFolderImports(): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const f of tsFiles(join(root, 'src'))) {
    for (const m of readFileSync(f, 'utf8').matchAll(IMPORT)) {
      const target = resolve(dirname(f), m[1]!);
      if (folderOf(target) !== folderOf(f)) out.push([f, target]);
    }
  }
  return out;
}

test('every src/ folder has its floor', () => {
  const folders = new Set(tsFiles(join(root, 'src')).map(folderOf));
  assert.deepEqual([...folders].filter((f) => FLOOR[f] === undefined), [], 'give each new folder a floor in test/layout/layers.test.ts');
});

test('imports between src/ folders point down only', () => {
  const upward = crossFolderImports()
    .filter(([from, to]) => (FLOOR[folderOf(to)] ?? Infinity) >= (FLOOR[folderOf(from)] ?? -Infinity))
    .map(([from, to]) => `${relative(root, from)} imports ${relative(root, to)}`);
  assert.deepEqual(upward, []);
});

test('mvcc reads no clock: of src/sim it imports only the bytes platform', () => {
  const fromMvcc = crossFolderImports()
    .filter(([from, to]) => folderOf(from) === 'mvcc' && folderOf(to) === 'sim')
    .map(([, to]) => relative(root, to).replace(/\.js$/, ''));
  assert.ok(fromMvcc.length > 0, 'the check reads the imports it judges');
  assert.deepEqual([...new Set(fromMvcc)], ['src/sim/bytes_platform']);
});
