/**
 * The public API is a reviewed decision: etc/*.api.md record what each entry point exports (API Extractor's
 * report over the declarations of src/). This regenerates them in memory and fails, showing the diff, when
 * the code's surface no longer matches the checked-in files — and refuses an export without a release tag
 * (@public, @beta, @internal), so every symbol says whether users may rely on it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
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
