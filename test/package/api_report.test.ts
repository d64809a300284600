/**
 * The public API is a reviewed decision: etc/*.api.md record what each entry point exports (API Extractor's
 * report over the declarations of src/). This regenerates them in memory and fails, showing the diff, when
 * the code's surface no longer matches the checked-in files.
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
