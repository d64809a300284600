/** `etcdsim diff`: usage errors, refusals, and a short real run (--start-etcd and --endpoint, text and --json). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runDiff } from '../../src/cli/diff_command.js';
import { skipWithoutEtcd, useRealEtcd } from './helpers.js';

const etcd = useRealEtcd();

async function run(args: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const code = await runDiff(args, (l) => lines.push(l));
  return { code, out: lines.join('\n') };
}

test('usage errors exit 2', async () => {
  assert.equal((await run([])).code, 2);
  assert.match((await run(['--start-etcd', '--endpoint', '127.0.0.1:1'])).out, /exactly one of/);
  assert.match((await run(['--start-etcd', '--etcd-version', '3.3'])).out, /--etcd-version must be/);
  assert.match((await run(['--start-etcd', '--ops', 'many'])).out, /--ops must be an integer/);
});

test('a non-loopback endpoint is refused unless --allow-non-loopback, saying why', async () => {
  const r = await run(['--endpoint', '10.1.2.3:2379']);
  assert.equal(r.code, 2);
  assert.match(r.out, /not a loopback address.*compacts the history \(cluster-wide\).*--allow-non-loopback/);
});

test('a missing etcd binary is reported', async () => {
  const r = await run(['--start-etcd', '--etcd-bin', '/nonexistent/etcd']);
  assert.equal(r.code, 2);
  assert.match(r.out, /could not start etcd: etcd binary not found at \/nonexistent\/etcd/);
});

test('--endpoint: refuses a non-empty keyspace, --force wipes it and runs; --json report', { skip: skipWithoutEtcd, timeout: 60_000 }, async () => {
  const { client, proc } = etcd.get();
  await client.kv.put({ key: Buffer.from('precious'), value: Buffer.from('x') });
  const refused = await run(['--endpoint', proc.address, '--ops', '50', '--seed', '1']);
  assert.equal(refused.code, 2);
  assert.match(refused.out, /keyspace is not empty \(1 keys, 0 leases\).*--force/);
  const r = await run(['--endpoint', proc.address, '--force', '--ops', '100', '--seed', '7', '--json']);
  assert.equal(r.code, 0, r.out);
  const j = JSON.parse(r.out) as { seed: number; opsRun: number; divergences: number; responsesCompared: number; failure: unknown };
  assert.equal(j.seed, 7);
  assert.equal(j.divergences, 0);
  assert.equal(j.failure, null);
  assert.ok(j.opsRun > 0 && j.responsesCompared >= j.opsRun);
});

test('--start-etcd: a throwaway etcd, summary, exit 0', { skip: skipWithoutEtcd, timeout: 60_000 }, async () => {
  const r = await run(['--start-etcd', '--ops', '100', '--seed', '3']);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /started etcd \(pid \d+\) on 127\.0\.0\.1:\d+/);
  assert.match(r.out, /\d+ ops run, \d+ responses compared, 0 divergences/);
  assert.match(r.out, /seed 3/);
});
