/**
 * The timeline picture, checked structurally: the SVG is well-formed XML with one mark per write (deletes
 * distinct), the compaction cliff at the compaction revision, one lane per watcher and per lease, restores and
 * stream breaks marked; the HTML page is self-contained.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { listBundledScenarios } from '../../src/cli/run_command.js';
import { renderHtml, renderSvg, runScenario, timelineKeys } from '../../src/scenario/index.js';
import { hasClass, parseXml } from './xml.js';

const path = (name: string): string => listBundledScenarios().find((s) => s.name === name)!.path;

test('one mark per write, deletes distinct; the compaction cliff; watcher lanes with events, cancel and break', () => {
  const r = runScenario(readFileSync(path('list-then-watch-relist'), 'utf8'));
  assert.ok(r.ok);
  const m = r.timeline;
  const els = parseXml(renderSvg(m));
  const puts = els.filter((e) => hasClass(e, 'write') && hasClass(e, 'put'));
  const dels = els.filter((e) => hasClass(e, 'write') && hasClass(e, 'delete'));
  assert.equal(puts.length, m.writes.filter((w) => w.type === 'PUT').length);
  assert.equal(dels.length, m.writes.filter((w) => w.type === 'DELETE').length);
  assert.ok(dels.length >= 1);
  assert.equal(puts[0]!.name, 'circle');
  assert.equal(dels[0]!.name, 'path', 'a delete is drawn differently from a put');
  // Every write of the history is there, at its key and revision.
  const marks = new Set([...puts, ...dels].map((e) => `${e.attrs['data-key']}@${e.attrs['data-rev']}`));
  for (const w of m.writes) assert.ok(marks.has(`${w.key}@${w.rev}`), `${w.key}@${w.rev}`);
  const lanes = els.filter((e) => hasClass(e, 'key-lane'));
  assert.deepEqual(
    lanes.map((e) => e.attrs['data-key']),
    timelineKeys(m),
  );
  const cliff = els.filter((e) => hasClass(e, 'compaction'));
  assert.equal(cliff.length, 1);
  assert.equal(cliff[0]!.attrs['data-rev'], '7');
  assert.equal(els.filter((e) => hasClass(e, 'cliff')).length, 1);
  const watchers = els.filter((e) => hasClass(e, 'watcher-lane')).map((e) => e.attrs['data-watch']);
  assert.deepEqual(watchers, ['L', 'JUMP', 'L2']);
  const canceled = els.filter((e) => hasClass(e, 'watch-canceled'));
  assert.deepEqual(
    canceled.map((e) => e.attrs['data-compact-revision']),
    ['7'],
  );
  assert.equal(els.filter((e) => hasClass(e, 'watch-break')).length, 1);
  const received = els.filter((e) => hasClass(e, 'watch-event'));
  assert.equal(received.length, m.watchers.reduce((n, w) => n + w.events.length, 0));
});

test('lease lanes end at expiry; restores are marked', () => {
  const lease = runScenario(readFileSync(path('lease-expiry-timing'), 'utf8')).timeline;
  const els = parseXml(renderSvg(lease));
  assert.equal(els.filter((e) => hasClass(e, 'lease-lane')).length, 3);
  assert.equal(els.filter((e) => hasClass(e, 'lease-end') && hasClass(e, 'expired')).length, 3);
  assert.equal(els.filter((e) => hasClass(e, 'lease-keepalive')).length, 1);
  const restore = runScenario(readFileSync(path('bugs/20221-future-watch-lowered-after-restore'), 'utf8'));
  for (const run of restore.runs) {
    const rs = parseXml(renderSvg(run.timeline)).filter((e) => hasClass(e, 'restore'));
    assert.deepEqual(
      rs.map((e) => e.attrs['data-rev']),
      ['3', '10'],
    );
  }
});

test('the HTML page is self-contained: inline SVG, no external resources, a legend, one picture per variant', () => {
  const r = runScenario(readFileSync(path('bugs/18089-tombstone-at-compaction-revision'), 'utf8'));
  const html = renderHtml('18089', r.runs.map((x) => ({ model: x.timeline, transcript: x.transcript })));
  assert.ok(html.startsWith('<!DOCTYPE html>'));
  assert.doesNotMatch(html, /\s(src|href)=/);
  assert.doesNotMatch(html, /url\(|@import|https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
  const svgs = html.match(/<svg[\s\S]*?<\/svg>/g) ?? [];
  assert.equal(svgs.length, 3, 'a legend and one picture per variant');
  for (const s of svgs) parseXml(s);
  assert.equal((html.match(/data-variant="/g) ?? []).length, 2);
  // The bug's picture lacks the DELETE the fix's picture has at the compaction revision.
  const [bug, fixed] = r.runs;
  const recv = (svg: string): string[] =>
    parseXml(svg)
      .filter((e) => hasClass(e, 'watch-event'))
      .map((e) => `${e.attrs.class}@${e.attrs['data-rev']}`);
  assert.deepEqual(recv(renderSvg(bug!.timeline)), ['watch-event put@6']);
  assert.deepEqual(recv(renderSvg(fixed!.timeline)), ['watch-event delete@5', 'watch-event put@6']);
});
