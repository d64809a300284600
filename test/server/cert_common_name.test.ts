import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EtcdServer, type CallContext } from '../../src/server/index.js';
import { B } from './helpers.js';

// The server layer's side of --client-cert-auth (etcd's EtcdServer.AuthInfoFromCtx / AuthInfoFromTLS):
// CallContext.certCommonName names the caller of a call without a token, only on a member started with
// clientCertAuth, and only matters while auth is enabled. Outcomes as observed on etcd 3.4.23
// (test/grpc/cert_cn_auth.test.ts compares the same over the network).

/** root (role root) and alice (role reader: READ on k), k=v0, auth enabled. */
function member(clientCertAuth: boolean | undefined, etcdVersion: '3.4' | '3.7' = '3.7'): EtcdServer {
  const s = new EtcdServer({ clientCertAuth, etcdVersion });
  s.services.kv.put({ key: B('k'), value: B('v0') });
  s.auth.apply({
    roles: [{ name: 'reader', permissions: [{ permType: 'READ', key: 'k' }] }],
    users: [
      { name: 'root', password: 'rootpw', roles: ['root'] },
      { name: 'alice', password: 'alicepw', roles: ['reader'] },
    ],
    enable: true,
  });
  return s;
}

/** 'ok', or the gRPC error a call threw as "<code> <details>". */
function outcome(fn: () => unknown): string {
  try {
    fn();
    return 'ok';
  } catch (err) {
    const e = err as { code?: unknown; details?: unknown };
    if (typeof e.code !== 'number' || typeof e.details !== 'string') throw err;
    return `${e.code} ${e.details}`;
  }
}

const DENIED = '7 etcdserver: permission denied';
const EMPTY = '3 etcdserver: user name is empty';
const NOT_FOUND = '9 etcdserver: user name not found';
const BAD_TOKEN = '16 etcdserver: invalid auth token';

/** What get, put and user list answer for a caller. */
function probe(s: EtcdServer, ctx: CallContext): { get: string; put: string; userList: string } {
  return {
    get: outcome(() => s.services.kv.range({ key: B('k') }, ctx)),
    put: outcome(() => s.services.kv.put({ key: B('k'), value: B('x') }, ctx)),
    userList: outcome(() => s.services.auth.userList({}, ctx)),
  };
}

for (const v of ['3.4', '3.7'] as const) {
  test(`clientCertAuth (${v}): the CN is the user name, unchecked; a token wins`, () => {
    const s = member(true, v);
    assert.deepEqual(s.authInfo({ certCommonName: 'alice' }), { username: 'alice' });
    assert.deepEqual(s.authInfo({ certCommonName: 'nobody' }), { username: 'nobody' }); // not looked up here
    assert.equal(s.authInfo({}), undefined);
    assert.deepEqual(probe(s, { certCommonName: 'root' }), { get: 'ok', put: 'ok', userList: 'ok' });
    assert.deepEqual(probe(s, { certCommonName: 'alice' }), { get: 'ok', put: DENIED, userList: DENIED });
    // a name that is no user: denied by the checks; admin requests say so
    assert.deepEqual(probe(s, { certCommonName: 'bob' }), { get: DENIED, put: DENIED, userList: NOT_FOUND });
    // a certificate without a CN: the empty name
    assert.deepEqual(probe(s, { certCommonName: '' }), { get: DENIED, put: DENIED, userList: EMPTY });
    // the token's user, whatever the certificate says; a bad token fails even with a good certificate
    const rootToken = s.services.auth.authenticate({ name: 'root', password: 'rootpw' }).token;
    const aliceToken = s.services.auth.authenticate({ name: 'alice', password: 'alicepw' }).token;
    assert.deepEqual(probe(s, { token: rootToken, certCommonName: 'alice' }), { get: 'ok', put: 'ok', userList: 'ok' });
    assert.deepEqual(probe(s, { token: aliceToken, certCommonName: 'root' }), { get: 'ok', put: DENIED, userList: DENIED });
    assert.deepEqual(probe(s, { token: 'bogus.1', certCommonName: 'root' }), { get: BAD_TOKEN, put: BAD_TOKEN, userList: BAD_TOKEN });
    // auth disabled: nothing is checked, whoever the CN names
    s.services.auth.authDisable({}, { certCommonName: 'root' });
    assert.deepEqual(probe(s, { certCommonName: 'bob' }), { get: 'ok', put: 'ok', userList: 'ok' });
    assert.deepEqual(probe(s, { certCommonName: '' }), { get: 'ok', put: 'ok', userList: 'ok' });
  });

  test(`without clientCertAuth (${v}): the CN is ignored`, () => {
    for (const flag of [undefined, false]) {
      const s = member(flag, v);
      assert.equal(s.clientCertAuth, false);
      assert.equal(s.authInfo({ certCommonName: 'root' }), undefined);
      assert.deepEqual(probe(s, { certCommonName: 'root' }), { get: EMPTY, put: EMPTY, userList: EMPTY });
      const aliceToken = s.services.auth.authenticate({ name: 'alice', password: 'alicepw' }).token;
      assert.deepEqual(probe(s, { token: aliceToken, certCommonName: 'root' }), { get: 'ok', put: DENIED, userList: DENIED });
    }
  });
}

test('clientCertAuth: a watch, a lease revoke and an admin-only maintenance call go by the CN too', () => {
  const s = member(true);
  const lease = s.services.lease.leaseGrant({ TTL: '100' }, { certCommonName: 'root' });
  s.services.kv.put({ key: B('k'), value: B('leased'), lease: lease.ID }, { certCommonName: 'root' });
  assert.equal(outcome(() => s.services.lease.leaseRevoke({ ID: lease.ID }, { certCommonName: 'alice' })), DENIED);
  assert.equal(outcome(() => s.services.maintenance.defragment({}, { certCommonName: 'alice' })), DENIED);
  assert.equal(outcome(() => s.services.maintenance.defragment({}, { certCommonName: 'root' })), 'ok');
  assert.equal(outcome(() => s.services.lease.leaseRevoke({ ID: lease.ID }, { certCommonName: 'root' })), 'ok');
  // a watch on k: alice may READ it, bob may not (the create is canceled)
  for (const [cn, canceled] of [['alice', false], ['bob', true]] as const) {
    const call = s.services.watch.watch({ certCommonName: cn });
    const got: unknown[] = [];
    call.onResponse((rs) => got.push(...rs));
    call.write({ create_request: { key: B('k') } });
    s.flush();
    const first = got[0] as { created?: boolean; canceled?: boolean; cancel_reason?: string } | undefined;
    assert.equal(first?.created, true, `${cn}: ${JSON.stringify(first)}`);
    assert.equal(first.canceled ?? false, canceled, `${cn}: ${JSON.stringify(first)}`);
    if (canceled) assert.match(first.cancel_reason ?? '', /permission denied/);
    call.cancel();
  }
});
