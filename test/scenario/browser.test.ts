/**
 * The timeline page in a real browser: headless Chromium (Debian's `chromium`) loads the page written for a
 * bundled scenario, lays out the SVG, and runs the page's small self-check without a script error; at window
 * widths of 1400 and 800 px the page explains itself (description, question, numbered steps, legend, bug
 * sections) and never scrolls sideways, while a long drawing is scaled down to its box. The linked transcript
 * and timeline and the time strip are driven with the real mouse over the DevTools protocol, with screenshots
 * at both widths (kept in ETCDSIM_SCREENSHOTS when set). Chromium is needed: .ci/run installs it; without it the test skips outside CI and fails in CI (test/support/prerequisites.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { listBundledScenarios } from '../../src/cli/run_command.js';
import { renderHtml, runScenario } from '../../src/scenario/index.js';
import { findChromium, requireChromium } from '../support/prerequisites.js';
import { screenshotDir, startBrowser } from './cdp.js';

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

test('headless Chromium at 1400 and 800 px: a long lab page explains itself and never scrolls sideways; the whole drawing is in its box', { skip: requireChromium() }, () => {
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
        assert.ok(Number(attr('steps')) >= 3, 'the numbered steps are on the page');
        assert.ok(Number(attr('legend')) >= 15, 'the legend, every entry');
        assert.match(dom, /<p class="lead">/, 'the description');
        assert.match(dom, /<div class="predict"><strong>Predict first:<\/strong>/);
        if (name.startsWith('bugs/')) {
          assert.match(dom, /<h3>What goes wrong<\/h3>/);
          assert.match(dom, /<h3>What the fix changes<\/h3>/);
          assert.match(dom, /<a href="https:\/\/github\.com\/etcd-io\/etcd\/issues\/15220">#15220<\/a>/);
        } else {
          // 2000 revisions in a picture that fits its box, scaled down to it at 800 px: nothing waits behind a scroll.
          assert.ok(Number(attr('svg-width')) <= width, `svg width ${attr('svg-width')}`);
          assert.equal(attr('scroll-overflow'), '0', 'the whole drawing is in its box');
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** What the page test reads back after each hover or click: lit marks and lines, and where the transcript box stands. */
interface Lit {
  marks: string[];
  lines: string[];
  lineVisible: boolean;
}

const LIT = `(() => {
  const sec = document.querySelector('section.run');
  const lines = [...sec.querySelectorAll('pre.transcript .tl.hl, pre.transcript .tl.sel')];
  const pre = sec.querySelector('pre.transcript');
  const first = lines[0];
  return {
    marks: [...sec.querySelectorAll('svg.timeline .hl, svg.timeline .sel')].map((e) => (e.getAttribute('class') || '').replace(/ (hl|sel)$/, '') + '@' + (e.getAttribute('data-rev') || e.getAttribute('data-ms') || '')),
    lines: lines.map((e) => e.textContent),
    lineVisible: first !== undefined && first.offsetTop >= pre.scrollTop && first.offsetTop <= pre.scrollTop + pre.clientHeight,
  };
})()`;

