// Server mode: the `token` metadata names the caller; an unknown or expired token is UNAUTHENTICATED,
// "etcdserver: invalid auth token"; streams take the token of the call that opened them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { B, nextMessages, withServer, type Msg } from '../grpc/helpers.js';
import { etcdService } from '../../src/grpc/index.js';
import { VirtualClock } from '../../src/sim/index.js';

function client(address: string, service: 'KV' | 'Auth' | 'Watch'): grpc.Client & Record<string, (...a: unknown[]) => unknown> {
  const Ctor = etcdService(service);
  return new Ctor(address, grpc.credentials.createInsecure()) as grpc.Client & Record<string, (...a: unknown[]) => unknown>;
}

function call(c: grpc.Client & Record<string, (...a: unknown[]) => unknown>, method: string, req: Msg, token?: string): Promise<Msg> {
  const md = new grpc.Metadata();
  if (token !== undefined) md.set('token', token);
  return new Promise((resolve, reject) => {
    c[method]!(req, md, {}, (err: grpc.ServiceError | null, res?: Msg) => (err ? reject(err) : resolve(res ?? {})));
  });
}

test('serve: token metadata, invalid and expired tokens, a refused watch over the wire', async () => {
  const clock = new VirtualClock();
  await withServer(
    {
      clock,
      authTokenTTL: 60,
      auth: {
        roles: [{ name: 'r', permissions: [{ permType: 'READWRITE', key: 'a' }] }],
        users: [
          { name: 'root', password: 'pw', roles: ['root'] },
          { name: 'u', password: 'p', roles: ['r'] },
        ],
        enable: true,
      },
    },
    async (h) => {
      const auth = client(h.address, 'Auth');
      const kv = client(h.address, 'KV');
      const watch = client(h.address, 'Watch');
      try {
        await assert.rejects(call(auth, 'Authenticate', { name: 'u', password: 'x' }), {
          code: grpc.status.INVALID_ARGUMENT,
          details: 'etcdserver: authentication failed, invalid user ID or password',
        });
        const token = String((await call(auth, 'Authenticate', { name: 'u', password: 'p' }))['token']);
        await call(kv, 'Put', { key: B('a'), value: B('1') }, token);
        await assert.rejects(call(kv, 'Put', { key: B('b'), value: B('1') }, token), { code: grpc.status.PERMISSION_DENIED, details: 'etcdserver: permission denied' });
        await assert.rejects(call(kv, 'Range', { key: B('a') }), { code: grpc.status.INVALID_ARGUMENT, details: 'etcdserver: user name is empty' });
        await assert.rejects(call(kv, 'Range', { key: B('a') }, 'bogus.3'), { code: grpc.status.UNAUTHENTICATED, details: 'etcdserver: invalid auth token' });
        const md = new grpc.Metadata();
        md.set('token', token);
        const w = (watch['Watch'] as (m: grpc.Metadata) => grpc.ClientDuplexStream<Msg, Msg>)(md);
        w.write({ create_request: { key: B('b') } });
        w.write({ create_request: { key: B('a') } });
        const rs = await nextMessages(w, 2);
        assert.deepEqual(
          rs.map((r) => [r['watch_id'], r['canceled'], r['cancel_reason']]),
          [
            ['-1', true, 'rpc error: code = PermissionDenied desc = etcdserver: permission denied'],
            ['0', false, ''],
          ],
        );
        const done = new Promise<unknown>((resolve) => w.on('status', resolve));
        w.on('error', () => undefined);
        // A half-close would leave the Watch open (as in etcd): the client cancels it.
        w.cancel();
        await done;
        clock.advance(61_000);
        await assert.rejects(call(kv, 'Range', { key: B('a') }, token), { code: grpc.status.UNAUTHENTICATED, details: 'etcdserver: invalid auth token' });
      } finally {
        auth.close();
        kv.close();
        watch.close();
      }
    },
  );
});
