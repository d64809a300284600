/**
 * Every bundled scenario runs with its expectations; bug scenarios hold in both variants (the bug's and the
 * fix's expectations differ, so each option really changes the outcome); runs are deterministic.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { listBundledScenarios } from '../../src/cli/run_command.js';
import { parseScenario, renderHtml, runScenario } from '../../src/scenario/index.js';
import { descriptionParagraphs, timelineSteps } from '../../src/scenario/timeline/index.js';

const bundled = listBundledScenarios();

test('the bundled scenarios are there: the seeds exercises and the bug catalogue', () => {
  const names = bundled.map((s) => s.name);
  for (const n of [
    'watch-from-the-past',
    'compaction-evicts-behind-watcher',
    'pagination-pinned-revision',
    'txn-one-revision',
    'list-then-watch-relist',
    'lease-expiry-timing',
    'compaction-during-replay',
    'list-then-watch-paginated',
    'relist-restarts-on-compacted',
    'slow-consumer-victim',
    'progress-bookmarks',
    'offline-resume-vs-fresh-read',
    'several-watchers-one-stream',
    'bugs/15220-progress-overtakes-events',
    'bugs/18089-tombstone-at-compaction-revision',
    'bugs/20221-future-watch-lowered-after-restore',
    'bugs/20229-progress-below-future-start',
  ]) {
    assert.ok(names.includes(n), `missing scenario ${n}; have ${names.join(', ')}`);
  }
  for (const s of bundled) assert.notEqual(s.summary, '', `${s.name} has no ## description`);
});

for (const s of bundled) {
  test(`scenario ${s.name}: every expectation holds`, () => {
    const text = readFileSync(s.path, 'utf8');
    const r = runScenario(text, { title: s.name });
    assert.equal(r.failure, undefined, `${s.name}: ${r.failure?.variant ?? ''} line ${r.failure?.line}: ${r.failure?.message}\n${r.transcript.join('\n')}`);
    assert.ok(r.ok);
    const expectations = r.transcript.filter((l) => l.startsWith('# expect ') && l.endsWith('✓')).length;
    assert.ok(expectations >= 3, `${s.name} checks only ${expectations} expectations`);
  });
}

for (const s of bundled) {
  test(`scenario ${s.name}: asks a question to predict first, answers it after the run, and the page shows both`, () => {
    const text = readFileSync(s.path, 'utf8');
    const predict = descriptionParagraphs(parseScenario(text).settings.preamble).find((p) => p.startsWith('Predict: '));
    assert.ok(predict !== undefined && predict.length > 40, 'a Predict: paragraph in the description');
    const r = runScenario(text, { title: s.name });
    for (const run of r.runs) {
      const { steps, answer } = timelineSteps(run.timeline);
      assert.ok(answer !== undefined && answer.length > 40, `${run.variant ?? 'run'}: an ## Answer: note`);
      assert.ok(steps.length >= 1, 'numbered steps from the notes');
    }
    const html = renderHtml(s.name, r.runs.map((x) => ({ model: x.timeline, transcript: x.transcript })));
    assert.match(html, /<div class="predict"><strong>Predict first:<\/strong>/);
    assert.match(html, /<details class="answer"><summary>Answer/);
    // The question comes before the first picture, the answer after it.
    assert.ok(html.indexOf('class="predict"') < html.indexOf('class="timeline"'));
    assert.ok(html.indexOf('class="answer"') > html.indexOf('class="timeline"'));
  });
}

for (const s of bundled.filter((b) => b.name.startsWith('bugs/'))) {
  test(`bug scenario ${s.name}: runs twice, bug on then off, with an explanation and its etcd issue`, () => {
    const text = readFileSync(s.path, 'utf8');
    const parsed = parseScenario(text);
    assert.deepEqual(
      parsed.settings.variants.map((v) => v.name),
      ['bug', 'fixed'],
    );
    assert.match(parsed.settings.preamble.join('\n'), /#\d{4,5}/, 'names the etcd issue/PR');
    const paragraphs = descriptionParagraphs(parsed.settings.preamble);
    assert.ok(paragraphs.length >= 3, 'a title and two paragraphs of explanation');
    assert.ok(paragraphs.some((p) => p.startsWith('What goes wrong. ')), 'a "What goes wrong." paragraph');
    assert.ok(paragraphs.some((p) => p.startsWith('What the fix changes. ')), 'a "What the fix changes." paragraph');
    const r = runScenario(text);
    assert.equal(r.runs.length, 2);
    // The page says both, under their own headings, and links the etcd issue and the fix's PR.
    const html = renderHtml(s.name, r.runs.map((x) => ({ model: x.timeline, transcript: x.transcript })));
    assert.match(html, /<h3>What goes wrong<\/h3>/);
    assert.match(html, /<h3>What the fix changes<\/h3>/);
    const issue = /^etcd #(\d+)/.exec(paragraphs[0]!)?.[1];
    assert.ok(issue !== undefined, 'the first line names the etcd issue');
    assert.ok(html.includes(`<a href="https://github.com/etcd-io/etcd/issues/${issue}">#${issue}</a>`), 'links the issue');
    assert.match(html, /PRs? <a href="https:\/\/github\.com\/etcd-io\/etcd\/pull\/\d+">/, 'links the fix PR');
    assert.ok(r.runs.every((run) => run.ok));
    // The variant-only expectations are what tell the two apart: each variant checks at least one of its own.
    for (const run of r.runs) {
      const own = parsed.steps.filter((st) => st.variant === run.variant && st.type === 'expect').length;
      assert.ok(own >= 1, `${run.variant} has its own expectation`);
    }
    // Swap the variants' expectations: each run must then fail, so the option really changes the outcome.
    const swapped = text.replace(/^\[bug\]/gm, '[tmp]').replace(/^\[fixed\]/gm, '[bug]').replace(/^\[tmp\]/gm, '[fixed]');
    const rs = runScenario(swapped);
    assert.deepEqual(
      rs.runs.map((run) => run.ok),
      [false, false],
      'the bug and the fix disagree',
    );
  });
}

test('the same scenario and seed give a byte-identical transcript; another seed changes only the random lease IDs', () => {
  for (const s of bundled) {
    const text = readFileSync(s.path, 'utf8');
    const a = runScenario(text, { seed: 7 }).transcript.join('\n');
    const b = runScenario(text, { seed: 7 }).transcript.join('\n');
    assert.equal(a, b, s.name);
  }
  const lease = bundled.find((s) => s.name === 'lease-expiry-timing')!;
  const text = readFileSync(lease.path, 'utf8');
  const a = runScenario(text, { seed: 1 });
  const b = runScenario(text, { seed: 2 });
  assert.ok(a.ok && b.ok);
  assert.notEqual(a.transcript.join('\n'), b.transcript.join('\n'));
  const noIds = (t: readonly string[]): string => t.join('\n').replace(/[0-9a-f]{16}/g, 'ID');
  assert.equal(noIds(a.transcript), noIds(b.transcript));
});

test('scenarios/README.md suggests an order that names every bundled lab, and documents the hints the issue asked for', () => {
  const readme = readFileSync(new URL('../../scenarios/README.md', import.meta.url), 'utf8');
  const order = /## A suggested order\n([\s\S]*?)\n## /.exec(readme)?.[1] ?? '';
  for (const s of bundled.filter((b) => !b.name.startsWith('bugs/'))) assert.ok(order.includes(`\`${s.name}\``), `${s.name} is in the suggested order`);
  for (const s of bundled.filter((b) => b.name.startsWith('bugs/'))) assert.ok(order.includes(`\`${s.name.slice(0, 'bugs/'.length + 5)}`), `${s.name} is in the suggested order`);
  for (const hint of ['**Paging with `--prefix`.**', '**`expect watch W last OP N`**', '`expect watch W count OP N`', '**A behind watch needs `advance`.**', '**`advance`, not `sleep`.**', '**`${R+1}` is not arithmetic.**']) {
    assert.ok(readme.includes(hint), hint);
  }
});
