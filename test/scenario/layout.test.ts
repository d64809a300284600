/**
 * Every bundled lab's page, in headless Chromium at 800, 1280 and 1920 px: the whole drawing is in its box (no
 * sideways scroll hides the end of a run, where the lesson is), no text of it is cut by its edge or overlaps
 * another text, no break mark or numbered step circle covers a text or another circle, and every read — a failed
 * one (ErrCompacted) too — is written on the page with what it returned, without hovering (layout_check.ts); no
 * text is drawn smaller than 11 px on the page, 10 px in a drawing shown at its own size, 6.5 px in one scaled
 * down into an 800 px window.
 * Screenshots of each drawing are kept in ETCDSIM_SCREENSHOTS when set. Chromium is needed: .ci/run installs it;
 * without it the test skips outside CI and fails in CI.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { listBundledScenarios } from '../../src/cli/run_command.js';
import { renderHtml, runScenario } from '../../src/scenario/index.js';
import { findChromium, requireChromium } from '../support/prerequisites.js';
import { screenshotDir, startBrowser, type BrowserPage } from './cdp.js';
import { LAYOUT_CHECK } from './layout_check.js';

const WIDTHS = [800, 1280, 1920] as const;

/**
 * The smallest text as it is drawn on the screen, in CSS px: in the drawings (their font size times the scale the
 * box shows them at) and on the rest of the page.
 */
const SMALLEST_TEXT = `(() => {
  let svg = Infinity;
  for (const s of document.querySelectorAll('svg.timeline')) {
    const scale = s.getBoundingClientRect().width / s.viewBox.baseVal.width;
    for (const t of s.querySelectorAll('text')) if (t.getBBox().width > 0) svg = Math.min(svg, parseFloat(getComputedStyle(t).fontSize) * scale);
  }
  let page = Infinity;
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n !== null; n = walk.nextNode()) {
    const el = n.parentElement;
    if (el === null || n.textContent.trim() === '' || el.closest('svg') !== null || el.getClientRects().length === 0) continue;
    page = Math.min(page, parseFloat(getComputedStyle(el).fontSize));
  }
  return { svg, page };
})()`;

test('every lab page at 800, 1280 and 1920 px: the drawing fits its box, no text cut or covered, every read written out', { skip: requireChromium(), timeout: 300_000 }, async () => {
  const chromium = findChromium()!;
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-layout-'));
  const shots = join(screenshotDir(dir), 'layout');
  mkdirSync(shots, { recursive: true });
  let page: BrowserPage | undefined;
  try {
    const browser = await startBrowser(chromium, dir, WIDTHS[0]);
    page = browser;
    for (const lab of listBundledScenarios()) {
      const r = runScenario(readFileSync(lab.path, 'utf8'));
      assert.ok(r.ok, `${lab.name}: ${r.failure?.message ?? ''}`);
      const runs = r.runs.map((x) => ({ model: x.timeline, transcript: x.transcript }));
      const file = join(dir, `${lab.name.replace(/\//g, '-')}.html`);
      writeFileSync(file, renderHtml(lab.name, runs));
      const reads = runs.map((x) => x.model.reads.length);
      for (const width of WIDTHS) {
        await browser.resize(width);
        await browser.open(pathToFileURL(file).href);
        const problems = await browser.evaluate<string[]>(LAYOUT_CHECK);
        assert.deepEqual(problems, [], `${lab.name} @${width}`);
        const seen = await browser.evaluate<{ overflow: number; labels: number[]; failed: number }>(`({
          overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
          labels: [...document.querySelectorAll('section.run')].map((s) => s.querySelectorAll('.read-label').length),
          failed: document.querySelectorAll('.read.failed').length,
        })`);
        const fonts = await browser.evaluate<{ svg: number; page: number }>(SMALLEST_TEXT);
        assert.ok(fonts.page >= 11, `${lab.name} @${width}: page text at ${fonts.page} px`);
        // A drawing shown at its own size (every one from 1280 px on, the shorter runs' at 800) has no text under
        // 10 px; one scaled down into an 800 px window (a long run's) keeps its smallest above 6.5 px.
        assert.ok(fonts.svg >= (width >= 1280 ? 10 : 6.5), `${lab.name} @${width}: drawing text at ${fonts.svg.toFixed(2)} px`);
        assert.equal(seen.overflow, 0, `${lab.name} @${width}: the page does not scroll sideways`);
        assert.deepEqual(seen.labels, reads, `${lab.name} @${width}: one label per read`);
        if (lab.name === 'pagination-pinned-revision') assert.equal(seen.failed, 1, 'the read of a compacted revision is drawn, failed');
        await browser.evaluate(`(document.querySelector('.scroll').scrollIntoView(), true)`);
        assert.ok((await browser.screenshot(join(shots, `${lab.name.replace(/\//g, '-')}-${width}.png`))) > 5_000);
      }
    }
  } finally {
    await page?.close();
    rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
  }
});
