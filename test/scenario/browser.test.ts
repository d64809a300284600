/**
 * The timeline page in a real browser: headless Chromium (Debian's `chromium`) loads the page written for a
 * bundled scenario, lays out the SVG, and runs the page's small self-check without a script error. Chromium
 * is required: .ci/run installs it; this test fails (it does not skip) when it is missing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { listBundledScenarios } from '../../src/cli/run_command.js';
import { renderHtml, runScenario } from '../../src/scenario/index.js';

function findChromium(): string {
  for (const name of ['chromium', 'chromium-browser', 'google-chrome']) {
    try {
      return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
    } catch {
      // try the next name
    }
  }
  throw new Error('chromium not found: install it (Debian: apt-get install -y chromium); .ci/run does');
}

test('headless Chromium renders a bundled scenario timeline: marks, cliff, watcher lanes, no script errors', () => {
  const chromium = findChromium();
  const scenario = listBundledScenarios().find((s) => s.name === 'list-then-watch-relist')!;
  const r = runScenario(readFileSync(scenario.path, 'utf8'));
  assert.ok(r.ok);
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-browser-'));
  try {
    const file = join(dir, 'timeline.html');
    writeFileSync(file, renderHtml(scenario.name, r.runs.map((x) => ({ model: x.timeline, transcript: x.transcript }))));
    const dom = execFileSync(
      chromium,
      ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', `--user-data-dir=${join(dir, 'profile')}`, '--dump-dom', pathToFileURL(file).href],
      { encoding: 'utf8', timeout: 60_000, stdio: ['ignore', 'pipe', 'ignore'] },
    );
    const root = /<html[^>]*>/.exec(dom)?.[0] ?? '';
    assert.match(root, /data-rendered="yes"/, 'the page loaded and its check ran');
    assert.doesNotMatch(root, /data-errors=/, 'no script error');
    assert.match(root, new RegExp(`data-writes="${r.timeline.writes.length}"`), 'one mark per write in the DOM');
    const width = Number(/data-svg-width="(\d+)"/.exec(root)?.[1]);
    assert.ok(width > 300, `the SVG was laid out (width ${width})`);
    assert.equal((dom.match(/class="compaction"/g) ?? []).length, 1, 'the compaction cliff');
    assert.equal((dom.match(/class="watcher-lane"/g) ?? []).length, 3, 'three watcher lanes');
    assert.ok(dom.includes('class="legend"'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