test('headless Chromium at 1400 and 800 px: transcript and timeline linked both ways; the time strip keeps B and B2 apart; screenshots', { skip: requireChromium(), timeout: 120_000 }, async () => {
  const chromium = findChromium()!;
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-browser-'));
  const shots = screenshotDir(dir);
  mkdirSync(shots, { recursive: true });
  const name = 'compaction-evicts-behind-watcher';
  const r = runScenario(readFileSync(listBundledScenarios().find((s) => s.name === name)!.path, 'utf8'));
  assert.ok(r.ok);
  const file = join(dir, `${name}.html`);
  writeFileSync(file, renderHtml(name, r.runs.map((x) => ({ model: x.timeline, transcript: x.transcript }))));
  try {
    for (const width of [1400, 800]) {
      const page = await startBrowser(chromium, dir, width);
      try {
        await page.resize(width);
        await page.open(pathToFileURL(file).href);
        assert.equal(await page.evaluate<string>('document.documentElement.dataset.rendered'), 'yes');
        assert.equal(await page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth'), 0, `@${width}: no sideways scroll`);
        assert.ok((await page.screenshot(join(shots, `${name}-${width}.png`))) > 10_000, 'a screenshot of the page');

        // The time strip: B and B2 are canceled at the same revision but 100 ms apart, and look it.
        const apart = await page.evaluate<{ rev: number[]; time: number[]; ms: string[] }>(`(() => {
          const x = (sel) => [...document.querySelectorAll(sel)].map((e) => Math.round(e.getBoundingClientRect().left));
          return {
            rev: ['B', 'B2'].map((w) => x('.watcher-lane[data-watch="' + w + '"] .watch-canceled rect')[0]),
            time: ['B', 'B2'].map((w) => x('.watch-time[data-watch="' + w + '"] .t-canceled')[0]),
            ms: ['B', 'B2'].map((w) => document.querySelector('.watch-time[data-watch="' + w + '"] .t-canceled').dataset.ms),
          };
        })()`);
        assert.equal(apart.rev[0], apart.rev[1], 'on the revision axis B and B2 end at the same place');
        assert.deepEqual(apart.ms, ['100', '200'], 'B is canceled at t=0.1s, B2 at t=0.2s');
        assert.ok(apart.time[1]! - apart.time[0]! > 40, `on the time strip they are apart: ${apart.time.join(', ')}`);

        // A transcript line hovered: its marks light up (C received PUT /evict/k@23 during line 17's put).
        assert.ok(await page.hover('pre.transcript .tl[data-ref="watch C@23"]'));
        const fromLine = await page.evaluate<Lit>(LIT);
        assert.deepEqual(fromLine.marks, ['watch-event put@23'], 'the event C received lights up, nothing else');
        assert.equal(fromLine.lines.length, 3, 'the three lines etcdctl printed for it');
        // The put itself: its write mark, and the event C received in the same step.
        assert.ok(await page.hover('pre.transcript .tl[data-line="17"]'));
        const put = await page.evaluate<Lit>(LIT);
        assert.ok(put.marks.includes('write put@23'), put.marks.join(', '));
        assert.ok(put.marks.includes('watch-event put@23'));

        // A mark hovered: its transcript lines light up, scrolled into view inside the transcript box.
        assert.ok(await page.hover('.watcher-lane[data-watch="BELOW"] .watch-canceled'));
        const fromMark = await page.evaluate<Lit>(LIT);
        assert.ok(fromMark.lines.some((l) => l.startsWith('[watch BELOW] watch was canceled')), fromMark.lines.join('\n'));
        assert.ok(fromMark.lineVisible, 'the first lit line is in view in the transcript box');
        // A click sticks, and hover titles cite only line numbers the transcript's gutter shows.
        assert.ok(await page.click('.time-strip .watch-time[data-watch="B2"] .t-canceled'));
        const clicked = await page.evaluate<{ sel: string[]; gutter: string[]; cited: string[] }>(`(() => ({
          sel: [...document.querySelectorAll('pre.transcript .tl.sel')].map((e) => e.textContent),
          gutter: [...document.querySelectorAll('pre.transcript .tl[data-n]')].map((e) => e.dataset.n),
          cited: [...document.querySelectorAll('svg.timeline title')].flatMap((t) => [...t.textContent.matchAll(/\\bline (\\d+)/g)].map((m) => m[1])),
        }))()`);
        assert.ok(clicked.sel.some((l) => l.startsWith('[watch B2] watch was canceled')), clicked.sel.join('\n'));
        assert.ok(clicked.cited.length > 10);
        for (const n of clicked.cited) assert.ok(clicked.gutter.includes(n), `a title cites line ${n}, which the transcript shows`);
        assert.ok((await page.screenshot(join(shots, `${name}-${width}-selected.png`))) > 10_000);
      } finally {
        await page.close();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
  }
});

test('headless Chromium at 1400 and 800 px: the fragments lab and a run started from a real etcd snapshot, drawn and linked; screenshots', { skip: requireChromium(), timeout: 120_000 }, async () => {
  const chromium = findChromium()!;
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-browser-'));
  const shots = screenshotDir(dir);
  mkdirSync(shots, { recursive: true });
  const fragments = runScenario(readFileSync(listBundledScenarios().find((s) => s.name === 'watch-response-fragments')!.path, 'utf8'));
  assert.ok(fragments.ok);
  const fixture = new URL('../snapshot/fixtures/etcd-3.4.23-small.db', import.meta.url);
  const loaded = runScenario('## A real etcd 3.4.23 snapshot.\nfrom-snapshot small.db --user=root:rootpw\nwatch W "" --prefix --rev=4\nadvance 100ms\nput z 1\n', { readFile: () => readFileSync(fixture) });
  assert.ok(loaded.ok, loaded.transcript.join('\n'));
  const pages = [
    { name: 'watch-response-fragments', r: fragments },
    { name: 'from-snapshot', r: loaded },
  ];
  try {
    for (const width of [1400, 800]) {
      const page = await startBrowser(chromium, dir, width);
      try {
        await page.resize(width);
        for (const p of pages) {
          const file = join(dir, `${p.name}.html`);
          writeFileSync(file, renderHtml(p.name, p.r.runs.map((x) => ({ model: x.timeline, transcript: x.transcript }))));
          await page.open(pathToFileURL(file).href);
          assert.equal(await page.evaluate<string>('document.documentElement.dataset.rendered'), 'yes');
          assert.equal(await page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth'), 0, `${p.name} @${width}: no sideways scroll`);
          assert.ok((await page.screenshot(join(shots, `${p.name}-${width}.png`))) > 10_000);
          if (p.name === 'watch-response-fragments') {
            const f = await page.evaluate<string[]>(`[...document.querySelectorAll('.watcher-lane[data-watch="F"] .watch-event[data-rev="5"]')].map((e) => e.dataset.response + (e.dataset.fragment ? ' fragment' : ''))`);
            assert.deepEqual(f, ['1 fragment', '2 fragment', '3']);
            // The transcript line of a fragment's event lights up its mark.
            assert.ok(await page.hover('pre.transcript .tl[data-ref="watch F@5"]'));
            assert.equal(await page.evaluate<number>(`document.querySelectorAll('svg.timeline .watch-event.hl').length`), 3, "F's three events at revision 5");
          } else {
            const seen = await page.evaluate<{ cliff: string; writes: number; events: number }>(`({
              cliff: document.querySelector('.compaction').dataset.rev,
              writes: document.querySelectorAll('svg.timeline .write').length,
              events: document.querySelectorAll('.watcher-lane[data-watch="W"] .watch-event').length,
            })`);
            assert.equal(seen.cliff, '4', "the snapshot's compaction point");
            assert.equal(seen.writes, loaded.timeline.writes.length);
            assert.ok(seen.events >= 5, `the watch replayed the snapshot's history: ${seen.events} events`);
            assert.ok(await page.hover('svg.timeline .write[data-key="z"]'));
            assert.deepEqual(await page.evaluate<string[]>(`[...document.querySelectorAll('pre.transcript .tl.hl')].map((e) => e.textContent)`), ['$ etcdctl put z 1   # rev 10', 'OK', '[watch W @10] PUT', '[watch W @10] z', '[watch W @10] 1']);
          }
        }
      } finally {
        await page.close();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
  }
});

test('headless Chromium at 1400 and 800 px: cluster labs and #19179 draw their levers, elections and restarts, with legend, linked, never scrolling sideways; screenshots', { skip: requireChromium(), timeout: 180_000 }, async () => {
  const chromium = findChromium()!;
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-browser-'));
  const shots = screenshotDir(dir);
  mkdirSync(shots, { recursive: true });
  const names = ['cluster/stale-serializable-read', 'cluster/leases-across-leader-change', 'cluster/watch-on-lagging-follower', 'bugs/20221-native-snapshot-on-slow-follower', 'bugs/19179-lone-tombstone-lost-on-restart'];
  const files = names.map((name) => {
    const r = runScenario(readFileSync(listBundledScenarios().find((s) => s.name === name)!.path, 'utf8'));
    assert.ok(r.ok, name);
    const file = join(dir, `${name.replace('/', '-')}.html`);
    writeFileSync(file, renderHtml(name, r.runs.map((x) => ({ model: x.timeline, transcript: x.transcript }))));
    return { name, file };
  });
  try {
    for (const width of [1400, 800]) {
      const page = await startBrowser(chromium, dir, width);
      try {
        await page.resize(width);
        for (const { name, file } of files) {
          await page.open(pathToFileURL(file).href);
          const seen = await page.evaluate<{ rendered: string; errors: string; overflow: number; steps: number; predict: number; answer: number; legend: string[]; memberRows: string[]; memberLanes: number; leaders: string[]; levers: string[]; restarts: number; flags: number; lanes: string[] }>(`(() => ({
            rendered: document.documentElement.dataset.rendered,
            errors: document.documentElement.dataset.errors || '0',
            overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
            steps: document.querySelectorAll('section.run')[0].querySelectorAll('ol.steps li').length,
            predict: document.querySelectorAll('.predict').length,
            answer: document.querySelectorAll('details.answer').length,
            legend: [...document.querySelectorAll('ul.legend li')].map((e) => e.dataset.legend),
            memberRows: [...document.querySelectorAll('section.run')[0].querySelectorAll('.time-strip .member-time')].map((e) => e.dataset.member),
            memberLanes: document.querySelectorAll('section.run')[0].querySelectorAll('.member-lane').length,
            leaders: [...document.querySelectorAll('section.run')[0].querySelectorAll('.time-strip .t-leader')].map((e) => e.dataset.member + ':' + e.dataset.term),
            levers: [...document.querySelectorAll('section.run')[0].querySelectorAll('.time-strip .t-lever')].filter((e) => e.getBoundingClientRect().width > 0).map((e) => e.dataset.kind + '@' + e.dataset.member),
            restarts: document.querySelectorAll('section.run')[0].querySelectorAll('.member-restart').length,
            flags: [...document.querySelectorAll('.missing-event')].length,
            lanes: [...document.querySelectorAll('section.run')[0].querySelectorAll('svg.timeline .lane-label')].map((e) => e.textContent),
          }))()`);
          assert.equal(seen.rendered, 'yes', `${name} @${width}`);
          assert.equal(seen.errors, '0');
          assert.equal(seen.overflow, 0, `${name} @${width}: no sideways scroll of the page`);
          assert.ok(seen.steps >= 2, `${name}: numbered steps`);
          assert.equal(seen.predict, 1, `${name}: the question to predict`);
          assert.ok(seen.answer >= 1, `${name}: the answer after the run`);
          if (name === 'bugs/19179-lone-tombstone-lost-on-restart') {
            assert.equal(seen.restarts, 1, 'the kill mid-compaction and the restart, on the revision axis');
            assert.ok(seen.legend.includes('member-restart'));
            assert.equal(seen.memberRows.length, 0, 'a single member: no member rows');
            assert.equal(seen.flags, 1, 'the lost DELETE flagged in the bug variant only');
            continue;
          }
          for (const k of ['leader', 'step-down', 'lever', 'crash', 'paused', 'cut', 'lag', 'snapshot-install']) assert.ok(seen.legend.includes(k), `${name}: legend ${k}`);
          assert.deepEqual(seen.memberRows, ['infra1', 'infra2', 'infra3'], `${name}: a time-strip row per member`);
          assert.equal(seen.memberLanes, 3, `${name}: a revision lane per member`);
          assert.ok(seen.lanes.some((l) => l === 'infra3') && seen.lanes.some((l) => l === 't: infra3'), 'member lanes are labelled');
          assert.ok(seen.leaders.includes('infra1:2'), `${name}: infra1 leads from term 2: ${seen.leaders.join(', ')}`);
          if (name === 'cluster/stale-serializable-read') {
            assert.ok(seen.levers.includes('lag@infra3') && seen.levers.includes('isolate@infra3') && seen.levers.includes('heal@infra3'), seen.levers.join(', '));
            // Hover the isolate lever on the time strip: the transcript line of `isolate infra3` lights up; and back.
            assert.ok(await page.hover('section.run .time-strip .t-lever[data-kind="isolate"]'));
            const lit = await page.evaluate<string[]>(`[...document.querySelectorAll('pre.transcript .tl.hl')].map((e) => e.textContent)`);
            assert.ok(lit.some((l) => l.startsWith('# isolate infra3: the network cuts it off')), lit.join('\n'));
            // The script line of `heal`, found in the lab rather than counted by hand (its notes move it).
            const lab = listBundledScenarios().find((s) => s.name === name)!;
            const heal = readFileSync(lab.path, 'utf8').split('\n').indexOf('heal') + 1;
            assert.ok(heal > 0 && (await page.hover(`pre.transcript .tl[data-line="${heal}"]`)));
            const marks = await page.evaluate<string[]>(`[...document.querySelectorAll('svg.timeline .hl')].map((e) => (e.dataset.kind || '') + '@' + (e.dataset.member || ''))`);
            assert.ok(marks.includes('heal@infra1') && marks.includes('heal@infra3'), `the heal line lights its marks: ${marks.join(', ')}`);
          }
          if (name === 'cluster/leases-across-leader-change') assert.ok(seen.leaders.includes('infra2:3'), seen.leaders.join(', '));
          if (name === 'bugs/20221-native-snapshot-on-slow-follower') {
            assert.ok(seen.levers.includes('pause@infra3') && seen.levers.includes('resume@infra3') && seen.levers.includes('compact-log@infra1'), seen.levers.join(', '));
            assert.ok(await page.evaluate<boolean>(`document.querySelector('section.run .time-strip .t-snapshot[data-member="infra3"]') !== null && document.querySelector('section.run .snapshot-install[data-member="infra3"]') !== null`), 'the snapshot installed on infra3, on its row and on the revision axis');
            assert.ok(seen.lanes.includes('watch F /f/k @infra3'), seen.lanes.join(' | '));
          }
          assert.ok((await page.screenshot(join(shots, `${name.replace('/', '-')}-${width}.png`))) > 10_000);
        }
      } finally {
        await page.close();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
  }
});
