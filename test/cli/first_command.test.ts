/**
 * The README's first line, as a new user runs it: on a fresh clone of this checkout, `npm ci` then the
 * etcdsim command, and etcdctl gets an answer. What it guards: the install builds quickly (`prepare` is
 * esbuild, JavaScript only), the command runs the clone's own bin (no npx, which installs the clone again
 * into its cache and rebuilds there, and which Ctrl-C can leave broken), and nothing rebuilds on start.
 *
 * The line binds etcd's default 127.0.0.1:2379, so where the host allows it, it runs in a network namespace
 * of its own (`unshare -rn`; etcdctl joins it with nsenter) where nothing else can hold that port; a
 * container that forbids user namespaces runs it on the host's loopback (a fresh CI machine has it free). npm installs offline, from the
 * cache this checkout's own `npm ci` filled. The time from the end of the install to the first answer is
 * printed as a diagnostic (a figure for the report, not a limit: CI machines are loaded).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { requireCommands } from '../support/prerequisites.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const skip = requireCommands(['git', 'etcdctl']);

/** Whether this host lets us make a network namespace with a working loopback (see the header). */
function ownNetworkNamespace(): boolean {
  try {
    execFileSync('unshare', ['-rn', 'ip', 'link', 'set', 'lo', 'up'], { stdio: 'ignore' });
    execFileSync('nsenter', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The README's first command: the first line of its first sh block, without the comment. */
function readmeFirstLine(): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const block = /```sh\n([^\n]*)\n/.exec(readme);
  assert.ok(block, 'README.md has an sh block');
  return block[1]!.replace(/\s+#.*$/, '').trim();
}

test("the README's first line on a fresh clone: installs, serves, and etcdctl gets an answer", { skip, timeout: 600_000 }, async (t) => {
  const line = readmeFirstLine();
  assert.match(line, /^npm ci && node bin\/etcdsim\.js serve$/);
  const work = mkdtempSync(join(tmpdir(), 'etcdsim-first-'));
  t.after(() => rmSync(work, { recursive: true, force: true }));
  const clone = join(work, 'etcdsim');
  await run('git', ['clone', '--quiet', root, clone]);

  const env = { ...process.env, npm_config_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };
  const isolated = ownNetworkNamespace();
  const child = isolated
    ? spawn('unshare', ['-rn', 'bash', '-c', 'ip link set lo up && exec bash -c "$0"', line], { cwd: clone, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    : spawn('bash', ['-c', line], { cwd: clone, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  // The whole group: bash runs npm, then node as its child.
  t.after(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  });
  let output = '';
  let installedAt: number | undefined;
  const ready = new Promise<number>((resolve, reject) => {
    const read = (chunk: Buffer): void => {
      output += chunk.toString();
      if (installedAt === undefined && /^added \d+ packages/m.test(output)) installedAt = performance.now();
      if (/etcdsim serving etcd v3 API on http:\/\/127\.0\.0\.1:2379/.test(output)) resolve(performance.now());
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.on('exit', (code) => reject(new Error(`the line exited (${code}) before serving:\n${output.slice(-4000)}`)));
  });
  const servingAt = await ready;
  const etcdctl = ['etcdctl', '--endpoints=127.0.0.1:2379', 'put', 'first', 'answer'];
  const { stdout } = isolated
    ? await run('nsenter', ['-t', String(child.pid), '-U', '-n', '--preserve-credentials', ...etcdctl])
    : await run(etcdctl[0]!, etcdctl.slice(1));
  const answeredAt = performance.now();
  assert.equal(stdout.trim(), 'OK');
  assert.ok(installedAt !== undefined, `npm ci printed its summary:\n${output}`);
  assert.doesNotMatch(output, /running it through tsx/, 'the fresh build is what runs');
  t.diagnostic(`install end -> serving ${(servingAt - installedAt).toFixed(0)} ms, -> etcdctl answered ${(answeredAt - installedAt).toFixed(0)} ms`);
  const build = /etcdsim build: done in ([\d.]+) s/.exec(output);
  assert.ok(build, `npm ci ran the prepare build:\n${output}`);
  t.diagnostic(`prepare build ${build[1]} s`);
});
