/**
 * Adding one RPC is one declaration (its .proto line) and its handler (the method on the member's service
 * class): every door and every client takes its table from src/server/member_calls.ts, which reads both.
 * This test holds that: each call the list names is reachable through each member view (a single member, a
 * simulated cluster's member), the gRPC door's method table, the failover client's services, the gRPC
 * client and the raw client — and the list is every method the protos declare but the two a member does
 * not answer (etcd 3.5's Downgrade, 3.7's RangeStream, which the door serves from Range).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { etcdService } from '../../src/grpc/index.js';
import { SERVICE_PACKAGES, type EtcdServiceName } from '../../src/proto/index.js';
import { EtcdServer, type MemberView } from '../../src/server/index.js';
import { memberCalls, type MemberCall } from '../../src/server/member_calls.js';
import { ClusterMemberView, EtcdCluster } from '../../src/cluster/index.js';
import { VirtualClock } from '../../src/sim/index.js';
import { Handlers, type HandlerHost } from '../../src/grpc/handlers.js';
import { methodTable } from '../../src/grpc/method_table.js';
import { requestDecodingOf } from '../../src/grpc/request_decoding.js';
import { connectEtcd } from '../../src/grpc/client.js';
import { failoverServices } from '../../src/client/failover.js';
import { resolveEndpoints } from '../../src/client/balancer.js';
import { EtcdClient } from '../../src/client/raw_client.js';

/** What `table` lacks of the member's calls, as `lease.leaseGrant`. */
function missing(table: unknown, calls: readonly MemberCall[] = memberCalls()): string[] {
  const t = table as Record<string, Record<string, unknown> | undefined>;
  return calls.filter((c) => typeof t[c.services]?.[c.call] !== 'function').map((c) => `${c.services}.${c.call}`);
}

test('the member answers every method the protos declare but Downgrade and RangeStream', () => {
  const declared = (Object.keys(SERVICE_PACKAGES) as EtcdServiceName[]).flatMap((s) => Object.keys(etcdService(s).service).map((m) => `${s}/${m}`));
  const answered = new Set(memberCalls().map((c) => `${c.service}/${c.method}`));
  assert.deepEqual(
    declared.filter((m) => !answered.has(m)),
    ['KV/RangeStream', 'Maintenance/Downgrade'],
  );
  // The kinds the doors go by: streams open a call, the rest answer.
  assert.deepEqual(
    memberCalls()
      .filter((c) => c.kind === 'stream')
      .map((c) => c.call),
    ['watch', 'leaseKeepAlive', 'observe'],
  );
});

test('every call is reachable through each member view, the door, and each client', async () => {
  const server = new EtcdServer();
  const cluster = new EtcdCluster({ members: 3, clock: new VirtualClock() });
  try {
    const views: Record<string, MemberView> = { EtcdServer: server, ClusterMemberView: new ClusterMemberView(cluster.connect(0)) };
    for (const [name, view] of Object.entries(views)) assert.deepEqual(missing(view.services), [], name);

    // The gRPC door: every call by its path, with the release's request checks.
    const host: HandlerHost = { member: () => server, callContext: () => ({}), shuttingDown: () => false, streamUnmarshalPrefix: '', streamEnded: () => {} };
    const { methods } = methodTable(new Handlers(host), requestDecodingOf(server.etcdVersion, 0));
    const path = (c: MemberCall): string => `/${SERVICE_PACKAGES[c.service]}.${c.service}/${c.method}`;
    assert.deepEqual(
      memberCalls()
        .filter((c) => !methods.has(path(c)))
        .map(path),
      [],
    );

    // The failover client's services, over every member.
    const failover = failoverServices({
      cluster,
      endpoints: resolveEndpoints(cluster, [0, 1, 2]),
      client: 'test',
      deadlineMs: undefined,
      random: cluster.random.fork('test'),
      open: () => server.services,
    });
    assert.deepEqual(missing(failover.services), []);
    failover.close();

    // The gRPC client (it dials lazily: nothing is sent here).
    const grpc = connectEtcd('127.0.0.1:1');
    assert.deepEqual(missing(grpc), []);
    grpc.close();

    // The raw client derives its methods from the protos' declarations (src/proto/generated/services.ts)
    // and the service classes: each call has one. Its one Watch is the client's own watch().
    const raw = new EtcdClient(server.services);
    assert.deepEqual(missing({ ...raw, watch: { watch: raw.watch } }), []);
  } finally {
    cluster.close();
    server.close();
  }
});

test('the raw client reaches the calls it once lacked: Hash, MoveLeader, membership changes (on a simulated cluster too)', async () => {
  const server = new EtcdServer();
  const cluster = new EtcdCluster({ members: 3, clock: new VirtualClock() });
  try {
    const one = new EtcdClient(server.services);
    const hash = await one.maintenance.hash();
    assert.equal(hash.hash, server.services.maintenance.hash().hash);
    const added = await one.cluster.memberAdd({ peerURLs: ['http://127.0.0.1:2390'] });
    assert.equal((await one.cluster.memberList()).members.length, added.members.length);
    const onCluster = new EtcdClient(new ClusterMemberView(cluster.connect(0)).services as never);
    await assert.rejects(onCluster.cluster.memberRemove({ ID: '1' }), (err: { code?: number; details?: string }) => {
      assert.equal(err.code, 5);
      assert.equal(err.details, 'etcdserver: member not found');
      return true;
    });
  } finally {
    cluster.close();
    server.close();
  }
});
