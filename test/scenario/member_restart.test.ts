/**
 * The single member's `restart` and `crash-during-compact REV --after-batches=N` directives: how they are
 * read (and refused), what the transcript says, running watches reconnecting as clientv3 does, and the
 * #19179 lab's determinism.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseScenario, runScenario } from '../../src/scenario/index.js';
import { syntaxError } from './helpers.js';
import { parseMemberDirective } from '../../src/scenario/parse/member_directives.js';
import { splitWords } from '../../src/scenario/parse/lexer.js';

test('restart and crash-during-compact are read as directives', () => {
  const steps = parseScenario('put /a 1\nrestart\nR = revision\ncrash-during-compact ${R} --after-batches=1\ncrash-during-compact 2 --after-batches 0\n').steps;
  assert.deepEqual(
    steps.map((s) => (s.type === 'directive' ? s.directive.kind : s.type)),
    ['command', 'restart', 'capture', 'crash-during-compact', 'crash-during-compact'],
  );
  const d = steps[3]!;
  assert.ok(d.type === 'directive' && d.directive.kind === 'crash-during-compact');
  assert.equal(d.directive.rev.raw, '${R}');
  assert.equal(d.directive.afterBatches.raw, '1');
  // `restart MEMBER` is a cluster's lever, not this parser's.
  assert.equal(parseMemberDirective('restart', splitWords('infra1', 1), 1), undefined);
  assert.equal(parseMemberDirective('put', [], 1), undefined);
});

test('malformed crash-during-compact lines fail with the line number and the usage', () => {
  const cases: [string, number, RegExp][] = [
    ['put /a 1\ncrash-during-compact\n', 2, /crash-during-compact expects the compaction revision \(usage: crash-during-compact REV --after-batches=N\)/],
    ['crash-during-compact 2\n', 1, /crash-during-compact needs --after-batches=N/],
    ['crash-during-compact two --after-batches=1\n', 1, /expects the compaction revision/],
    ['crash-during-compact 2 --after-batches=many\n', 1, /--after-batches expects an integer, got many/],
    ['crash-during-compact 2 3 --after-batches=1\n', 1, /crash-during-compact: unexpected 3/],
    ['crash-during-compact 2 --physical --after-batches=1\n', 1, /unknown flag --physical/],
    ['crash-during-compact 2 --after-batches\n', 1, /--after-batches needs a value/],
  ];
  for (const [script, line, re] of cases) {
    const e = syntaxError(script);
    assert.equal(e.line, line, script);
    assert.match(e.message, re, script);
  }
});

test('crash-during-compact at run time: etcd refusing the compaction kills nothing; a negative batch count stops the run', () => {
  const refused = runScenario('put /a 1\ncrash-during-compact 9 --after-batches=1\nexpect error "etcdserver: mvcc: required revision is a future revision"\nexpect ok\n');
  assert.equal(refused.failure?.line, 4, 'the compaction failed, so `expect ok` fails');
  assert.ok(refused.transcript.includes('Error: etcdserver: mvcc: required revision is a future revision'));
  assert.ok(!refused.transcript.some((l) => l.includes('SIGKILL')));
  const negative = runScenario('put /a 1\nN = -1\ncrash-during-compact 2 --after-batches=${N}\n');
  assert.equal(negative.failure?.line, 3);
  assert.match(negative.failure!.message, /--after-batches must be 0 or more, got -1/);
});

test('restart: running watches lose their stream and reconnect after the last revision they saw, printing nothing', () => {
  const script = [
    'put /a 1',
    'watch NOW /a',
    'watch PAST /a --rev=2',
    'watch QUIET /b',
    'put /a 2',
    'advance 100ms',
    'restart',
    'put /a 3',
    'put /b 1',
    // QUIET resumes behind the head: the sync step replays it.
    'advance 100ms',
    'expect watch NOW events == [PUT /a@3, PUT /a@4]',
    'expect watch PAST events == [PUT /a@2, PUT /a@3, PUT /a@4]',
    'expect watch QUIET events == [PUT /b@5]',
  ].join('\n');
  const r = runScenario(script);
  assert.equal(r.failure, undefined, r.transcript.join('\n'));
  const t = r.transcript;
  const at = t.indexOf('# restart: SIGKILL, then the member starts again and rebuilds itself from its backend');
  assert.ok(at > 0, t.join('\n'));
  assert.deepEqual(t.slice(at + 1, at + 6), [
    '# the member rebuilds its index from the backend\'s key bucket: 1 key, revision 3',
    '# 3 streams broke with the member (UNAVAILABLE: transport is closing)',
    '# NOW: its etcdctl reconnects (clientv3, printing nothing) and resumes on a new stream from rev 4',
    '# PAST: its etcdctl reconnects (clientv3, printing nothing) and resumes on a new stream from rev 4',
    // A watch from now that saw nothing resumes at its created response's revision (clientv3's nextRev).
    '# QUIET: its etcdctl reconnects (clientv3, printing nothing) and resumes on a new stream from rev 2',
  ]);
  // The timeline ends each old stream as broken and opens a second segment.
  for (const lane of r.timeline.watchers) {
    assert.equal(lane.segments.length, 2, lane.name);
    assert.equal(lane.segments[0]!.end?.kind, 'broken', lane.name);
  }
  assert.deepEqual(
    r.timeline.restores.map((x) => [x.name, x.fromRev, x.toRev]),
    [['restart', 3, 3]],
  );
});

test('a watch whose resume point the resumed compaction passed is canceled as compacted, and etcdctl exits', () => {
  const script = [
    'put /a 1',
    'put /a 2',
    // Opened behind the head, W has received nothing yet when the member dies.
    'watch W /a --rev=2',
    'put /a 3',
    'crash-during-compact 3 --after-batches=0',
    'advance 100ms',
    'expect watch W canceled compact_revision == 3',
  ].join('\n');
  const r = runScenario(script);
  assert.equal(r.failure, undefined, r.transcript.join('\n'));
  assert.ok(r.transcript.includes('# SIGKILL after 0 batches: 0 revisions deleted, 1 still to delete; finishedCompactRev not recorded'), r.transcript.join('\n'));
  assert.ok(r.transcript.includes('# W: its etcdctl reconnects (clientv3, printing nothing) and resumes on a new stream from rev 2'));
});

test('the #19179 lab: the transcript tells the two rebuilds apart, and is the same on every run', () => {
  const text = readFileSync(new URL('../../scenarios/bugs/19179-lone-tombstone-lost-on-restart.etcdsim', import.meta.url), 'utf8');
  const a = runScenario(text);
  assert.ok(a.ok, a.transcript.join('\n'));
  assert.equal(a.transcript.join('\n'), runScenario(text).transcript.join('\n'));
  const [bug, fixed] = a.runs;
  assert.ok(bug!.transcript.includes('# SIGKILL after 1 batch (revisions up to 1001): 1000 revisions deleted, 2 still to delete; finishedCompactRev not recorded'));
  assert.ok(bug!.transcript.includes('# ... including the tombstone no keyIndex keeps: /k@1005 deleted'));
  assert.ok(bug!.transcript.some((l) => l.includes('(/k@1005): left out of the index')));
  assert.ok(fixed!.transcript.some((l) => l.includes('(/k@1005): restored into the index as {tombstone}{empty}')));
  assert.ok(!fixed!.transcript.some((l) => l.includes('no keyIndex keeps')));
});
