// node:test, one served simulator for the whole run: run.mjs serves it and hands the endpoint over.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Etcd3 } from 'etcd3';

test('the shared served simulator answers as an etcd does', async (t) => {
  const client = new Etcd3({ hosts: process.env.ETCDSIM_ENDPOINT });
  t.after(() => client.close());
  await client.put(`/node-test/${process.pid}`).value('up');
  assert.equal(await client.get(`/node-test/${process.pid}`).string(), 'up');
});
