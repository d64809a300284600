/**
 * `from-snapshot FILE [--user=NAME:PASSWORD]`: a scenario that starts from an etcd snapshot file, resolved
 * relative to the scenario file, here the committed fixture that a real etcd 3.4.23 wrote
 * (test/snapshot/fixtures/etcd-3.4.23-small.db, with what that etcd answered in its .expected.json). The run
 * reads every retained revision as that etcd did, watches replay history from the compaction point, auth is
 * as it was (root's password from the snapshot's bcrypt hash); a bad file, a missing file, a misplaced line
 * and a run without files fail with a clear message at the directive's line.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCommand } from '../../src/cli/run_command.js';
import { parseScenario, runScenario } from '../../src/scenario/index.js';

const FIXTURE = new URL('../snapshot/fixtures/etcd-3.4.23-small.db', import.meta.url);
const EXPECTED = JSON.parse(readFileSync(new URL('../snapshot/fixtures/etcd-3.4.23-small.expected.json', import.meta.url), 'utf8')) as {
  revision: number;
  compactRevision: number;
  kvs: { key: string; mod_revision: number; valueLength: number }[];
};

/** A scenario file in a fresh directory, beside `snaps/small.db` (a copy of the fixture). */
function labDir(script: string): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-from-snapshot-'));
  mkdirSync(join(dir, 'snaps'));
  copyFileSync(FIXTURE, join(dir, 'snaps', 'small.db'));
  const file = join(dir, 'lab.etcdsim');
  writeFileSync(file, script);
  return { dir, file };
}

async function run(args: string[]): Promise<{ code: number; lines: string[] }> {
  const lines: string[] = [];
  const code = await runCommand(args, (l) => lines.push(l));
  return { code, lines };
}

test('from-snapshot: a real etcd 3.4.23 snapshot, relative to the scenario file: every key, the compaction point, history replayed to a watch', async () => {
  const keys = EXPECTED.kvs.map((kv) => kv.key);
  const { dir, file } = labDir(
    [
      '## Start from a real etcd snapshot.',
      'from-snapshot snaps/small.db --user=root:rootpw',
      'get "" --from-key --keys-only',
      `expect keys == [${keys.join(', ')}]`,
      `expect revision == ${EXPECTED.revision}`,
      `get a --rev=${EXPECTED.compactRevision - 1}`,
      'expect error "etcdserver: mvcc: required revision has been compacted"',
      `watch W "" --prefix --rev=${EXPECTED.compactRevision}`,
      'advance 100ms',
      'put z 1',
      `expect revision == ${EXPECTED.revision + 1}`,
      `expect watch W last == ${EXPECTED.revision + 1}`,
      'expect get c == 3',
      '',
    ].join('\n'),
  );
  try {
    const { code, lines } = await run(['run', file]);
    assert.equal(code, 0, lines.join('\n'));
    assert.ok(lines.includes(`# from-snapshot snaps/small.db: the member starts from this etcd snapshot (as etcdsim serve --from-snapshot): revision ${EXPECTED.revision}, compacted at ${EXPECTED.compactRevision}, 1 lease, auth enabled`), lines.join('\n'));
    assert.ok(lines.includes('# every etcdctl command below runs with --user root:******'));
    // The watch from the compaction point replays what the snapshot retained, in revision order.
    const replayed = lines.filter((l) => /^\[watch W @\d+\] (PUT|DELETE)$/.test(l)).map((l) => Number(/@(\d+)/.exec(l)![1]));
    assert.ok(replayed.length >= 5, lines.join('\n'));
    assert.deepEqual(replayed, [...replayed].sort((a, b) => a - b));
    assert.ok(replayed[0]! >= EXPECTED.compactRevision);
    // The loaded history is drawn: the compaction point, and a mark per retained write.
    const r = runScenario(readFileSync(file, 'utf8'), { readFile: (p) => readFileSync(join(dir, p)) });
    assert.ok(r.ok);
    assert.deepEqual(r.timeline.compactions.map((c) => c.rev), [EXPECTED.compactRevision]);
    for (const kv of EXPECTED.kvs) assert.ok(r.timeline.writes.some((w) => w.key === kv.key && w.rev === kv.mod_revision), `${kv.key}@${kv.mod_revision} is drawn`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('from-snapshot: without --user, an auth-enabled snapshot answers as etcd does (user name is empty); a wrong password stops the run', () => {
  const r = runScenario('from-snapshot small.db\nget a\nexpect error "etcdserver: user name is empty"\n', { readFile: () => readFileSync(FIXTURE) });
  assert.ok(r.ok, r.transcript.join('\n'));
  // A wrong password stops the run there, with etcd's answer, as etcdctl --user stops.
  const wrong = runScenario('from-snapshot small.db --user=root:nope\nget a\n', { readFile: () => readFileSync(FIXTURE) });
  assert.equal(wrong.failure?.line, 1);
  assert.equal(wrong.failure?.message, 'from-snapshot small.db: --user root: etcdserver: authentication failed, invalid user ID or password');
});

test('from-snapshot: a bad file, a missing file, no files at all, a misplaced or repeated line each fail clearly at their line', () => {
  const bad = runScenario('## t\nfrom-snapshot x.db\nput a 1\n', { readFile: () => new Uint8Array(100) });
  assert.equal(bad.ok, false);
  assert.equal(bad.failure?.line, 2);
  assert.match(bad.failure!.message, /^from-snapshot x\.db: /);
  assert.ok(bad.transcript.some((l) => l.startsWith('# ✗ line 2: from-snapshot x.db: ')));
  const missing = runScenario('from-snapshot nope.db\n', {
    readFile: () => {
      throw new Error('ENOENT: no such file');
    },
  });
  assert.equal(missing.failure?.message, 'from-snapshot nope.db: cannot read it (ENOENT: no such file)');
  const noFiles = runScenario('from-snapshot x.db\nput a 1\n');
  assert.equal(noFiles.failure?.line, 1);
  assert.match(noFiles.failure!.message, /this run has no files to read/);
  assert.throws(() => parseScenario('put a 1\nfrom-snapshot x.db\n'), /line 2: from-snapshot must come before the first step/);
  assert.throws(() => parseScenario('from-snapshot x.db\nfrom-snapshot y.db\n'), /line 2: from-snapshot is given twice \(first at line 1\)/);
  assert.throws(() => parseScenario('from-snapshot\n'), /line 1: from-snapshot expects a snapshot file/);
  assert.throws(() => parseScenario('from-snapshot x.db --user\n'), /line 1: from-snapshot: unexpected --user/);
});

test('from-snapshot through etcdsim run: a missing file exits 1 naming it', async () => {
  const { dir, file } = labDir('from-snapshot snaps/none.db\nput a 1\n');
  try {
    const { code, lines } = await run(['run', file]);
    assert.equal(code, 1);
    assert.match(lines[lines.length - 1]!, /^etcdsim run: lab\.etcdsim:1: from-snapshot snaps\/none\.db: cannot read it \(ENOENT/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
