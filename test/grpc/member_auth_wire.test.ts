/**
 * Membership changes under auth, differentially with etcdctl: etcd requires the root role for member add,
 * update, remove and promote once auth is enabled (its checkMembershipOperationPermission), while member list
 * stays open to any user. The same etcdctl commands run against a real etcd 3.4.23 and against `serve()` in
 * every release profile, each simulated member advertising the real one's URLs so that IDs and output agree
 * byte for byte. Outside CI the test skips without `etcd` and `etcdctl` on PATH; in CI a missing one fails.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { startEtcd } from '../../src/diff/etcd_process.js';
import { serve } from '../../src/grpc/server.js';
import { ETCD_VERSIONS } from '../../src/etcd/index.js';
import { requireCommands } from '../support/prerequisites.js';

const skip = requireCommands(['etcd', 'etcdctl']);

/** etcdctl's exit code and output (stdout, then stderr). */
function etcdctl(address: string, args: readonly string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('etcdctl', [`--endpoints=${address}`, '--dial-timeout=3s', '--command-timeout=3s', ...args], { env: { ...process.env, ETCDCTL_API: '3' } });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    // etcdctl's retry lines carry a time stamp and a client UUID: the rest is compared.
    child.on('close', (code) => resolve({ code: code ?? -1, out: (out + err).replace(/^\{"level".*\n/gm, '') }));
  });
}

test('with auth enabled, member add / update / remove / promote need the root role in every profile, as in etcd 3.4.23; member list does not', { skip }, async () => {
  const proc = await startEtcd({ heartbeatMs: 100, electionMs: 1000 });
  try {
    const setup = [
      ['user', 'add', 'root:rootpw'],
      ['user', 'add', 'alice:alicepw'],
      ['role', 'add', 'reader'],
      ['user', 'grant-role', 'alice', 'reader'],
      ['auth', 'enable'],
    ];
    const memberId = async (address: string): Promise<string> => {
      const r = await etcdctl(address, ['--user=root:rootpw', 'member', 'list', '-w', 'json']);
      const id = /"member_id":(\d+)/.exec(r.out)?.[1];
      assert.ok(id !== undefined, r.out);
      return BigInt(id).toString(16);
    };
    /** Every command as a user without root, then as no user, then as an unknown token holder. */
    const probes = (self: string, peer: string): string[][] => [
      ['--user=alice:alicepw', 'member', 'add', 'n2', '--peer-urls=http://127.0.0.1:41999'],
      ['--user=alice:alicepw', 'member', 'add', 'n2', '--learner', '--peer-urls=http://127.0.0.1:41999'],
      ['--user=alice:alicepw', 'member', 'update', self, `--peer-urls=${peer}`],
      ['--user=alice:alicepw', 'member', 'remove', '5'],
      ['--user=alice:alicepw', 'member', 'promote', '5'],
      ['--user=alice:alicepw', 'member', 'list'],
      ['member', 'add', 'n2', '--peer-urls=http://127.0.0.1:41999'],
      ['member', 'update', self, `--peer-urls=${peer}`],
      ['member', 'remove', self],
      ['member', 'promote', self],
      // MemberAdd checks its URLs before the caller: a bad URL is refused as such, even for alice.
      ['--user=alice:alicepw', 'member', 'add', 'n2', '--peer-urls=http://127.0.0.1:41999/path'],
      // root may: an update of the member's own URLs to what they are commits and prints the member.
      ['--user=root:rootpw', 'member', 'update', self, `--peer-urls=${peer}`],
      ['--user=root:rootpw', 'member', 'promote', self],
      ['--user=root:rootpw', 'member', 'remove', '5'],
    ];
    for (const args of setup) assert.equal((await etcdctl(proc.address, args)).code, 0, args.join(' '));
    const selfE = await memberId(proc.address);
    const expected: Array<{ code: number; out: string }> = [];
    for (const args of probes(selfE, proc.peerUrl)) expected.push(await etcdctl(proc.address, args));
    // The refusals really are refusals (a passing comparison against nothing would prove little).
    assert.match(expected[0]!.out, /etcdserver: permission denied/);
    assert.match(expected[6]!.out, /etcdserver: user name is empty/);
    assert.equal(expected[11]!.code, 0, expected[11]!.out);
    for (const etcdVersion of ETCD_VERSIONS) {
      const handle = await serve({ port: 0, etcdVersion, peerUrls: [proc.peerUrl], clientUrls: [`http://${proc.address}`], heartbeatIntervalMs: 100, electionTicks: 10 });
      try {
        for (const args of setup) assert.equal((await etcdctl(handle.address, args)).code, 0, `${etcdVersion}: ${args.join(' ')}`);
        const selfS = await memberId(handle.address);
        assert.equal(selfS, selfE, 'the member IDs derive from the same URLs');
        const got: Array<{ code: number; out: string }> = [];
        for (const args of probes(selfS, proc.peerUrl)) got.push(await etcdctl(handle.address, args));
        probes(selfS, proc.peerUrl).forEach((args, i) => assert.deepStrictEqual(got[i], expected[i], `${etcdVersion}: etcdctl ${args.join(' ')}`));
      } finally {
        await handle.close();
      }
    }
  } finally {
    await proc.stop();
  }
});
