/**
 * The timeline picture, checked structurally: the SVG is well-formed XML with one mark per write (deletes
 * distinct), the compaction cliff at the compaction revision, one lane per watcher and per lease, restores and
 * stream breaks marked; the HTML page is self-contained; the time strip places what happens on etcd's clock by
 * virtual time; transcript lines and marks carry the script line (and watch event) that links them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { listBundledScenarios } from '../../src/cli/run_command.js';
import { renderHtml, renderSvg, runScenario, timelineKeys } from '../../src/scenario/index.js';
import { memberSpans, missingEvents, timelineSteps, transcriptHtml, transcriptRef } from '../../src/scenario/timeline/index.js';
import { hasClass, parseXml, type XmlElement } from './xml.js';

type XmlAttrs = XmlElement['attrs'];

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
  // Nothing is loaded from elsewhere; the only links are to etcd's issues and PRs the description names.
  assert.doesNotMatch(html, /\ssrc=|<link|url\(|@import/);
  const hrefs = [...html.matchAll(/\shref="([^"]*)"/g)].map((h) => h[1]!);
  assert.ok(hrefs.length > 0);
  for (const h of hrefs) assert.match(h, /^https:\/\/github\.com\/etcd-io\/etcd\/(issues|pull)\/\d+$/);
  assert.doesNotMatch(html.replace(/\shref="[^"]*"/g, ''), /https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
  const svgs = html.match(/<svg[\s\S]*?<\/svg>/g) ?? [];
  for (const s of svgs) parseXml(s);
  assert.equal(svgs.filter((s) => /^<svg[^>]*class="timeline"/.test(s)).length, 2, 'one picture per variant');
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

test('the page explains itself: the description, the notes as numbered steps beside the picture and on its axis', () => {
  const r = runScenario(readFileSync(path('compaction-evicts-behind-watcher'), 'utf8'));
  const { steps } = timelineSteps(r.timeline);
  assert.ok(steps.length >= 5);
  assert.equal(steps[0]!.text, 'Two watchers on the same prefix: B from the old revision A (behind: it needs history), C from now (current).');
  const html = renderHtml('t', r.runs.map((x) => ({ model: x.timeline, transcript: x.transcript })));
  assert.match(html, /<p class="lead">Deleting the history a watcher is still standing in: /);
  const items = [...html.matchAll(/<li value="(\d+)" data-step="\d+" data-line="(\d+)" data-rev="(\d+)">/g)];
  assert.deepEqual(
    items.map((m) => [Number(m[1]), Number(m[2]), Number(m[3])]),
    steps.map((s) => [s.n, s.line, s.rev]),
  );
  // The steps list sits beside the picture, in the same block, outside the collapsed transcript.
  const body = /<div class="run-body">([\s\S]*?)<\/div>\n<\/div>/.exec(html)?.[1] ?? '';
  assert.match(body, /<ol class="steps">/);
  assert.match(body, /<svg[^>]*class="timeline"/);
  const markers = parseXml(renderSvg(r.timeline)).filter((e) => hasClass(e, 'step-marker'));
  assert.deepEqual(
    markers.map((e) => [e.attrs['data-step'], e.attrs['data-rev']]),
    steps.map((s) => [String(s.n), String(s.rev)]),
  );
});

test('the legend names every kind of mark, dashed segments, progress ticks and lease-driven deletes included', () => {
  const html = renderHtml('t', [{ model: runScenario('put /a 1').timeline, transcript: [] }]);
  const entries = [...html.matchAll(/<li data-legend="([a-z-]+)">/g)].map((m) => m[1]);
  for (const k of ['put', 'delete', 'lease-delete', 'alive', 'compaction', 'restore', 'read', 'watch', 'ended', 'events', 'progress', 'cursor', 'canceled', 'closed', 'broken', 'lease', 'step', 'break']) {
    assert.ok(entries.includes(k), `legend entry ${k}`);
  }
  // What the legend promises is drawn: dashed ended streams, progress ticks, lease deletes in their own colour.
  const lease = parseXml(renderSvg(runScenario(readFileSync(path('lease-expiry-timing'), 'utf8')).timeline));
  assert.equal(lease.filter((e) => hasClass(e, 'lease-delete')).length, 3);
  const relist = parseXml(renderSvg(runScenario(readFileSync(path('list-then-watch-relist'), 'utf8')).timeline));
  assert.ok(relist.some((e) => hasClass(e, 'watch-span') && hasClass(e, 'ended') && e.attrs['stroke-dasharray'] === '4 2'));
  const bookmarks = parseXml(renderSvg(runScenario(readFileSync(path('progress-bookmarks'), 'utf8')).timeline));
  assert.ok(bookmarks.filter((e) => hasClass(e, 'watch-progress')).length >= 2);
});

test('the cursor marks the resume point, last seen + 1; several events at one revision are drawn apart', () => {
  const past = runScenario(readFileSync(path('watch-from-the-past'), 'utf8')).timeline;
  const h = past.watchers.find((w) => w.name === 'H')!;
  const cursor = parseXml(renderSvg(past)).find((e) => hasClass(e, 'watch-cursor'))!;
  assert.equal(cursor.attrs['data-last'], String(h.cursor));
  assert.equal(cursor.attrs['data-rev'], String(h.cursor + 1));
  const txn = runScenario(readFileSync(path('txn-one-revision'), 'utf8')).timeline;
  const els = parseXml(renderSvg(txn));
  // W's lane: three events at revision 3, at three different x positions.
  const lanes = els.filter((e) => hasClass(e, 'watch-event') && e.attrs['data-rev'] === '3');
  const xs = lanes.map((e) => Number(e.attrs.cx));
  assert.ok(xs.length >= 3);
  assert.equal(new Set(xs.slice(0, 3)).size, 3, `apart: ${xs.join(', ')}`);
});

test('reads are drawn at the revision they read: pinned pages at R, unpinned ones at the newest revision', () => {
  const r = runScenario(readFileSync(path('pagination-pinned-revision'), 'utf8'));
  const m = r.timeline;
  const els = parseXml(renderSvg(m)).filter((e) => hasClass(e, 'read'));
  assert.equal(els.length, m.reads.length);
  const pinned = els.filter((e) => hasClass(e, 'pinned')).map((e) => e.attrs['data-rev']);
  assert.deepEqual(pinned, ['6', '6'], 'pages 2 and 3 read at R = 6');
  assert.ok(els.some((e) => !hasClass(e, 'pinned') && e.attrs['data-rev'] === '10'));
});

test('a 2000-revision run is compressed: uneventful spans elided behind break marks, every mark still counted', () => {
  const r = runScenario(readFileSync(path('compaction-during-replay'), 'utf8'));
  assert.ok(r.ok);
  const m = r.timeline;
  assert.ok(m.maxRevision > 2000);
  const svg = renderSvg(m);
  const els = parseXml(svg);
  const width = Number(els[0]!.attrs.width);
  assert.ok(width < 2000, `width ${width}`);
  assert.ok(els.filter((e) => hasClass(e, 'axis-break')).length >= 2);
  const count = (cls: string): number => els.filter((e) => hasClass(e, cls)).reduce((n, e) => n + Number(e.attrs['data-count']), 0);
  assert.equal(els.filter((e) => hasClass(e, 'write')).length + count('elided-writes'), m.writes.length);
  assert.equal(els.filter((e) => hasClass(e, 'watch-event')).length + count('elided-events'), m.watchers.reduce((n, w) => n + w.events.length, 0));
  // What the lab is about stays visible: B's last event at 1001, its cancel at the compaction revision 1992.
  assert.ok(els.some((e) => hasClass(e, 'watch-event') && e.attrs['data-rev'] === '1001'));
  assert.ok(els.some((e) => hasClass(e, 'watch-canceled') && e.attrs['data-compact-revision'] === '1992'));
  // A short run is drawn revision by revision.
  assert.equal(parseXml(renderSvg(runScenario(readFileSync(path('watch-from-the-past'), 'utf8')).timeline)).filter((e) => hasClass(e, 'axis-break')).length, 0);
});

test('what went wrong is flagged: progress ahead of its events (15220), events below the start (20221), progress below the start (20229) — only with the bug', () => {
  const flags = (name: string): Record<string, string[]> => {
    const r = runScenario(readFileSync(path(name), 'utf8'));
    assert.ok(r.ok);
    return Object.fromEntries(r.runs.map((run) => [run.variant ?? 'run', parseXml(renderSvg(run.timeline)).filter((e) => hasClass(e, 'flag')).map((e) => `${e.attrs.class}@${e.attrs['data-rev']}`)]));
  };
  assert.deepEqual(flags('bugs/15220-progress-overtakes-events'), { bug: ['watch-progress flag@7'], fixed: [] });
  assert.deepEqual(flags('bugs/20221-future-watch-lowered-after-restore'), {
    bug: ['flag event-below-start@11', 'flag event-below-start@12', 'flag event-below-start@13', 'flag event-below-start@14'],
    fixed: [],
  });
  assert.deepEqual(flags('bugs/20229-progress-below-future-start'), { bug: ['watch-progress flag@2', 'watch-progress flag@9'], fixed: [] });
  // No lab outside the bug catalogue shows anything going wrong on etcd's side.
  for (const s of listBundledScenarios().filter((b) => !b.name.startsWith('bugs/'))) assert.deepEqual(Object.values(flags(s.name)).flat(), [], s.name);
});

test('the time strip places by virtual time what one revision hides: B and B2 canceled 100 ms apart, lease checks, none when time stood still', () => {
  const evict = runScenario(readFileSync(path('compaction-evicts-behind-watcher'), 'utf8'));
  const els = parseXml(renderSvg(evict.timeline));
  const strip = els.find((e) => hasClass(e, 'time-strip'))!;
  assert.equal(strip.attrs['data-end-ms'], String(evict.timeline.endMs));
  const canceledAt = (w: string): { ms: string; x: number } => {
    const row = els.findIndex((e) => hasClass(e, 'watch-time') && e.attrs['data-watch'] === w);
    const mark = els.slice(row).find((e) => hasClass(e, 't-canceled'))!;
    return { ms: mark.attrs['data-ms']!, x: Number(mark.attrs.x) };
  };
  const b = canceledAt('B');
  const b2 = canceledAt('B2');
  assert.deepEqual([b.ms, b2.ms], ['100', '200']);
  assert.ok(b2.x - b.x > 40, `apart on the strip: ${b.x} vs ${b2.x}`);
  // On the revision axis the two cancels sit at the same revision.
  const revX = els.filter((e) => hasClass(e, 'watch-canceled')).map((e) => e.attrs['data-compact-revision']);
  assert.deepEqual(revX.slice(0, 2), ['12', '12']);
  // Leases: grant, keep-alive, the TTL's end, the check that found it alive and the one that revoked it.
  const lease = parseXml(renderSvg(runScenario(readFileSync(path('lease-expiry-timing'), 'utf8')).timeline));
  const kinds = (cls: string): string[] => lease.filter((e) => hasClass(e, cls)).map((e) => e.attrs['data-ms']!);
  assert.equal(kinds('t-grant').length, 3);
  assert.deepEqual(kinds('t-keepalive'), ['4000']);
  assert.deepEqual(kinds('t-revoking'), ['2000', '9000', '11500']);
  assert.deepEqual(kinds('t-deadline'), ['2000', '9000', '11200']);
  // The check before the revoking one found the lease alive: 500 ms earlier (etcd's lessor loop).
  assert.deepEqual(lease.filter((e) => hasClass(e, 't-check') && !hasClass(e, 't-revoking')).map((e) => e.attrs['data-ms']), ['1500', '8500', '11000']);
  // A run in which time never moved has no strip (everything would sit at t=0).
  assert.equal(parseXml(renderSvg(runScenario(readFileSync(path('pagination-pinned-revision'), 'utf8')).timeline)).filter((e) => hasClass(e, 'time-strip')).length, 0);
});

test('transcript and timeline are linked: every mark names its script line, the transcript shows those lines, and its text is unchanged', () => {
  for (const s of listBundledScenarios()) {
    const r = runScenario(readFileSync(s.path, 'utf8'));
    for (const run of r.runs) {
      const m = run.timeline;
      assert.equal(m.transcriptLines.length, run.transcript.length, `${s.name}: one script line per transcript line`);
      const html = renderHtml(s.name, [{ model: m, transcript: run.transcript }]);
      const pre = /<pre class="transcript">([\s\S]*?)<\/pre>/.exec(html)![1]!;
      const text = pre.replace(/<[^>]+>/g, '').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&amp;/g, '&');
      assert.equal(text, run.transcript.join('\n').replace(/[\x00-\x08\x0b\x0c\x0e-\x1f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`), `${s.name}: the transcript's text is as printed`);
      const gutter = new Set([...pre.matchAll(/data-n="(\d+)"/g)].map((g) => g[1]));
      const svg = renderSvg(m);
      // Every line a hover title cites is one the transcript's gutter shows.
      for (const c of svg.matchAll(/<title>[^<]*?\bline (\d+)/g)) assert.ok(gutter.has(c[1]), `${s.name}: a title cites line ${c[1]}, not in the gutter`);
      // Every mark with a script line finds transcript lines of that line; every watch event its own lines.
      const lines = new Set([...pre.matchAll(/data-line="(\d+)"/g)].map((g) => g[1]));
      const refs = new Set([...pre.matchAll(/data-ref="([^"]+)"/g)].map((g) => g[1]));
      for (const mk of parseXml(svg).filter((e) => e.attrs['data-line'] !== undefined && e.attrs['data-line'] !== '0')) {
        assert.ok(lines.has(mk.attrs['data-line']), `${s.name}: ${mk.attrs.class} at line ${mk.attrs['data-line']} has transcript lines`);
        if (hasClass(mk, 'watch-event')) assert.ok(refs.has(mk.attrs['data-ref']), `${s.name}: ${mk.attrs['data-ref']} has its transcript lines`);
      }
    }
  }
});

test('transcript lines say which watch they are about', () => {
  assert.equal(transcriptRef('[watch C @23] PUT'), 'watch C@23');
  assert.equal(transcriptRef('[watch W] progress notify: 7'), 'progress W@7');
  assert.equal(transcriptRef('[watch B] watch was canceled (etcdserver: mvcc: required revision has been compacted)'), 'cancel B');
  assert.equal(transcriptRef('# watch B: canceled with compact_revision 12; etcdctl exits with status 5'), 'cancel B');
  assert.equal(transcriptRef('$ etcdctl watch /evict/ --prefix --rev=2 &   # watch B, at rev 22'), 'open B');
  assert.equal(transcriptRef('$ etcdctl watch /a --rev=5 &   # W resumed, at rev 9'), 'open W');
  assert.equal(transcriptRef('$ etcdctl put /a 1   # rev 2'), undefined);
  assert.equal(
    transcriptHtml(['$ etcdctl put /a 1   # rev 2', 'OK', '[watch W @2] PUT'], [3, 3, 3], [0, 0, 0]),
    '<span class="tl" data-run="0" data-line="3" data-n="3">$ etcdctl put /a 1   # rev 2</span>\n<span class="tl" data-run="0" data-line="3">OK</span>\n<span class="tl" data-run="0" data-line="3" data-ref="watch W@2">[watch W @2] PUT</span>',
  );
});

test('a fragmented revision: each event of F names the response that carried it, the first two flagged fragments; P got all in one', () => {
  const r = runScenario(readFileSync(path('watch-response-fragments'), 'utf8'));
  assert.ok(r.ok);
  const events = parseXml(renderSvg(r.timeline)).filter((e) => hasClass(e, 'watch-event') && e.attrs['data-rev'] === '5');
  const of = (w: string): string[] => events.filter((e) => e.attrs['data-ref'] === `watch ${w}@5`).map((e) => `${e.attrs['data-response']}${e.attrs['data-fragment'] === 'true' ? ' fragment' : ''}`);
  assert.deepEqual(of('F'), ['1 fragment', '2 fragment', '3']);
  assert.deepEqual(of('P'), ['1', '1', '1']);
  assert.deepEqual(of('D'), ['1', '1', '1']);
});

/** Every lever of a cluster run, pulled once, with time moving between some of them. */
const LEVERS = [
  'members 3',
  'put /a 1',
  'pause infra2',
  'advance 1s',
  'resume infra2',
  'lag infra3 200ms',
  'partition infra1 | infra2 infra3',
  'advance 3s',
  'heal',
  'advance 2s',
  'crash infra2',
  'advance 1s',
  'restart infra2',
  'elect infra1',
  'drop-link infra2',
  'delay-link infra3 100ms',
  'restore-link infra2',
  'lag infra3 0ms',
  'compact-log',
  'install-snapshot infra2',
  'advance 100ms',
  '',
].join('\n');

