/**
 * The public API is a reviewed decision: etc/*.api.md record what each entry point exports (API Extractor's
 * report over the declarations of src/). This regenerates them in memory and fails, showing the diff, when
 * the code's surface no longer matches the checked-in files — and refuses an export without a release tag
 * (@public, @beta, @internal), so every symbol says whether users may rely on it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

test('etc/*.api.md match the public API of src/ (else: run npm run api-report and commit the change)', () => {
  const run = spawnSync(process.execPath, ['scripts/api-report.mjs', '--check'], { cwd: root, encoding: 'utf8', timeout: 180_000 });
  assert.equal(run.error, undefined, `scripts/api-report.mjs --check did not run: ${String(run.error)}`);
  assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
  assert.match(run.stdout, /API reports are up to date/);
});

/**
 * Runs the report's generator on test/package/fixtures/release_tags/<name>.ts for each name, in one process:
 * each one's report, or the error it threw.
 */
function reportsOfFixtures(names: readonly string[]): Record<string, { report?: string; error?: string }> {
  const script = `
    import { generateApiReports } from './scripts/api-report.mjs';
    const dir = 'test/package/fixtures/release_tags';
    const out = {};
    for (const name of ${JSON.stringify(names)}) {
      try {
        const [r] = generateApiReports({ entries: [{ subpath: '.', source: dir + '/' + name + '.ts', report: 'fixture' }], srcRoot: dir });
        out[name] = { report: r.text };
      } catch (e) {
        out[name] = { error: String(e) };
      }
    }
    process.stdout.write(JSON.stringify(out));`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8', timeout: 120_000 });
  assert.equal(run.error, undefined, String(run.error));
  assert.equal(run.status, 0, run.stderr);
  return JSON.parse(run.stdout) as Record<string, { report?: string; error?: string }>;
}

test('the API report refuses an export without a release tag, and names it', () => {
  const { untagged, tagged } = reportsOfFixtures(['untagged', 'tagged']);
  assert.equal(untagged?.report, undefined, 'an untagged export passed');
  assert.match(untagged?.error ?? '', /\(ae-missing-release-tag\) "forgotten"/);
  assert.doesNotMatch(untagged?.error ?? '', /"tagged"/);
  // The same check passes when every export is tagged, and the report keeps each tag.
  assert.equal(tagged?.error, undefined);
  assert.match(tagged?.report ?? '', /\/\/ @public\s+export const tagged = 1;/);
  assert.match(tagged?.report ?? '', /\/\/ @beta\s+export interface TaggedShape/);
});

/**
 * Types a published declaration names that its entry point does not export (API Extractor's
 * ae-forgotten-export, kept in the report): each is either exported and tagged, or stripped from the
 * published types with @internal (tsconfig.build.json's stripInternal), or named here with the reason it
 * stays. A new one fails, so an internal type does not leak into the published surface unnoticed.
 */
/** The reason of a type another entry names: the root entry `etcdsim` exports it, tagged. */
const ROOT_EXPORT = 'exported and tagged by the root entry (etcdsim)';

const UNEXPORTED: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  'etcdsim.api.md': {
    // The `messages` namespace is written over proto-loader's generated declarations (src/proto/generated):
    // publishing those would list etcd's messages twice, once in their generated form.
    pb: 'the generated declarations behind `messages`',
    RequestOf: '`messages`: a request type made lenient from its generated form',
    WithLaterFields: '`messages`: the fields a later release added, optional',
    // proto's mapping of a service to its methods' names, over the generated service definitions.
    CallName: 'derived from the generated service definitions (ServiceClient, MemberServices)',
    Calls: 'MemberServices: one service of a member as the doors call it, derived from CallName',
  },
  // serve()'s handle holds the member as the interface the root entry publishes for `sim.server`
  // (ServeHandle.server: EtcdServerView): the types it names are the root entry's own, exported and tagged
  // there (checked below), and this entry does not publish them a second time.
  'etcdsim-grpc.api.md': Object.fromEntries(
    [
      'CallContext',
      'CompactionCrash',
      'EtcdServices',
      'EveryOptions',
      'Lessor',
      'MemberInfo',
      'MemberRestart',
      'MemberSnapshot',
      'MemberView',
      'MvccStore',
      'PendingTimer',
      'PermissionType',
      'StoreSnapshot',
      'TimerHandle',
      'WatchableStore',
    ].map((name) => [name, ROOT_EXPORT]),
  ),
};

test('the published types name no internal type beyond the listed ones (etc/*.api.md’s ae-forgotten-export)', () => {
  for (const [report, allowed] of Object.entries(UNEXPORTED)) {
    const text = readFileSync(join(root, 'etc', report), 'utf8');
    const named = [...new Set([...text.matchAll(/ae-forgotten-export\) The symbol "([^"]+)"/g)].map((m) => m[1]!))].sort();
    assert.ok(named.length > 0 || Object.keys(allowed).length === 0, `${report}: the check reads the warnings it judges`);
    assert.deepEqual(named, Object.keys(allowed).sort(), `${report}: export the new type (tagged), strip it with @internal, or name it here with why`);
    const rootReport = readFileSync(join(root, 'etc', 'etcdsim.api.md'), 'utf8');
    for (const [name, why] of Object.entries(allowed)) {
      if (why !== ROOT_EXPORT) continue;
      assert.match(rootReport, new RegExp(`^export (declare )?(abstract )?(class|interface|type|enum|const enum|function) ${name}\\b`, 'm'), `${name}: said to be the root entry's, but etc/etcdsim.api.md does not export it`);
    }
  }
});
