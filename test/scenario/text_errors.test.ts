/**
 * The text errors issue 17 found in the labs, each pinned where a test can see it: txn events in operation
 * order and the resume point as last complete + 1; the PRs credited for etcd #18089; "refused" where both
 * watches are accepted and then canceled, and the mid-replay case; keys with a NUL byte marked as not
 * pasteable; `repeat`'s command printed before the events it caused; `--html` into a missing directory; the
 * 3.4.23-vs-3.7 differences the labs meet, named in the lab and in docs/version-differences.md.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listBundledScenarios, runCommand } from '../../src/cli/run_command.js';
import { runScenario } from '../../src/scenario/index.js';

const scenario = (name: string): string => readFileSync(listBundledScenarios().find((s) => s.name === name)!.path, 'utf8');
const repoFile = (path: string): string => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

test('txn-one-revision: events come in the order of the txn operations, and the safe resume point is last complete + 1', () => {
  const text = scenario('txn-one-revision');
  assert.doesNotMatch(text, /key order within/);
  assert.match(text, /in the order of the txn's operations/);
  const r = runScenario(text);
  assert.ok(r.ok, r.transcript.join('\n'));
  // The txn puts /t/b before /t/a: the watcher prints them in that order, not sorted by key.
  const keys = r.transcript.filter((l) => /^\[watch W @3\] \/t\//.test(l));
  assert.deepEqual(keys, ['[watch W @3] /t/b', '[watch W @3] /t/a', '[watch W @3] /t/ready']);
  // The cursor is the last completely applied revision (T - 1 = 2); the watch resumes from it + 1 = T = 3.
  assert.ok(r.transcript.includes('# C = $((T - 1)) → 2'));
  assert.ok(r.transcript.some((l) => l.startsWith('$ etcdctl watch /t/ --prefix --rev=3 &   # watch SAFE')));
  assert.doesNotMatch(text, /resume from it \(T\)/);
});

test('bugs/18089 credits the main fix (PR #18274) and the 3.5 / 3.4 backports (PR #18474, PR #18475), everywhere', () => {
  const text = scenario('bugs/18089-tombstone-at-compaction-revision');
  assert.match(text, /Fixed by PR #18274 \(v3\.6\.0\), backported to 3\.5 by PR #18474 \(v3\.5\.16\) and to 3\.4 by PR #18475 \(v3\.4\.34\)/);
  assert.match(text, /Only releases\n## before those backports keep the old rule, such as etcd 3\.4\.23/);
  // No text calls #18474 the fix, or says 3.4 as a whole keeps the old rule.
  for (const [name, t] of [
    ['18089 scenario', text],
    ['scenarios/README.md', repoFile('scenarios/README.md')],
    ['docs/version-differences.md', repoFile('docs/version-differences.md')],
    ['src/mvcc/compat.ts', repoFile('src/mvcc/compat.ts')],
  ] as const) {
    assert.doesNotMatch(t, /PR #18474 \(v3\.6|Fixed by PR #18474|etcd 3\.4 keeps the old rule/, name);
  }
  assert.match(repoFile('src/mvcc/compat.ts'), /PR #18274 \(issue #18089\), v3\.6\.0, backported by PR #18474 \(v3\.5\.16\) and PR #18475 \(v3\.4\.34\)/);
  assert.match(repoFile('docs/version-differences.md'), /PR #18274 \(v3\.6\.0\); backports PR #18474 \(v3\.5\.16\) and PR #18475 \(v3\.4\.34\)/);
});

test('compaction-evicts-behind-watcher: both watches are accepted, then canceled (status 5); the mid-replay case is its own lab', () => {
  const text = scenario('compaction-evicts-behind-watcher');
  assert.doesNotMatch(text, /refused/i);
  assert.match(text, /compaction-during-replay/);
  const r = runScenario(text);
  assert.ok(r.ok);
  for (const w of ['B', 'B2']) {
    assert.ok(r.transcript.includes(`# watch ${w}: canceled with compact_revision 12; etcdctl exits with status 5`), w);
  }
  // Seed 003's mid-replay case: a thousand events printed, then the cancel, while C keeps going.
  const mid = runScenario(scenario('compaction-during-replay'));
  assert.ok(mid.ok, mid.transcript.join('\n'));
  const b = mid.timeline.watchers.find((w) => w.name === 'B')!;
  assert.equal(b.events.length, 1000);
  assert.deepEqual(
    [b.events[0]!.rev, b.events[999]!.rev],
    [2, 1001],
  );
  assert.equal(b.segments[0]!.end?.kind, 'canceled');
  assert.equal(b.segments[0]!.end?.compactRevision, 1992);
  const at = mid.transcript.indexOf('[watch B] watch was canceled (etcdserver: mvcc: required revision has been compacted)');
  assert.ok(at > mid.transcript.indexOf('[watch B @1001] PUT'), 'the cancel comes after the thousand events');
  assert.equal(mid.transcript[at + 1], '[watch B] Error: watch is canceled by the server');
  assert.equal(mid.transcript[at + 2], '# watch B: canceled with compact_revision 1992; etcdctl exits with status 5');
});

test('a next page starts at the last key + \\x01, which bash passes: no bundled transcript holds a NUL byte', () => {
  const r = runScenario(scenario('pagination-pinned-revision'));
  assert.ok(r.ok);
  assert.ok(r.transcript.includes("# NEXT = next_key → $'/p/b\\x01'"));
  assert.ok(r.transcript.includes("$ etcdctl get $'/p/b\\x01' /p0 --rev=6 --limit=2   # rev 9, read at 6, more"));
  for (const s of listBundledScenarios()) {
    const t = runScenario(readFileSync(s.path, 'utf8')).transcript;
    assert.ok(!t.some((l) => l.includes('\\x00') && !l.includes("tr '\\0'")), s.name);
  }
  // A NUL byte a script types itself is still shown, and marked.
  const typed = runScenario("put $'/n/a\\x00' 1");
  assert.ok(typed.transcript.includes("$ etcdctl put $'/n/a\\x00' 1   # rev 2, not pasteable (a NUL byte)"), typed.transcript.join('\n'));
});

test('repeat is a shell loop that pastes, its output counted by uniq -c; the command line comes before the watch events it caused', () => {
  const r = runScenario(['watch W /r/ --prefix', 'repeat 2 put /r/k ${i}', 'expect watch W events == [PUT /r/k@2, PUT /r/k@3]'].join('\n'));
  assert.ok(r.ok, r.transcript.join('\n'));
  assert.deepEqual(r.transcript.slice(1, 5), ['$ for i in $(seq 1 2); do etcdctl put /r/k "${i}"; done | uniq -c   # revisions 2..3', '      2 OK', '[watch W @2] PUT', '[watch W @2] /r/k']);
  const quoted = runScenario('repeat 3 get "/r/a b${i}"');
  assert.equal(quoted.transcript[0], `$ for i in $(seq 1 3); do etcdctl get '/r/a b'"\${i}"''; done | uniq -c`);
});

test('a txn here-document ends each of its three sections with a blank line, as etcdctl needs (else `Error: EOF`)', () => {
  const r = runScenario(['txn', 'value("/k") = "0"', '', 'put /k 1', 'end', 'txn', 'value("/k") = "0"', '', 'put /k 1', '', 'put /k 2', 'end'].join('\n'));
  assert.ok(r.ok, r.transcript.join('\n'));
  assert.deepEqual(r.transcript.slice(0, 6), ['$ etcdctl txn <<EOF   # rev 1', 'value("/k") = "0"', '', 'put /k 1', '', '']);
  assert.equal(r.transcript[6], 'EOF');
  const second = r.transcript.indexOf('$ etcdctl txn <<EOF   # rev 2');
  assert.deepEqual(r.transcript.slice(second + 1, second + 8), ['value("/k") = "0"', '', 'put /k 1', '', 'put /k 2', '', 'EOF']);
});

test("a failed request prints clientv3's warning line before etcdctl's error, as etcdctl 3.4.23 does; expect output is etcdctl's own", () => {
  const r = runScenario(['put /a 1', 'put /a 2', 'compact 3', 'get /a --rev=2', 'expect output == "Error: etcdserver: mvcc: required revision has been compacted"'].join('\n'));
  assert.ok(r.ok, r.transcript.join('\n'));
  const at = r.transcript.findIndex((l) => l.startsWith('$ etcdctl get /a --rev=2'));
  assert.deepEqual(r.transcript.slice(at + 1, at + 3), [
    '{"level":"warn","ts":"…","caller":"clientv3/retry_interceptor.go:62","msg":"retrying of unary invoker failed","target":"endpoint://client-…/127.0.0.1:2379","attempt":0,"error":"rpc error: code = OutOfRange desc = etcdserver: mvcc: required revision has been compacted"}',
    'Error: etcdserver: mvcc: required revision has been compacted',
  ]);
});

test('run --html into a missing directory, or onto a directory name: one line on stderr, exit 2, nothing run', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-html-'));
  try {
    for (const [target, why] of [
      [join(dir, 'missing', 't.html'), `no such directory: ${join(dir, 'missing')}`],
      [`${join(dir, 'missing')}/`, `that names a directory; give a file, e.g. ${join(dir, 'missing', 'timeline.html')}`],
    ] as const) {
      const out: string[] = [];
      const err: string[] = [];
      const code = await runCommand(['txn-one-revision', '--html', target], (l) => out.push(l), (l) => err.push(l));
      assert.equal(code, 2);
      assert.deepEqual(err, [`etcdsim run: cannot write the timeline to ${target}: ${why}`]);
      assert.deepEqual(out, [], 'checked before the run');
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a watch from a compacted revision is accepted, then canceled: the notes above it say so, as its transcript shows', () => {
  for (const name of ['watch-from-the-past', 'list-then-watch-relist']) {
    const text = readFileSync(listBundledScenarios().find((s) => s.name === name)!.path, 'utf8');
    assert.doesNotMatch(text, /^##.*\brefused\b/m, name);
    assert.match(text.replace(/\n## /g, ' '), /accepted, then canceled/, name);
    assert.ok(runScenario(text).transcript.some((l) => / watch was canceled \(etcdserver: mvcc: required revision has been compacted\)$/.test(l)), name);
  }
  assert.match(repoFile('README.md'), /#15220, #18089,\s+#19179, #20221/);
});

test('a lab that meets a 3.4.23-vs-3.7 difference names it, and docs/version-differences.md has its row', () => {
  const diffs = repoFile('docs/version-differences.md');
  // progress-bookmarks asks for its bookmarks with watch -i's `progress`: etcdctl 3.4 has no --progress-notify.
  const bookmarks = scenario('progress-bookmarks');
  assert.match(bookmarks, /--progress-notify`, from etcdctl 3\.5 on; etcdctl 3\.4 cannot ask for them/);
  assert.doesNotMatch(bookmarks, /^watch .*--progress-notify/m);
  assert.match(diffs, /\| etcdctl `watch --progress-notify` \(`progress-bookmarks`\) \| no such flag/);
  // An isolated member raises its term only without pre-vote, 3.4's default.
  assert.match(scenario('cluster/stale-serializable-read'), /From 3\.5 on --pre-vote is on by default/);
  assert.match(diffs, /\| `--pre-vote` default \(`cluster\/stale-serializable-read`\) \| off:/);
  // #19179's bug variant is a release between the two fixes; 3.4.23 itself is older than both (#18089's row).
  assert.match(scenario('bugs/19179-lone-tombstone-lost-on-restart'), /etcd 3\.4\.23 among them, lose that DELETE at every compaction/);
  assert.match(diffs, /A tombstone exactly at the compaction revision \| dropped/);
});

test('lease-expiry-timing: the minimum TTL is 3/2 of the election timeout rounded up, 1.5 s to 2 s, as etcd prints it', () => {
  const text = scenario('lease-expiry-timing');
  assert.match(text, /gives 1\.5 s, rounded up to whole seconds/);
  assert.ok(runScenario(text).transcript.some((l) => /^lease [0-9a-f]{16} granted with TTL\(2s\)$/.test(l)));
});

test('a victim step and the sync step after it are two moments in the transcript, as the labs\' text says', () => {
  const r = runScenario(scenario('cluster/watch-across-a-dropped-link'));
  assert.ok(r.ok);
  const at = (l: string): number => r.transcript.indexOf(l);
  // Revision 7 (held aside by the victim) comes at the victim step, 8..12 from the history at the sync step.
  assert.ok(at('# t=5.01s') < at('[watch F @7] PUT') && at('[watch F @7] PUT') < at('# t=5.1s') && at('# t=5.1s') < at('[watch F @8] PUT'));
  assert.match(scenario('cluster/watch-across-a-dropped-link'), /the fifth 10 ms\n## later \(the victim step\) and the last five at the next sync step/);
});