test("a cluster run records each lever and Raft's answers at their virtual time, with the member and what the transcript said", () => {
  const r = runScenario(LEVERS);
  assert.ok(r.ok, r.transcript.join('\n'));
  const m = r.timeline;
  assert.deepEqual(m.members, ['infra1', 'infra2', 'infra3']);
  const seen = m.memberEvents.map((e) => `${e.kind} ${e.member ?? '*'} t=${e.atMs}${e.term !== undefined ? ` term ${e.term}` : ''}${e.ms !== undefined ? ` ${e.ms}ms` : ''}`);
  assert.deepEqual(seen, [
    'leader infra1 t=0 term 2',
    'pause infra2 t=0',
    'resume infra2 t=1000',
    'lag infra3 t=1000 200ms',
    'partition infra1 t=1000',
    'partition infra2 t=1000',
    'partition infra3 t=1000',
    // Cut off alone, infra1 loses its quorum; the other side elects infra2. (Each member's own Raft node
    // since issue 31: infra2 is elected once its election timeout ends, and infra1 learns it lost its
    // quorum at its next CheckQuorum whose window saw no answer — between one and two election timeouts.)
    'leader infra2 t=2100 term 3',
    'step-down infra1 t=3000',
    'heal * t=4000',
    'crash infra2 t=6000',
    'restart infra2 t=7000',
    'elect infra1 t=7000',
    'leader infra1 t=7000 term 4',
    'drop-link infra2 t=7000',
    'delay-link infra3 t=7000 100ms',
    'restore-link infra2 t=7000',
    'lag infra3 t=7000 0ms',
    'compact-log infra1 t=7000',
    // infra1's election caught the restarted infra2 up from the log: its snapshot installs nothing there.
    'install-snapshot infra2 t=7000',
  ]);
  // Each event carries the transcript's words and its script line (the link to the transcript).
  const pause = m.memberEvents.find((e) => e.kind === 'pause')!;
  assert.match(pause.text, /^pause infra2 \(SIGSTOP\)/);
  assert.equal(pause.line, 3);
  assert.ok(r.transcript.includes(`# ${pause.text}`));
  assert.deepEqual(m.memberEvents.filter((e) => e.kind === 'partition').map((e) => e.side?.join(' ')), ['infra1', 'infra2 infra3', 'infra2 infra3']);
  // The stretches of each member's life the time strip draws.
  const spans = (n: string): string[] => memberSpans(m, n).map((s) => `${s.kind} ${s.from}..${s.to ?? 'end'}`);
  assert.deepEqual(spans('infra1'), ['leader 0..2100', 'cut 1000..4000', 'leader 7000..end']);
  assert.deepEqual(spans('infra2'), ['paused 0..1000', 'cut 1000..4000', 'leader 2100..6000', 'down 6000..7000', 'link 7000..7000']);
  assert.deepEqual(spans('infra3'), ['lag 1000..7000', 'cut 1000..4000', 'link 7000..end']);
});

