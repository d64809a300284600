// mocha: one simulator per test (beforeEach/afterEach) and the run's shared served simulator (global.mjs).
import assert from 'node:assert/strict';
import { Etcd3 } from 'etcd3';
import { createEtcdSim } from 'etcdsim';

describe('etcdsim under mocha', () => {
  let sim, client;
  beforeEach(() => {
    sim = createEtcdSim(); // one simulator per test
    client = sim.etcd3();
  });
  afterEach(() => (client.close(), sim.close()));

  it('a fresh simulator for this test', async () => {
    await client.put('/svc/a').value('up');
    assert.equal(await client.get('/svc/a').string(), 'up');
  });

  it('the shared served simulator of the run', async () => {
    const shared = new Etcd3({ hosts: process.env.ETCDSIM_ENDPOINT });
    try {
      await shared.put(`/mocha/${process.pid}`).value('up');
      assert.equal(await shared.get(`/mocha/${process.pid}`).string(), 'up');
    } finally {
      shared.close();
    }
  });
});
