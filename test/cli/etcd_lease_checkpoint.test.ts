/**
 * etcd refuses to persist lease checkpoints without taking them (embed.Config.Validate): etcd 3.4.23 with
 * `--experimental-enable-lease-checkpoint-persist` alone exits 1 before it makes its data dir (compared with
 * the real binary in etcd_binary.test.ts); 3.5 words it the same; from 3.6 both flags set the feature gates
 * LeaseCheckpoint and LeaseCheckpointPersist, which `--feature-gates` may set instead, and the refusal names
 * the gates. Run in-process: each case stops at the check, nothing binds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runEtcd } from '../../src/cli/etcd/run.js';

async function run(version: string, args: readonly string[]): Promise<{ code: number; err: string[]; madeDataDir: boolean }> {
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-lease-checkpoint-'));
  const dataDir = join(dir, 'member.etcd');
  const err: string[] = [];
  try {
    // --heartbeat-interval 0 fails a later check: a case the lease check lets through ends there, not serving.
    const code = await runEtcd(['--data-dir', dataDir, '--heartbeat-interval', '0', ...args], { out: () => {}, err: (l) => err.push(l) }, { ETCDSIM_ETCD_VERSION: version });
    return { code, err, madeDataDir: existsSync(dataDir) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const OLD = 'setting experimental-enable-lease-checkpoint-persist requires experimental-enable-lease-checkpoint';
const GATES = 'enabling feature gate LeaseCheckpointPersist requires enabling feature gate LeaseCheckpoint';

test('persisting lease checkpoints without checkpoints is refused at start, in each release\'s words', async () => {
  for (const [version, words] of [['3.4', OLD], ['3.5', OLD], ['3.6', GATES], ['3.7', GATES]] as const) {
    for (const args of [['--experimental-enable-lease-checkpoint-persist'], ['--experimental-enable-lease-checkpoint-persist=true', '--experimental-enable-lease-checkpoint=false']]) {
      const r = await run(version, args);
      assert.equal(r.code, 1, `${version} ${args.join(' ')}`);
      // One line says why (3.4's capnslog logger warns of its own deprecation first).
      const why = r.err.filter((l) => !l.includes('[WARNING] Deprecated'));
      assert.equal(why.length, 1, `${version}: one line (${r.err.join(' | ')})`);
      assert.ok(why[0]!.includes(words), `${version}: ${why[0]}`);
      assert.equal(r.madeDataDir, false, `${version}: refused before the data dir is made`);
    }
  }
});

test('with checkpoints on, or from 3.6 with the gates set by --feature-gates, persisting passes the check', async () => {
  const through = async (version: string, args: readonly string[]): Promise<void> => {
    const r = await run(version, args);
    assert.equal(r.code, 1, `${version} ${args.join(' ')}`);
    assert.ok(!r.err.some((l) => l.includes('LeaseCheckpoint') || l.includes('lease-checkpoint')), `${version} ${args.join(' ')}: ${r.err.join(' | ')}`);
    assert.ok(r.err.some((l) => l.includes('--heartbeat-interval must be >0')), `${version}: the next check spoke (${r.err.join(' | ')})`);
  };
  await through('3.4', ['--experimental-enable-lease-checkpoint', '--experimental-enable-lease-checkpoint-persist']);
  await through('3.4', []);
  await through('3.6', ['--experimental-enable-lease-checkpoint-persist', '--feature-gates=LeaseCheckpoint=true']);
  await through('3.7', ['--feature-gates=LeaseCheckpoint=true,LeaseCheckpointPersist=true']);
  // A gate set in --feature-gates outweighs the old flag (etcd's SetFeatureGatesFromExperimentalFlags refuses
  // both at once; the simulator only reads the gates).
  const r = await run('3.6', ['--feature-gates=LeaseCheckpointPersist=true']);
  assert.ok(r.err.some((l) => l.includes(GATES)), r.err.join(' | '));
});
