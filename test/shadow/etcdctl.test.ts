/**
 * etcdctl's commands through the shadow in front of a real etcd 3.4.23: every answer compared with the
 * simulator's (following etcd's revisions), none diverging — KV, txn, compaction, historical reads,
 * leases (and one expiring on the real etcd, which the simulator must follow from etcd's own deletes),
 * a watch replaying history with prev_kv. Without etcd and etcdctl the test skips outside CI and fails in CI.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { requireCommands } from '../support/prerequisites.js';
import { ctl, ctlOk, startRig, summary, watchUntil, type ShadowRig } from './helpers.js';

const skip = requireCommands(['etcd', 'etcdctl']);
let rig: ShadowRig;
before(async () => {
  if (skip === false) rig = await startRig();
});
after(async () => {
  await rig?.close();
});

test('etcdctl through the shadow: the answers are etcd\'s, and the simulator agrees with every one', { skip }, async () => {
  const ep = rig.shadow.endpoint;
  const run = ctlOk(ep);
  assert.equal(await run(['put', '/a', '1']), 'OK\n');
  await run(['put', '/b', '2']);
  await run(['put', '/a', '3', '--prev-kv']);
  assert.equal(await run(['get', '/', '--prefix']), '/a\n3\n/b\n2\n');
  assert.match(await run(['get', '/a', '--rev=2', '-w', 'json']), /"revision":4/);
  // A watch replaying from a past revision, with prev_kv: its events compared one by one.
  assert.match(await watchUntil(ep, ['/a', '--rev=2', '--prev-kv'], '/a\n3\n'), /^PUT\n\/a\n1\nPUT\n/);
  await run(['get', '/', '--prefix', '--limit=1', '--sort-by=MODIFY', '--order=DESCEND', '--keys-only']);
  await run(['get', '', '--from-key', '-w', 'json']);
  assert.equal(await run(['del', '/b', '--prev-kv']), '1\n/b\n2\n');
  assert.equal(await run(['del', '/none']), '0\n');
  await run(['txn'], 'value("/a") = "3"\n\nput /t yes\nget /a\n\nput /t no\n\n');
  await run(['txn'], 'mod("/a") > "100"\n\nput /t yes\n\nget /t\n\n');
  await run(['compact', '3']);
  const compacted = await ctl(ep, ['get', '/a', '--rev=2']);
  assert.match(compacted.out, /required revision has been compacted/);
  const lease = /lease ([0-9a-f]+) granted/.exec(await run(['lease', 'grant', '30']))![1]!;
  await run(['put', '/l', 'x', `--lease=${lease}`]);
  await run(['lease', 'timetolive', lease, '--keys']);
  await run(['lease', 'keep-alive', '--once', lease]);
  assert.match(await run(['lease', 'list']), new RegExp(lease));
  await run(['lease', 'revoke', lease]);
  assert.equal(await run(['get', '/l']), '');
  const bad = await ctl(ep, ['put', '/l', 'x', `--lease=${lease}`]);
  assert.match(bad.out, /requested lease not found/);

  // A lease etcd expires itself: its key's delete comes from etcd, not from any request.
  const short = /lease ([0-9a-f]+) granted/.exec(await run(['lease', 'grant', '2']))![1]!;
  await run(['put', '/e', 'x', `--lease=${short}`]);
  for (let i = 0; i < 100 && (await run(['get', '/e'])) !== ''; i++) {
    await new Promise((r) => setTimeout(r, 100)); // waiting for the real etcd's expiry loop
  }
  assert.equal(await run(['get', '/e']), '');
  assert.match(await run(['lease', 'timetolive', short]), /already expired/);
  await run(['put', '/after', 'expiry']);
  assert.equal(await run(['get', '/', '--prefix', '--keys-only']), '/a\n\n/after\n\n/t\n\n');

  assert.equal(await rig.shadow.drained(), true);
  const r = rig.shadow.report;
  assert.equal(r.divergences, 0, summary(rig));
  for (const rpc of ['KV.Put', 'KV.Range', 'KV.DeleteRange', 'KV.Txn', 'KV.Compact', 'Lease.LeaseGrant', 'Lease.LeaseRevoke', 'Lease.LeaseTimeToLive', 'Lease.LeaseLeases', 'Lease.LeaseKeepAlive', 'Watch.Watch']) {
    assert.ok((r.rpcs.get(rpc)?.compared ?? 0) > 0, `${rpc} compared\n${summary(rig)}`);
  }
  assert.ok(r.events >= 1, `the expiry's delete came through the own watch\n${summary(rig)}`);
});
