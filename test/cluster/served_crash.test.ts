/**
 * A crashed member of a served cluster (src/grpc/serve_cluster.ts) goes as a killed etcd goes: its client
 * port refuses connections (ECONNREFUSED, so a client's balancer moves on at once) and its open connections
 * reset; on restart it listens again on the same port. The control endpoint stays on the other members'
 * ports. Driven with real clients: raw TCP, our gRPC client (src/grpc/client.ts) and etcdctl. Nothing waits a
 * fixed time: every wait is for an answer or for the port's switch (ServeClusterHandle.settled()).
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, test } from 'node:test';
import { serveCluster, type ServeClusterHandle } from '../../src/grpc/serve_cluster.js';
import { connectEtcd } from '../../src/grpc/client.js';
import { requireCommands } from '../support/prerequisites.js';
import { etcdctl } from './helpers.js';

const noEtcdctl = requireCommands(['etcdctl']);

/** How a TCP connect to `port` ends: 'connected', or the error's code (ECONNREFUSED for a closed port). */
function dial(port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve('connected');
    });
    s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

/** A lever of the control endpoint on member `via`'s port. */
async function lever(h: ServeClusterHandle, via: number, path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`${h.endpoints[via]}/etcdsim/cluster/${path}`, { method: 'POST' });
  return { status: res.status, body: await res.text() };
}

let h: ServeClusterHandle;
before(async () => {
  h = await serveCluster({ members: [{ port: 0 }, { port: 0 }, { port: 0 }], clockSpeed: 10, seed: 7 });
});
after(async () => {
  await h?.close();
});

/** A follower that is up, and another member that is up (whose port carries the levers). */
function pick(): { victim: number; other: number } {
  const victim = h.cluster.members.findIndex((m) => m.role !== 'leader' && !m.crashed);
  const other = h.cluster.members.findIndex((m, i) => i !== victim && !m.crashed);
  return { victim, other };
}

test('a crashed member refuses connections, resets the open ones, and listens again on the same port after restart', async () => {
  const { victim, other } = pick();
  const port = h.ports[victim]!.port;
  const client = connectEtcd(h.addresses[victim]!, { deadlineMs: 5000 });
  try {
    await client.kv.put({ key: Buffer.from('crash/k'), value: Buffer.from('v1') });
    // A watch open on the member: its connection goes with the process.
    const w = client.watch.watch();
    const ended = new Promise<unknown>((resolve) => w.onEnd((err) => resolve(err)));
    const created = new Promise<void>((resolve) => w.onResponse(() => resolve()));
    w.write({ create_request: { key: Buffer.from('crash/k') } });
    await created;

    const crashed = await lever(h, other, `crash?member=${victim}`);
    assert.equal(crashed.status, 200, crashed.body);
    assert.equal((JSON.parse(crashed.body) as { members: Array<{ crashed: boolean }> }).members[victim]!.crashed, true);
    const endErr = (await ended) as { code?: number } | undefined;
    assert.equal(endErr?.code, 14, 'the watch ends Unavailable');

    assert.equal(await dial(port), 'ECONNREFUSED');
    await assert.rejects(client.kv.range({ key: Buffer.from('crash/k'), serializable: true }), (err: { code: number; details: string }) => {
      assert.equal(err.code, 14);
      assert.match(err.details, /ECONNREFUSED/);
      return true;
    });
    // The control endpoint is gone with the port; the other members' ports still answer it.
    await assert.rejects(fetch(`${h.endpoints[victim]}/etcdsim/cluster`));
    assert.equal((await fetch(`${h.endpoints[other]}/etcdsim/cluster`)).status, 200);

    const restarted = await lever(h, other, `restart?member=${victim}`);
    assert.equal(restarted.status, 200, restarted.body);
    // Answered once the port listens again: the member is reachable at once, on the same port.
    assert.equal(h.ports[victim]!.port, port);
    assert.equal(await dial(port), 'connected');
    // (grpc-js's channel to the port backs off after the refusals, as it does after a real etcd's restart; the
    // JSON gateway on the same port answers a new connection now, and etcdctl's gRPC below does.)
    const got = await fetch(`${h.endpoints[victim]}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: Buffer.from('crash/k').toString('base64') }) });
    assert.equal(got.status, 200);
    const body = (await got.json()) as { kvs: Array<{ value: string }> };
    assert.equal(Buffer.from(body.kvs[0]!.value, 'base64').toString(), 'v1');
    assert.equal((await fetch(`${h.endpoints[victim]}/etcdsim/cluster`)).status, 200);
  } finally {
    client.close();
  }
});

test('crashing a member through its own port: the answer arrives, then the port refuses', async () => {
  const { victim, other } = pick();
  const res = await lever(h, victim, `crash?member=${victim}`);
  assert.equal(res.status, 200, res.body);
  assert.equal(await dial(h.ports[victim]!.port), 'ECONNREFUSED');
  assert.equal((await lever(h, other, `restart?member=${victim}`)).status, 200);
  assert.equal(await dial(h.ports[victim]!.port), 'connected');
});

test('in-process levers: settled() resolves once the port follows; crash twice, restart twice', async () => {
  const { victim } = pick();
  const port = h.ports[victim]!.port;
  for (let round = 0; round < 2; round++) {
    h.cluster.crash(victim);
    await h.settled();
    assert.equal(await dial(port), 'ECONNREFUSED');
    h.cluster.restart(victim);
    await h.settled();
    assert.equal(await dial(port), 'connected');
  }
  // A crash and restart in the same turn leave the port listening.
  h.cluster.crash(victim);
  h.cluster.restart(victim);
  await h.settled();
  assert.equal(await dial(port), 'connected');
});

test('etcdctl: the crashed endpoint is refused, the cluster answers through the others, and the member again after restart', { skip: noEtcdctl }, async () => {
  const { victim, other } = pick();
  assert.equal((await lever(h, other, `crash?member=${victim}`)).status, 200);
  // The crashed member first in the list: the balancer moves on to a member that is up.
  const endpoints = [h.addresses[victim]!, ...h.addresses.filter((_, i) => i !== victim)];
  const put = await etcdctl(endpoints, ['put', 'crash/ctl', 'v2'], '2s');
  assert.equal(put.code, 0, put.err);
  const alone = await etcdctl([h.addresses[victim]!], ['get', 'crash/ctl'], '2s');
  assert.notEqual(alone.code, 0);
  assert.match(alone.err, /connection refused|context deadline exceeded/);
  assert.equal((await lever(h, other, `restart?member=${victim}`)).status, 200);
  const back = await etcdctl([h.addresses[victim]!], ['get', 'crash/ctl', '--print-value-only'], '2s');
  assert.equal(back.code, 0, back.err);
  assert.equal(back.out, 'v2\n');
});