test('the time strip of a cluster run: a row per member with its leader terms, stretches and levers; the same on the revision axis', () => {
  const r = runScenario(LEVERS);
  const m = r.timeline;
  const els = parseXml(renderSvg(m));
  const strip = els.filter((e) => hasClass(e, 'member-time'));
  assert.deepEqual(strip.map((e) => e.attrs['data-member']), ['infra1', 'infra2', 'infra3'], 'one time-strip row per member, before the watch and lease rows');
  assert.deepEqual(els.filter((e) => hasClass(e, 'member-lane')).map((e) => e.attrs['data-member']), ['infra1', 'infra2', 'infra3'], 'and one lane per member under the revision lanes');
  const marks = (cls: string, kind = 'time-mark'): XmlAttrs[] => els.filter((e) => hasClass(e, kind) && hasClass(e, cls)).map((e) => e.attrs);
  // Row by row: infra1's two terms, then infra2's.
  assert.deepEqual(marks('t-leader').map((a) => `${a['data-member']} term ${a['data-term']} t=${a['data-ms']}`), ['infra1 term 2 t=0', 'infra1 term 4 t=7000', 'infra2 term 3 t=2100']);
  assert.deepEqual(marks('t-step-down').map((a) => a['data-member']), ['infra1']);
  // No snapshot is installed in this run (infra2 was caught up from the log by infra1's election).
  assert.deepEqual(marks('t-snapshot').map((a) => a['data-member']), []);
  // Every lever is a mark on its member's row (heal on every row), linked to its script line.
  const levers = marks('t-lever').map((a) => `${a['data-kind']}@${a['data-member']}:${a['data-line']}`);
  for (const want of ['pause@infra2:3', 'resume@infra2:5', 'lag@infra3:6', 'partition@infra1:7', 'heal@infra1:9', 'heal@infra2:9', 'heal@infra3:9', 'crash@infra2:11', 'restart@infra2:13', 'elect@infra1:14', 'compact-log@infra1:19', 'install-snapshot@infra2:20']) {
    assert.ok(levers.includes(want), `${want} in ${levers.join(', ')}`);
  }
  assert.equal(marks('t-lever', 'member-mark').length, levers.length, 'the same levers on the members\' revision lanes');
  const stretch = (kind: string): string[] => els.filter((e) => hasClass(e, 'member-span') && hasClass(e, `span-${kind}`) && e.parent === 'g').map((e) => `${e.attrs['data-member']}@${e.attrs['data-from-ms']}`);
  assert.ok(stretch('down').includes('infra2@6000'));
  assert.ok(stretch('paused').includes('infra2@0'));
  assert.ok(stretch('cut').includes('infra3@1000'));
  assert.ok(stretch('lag').includes('infra3@1000'));
  // The page's legend explains the member rows, only on a page with a cluster run.
  const page = renderHtml('levers', [{ model: m, transcript: r.transcript }]);
  for (const k of ['leader', 'step-down', 'lever', 'crash', 'paused', 'cut', 'lag', 'link', 'snapshot-install']) assert.match(page, new RegExp(`<li data-legend="${k}">`), k);
  const single = runScenario(readFileSync(path('txn-one-revision'), 'utf8'));
  assert.doesNotMatch(renderHtml('txn', [{ model: single.timeline, transcript: single.transcript }]), /data-legend="leader"/);
});

