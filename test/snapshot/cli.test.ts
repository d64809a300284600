import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseServeFlags, SERVE_FLAG_DEFAULTS, type ServeFlags } from '../../src/cli/serve.js';
import { createEtcdSim } from '../../src/client/create.js';
import { requireCommand } from '../support/prerequisites.js';
import { startServeProcess } from '../support/serve_process.js';
import { scratchDir } from './helpers.js';

const run = promisify(execFile);
const flags = (over: Partial<ServeFlags> = {}): ServeFlags => ({ ...SERVE_FLAG_DEFAULTS, ...over });
const B = (s: string): Uint8Array => new TextEncoder().encode(s);

/** A snapshot file of a small history: a, b, a deleted, c (revision 5). */
function snapshotFile(dir: string): string {
  const sim = createEtcdSim({ time: 'virtual', etcdVersion: '3.4' });
  sim.mvcc.put({ key: B('a'), value: B('1') });
  sim.mvcc.put({ key: B('b'), value: B('2') });
  sim.mvcc.deleteRange({ key: B('a') });
  sim.mvcc.put({ key: B('c'), value: B('3') });
  const file = join(dir, 'snap.db');
  writeFileSync(file, sim.server.etcdSnapshot());
  sim.close();
  return file;
}

test('serve --from-snapshot: the file is read and checked before anything binds', () => {
  const scratch = scratchDir();
  try {
    const file = snapshotFile(scratch.dir);
    const o = parseServeFlags(flags({ fromSnapshot: file }));
    assert.ok(o.fromSnapshot !== undefined && o.fromSnapshot.length % 4096 === 32);
    assert.throws(() => parseServeFlags(flags({ fromSnapshot: join(scratch.dir, 'missing.db') })), /open .*missing\.db: no such file or directory/);
    const bad = join(scratch.dir, 'bad.db');
    writeFileSync(bad, 'etcdsim-snapshot/1@25');
    assert.throws(() => parseServeFlags(flags({ fromSnapshot: bad })), /--from-snapshot .*bad\.db: snapshot: size 21 is neither whole pages/);
    assert.equal(parseServeFlags(flags()).fromSnapshot, undefined);
  } finally {
    scratch.cleanup();
  }
});

test('etcdsim serve --from-snapshot FILE serves the snapshot\'s history to etcdctl', { skip: requireCommand('etcdctl'), timeout: 60_000 }, async () => {
  const scratch = scratchDir();
  const file = snapshotFile(scratch.dir);
  const { child, address } = await startServeProcess(['--etcd-version', '3.4', '--from-snapshot', file]);
  try {
    const env = { ...process.env, ETCDCTL_API: '3' };
    const ctl = async (...args: string[]): Promise<string> => (await run('etcdctl', [`--endpoints=${address}`, ...args], { env })).stdout;
    assert.equal(await ctl('get', '', '--from-key', '--print-value-only'), '2\n3\n');
    assert.equal(await ctl('get', 'a', '--rev=3', '--print-value-only'), '1\n');
    assert.match(await ctl('endpoint', 'status'), /, 3\.4\.23, /);
    assert.equal(await ctl('put', 'd', '4'), 'OK\n');
    assert.match(await ctl('get', 'd', '-w', 'json'), /"revision":6/);
    // A bad file: exit 1, naming the flag, the file and the problem.
    const bad = join(scratch.dir, 'bad.db');
    writeFileSync(bad, new Uint8Array(8192));
    await assert.rejects(run(process.execPath, ['bin/etcdsim.js', 'serve', '--listen-client-urls', 'http://127.0.0.1:0', '--from-snapshot', bad]), (e: { code: number; stderr: string }) => {
      assert.equal(e.code, 1);
      assert.match(e.stderr, /--from-snapshot .*bad\.db: snapshot: bbolt: invalid database: meta page 0: not a meta page/);
      return true;
    });
  } finally {
    child.kill('SIGTERM');
    scratch.cleanup();
  }
});
