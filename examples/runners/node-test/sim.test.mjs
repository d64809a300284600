// node:test, one simulator per test: created in the test, closed by t.after.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createEtcdSim } from 'etcdsim';

test('a fresh simulator for this test', async (t) => {
  const sim = createEtcdSim();
  const client = sim.etcd3();
  t.after(() => (client.close(), sim.close()));
  await client.put('/svc/a').value('up');
  assert.equal(await client.get('/svc/a').string(), 'up');
});
