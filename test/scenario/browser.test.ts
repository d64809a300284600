/**
 * The timeline page in a real browser: headless Chromium (Debian's `chromium`) loads the page written for a
 * bundled scenario, lays out the SVG, and runs the page's small self-check without a script error; at window
 * widths of 1400 and 800 px the page explains itself (description, question, numbered steps, legend, bug
 * sections) and never scrolls sideways, while a long drawing scrolls inside its own box. Chromium
 * is needed: .ci/run installs it; without it the test skips outside CI and fails in CI (test/support/prerequisites.ts).
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
import { findChromium, requireChromium } from '../support/prerequisites.js';

test('headless Chromium renders a bundled scenario timeline: marks, cliff, watcher lanes, no script errors', { skip: requireChromium() }, () => {
  const chromium = findChromium()!;
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

/** Loads `file` in headless Chromium with a window `width` px wide; returns the DOM after the page's check ran. */
function dumpDom(chromium: string, dir: string, file: string, width: number): string {
  return execFileSync(
    chromium,
    ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--hide-scrollbars', `--window-size=${width},900`, `--user-data-dir=${join(dir, `profile-${width}`)}`, '--dump-dom', pathToFileURL(file).href],
    { encoding: 'utf8', timeout: 60_000, stdio: ['ignore', 'pipe', 'ignore'] },
  );
}

test('headless Chromium at 1400 and 800 px: a long lab page explains itself and never scrolls sideways; the drawing scrolls in its box', { skip: requireChromium() }, () => {
  const chromium = findChromium()!;
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-browser-'));
  try {
    for (const name of ['compaction-during-replay', 'bugs/15220-progress-overtakes-events']) {
      const scenario = listBundledScenarios().find((s) => s.name === name)!;
      const r = runScenario(readFileSync(scenario.path, 'utf8'));
      assert.ok(r.ok);
      const file = join(dir, `${name.replace('/', '-')}.html`);
      writeFileSync(file, renderHtml(name, r.runs.map((x) => ({ model: x.timeline, transcript: x.transcript }))));
      for (const width of [1400, 800]) {
        const dom = dumpDom(chromium, dir, file, width);
        const root = /<html[^>]*>/.exec(dom)?.[0] ?? '';
        const attr = (k: string): string => new RegExp(`data-${k}="([^"]*)"`).exec(root)?.[1] ?? '';
        assert.equal(attr('rendered'), 'yes', `${name} @${width}: the page loaded and its check ran`);
        assert.doesNotMatch(root, /data-errors=/, 'no script error');
        assert.equal(Number(attr('viewport')), width, 'laid out at the window width');
        assert.equal(attr('overflow-x'), '0', `${name} @${width}: no sideways scroll of the page`);
        assert.equal(attr('labels-position'), 'sticky', 'lane labels stay put while the drawing scrolls');
        assert.ok(Number(attr('steps')) >= 3, 'the numbered steps are on the page');
        assert.ok(Number(attr('legend')) >= 15, 'the legend, every entry');
        assert.match(dom, /<p class="lead">/, 'the description');
        assert.match(dom, /<div class="predict"><strong>Predict first:<\/strong>/);
        if (name.startsWith('bugs/')) {
          assert.match(dom, /<h3>What goes wrong<\/h3>/);
          assert.match(dom, /<h3>What the fix changes<\/h3>/);
          assert.match(dom, /<a href="https:\/\/github\.com\/etcd-io\/etcd\/issues\/15220">#15220<\/a>/);
        } else {
          // 2000 revisions in a picture that fits a screen or two, scrolling inside its own box at 800 px.
          assert.ok(Number(attr('svg-width')) < 2000, `svg width ${attr('svg-width')}`);
          if (width === 800) assert.ok(Number(attr('scroll-overflow')) > 0, 'the drawing scrolls inside its box');
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