test('cluster labs: elections and leader changes on the strip; a watch lane names the member serving it', () => {
  const leases = runScenario(readFileSync(path('cluster/leases-across-leader-change'), 'utf8'));
  assert.ok(leases.ok);
  const lm = leases.timeline;
  assert.deepEqual(lm.memberEvents.map((e) => `${e.kind} ${e.member} t=${e.atMs}`), ['leader infra1 t=0', 'move-leader infra2 t=4000', 'step-down infra1 t=4000', 'leader infra2 t=4000']);
  assert.deepEqual(memberSpans(lm, 'infra1').map((s) => `${s.kind} ${s.from}..${s.to}`), ['leader 0..4000']);
  assert.deepEqual(memberSpans(lm, 'infra2').map((s) => `${s.kind} ${s.from}..${s.to ?? 'end'}`), ['leader 4000..end']);
  // The lease's row: the new leader started it over at t=4s, so its TTL runs out at 15 s, not 10 s after the grant.
  assert.deepEqual(lm.leases[0]!.promotions?.map((p) => `${p.leader} term ${p.term} t=${p.atMs} expires ${p.expiresAtMs}`), ['infra2 term 3 t=4000 expires 15000']);
  const lel = parseXml(renderSvg(lm));
  assert.deepEqual(lel.filter((e) => hasClass(e, 't-promote')).map((e) => e.attrs['data-expires-ms']), ['15000']);
  assert.deepEqual(lel.filter((e) => hasClass(e, 't-deadline')).map((e) => e.attrs['data-ms']), ['15000']);
  assert.deepEqual(lel.filter((e) => hasClass(e, 't-revoking')).map((e) => e.attrs['data-ms']), ['15000']);
  // The steps are on the time strip too, at the moment each was reached: stale reads wait, so steps spread in time.
  const stale = runScenario(readFileSync(path('cluster/stale-serializable-read'), 'utf8'));
  const timeSteps = parseXml(renderSvg(stale.timeline)).filter((e) => hasClass(e, 'time-step'));
  assert.deepEqual(timeSteps.map((e) => Number(e.attrs['data-ms'])), timelineSteps(stale.timeline).steps.map((st) => st.atMs));
  assert.deepEqual(timeSteps.map((e) => e.attrs['data-ms']), ['0', '0', '0', '1000', '2000', '8000']);
  assert.match(renderHtml('stale', [{ model: stale.timeline, transcript: stale.transcript }]), /<span class="at">line 44, revision 5, t=8s<\/span>/);
  const watch = runScenario(readFileSync(path('cluster/watch-on-lagging-follower'), 'utf8'));
  assert.deepEqual(watch.timeline.watchers.map((w) => `${w.name}@${w.member}`), ['L@infra1', 'F@infra3']);
  const svg = renderSvg(watch.timeline);
  assert.match(svg, /<text class="lane-label"[^>]*>watch F \/w\/\* @infra3<\/text>/);
  assert.match(svg, /<text class="lane-label"[^>]*>t: watch F @infra3<\/text>/);
  // Single-member runs have no member rows and no member in their lanes.
  const single = runScenario(readFileSync(path('watch-from-the-past'), 'utf8')).timeline;
  assert.equal(single.members.length, 0);
  assert.doesNotMatch(renderSvg(single), /member-time|member-lane|@infra/);
});

