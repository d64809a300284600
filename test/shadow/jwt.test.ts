/**
 * The shadow in front of a real etcd 3.4.23 that issues JWTs (`--auth-token jwt,...,sign-method=RS256`):
 * src/shadow/token_kind.ts. Observed on etcd: a JWT names the user and the auth revision it was issued at;
 * once an auth change moved the store's revision past it (a user added, a password changed, auth turned off
 * and on) etcd refuses it for every key access with "etcdserver: revision of auth store is old" — a Range and
 * a read-only Txn even while auth is off — and it takes a JWT until its `exp` however it is used, then refuses
 * it as an invalid auth token. The simulator issues JWTs of its own for them, so both refuse alike and nothing
 * diverges (with simple tokens on the simulator's side it answered the old token's reads). --bcrypt-cost=4
 * keeps each Authenticate cheap; the keys are made here.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Buffer } from 'node:buffer';
import { connectEtcd, type EtcdGrpcClient } from '../../src/grpc/client.js';
import { requireCommands } from '../support/prerequisites.js';
import { startRig, summary, type ShadowRig } from './helpers.js';

const skip = requireCommands(['etcd']);
const ROOT = { name: 'root', password: 'rootpw' };
const APP = { name: 'app', password: 'apppw' };
const KEY = Buffer.from('/app/a');
/** etcd's JWTs live 2 s: the expiry test waits for it. */
const JWT_TTL = '2s';

let rig: ShadowRig;
let keys: string;
before(async () => {
  if (skip !== false) return;
  keys = mkdtempSync(join(tmpdir(), 'etcdsim-jwt-'));
  const pair = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs1', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
  writeFileSync(join(keys, 'priv.pem'), pair.privateKey);
  writeFileSync(join(keys, 'pub.pem'), pair.publicKey);
  const flags = [`--auth-token=jwt,pub-key=${join(keys, 'pub.pem')},priv-key=${join(keys, 'priv.pem')},sign-method=RS256,ttl=${JWT_TTL}`, '--bcrypt-cost=4'];
  rig = await startRig({ user: ROOT, compactionProbeMs: 0 }, async (etcd) => {
    const c = connectEtcd(etcd.address);
    try {
      await c.auth.userAdd({ name: 'root', password: ROOT.password, options: { no_password: false } });
      await c.auth.roleAdd({ name: 'root' });
      await c.auth.userGrantRole({ user: 'root', role: 'root' });
      await c.auth.userAdd({ name: 'app', password: APP.password, options: { no_password: false } });
      await c.auth.roleAdd({ name: 'app' });
      await c.auth.roleGrantPermission({ name: 'app', perm: { permType: 'READWRITE', key: Buffer.from('/app/'), range_end: Buffer.from('/app0') } });
      await c.auth.userGrantRole({ user: 'app', role: 'app' });
      await c.auth.authEnable({});
    } finally {
      c.close();
    }
  }, flags);
});
after(async () => {
  await rig?.close();
  if (keys !== undefined) rmSync(keys, { recursive: true, force: true });
});

const token = async (c: EtcdGrpcClient, user = APP): Promise<{ token: string }> => ({ token: (await c.auth.authenticate(user)).token });
const OLD = /revision of auth store is old/;

test("etcd's JWTs through the shadow: after an auth change (a user added, auth turned off and on) both refuse the older token alike; a new one reads on", { skip }, async () => {
  const app = connectEtcd(rig.shadow.endpoint);
  try {
    const first = await token(app);
    assert.equal(first.token.split('.').length, 3, first.token);
    await app.kv.put({ key: KEY, value: Buffer.from('1') }, first);
    assert.equal((await app.kv.range({ key: KEY }, first)).kvs.length, 1);
    await app.auth.userAdd({ name: 'other', password: 'x', options: { no_password: false } }, await token(app, ROOT));
    await assert.rejects(app.kv.range({ key: KEY }, first), OLD);
    await assert.rejects(app.kv.put({ key: KEY, value: Buffer.from('2') }, first), OLD);
    const second = await token(app);
    await app.kv.put({ key: KEY, value: Buffer.from('2') }, second);
    await app.auth.authDisable({}, await token(app, ROOT));
    // Auth off: etcd still reads the JWT, and its Range refuses the older revision.
    await assert.rejects(app.kv.range({ key: KEY }, second), OLD);
    await assert.rejects(app.kv.txn({ compare: [], success: [{ request_range: { key: KEY } }], failure: [] }, second), OLD);
    assert.equal((await app.kv.range({ key: KEY })).kvs.length, 1);
    await app.auth.authEnable({});
    await assert.rejects(app.kv.range({ key: KEY }, second), OLD);
    assert.equal((await app.kv.range({ key: KEY }, await token(app))).kvs[0]?.value.toString(), '2');
    assert.equal(await rig.shadow.drained(), true, summary(rig));
  } finally {
    app.close();
  }
  assert.deepEqual(rig.divergences, [], summary(rig));
  const r = rig.shadow.report;
  // Every call compared, none passed over for want of a token's counterpart.
  for (const rpc of ['KV.Range', 'KV.Put', 'KV.Txn', 'Auth.Authenticate', 'Auth.UserAdd', 'Auth.AuthDisable', 'Auth.AuthEnable']) {
    assert.equal(r.rpcs.get(rpc)?.compared, r.rpcs.get(rpc)?.calls, `${rpc}\n${summary(rig)}`);
  }
  assert.equal(r.rpcs.get('KV.Range')?.compared, 6, summary(rig));
});

test("a JWT is taken until its expiry, however it is used: its reads compare until etcd refuses it, and the refusal compares", { skip }, async () => {
  const app = connectEtcd(rig.shadow.endpoint);
  const before = rig.shadow.report.rpcs.get('KV.Range')?.compared ?? 0;
  let reads = 0;
  try {
    const t = await token(app);
    for (;;) {
      reads++;
      try {
        await app.kv.range({ key: KEY }, t);
      } catch (err) {
        assert.equal((err as { details?: string }).details, 'etcdserver: invalid auth token');
        break;
      }
      assert.ok(reads < 40, 'the JWT did not expire');
      await new Promise((r) => setTimeout(r, 250)); // etcd's clock decides the expiry: observed, with a bound
    }
    assert.equal(await rig.shadow.drained(), true, summary(rig));
  } finally {
    app.close();
  }
  assert.ok(reads > 2, String(reads));
  assert.deepEqual(rig.divergences, [], summary(rig));
  assert.equal((rig.shadow.report.rpcs.get('KV.Range')?.compared ?? 0) - before, reads, summary(rig));
});
