/** `etcdsim run`: list, run a bundled scenario by name or a file by path, exit codes, --html. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { labPath, listBundledScenarios, runCommand, summaryOf } from '../../src/cli/run_command.js';

async function run(args: string[]): Promise<{ code: number; lines: string[] }> {
  const lines: string[] = [];
  const code = await runCommand(args, (l) => lines.push(l));
  return { code, lines };
}

test('run --list follows the suggested path, numbered, each lab with the whole first sentence of its description', async () => {
  const { code, lines } = await run(['--list']);
  assert.equal(code, 0);
  const all = listBundledScenarios();
  assert.equal(lines.length, all.length);
  assert.deepEqual(all.map((s) => s.name), labPath(), 'every bundled lab is on the path, in its order');
  all.forEach((s, i) => {
    assert.ok(lines[i]!.startsWith(`${String(i + 1).padStart(2)}. ${s.name} `), lines[i]);
    assert.ok(lines[i]!.endsWith(`  ${s.summary}`), lines[i]);
    assert.match(s.summary, /[.?!]$/, `${s.name}: a whole sentence`);
  });
  assert.equal(summaryOf('## One line\n## and its end. Then more.\n## more'), 'One line and its end.');
});

test('the path is one list: path.txt names every bundled lab once, and scenarios/README.md\'s suggested order is it', () => {
  const path = labPath();
  assert.equal(new Set(path).size, path.length, 'no lab twice');
  assert.deepEqual([...path].sort(), listBundledScenarios().map((s) => s.name).sort());
  const readme = readFileSync(new URL('../../scenarios/README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('## A suggested order'), readme.indexOf('\n## ', readme.indexOf('## A suggested order') + 5));
  // Each numbered item opens with its lab's name; the last one, `bugs/`, names each bug lab.
  const named: string[] = [];
  for (const m of section.matchAll(/^\d+\. `([^`]+)`(.*(?:\n(?!\d+\. ).*)*)/gm)) {
    if (m[1] === 'bugs/') named.push(...[...m[2]!.matchAll(/`(bugs\/[a-z0-9-]+)`/g)].map((b) => b[1]!));
    else named.push(m[1]!);
  }
  assert.deepEqual(named, path);
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
