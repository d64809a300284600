/**
 * MemberUpdate on the in-process cluster (src/cluster/membership.ts): Raft's UpdateNode conf change,
 * applied by every member to its own list of members — what a 3-member etcd 3.4.23 does, and what a
 * cluster of processes does with the same shared checks (src/server/member_update.ts; test/peer's process
 * membership test drives etcdctl member update there).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterMemberView, EtcdCluster } from '../../src/cluster/index.js';
import { VirtualClock } from '../../src/sim/index.js';
import { rejection } from './helpers.js';

function newCluster(): EtcdCluster {
  return new EtcdCluster({ clock: new VirtualClock(), seed: 7, traceProposals: true });
}

/** Each member's listed peer URLs of member `of`, as its MemberList answers. */
async function listed(c: EtcdCluster, of: number): Promise<string[][]> {
  const id = String(c.members[of]!.id);
  const out: string[][] = [];
  for (const m of c.members) out.push((await c.connect(m).cluster.memberList()).members.find((x) => x.ID === id)!.peerURLs);
  return out;
}

async function raftIndexes(c: EtcdCluster): Promise<string[]> {
  return Promise.all(c.members.map(async (m) => (await c.connect(m).maintenance.status()).raftIndex));
}

test('MemberUpdate goes through Raft as one conf change entry; each member lists the new URLs once it applied it', async () => {
  const c = newCluster();
  const [m0, m1, m2] = c.members as [(typeof c.members)[number], (typeof c.members)[number], (typeof c.members)[number]];
  const old = [...m2.peerUrls];
  assert.deepEqual(await raftIndexes(c), ['8', '8', '8']);
  c.setApplyLag(m2, 300);
  const urls = ['http://127.0.0.1:40001', 'http://localhost:40001'];
  // Asked at a follower: forwarded to the leader, answered with that follower's apply.
  const r = await c.connect(m1).cluster.memberUpdate({ ID: String(m2.id), peerURLs: urls });
  assert.deepEqual(r.header, { cluster_id: String(c.clusterId), member_id: String(m1.id), revision: '0', raft_term: '2' });
  assert.deepEqual(r.members.find((x) => x.ID === String(m2.id))!.peerURLs, urls);
  assert.deepEqual(r.members.map((x) => x.name).sort(), ['infra1', 'infra2', 'infra3']);
  assert.ok(c.trace().some((e) => e.event === `propose memberUpdate ${m2.id} at 9 via infra2`), 'one entry, at index 9');
  // The lagging member lists the old URLs until its apply catches up.
  assert.deepEqual(await listed(c, 2), [urls, urls, old]);
  await c.advance(300);
  assert.deepEqual(await listed(c, 2), [urls, urls, urls]);
  assert.deepEqual(await raftIndexes(c), ['9', '9', '9']);
  // What a member applied survives its crash (etcd keeps it in its backend).
  c.crash(m2);
  c.restart(m2);
  await c.advance(1000);
  assert.deepEqual(await listed(c, 2), [urls, urls, urls]);
  assert.equal(m0.role, 'leader');
  c.close();
});

test('MemberUpdate refusals: etcd\'s apply checks take an index, unparsable URLs are refused before proposing', async () => {
  const c = newCluster();
  const [m0, m1] = c.members;
  const v = c.connect(m0!);
  assert.deepEqual(await rejection(v.cluster.memberUpdate({ ID: '12345', peerURLs: ['http://127.0.0.1:40002'] })), { code: 5, details: 'etcdserver: member not found' });
  assert.deepEqual(await raftIndexes(c), ['9', '9', '9']);
  assert.deepEqual(await rejection(v.cluster.memberUpdate({ ID: String(m1!.id), peerURLs: [...m0!.peerUrls] })), { code: 9, details: 'etcdserver: Peer URLs already exists' });
  assert.deepEqual(await raftIndexes(c), ['10', '10', '10']);
  assert.deepEqual(await rejection(v.cluster.memberUpdate({ ID: String(m1!.id), peerURLs: ['not a url'] })), { code: 3, details: 'etcdserver: given member URLs are invalid' });
  assert.deepEqual(await raftIndexes(c), ['10', '10', '10']);
  assert.deepEqual(await listed(c, 1), [[...m1!.peerUrls], [...m1!.peerUrls], [...m1!.peerUrls]]);
  c.close();
});

test('a member cut off while the update commits gets it with the leader\'s snapshot; the gRPC door serves MemberUpdate', async () => {
  const c = newCluster();
  const [, m1, m2] = c.members;
  c.isolate(m2!);
  const urls = ['http://127.0.0.1:40003'];
  await c.connect(m1!).cluster.memberUpdate({ ID: String(m1!.id), peerURLs: urls });
  // The leader's log is compacted past the entry: the cut-off member catches up from a snapshot.
  assert.ok(c.compactLog(0) >= 9);
  c.heal();
  await c.advance(1000);
  assert.ok(c.trace().some((e) => e.event.startsWith('snapshot infra1 -> infra3')), 'installed a snapshot');
  assert.deepEqual(await listed(c, 1), [urls, urls, urls]);
  // The door every front end uses.
  const door = new ClusterMemberView(c.connect(m2!)).services.cluster;
  const again = ['http://127.0.0.1:40004'];
  const r = await door.memberUpdate({ ID: String(m1!.id), peerURLs: again });
  assert.deepEqual(r.members.find((x) => x.ID === String(m1!.id))!.peerURLs, again);
  c.close();
});
