// The raw typed client with auth: authenticate() keeps the token and sends it on calls and streams.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createEtcdSim } from '../../src/index.js';

test('raw client: auth service, authenticate, then permission-checked calls and a refused watch', async () => {
  const sim = createEtcdSim({ time: 'virtual' });
  const c = sim.client();
  await c.auth.userAdd({ name: 'root', password: 'pw' });
  await c.auth.userGrantRole({ user: 'root', role: 'root' });
  await c.auth.roleAdd({ name: 'r' });
  await c.auth.roleGrantPermission({ name: 'r', perm: { permType: 'READWRITE', key: 'app/', range_end: 'app0' } });
  await c.auth.userAdd({ name: 'u', password: 'p' });
  await c.auth.userGrantRole({ user: 'u', role: 'r' });
  assert.deepEqual((await c.auth.roleGet({ role: 'r' })).perm.map((p) => [p.permType, p.key.toString(), p.range_end.toString()]), [['READWRITE', 'app/', 'app0']]);
  await c.auth.authEnable();
  assert.deepEqual({ ...(await c.auth.authStatus()), header: null }, { header: null, enabled: true, authRevision: '7' }); // 1 + six changes
  await assert.rejects(c.kv.put({ key: 'app/x', value: '1' }), { code: 3, details: 'etcdserver: user name is empty' });
  assert.match(await c.authenticate('u', 'p'), /^[a-zA-Z]{16}\.\d+$/);
  await c.kv.put({ key: 'app/x', value: '1' });
  await assert.rejects(c.kv.put({ key: 'other', value: '1' }), { code: 7, details: 'etcdserver: permission denied' });
  await assert.rejects(c.auth.userList(), { code: 7 });
  const w = c.watch();
  const got: Array<[string, boolean, string]> = [];
  w.on('data', (r) => got.push([r.watch_id, r.canceled, r.cancel_reason]));
  w.create({ key: 'other' });
  w.create({ key: 'app/x' });
  await sim.settle();
  assert.deepEqual(got, [
    ['-1', true, 'rpc error: code = PermissionDenied desc = etcdserver: permission denied'],
    ['0', false, ''],
  ]);
  c.close();
});
