// etcd3 public API, locks: acquire = lease + Txn(Create(key) == 0 → Put(key, '', lease)); no waiting.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EtcdLockFailedError, type IKeyValue } from 'etcd3';
import { withTarget } from './target.js';

test('lock: acquire, a second holder fails, release, acquire again', () =>
  withTarget('lock/basic', async ({ client }, p) => {
    const first = client.lock(p + 'l').ttl(5);
    await first.acquire();
    const held = (await client.get(p + 'l').exec()).kvs[0] as IKeyValue;
    assert.equal(held.value.toString(), '');
    assert.equal(held.lease, await first.leaseId());
    const second = client.lock(p + 'l').ttl(5);
    await assert.rejects(second.acquire(), EtcdLockFailedError);
    // the failed attempt revoked its own lease and left the holder's key alone
    const still = (await client.get(p + 'l').exec()).kvs[0] as IKeyValue;
    assert.equal(still.mod_revision, held.mod_revision);
    await first.release();
    assert.equal(await client.get(p + 'l').exists(), false);
    const third = client.lock(p + 'l').ttl(5);
    await third.acquire();
    assert.equal(await client.get(p + 'l').exists(), true);
    await third.release();
    assert.equal(await client.get(p + 'l').exists(), false);
    // ttl cannot change after acquiring
    const fourth = client.lock(p + 'l2');
    await fourth.acquire();
    assert.throws(() => fourth.ttl(3), /Cannot set a lock TTL after acquiring the lock/);
    await fourth.release();
  }));

test('lock.do runs the function under the lock and releases it, also when it throws', () =>
  withTarget('lock/do', async ({ client }, p) => {
    const value = await client.lock(p + 'l').ttl(5).do(async () => {
      assert.equal(await client.get(p + 'l').exists(), true);
      await assert.rejects(client.lock(p + 'l').ttl(5).acquire(), EtcdLockFailedError);
      return 42;
    });
    assert.equal(value, 42);
    assert.equal(await client.get(p + 'l').exists(), false);
    await assert.rejects(
      client.lock(p + 'l').ttl(5).do(async () => {
        throw new Error('boom');
      }),
      /boom/,
    );
    assert.equal(await client.get(p + 'l').exists(), false);
  }));

test('lock in a namespace; a holder whose lease is revoked elsewhere loses the lock to the next contender', () =>
  withTarget('lock/lease-loss', async (t, p) => {
    const { client } = t;
    const ns = client.namespace(p);
    assert.throws(() => ns.lock('l').release(), /Attempted to release a lock which was not acquired/);
    const first = ns.lock('l').ttl(2);
    await first.acquire();
    const id = await first.leaseId();
    assert.ok(id !== null);
    const held = (await client.get(p + 'l').exec()).kvs[0] as IKeyValue;
    assert.equal(held.lease, id);
    await t.advance(3000); // kept alive past its TTL
    await assert.rejects(ns.lock('l').ttl(2).acquire(), EtcdLockFailedError);
    await assert.rejects(client.lock(p + 'l').ttl(2).acquire(), EtcdLockFailedError); // same key, outside the namespace
    await ns.namespace('sub/').lock('l').ttl(2).do(async () => {
      // a different key: the namespace prefix is part of the lock's key
      assert.equal(await client.get(p + 'sub/l').exists(), true);
    });
    assert.equal(await client.get(p + 'sub/l').exists(), false);

    await t.another().leaseClient.leaseRevoke({ ID: id });
    const second = ns.lock('l').ttl(2);
    await second.acquire();
    const now = (await client.get(p + 'l').exec()).kvs[0] as IKeyValue;
    assert.equal(now.lease, await second.leaseId());
    assert.ok(BigInt(now.create_revision) > BigInt(held.create_revision));
    // releasing the stale lock is harmless (its lease is already gone) and leaves the new holder alone
    await first.release();
    assert.equal(await client.get(p + 'l').exists(), true);
    await second.release();
    assert.equal(await client.get(p + 'l').exists(), false);
  }));
