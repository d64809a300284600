/** `etcdsim run`: list, run a bundled scenario by name or a file by path, exit codes, --html. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listBundledScenarios, runCommand } from '../../src/cli/run_command.js';

async function run(args: string[]): Promise<{ code: number; lines: string[] }> {
  const lines: string[] = [];
  const code = await runCommand(args, (l) => lines.push(l));
  return { code, lines };
}

test('run --list names every bundled scenario with its one-line description', async () => {
  const { code, lines } = await run(['--list']);
  assert.equal(code, 0);
  const all = listBundledScenarios();
  assert.equal(lines.length, all.length);
  for (const s of all) assert.ok(lines.some((l) => l.startsWith(s.name) && l.endsWith(s.summary)), s.name);
});

test('run NAME runs a bundled scenario, prints its transcript and writes the timeline with --html', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-run-'));
  try {
    const out = join(dir, 't.html');
    const { code, lines } = await run(['run', 'txn-one-revision', '--html', out, '--seed', '3']);
    assert.equal(code, 0, lines.join('\n'));
    assert.ok(lines.includes('$ etcdctl put /t/ready 0   # rev 2'));
    assert.equal(lines[lines.length - 1], `# timeline written to ${out}`);
    assert.match(readFileSync(out, 'utf8'), /<svg[^>]*class="timeline"/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('exit codes: 1 for a failed expectation, 2 for a malformed script or bad usage', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-run-'));
  try {
    const bad = join(dir, 'bad.etcdsim');
    writeFileSync(bad, 'put /a 1\nexpect revision == 9\n');
    const f = await run([bad]);
    assert.equal(f.code, 1);
    assert.equal(f.lines[f.lines.length - 1], 'etcdsim run: bad.etcdsim:2: expect revision == 9: got revision 2');
    writeFileSync(bad, 'put /a 1\nget\n');
    const s = await run([bad]);
    assert.equal(s.code, 2);
    assert.match(s.lines[s.lines.length - 1]!, /^etcdsim run: bad\.etcdsim:2: get expects a key/);
    assert.equal((await run(['no-such-scenario'])).code, 2);
    assert.equal((await run(['txn-one-revision', '--seed', 'x'])).code, 2);
    assert.equal((await run([])).code, 2);
    assert.equal((await run(['bugs/20229-progress-below-future-start', '--variant', 'nope'])).code, 2);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
