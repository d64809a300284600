/**
 * How etcd logs a flag it refuses (etcdmain's verification): through capnslog (3.4's default) at E, "error
 * verifying flags, ... See 'etcd --help'."; through zap (3.4's --logger zap, the only logger from 3.5) at
 * warn, "failed to verify flags" with the error as a field — etcd 3.4.23 observed with --heartbeat-interval=0
 * and with --listen-client-urls alone (which adds "advertise client URLs are not set"), 3.5+ from etcdmain's
 * source (lg.Warn). Run in-process: each case stops at the check, nothing binds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runEtcd } from '../../src/cli/etcd/run.js';

async function run(version: string, args: readonly string[]): Promise<{ code: number; err: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-flag-log-'));
  const err: string[] = [];
  try {
    const code = await runEtcd(['--data-dir', join(dir, 'm.etcd'), ...args], { out: () => {}, err: (l) => err.push(l) }, { ETCDSIM_ETCD_VERSION: version });
    return { code, err: err.filter((l) => !l.startsWith('[WARNING] Deprecated')) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A zap line's level, caller, message and error, its time left out. */
function zapLine(line: string): unknown {
  const { level, caller, msg, error } = JSON.parse(line) as Record<string, unknown>;
  return { level, caller, msg, error };
}

const HEARTBEAT = '--heartbeat-interval must be >0 (set to 0ms)';
const ADVERTISE = '--advertise-client-urls is required when --listen-client-urls is set explicitly';

test('a refused flag: zap logs it at warn in every release, capnslog at E', async () => {
  for (const version of ['3.4', '3.5', '3.7']) {
    const r = await run(version, ['--logger', 'zap', '--heartbeat-interval', '0']);
    assert.equal(r.code, 1);
    // The caller is 3.4.23's line (later releases moved it a few lines down).
    assert.deepEqual(r.err.map(zapLine), [{ level: 'warn', caller: 'etcdmain/etcd.go:66', msg: 'failed to verify flags', error: HEARTBEAT }], version);
  }
  const capnslog = await run('3.4', ['--heartbeat-interval', '0']);
  assert.equal(capnslog.code, 1);
  assert.equal(capnslog.err.length, 1);
  assert.match(capnslog.err[0]!, new RegExp(` E \\| etcdmain: error verifying flags, ${HEARTBEAT.replace(/[()]/g, '\\$&')}\\. See 'etcd --help'\\.$`));
  // --log-level error hides zap's warn lines, as etcd's does; capnslog's E stays.
  assert.deepEqual((await run('3.4', ['--logger', 'zap', '--log-level', 'error', '--heartbeat-interval', '0'])).err, []);
  assert.equal((await run('3.4', ['--log-level', 'error', '--heartbeat-interval', '0'])).err.length, 1);
});

test('--listen-client-urls without --advertise-client-urls: two warn lines through zap, two E lines through capnslog', async () => {
  const listen = ['--listen-client-urls', 'http://127.0.0.1:2379'];
  const zap = await run('3.4', ['--logger', 'zap', ...listen]);
  assert.equal(zap.code, 1);
  assert.deepEqual(zap.err.map(zapLine), [
    { level: 'warn', caller: 'etcdmain/etcd.go:66', msg: 'failed to verify flags', error: ADVERTISE },
    { level: 'warn', caller: 'etcdmain/etcd.go:73', msg: 'advertise client URLs are not set', error: ADVERTISE },
  ]);
  const capnslog = await run('3.4', listen);
  assert.deepEqual(
    capnslog.err.map((l) => l.replace(/^\S+ \S+ /, '')),
    [`E | etcdmain: error verifying flags, ${ADVERTISE}. See 'etcd --help'.`, 'E | etcdmain: When listening on specific address(es), this etcd process must advertise accessible url(s) to each connected client.'],
  );
});
