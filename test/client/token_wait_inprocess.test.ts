/**
 * etcd's simple-token wait in-process (src/server/applied_wait.ts): a token is `<random>.<raft index>`, and
 * etcd looks it up only once it has applied that index. The raw client's unary calls wait as the gRPC door
 * does (without a deadline, as a gRPC call without one); `sim.services`, synchronous, answers at once.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createEtcdSim, serverOf } from '../../src/client/create.js';
import type { EtcdClient } from '../../src/client/raw_client.js';

const INVALID_TOKEN = /etcdserver: invalid auth token/;

function authSim(): ReturnType<typeof createEtcdSim> {
  return createEtcdSim({ time: 'virtual', auth: { users: [{ name: 'root', password: 'rootpw', roles: ['root'] }], enable: true } });
}

/** The raw client sends whatever token its session holds, as gRPC metadata carries any string: here a made-up one. */
function sendToken(c: EtcdClient, token: string): void {
  (c as unknown as { session: { token?: string } }).session.token = token;
}

/** Whether `p` has settled, and how, without waiting for it. */
function track<T>(p: Promise<T>): { state: 'pending' | 'resolved' | 'rejected'; error?: unknown } {
  const t: { state: 'pending' | 'resolved' | 'rejected'; error?: unknown } = { state: 'pending' };
  p.then(
    () => void (t.state = 'resolved'),
    (e: unknown) => {
      t.state = 'rejected';
      t.error = e;
    },
  );
  return t;
}

test('raw client: a token naming a raft index not applied yet holds a unary call until writes reach it, then etcd refuses the token', async () => {
  const sim = authSim();
  const root = { token: sim.services.auth.authenticate({ name: 'root', password: 'rootpw' }).token };
  const c = sim.client();
  try {
    const index = sim.server.raftIndex + 2;
    sendToken(c, `abcdefghijklmnop.${index}`);
    const range = track(c.kv.range({ key: 'a' }));
    const put = track(c.kv.put({ key: 'held', value: 'x' }));
    await sim.settle();
    assert.deepEqual([range.state, put.state], ['pending', 'pending'], 'held while the index is not applied');
    assert.equal(serverOf(sim).appliedWait.size, 2);
    sim.services.kv.put({ key: Buffer.from('w'), value: Buffer.from('1') }, root);
    await sim.settle();
    assert.deepEqual([range.state, put.state], ['pending', 'pending'], 'one write short');
    sim.services.kv.put({ key: Buffer.from('w'), value: Buffer.from('2') }, root);
    await sim.settle();
    assert.deepEqual([range.state, put.state], ['rejected', 'rejected']);
    assert.match(String((range.error as Error).message), INVALID_TOKEN);
    assert.equal((range.error as { code: number }).code, 16);
    assert.equal(sim.services.kv.range({ key: Buffer.from('held') }, root).count, '0', 'the held put was refused, not applied');
    assert.equal(serverOf(sim).appliedWait.size, 0);
  } finally {
    c.close();
    sim.close();
  }
});

test('raw client: Lock and Campaign with a token naming a raft index not applied yet are held as well, as etcd\'s v3lock and v3election servers are', async () => {
  const sim = authSim();
  const root = { token: sim.services.auth.authenticate({ name: 'root', password: 'rootpw' }).token };
  const c = sim.client();
  try {
    sendToken(c, `abcdefghijklmnop.${sim.server.raftIndex + 2}`);
    const lock = track(c.lock.lock({ name: 'L' }));
    const campaign = track(c.election.campaign({ name: 'E', value: 'v' }));
    await sim.settle();
    assert.deepEqual([lock.state, campaign.state], ['pending', 'pending'], 'held while the index is not applied');
    assert.equal(serverOf(sim).appliedWait.size, 2);
    sim.services.kv.put({ key: Buffer.from('w'), value: Buffer.from('1') }, root);
    sim.services.kv.put({ key: Buffer.from('w'), value: Buffer.from('2') }, root);
    await sim.settle();
    assert.deepEqual([lock.state, campaign.state], ['rejected', 'rejected']);
    assert.match(String((lock.error as Error).message), INVALID_TOKEN);
    assert.match(String((campaign.error as Error).message), INVALID_TOKEN);
    assert.equal(serverOf(sim).appliedWait.size, 0);
  } finally {
    c.close();
    sim.close();
  }
});

test('raw client: a token naming an applied index, or one that names no index, is refused at once', async () => {
  const sim = authSim();
  const c = sim.client();
  try {
    for (const token of ['abcdefghijklmnop.1', 'abcdefghijklmnop', 'a.b.3']) {
      sendToken(c, token);
      const r = track(c.kv.range({ key: 'a' }));
      await sim.settle(); // no write happens: a held call would still be pending
      assert.equal(r.state, 'rejected', token);
      assert.match(String((r.error as Error).message), INVALID_TOKEN);
    }
    assert.equal(serverOf(sim).appliedWait.size, 0);
  } finally {
    c.close();
    sim.close();
  }
});

test('raw client without a held token: a call still runs when it is made (a put is applied before its promise settles)', async () => {
  const sim = createEtcdSim({ time: 'virtual' });
  const c = sim.client();
  try {
    const before = sim.mvcc.currentRevision;
    const p = c.kv.put({ key: 'now', value: '1' });
    assert.equal(sim.mvcc.currentRevision, before + 1);
    await p;
    // Auth disabled (3.5+): a made-up token is not looked at, so nothing waits.
    sendToken(c, 'abc.999999');
    const q = c.kv.put({ key: 'now', value: '2' });
    assert.equal(sim.mvcc.currentRevision, before + 2);
    await q;
  } finally {
    c.close();
    sim.close();
  }
});

test('sim.services is synchronous: a token naming an index not applied yet is answered at once, refused as etcd refuses it after its wait', () => {
  const sim = authSim();
  try {
    assert.throws(() => sim.services.kv.range({ key: Buffer.from('a') }, { token: 'abcdefghijklmnop.999999' }), INVALID_TOKEN);
    assert.equal(serverOf(sim).appliedWait.size, 0);
  } finally {
    sim.close();
  }
});
