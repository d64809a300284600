/**
 * etcdctl's member add, list, promote and remove against a served 3-member cluster (src/grpc/serve_cluster.ts
 * over src/cluster/membership.ts), on a virtual clock the test moves past etcd's 5 s health interval: etcdctl
 * 3.4.23 prints what it prints against a real 3-member etcd 3.4.23 (observed on loopback, 2026-12-07).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { serveCluster, type ServeClusterHandle } from '../../src/grpc/serve_cluster.js';
import { VirtualClock } from '../../src/sim/index.js';
import { requireCommands } from '../support/prerequisites.js';
import { etcdctl } from './helpers.js';

const skip = requireCommands(['etcdctl']);

let h: ServeClusterHandle;
before(async () => {
  if (skip !== false) return;
  h = await serveCluster({ members: [{ port: 0 }, { port: 0 }, { port: 0 }], clock: new VirtualClock(), seed: 3 });
});
after(async () => {
  await h?.close();
});

test('etcdctl member add --learner, member list, promote refused, member remove: etcd 3.4.23\'s words', { skip }, async () => {
  const fresh = await etcdctl([h.addresses[0]!], ['member', 'add', 'n4', '--learner', '--peer-urls=http://127.0.0.1:42380']);
  assert.notEqual(fresh.code, 0);
  assert.match(fresh.err, /Error: etcdserver: unhealthy cluster/);
  await h.cluster.advance(5001);
  const add = await etcdctl([h.addresses[0]!], ['member', 'add', 'n4', '--learner', '--peer-urls=http://127.0.0.1:42380']);
  assert.equal(add.code, 0, add.err);
  // etcdctl prints IDs as %16x: a shorter one is padded with spaces.
  const id = /^Member +([0-9a-f]+) added to cluster +([0-9a-f]+)$/m.exec(add.out);
  assert.ok(id !== null, add.out);
  assert.equal(id[2], h.cluster.clusterId.toString(16));
  assert.match(add.out, /ETCD_INITIAL_CLUSTER_STATE="existing"/);
  const list = await etcdctl([h.addresses[1]!], ['member', 'list']);
  assert.equal(list.code, 0, list.err);
  assert.ok(list.out.split('\n').includes(`${id[1]}, unstarted, , http://127.0.0.1:42380, , true`), list.out);
  const second = await etcdctl([h.addresses[0]!], ['member', 'add', 'n5', '--learner', '--peer-urls=http://127.0.0.1:52380']);
  assert.match(second.err, /Error: etcdserver: too many learner members in cluster/);
  const promote = await etcdctl([h.addresses[2]!], ['member', 'promote', id[1]!]);
  assert.match(promote.err, /Error: etcdserver: can only promote a learner member which is in sync with leader/);
  const voter = await etcdctl([h.addresses[2]!], ['member', 'promote', h.cluster.members[0]!.id.toString(16)]);
  assert.match(voter.err, /Error: etcdserver: can only promote a learner member$/m);
  const rm = await etcdctl([h.addresses[2]!], ['member', 'remove', id[1]!]);
  assert.equal(rm.code, 0, rm.err);
  assert.match(rm.out, new RegExp(`^Member +${id[1]} removed from cluster +${id[2]}$`, 'm'));
  const unknown = await etcdctl([h.addresses[2]!], ['member', 'remove', '1234']);
  assert.match(unknown.err, /Error: etcdserver: member not found/);
});