test('#19179: the kill in the middle of a compaction and the restart are drawn as what they are; the lost DELETE is flagged with the bug only', () => {
  const r = runScenario(readFileSync(path('bugs/19179-lone-tombstone-lost-on-restart'), 'utf8'));
  assert.ok(r.ok);
  for (const run of r.runs) {
    const m = run.timeline;
    assert.deepEqual(m.restores.map((x) => [x.kind, x.name]), [['crash-during-compact', 'killed after 1 of 2 batches of the compaction at 1005']]);
    const els = parseXml(renderSvg(m));
    const axis = els.filter((e) => hasClass(e, 'member-restart'));
    assert.equal(axis.length, 1);
    assert.ok(hasClass(axis[0]!, 'crash-compact'));
    assert.equal(axis[0]!.attrs['data-rev'], '1006');
    assert.equal(els.filter((e) => hasClass(e, 't-crash-compact')).length, 1, 'on the time strip too');
    assert.doesNotMatch(renderSvg(m), />restore restart/, 'not a snapshot restore');
    const flags = els.filter((e) => hasClass(e, 'missing-event'));
    if (m.variant === 'bug') {
      assert.deepEqual(flags.map((e) => e.attrs['data-rev']), ['1005'], 'the DELETE at D never reached W');
      assert.deepEqual(missingEvents(m, m.watchers[0]!).map((x) => `${x.type} ${x.key}@${x.rev}`), ['DELETE /k@1005']);
    } else assert.equal(flags.length, 0, 'with the fix nothing is missing');
    const page = renderHtml('19179', [{ model: m, transcript: run.transcript }]);
    assert.match(page, /<li data-legend="member-restart">/);
    assert.match(page, /<a href="https:\/\/github\.com\/etcd-io\/etcd\/pull\/19188">#19188<\/a>/);
  }
  // A plain restart is drawn as a restart.
  const plain = runScenario('put /a 1\nrestart\nput /a 2\n').timeline;
  assert.deepEqual(plain.restores.map((x) => [x.kind, x.name]), [['restart', 'restart']]);
  assert.match(renderSvg(plain), /class="restore member-restart"/);
  // No other bundled lab loses an event, and #18089's bug variant does (its tombstone at the compaction revision).
  for (const s of listBundledScenarios()) {
    const run = runScenario(readFileSync(s.path, 'utf8'));
    for (const v of run.runs) {
      const missing = v.timeline.watchers.flatMap((w) => missingEvents(v.timeline, w));
      const expected = v.timeline.variant === 'bug' && /18089|19179/.test(s.name);
      assert.equal(missing.length > 0, expected, `${s.name} ${v.timeline.variant ?? ''}: ${JSON.stringify(missing)}`);
    }
  }
});
