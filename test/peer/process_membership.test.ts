/**
 * --strict-reconfig-check's health rule on a process member (src/server/member_changes.ts, as a process member's Cluster service runs it), on a virtual
 * clock: a peer counts as connected only once its stream has been up for etcd's HealthInterval (5 s), so
 * right after a start a member add, and a remove of a live voter, are refused with `unhealthy cluster` —
 * as etcd 3.4.23 refuses them (observed: a fresh 3-member cluster accepted `member add` 5.5 s after its
 * peers became active, refusing it before) — while a voter whose stream is down may go at once (etcd's
 * "downed member is safe to remove"). A stream that breaks and comes back starts its 5 s again.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { ProcessClusterMember } from '../../src/peer/process_member.js';
import { RaftNode, bootstrapStorage, type ConfChange, type NodeId } from '../../src/raft/index.js';
import { EtcdServer, membershipChanges, type MembershipHost } from '../../src/server/index.js';
import { SimRandom, VirtualClock } from '../../src/sim/index.js';

const IDS = [1n, 2n, 3n];

/** Member 1 of three started voters; `up` sets a peer's stream up (now) or down. */
function host(): { clock: VirtualClock; service: ReturnType<typeof membershipChanges>; up(peer: NodeId, on: boolean): void; proposed: ConfChange[] } {
  const clock = new VirtualClock();
  const server = new EtcdServer({ clock, memberId: 1n, clusterId: 9n, strictReconfigCheck: true });
  const members = new Map<NodeId, ProcessClusterMember>(IDS.map((id) => [id, { id, name: `m${id}`, peerUrls: [`http://127.0.0.1:${7000 + Number(id)}`], clientUrls: [`http://127.0.0.1:${8000 + Number(id)}`], isLearner: false }]));
  const active = new Map<NodeId, number>();
  const proposed: ConfChange[] = [];
  const h: MembershipHost = {
    id: 1n,
    server,
    node: new RaftNode({ id: 1n, random: new SimRandom(1), electionTicks: 10, preVote: true, checkQuorum: true }, bootstrapStorage(IDS.map((id) => ({ id })))),
    members,
    peerActive: (peer) => active.has(peer),
    activeSince: (peer) => active.get(peer),
    changeMembership: (cc) => {
      proposed.push(cc);
      if (cc.type === 'remove') members.delete(cc.id);
      return Promise.resolve(undefined);
    },
    memberContextOf: () => new Uint8Array(0),
  };
  const up = (peer: NodeId, on: boolean): void => {
    if (on) active.set(peer, clock.now());
    else active.delete(peer);
  };
  return { clock, service: membershipChanges(h, async (f) => f()), up, proposed };
}

test('right after its peers came up a member refuses member add and the remove of a live voter (unhealthy cluster) until 5 s passed', async () => {
  const { clock, service, up, proposed } = host();
  clock.advance(1000);
  up(2n, true);
  up(3n, true);
  clock.advance(4000);
  await assert.rejects(service.memberAdd({ peerURLs: ['http://127.0.0.1:7009'] }), /etcdserver: unhealthy cluster/);
  await assert.rejects(service.memberAdd({ peerURLs: ['http://127.0.0.1:7009'], isLearner: true }), /etcdserver: unhealthy cluster/);
  await assert.rejects(service.memberRemove({ ID: '3' }), /etcdserver: unhealthy cluster/);
  assert.equal(proposed.length, 0, 'a refused change proposes nothing');
  clock.advance(1001);
  await service.memberAdd({ peerURLs: ['http://127.0.0.1:7009'], isLearner: true });
  await service.memberRemove({ ID: '3' });
  assert.deepEqual(proposed.map((c) => c.type), ['addLearner', 'remove']);
});

test('a voter whose stream is down may be removed at once; one whose stream came back waits its 5 s again', async () => {
  const { clock, service, up, proposed } = host();
  up(2n, true);
  up(3n, true);
  clock.advance(6000);
  // Member 3's stream broke and came back just now: for 5 s it is not connected, so removing member 2
  // would leave one connected voter of two.
  up(3n, false);
  up(3n, true);
  await assert.rejects(service.memberRemove({ ID: '2' }), /etcdserver: unhealthy cluster/);
  // Member 3 while its stream is down: not part of the active quorum, removed without the health check.
  up(3n, false);
  await service.memberRemove({ ID: '3' });
  assert.deepEqual(proposed, [{ type: 'remove', id: 3n }]);
});
