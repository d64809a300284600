/**
 * Maintenance, Cluster and Auth through the shadow in front of a real etcd 3.4.23, with etcdctl: each
 * answer compared where etcd's and the simulator's can agree (Status without the db sizes, leader and raft
 * position; HashKV exactly; Hash by its header; MemberList by its members' number and learner flags), and
 * auth's tokens mapped — etcd's token goes to etcd, the simulator is asked with its own from the same
 * Authenticate, so a user's puts and reads compare with auth on.
 *
 * The etcd already holds data when the shadow starts (keys with history, a deleted key, a compaction, a
 * lease with a key): the simulator starts from etcd's own snapshot (src/shadow/seed.ts), so historical
 * reads, a watch from an old revision, HashKV and the lease compare from the first request.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { connectEtcd } from '../../src/grpc/client.js';
import { runCli } from '../../src/cli/program.js';
import { requireCommands } from '../support/prerequisites.js';
import { ctl, ctlOk, startRig, summary, watchUntil, type ShadowRig } from './helpers.js';

const skip = requireCommands(['etcd', 'etcdctl']);
let rig: ShadowRig;
before(async () => {
  if (skip === false) rig = await startRig({}, holdData);
});
after(async () => {
  await rig?.close();
});

/** Written straight to etcd, before the shadow: revisions 2..7, compacted at 4, lease 0x3434 holding /held. */
async function holdData(etcd: { address: string }): Promise<void> {
  const c = connectEtcd(etcd.address);
  const b = (t: string): Buffer => Buffer.from(t);
  try {
    await c.kv.put({ key: b('/old/a'), value: b('1') }); // 2
    await c.kv.put({ key: b('/old/a'), value: b('2') }); // 3
    await c.kv.put({ key: b('/old/gone'), value: b('x') }); // 4
    await c.kv.deleteRange({ key: b('/old/gone') }); // 5
    await c.kv.compact({ revision: '4', physical: true });
    await c.lease.leaseGrant({ ID: String(0x3434), TTL: '600' });
    await c.kv.put({ key: b('/held'), value: b('h'), lease: String(0x3434) }); // 6
    await c.kv.put({ key: b('/old/a'), value: b('3') }); // 7
  } finally {
    c.close();
  }
}

test('an etcd that held data before the shadow: history, compaction, leases and hashes compare from the first request', { skip }, async () => {
  const ep = rig.shadow.endpoint;
  const run = ctlOk(ep);
  assert.equal(await run(['get', '/old/a', '--rev=5', '--print-value-only']), '2\n');
  assert.match((await ctl(ep, ['get', '/old/a', '--rev=3'])).out, /required revision has been compacted/);
  assert.equal(await run(['get', '/', '--prefix', '--keys-only']), '/held\n\n/old/a\n\n');
  assert.match(await watchUntil(ep, ['/old/', '--prefix', '--rev=5'], '3\n'), /^DELETE\n\/old\/gone\n\nPUT\n\/old\/a\n3\n/);
  assert.match(await run(['lease', 'timetolive', '3434', '--keys']), /attached keys\(\[\/held\]\)/);
  assert.match(await run(['lease', 'list']), /3434/);
  await run(['endpoint', 'hashkv']);
  await run(['put', '/held', 'again', '--lease=3434']);
  assert.equal(await rig.shadow.drained(), true, summary(rig));
  assert.equal(rig.shadow.report.divergences, 0, summary(rig));
  assert.ok((rig.shadow.report.rpcs.get('Maintenance.HashKV')?.compared ?? 0) > 0, summary(rig));
});

test('Maintenance, Cluster and Auth through the shadow: compared where comparable, no divergence', { skip }, async () => {
  const ep = rig.shadow.endpoint;
  const run = ctlOk(ep);
  await run(['put', '/a', '1']);
  await run(['member', 'list']);
  await run(['endpoint', 'status']);
  await run(['endpoint', 'hashkv']);
  await run(['alarm', 'list']);
  await run(['defrag']);
  await run(['user', 'add', 'root:rootpw']);
  await run(['role', 'add', 'reader']);
  await run(['role', 'grant-permission', 'reader', 'read', '/a']);
  await run(['user', 'add', 'alice:alicepw']);
  await run(['user', 'grant-role', 'alice', 'reader']);
  await run(['user', 'get', 'alice']);
  await run(['role', 'get', 'reader']);
  await run(['auth', 'enable']);
  assert.equal(await run(['--user', 'alice:alicepw', 'get', '/a', '--print-value-only']), '1\n');
  const denied = await ctl(ep, ['--user', 'alice:alicepw', 'put', '/a', 'x']);
  assert.match(denied.out, /permission denied/);
  await run(['--user', 'root:rootpw', 'put', '/c', '3']);
  await run(['--user', 'root:rootpw', 'user', 'list']);
  await run(['--user', 'root:rootpw', 'auth', 'disable']);
  await run(['put', '/d', '4']);

  assert.equal(await rig.shadow.drained(), true, summary(rig));
  const r = rig.shadow.report;
  assert.equal(r.divergences, 0, summary(rig));
  for (const rpc of ['Maintenance.Status', 'Maintenance.HashKV', 'Maintenance.Alarm', 'Maintenance.Defragment', 'Cluster.MemberList', 'Auth.Authenticate', 'Auth.UserAdd', 'Auth.AuthEnable', 'Auth.RoleGrantPermission']) {
    assert.ok((r.rpcs.get(rpc)?.compared ?? 0) > 0, `${rpc} compared\n${summary(rig)}`);
  }
  assert.ok((r.rpcs.get('KV.Put')?.compared ?? 0) >= 4, `puts with a token compared\n${summary(rig)}`);
});

test("an etcd db over the seeding bound is refused at the start, with its size and what to do (the simulator holds the etcd's state in memory)", { skip }, async () => {
  const lines: string[] = [];
  const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
  // The etcd here holds data (holdData): its db is some tens of kB, over a 4 KiB bound.
  const code = await runCli(['shadow', '--etcd', rig.etcd.address, '--listen-client-urls', 'http://127.0.0.1:0', '--max-seed-bytes', '4096'], io);
  assert.equal(code, 2, lines.join('\n'));
  assert.match(lines.join('\n'), /the etcd's db is \d+ bytes, over the 4096 bytes the shadow's simulator takes on .*--max-seed-bytes/);
  const size = Number(/db is (\d+) bytes/.exec(lines.join('\n'))?.[1]);
  assert.ok(size > 4096, lines.join('\n'));
  // Under the default bound the same etcd is taken on (the rig's shadow started from it).
  assert.equal(rig.shadow.report.divergences, 0, summary(rig));
});
