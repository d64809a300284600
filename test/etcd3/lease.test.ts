// etcd3 public API, lease area: grant (TTL 1 → 2), put with a lease, keepaliveOnce, revoke, TimeToLive
// through the low-level leaseClient, auto keep-alive, and 'lost' when a lease expires or is revoked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EtcdLeaseInvalidError, type IKeyValue, type Lease } from 'etcd3';
import { withTarget, eventually, eventuallyAsync } from './target.js';

test('grant: a TTL below the minimum is raised to 2 s; TimeToLive reports it; TTL < 1 is refused client-side', () =>
  withTarget('lease/grant', async ({ client }) => {
    const lease = client.lease(1, { autoKeepAlive: false });
    try {
      const id = await lease.grant();
      assert.match(id, /^[1-9][0-9]*$/);
      const ttl = await client.leaseClient.leaseTimeToLive({ ID: id });
      assert.equal(ttl.ID, id);
      assert.equal(ttl.grantedTTL, '2');
      assert.ok(['1', '2'].includes(ttl.TTL), `remaining ${ttl.TTL}`);
      const raw = await client.leaseClient.leaseGrant({ TTL: 1 });
      assert.equal(raw.TTL, '2');
      assert.equal(raw.error, '');
      await client.leaseClient.leaseRevoke({ ID: raw.ID });
      const listed = await client.leaseClient.leaseLeases();
      assert.ok(listed.leases.some((l) => l.ID === id));
      assert.ok(!listed.leases.some((l) => l.ID === raw.ID));
    } finally {
      await lease.revoke();
    }
    assert.throws(() => client.lease(0), RangeError);
  }));

test('put with a lease, keepaliveOnce, TimeToLive with keys, revoke deletes the keys', () =>
  withTarget('lease/revoke', async ({ client }, p) => {
    const lease = client.lease(10, { autoKeepAlive: false });
    const id = await lease.grant();
    await lease.put(p + 'a').value('1');
    await client.put(p + 'b').value('2').lease(id);
    await client.put(p + 'free').value('3');
    const a = (await client.get(p + 'a').exec()).kvs[0] as IKeyValue;
    assert.equal(a.lease, id);
    const ka = await lease.keepaliveOnce();
    assert.equal(ka.ID, id);
    assert.equal(ka.TTL, '10');
    const info = await client.leaseClient.leaseTimeToLive({ ID: id, keys: true });
    assert.equal(info.grantedTTL, '10');
    assert.deepEqual(info.keys.map((k) => k.toString()).sort(), [p + 'a', p + 'b']);

    const before = await client.get(p + 'free').exec();
    await lease.revoke();
    assert.equal(lease.revoked(), true);
    assert.equal(await client.get(p + 'a').exists(), false);
    assert.equal(await client.get(p + 'b').exists(), false);
    assert.equal(await client.get(p + 'free').string(), '3');
    // both keys went in one revision
    const after = await client.get(p + 'free').exec();
    assert.equal(BigInt(after.header.revision), BigInt(before.header.revision) + 1n);
    // an unknown lease: TimeToLive answers TTL -1; a keep-alive answers TTL 0 (etcd3: EtcdLeaseInvalidError)
    const gone = await client.leaseClient.leaseTimeToLive({ ID: id });
    assert.equal(gone.TTL, '-1');
    // revoking twice is fine through the high-level API (it swallows EtcdLeaseInvalidError)
    await lease.revoke();
    await assert.rejects(client.leaseClient.leaseRevoke({ ID: id }), EtcdLeaseInvalidError);
  }));

test('keepaliveOnce on a revoked lease rejects with EtcdLeaseInvalidError and emits lost', () =>
  withTarget('lease/keepalive-revoked', async ({ client }) => {
    const lease = client.lease(10, { autoKeepAlive: false });
    const lost: Error[] = [];
    lease.on('lost', (err) => lost.push(err));
    const id = await lease.grant();
    await client.leaseClient.leaseRevoke({ ID: id });
    await assert.rejects(lease.keepaliveOnce(), EtcdLeaseInvalidError);
    assert.equal(lost.length, 1);
    assert.ok(lost[0] instanceof EtcdLeaseInvalidError);
    assert.equal(lease.revoked(), true);
  }));

test('over 3 s the auto-kept lease survives, the unkept one expires: its key is deleted and keepaliveOnce reports lost', () =>
  withTarget('lease/expiry', async (t, p) => {
    const { client } = t;
    const kept = client.lease(2);
    const unkept = client.lease(2, { autoKeepAlive: false });
    let keepalives = 0;
    kept.on('keepaliveSucceeded', () => {
      keepalives++;
    });
    const lost: Error[] = [];
    unkept.on('lost', (err) => lost.push(err));
    const keptLost: Error[] = [];
    kept.on('lost', (err) => keptLost.push(err));
    try {
      await kept.put(p + 'kept').value('k');
      await unkept.put(p + 'unkept').value('u');
      await t.advance(3000);
      assert.equal(await client.get(p + 'kept').string(), 'k');
      assert.equal(await client.get(p + 'unkept').exists(), false);
      // keep-alives every ttl/3 of the requested TTL: ~667 ms, so at least 3 answered in 3 s
      assert.ok(keepalives >= 3, `only ${keepalives} keep-alives`);
      assert.deepEqual(keptLost, []);
      await assert.rejects(unkept.keepaliveOnce(), EtcdLeaseInvalidError);
      assert.equal(lost.length, 1);
    } finally {
      await kept.revoke();
      await unkept.revoke();
    }
  }));

test('an auto-kept lease revoked elsewhere emits lost at its next keep-alive', () =>
  withTarget('lease/lost-on-revoke', async (t, p) => {
    const { client } = t;
    const lease: Lease = client.lease(2);
    const lost: Error[] = [];
    lease.on('lost', (err) => lost.push(err));
    try {
      const id = await lease.grant();
      await lease.put(p + 'k').value('v');
      await client.leaseClient.leaseRevoke({ ID: id });
      assert.equal(await client.get(p + 'k').exists(), false);
      await eventually(t, () => lost.length > 0, "the 'lost' event", 3000);
      assert.ok(lost[0] instanceof EtcdLeaseInvalidError);
      assert.equal(lease.revoked(), true);
    } finally {
      await lease.revoke();
    }
  }));

test('an auto-kept lease outlives several TTLs, then another client revokes it: lost at the next keep-alive', () =>
  withTarget('lease/several-ttls', async (t, p) => {
    const { client } = t;
    const lease = client.lease(2);
    let keepalives = 0;
    lease.on('keepaliveSucceeded', () => {
      keepalives++;
    });
    const lost: Error[] = [];
    lease.on('lost', (err) => lost.push(err));
    try {
      const id = await lease.grant();
      await lease.put(p + 'k').value('v');
      assert.equal(lease.revoked(), false);
      await t.advance(6000); // three TTLs
      assert.equal(await client.get(p + 'k').string(), 'v');
      const ttl = await client.leaseClient.leaseTimeToLive({ ID: id });
      assert.equal(ttl.grantedTTL, '2');
      assert.ok(Number(ttl.TTL) >= 1, `remaining ${ttl.TTL}`);
      // one keep-alive every 2000/3 ms: about nine in 6 s
      assert.ok(keepalives >= 8, `only ${keepalives} keep-alives`);
      assert.equal(lost.length, 0);
      assert.equal(lease.revoked(), false);

      await t.another().leaseClient.leaseRevoke({ ID: id });
      assert.equal(await client.get(p + 'k').exists(), false);
      await eventually(t, () => lost.length > 0, "the 'lost' event", 2000);
      assert.equal(lost.length, 1);
      assert.ok(lost[0] instanceof EtcdLeaseInvalidError, String(lost[0]));
      assert.equal(lease.revoked(), true);
      const after = keepalives;
      await t.advance(1500); // no more keep-alives after the loss
      assert.equal(keepalives, after);
      assert.equal(lost.length, 1);
    } finally {
      await lease.revoke();
    }
  }));

test('cut off from etcd, an auto-kept lease expires on the server and the client reports it lost', () =>
  withTarget(
    'lease/partition',
    async (t, p) => {
      const { client } = t;
      const partition = t.partition;
      assert.ok(partition !== undefined, 'the target must be breakable');
      const lease = client.lease(2);
      const lost: Error[] = [];
      lease.on('lost', (err) => lost.push(err));
      let failures = 0;
      lease.on('keepaliveFailed', () => {
        failures++;
      });
      try {
        const id = await lease.grant();
        await lease.put(p + 'k').value('v');
        await t.advance(1000);
        assert.equal(await client.get(p + 'k').string(), 'v');
        const heal = partition();
        try {
          // etcd3: a keep-alive unanswered for one TTL fails the stream; it retries, and once the last
          // success is more than 2 TTLs old it gives up with 'lost'
          await eventually(t, () => lost.length > 0, "the 'lost' event", 6000);
        } finally {
          heal();
        }
        assert.ok(failures >= 1);
        assert.equal(lost.length, 1);
        assert.ok(lost[0] instanceof EtcdLeaseInvalidError, String(lost[0]));
        assert.match(lost[0].message, /lost connection to etcd/);
        assert.equal(lease.revoked(), true);
        // meanwhile the server expired the lease: its key is gone, the lease unknown
        const other = t.another();
        assert.equal(await other.get(p + 'k').exists(), false);
        assert.equal((await other.leaseClient.leaseTimeToLive({ ID: id })).TTL, '-1');
      } finally {
        await lease.revoke();
      }
    },
    { breakable: true },
  ));

test('release stops the keep-alives without revoking: the lease expires after its TTL, no lost event', () =>
  withTarget('lease/release', async (t, p) => {
    const { client } = t;
    const lease = client.lease(2);
    const lost: Error[] = [];
    lease.on('lost', (err) => lost.push(err));
    let keepalives = 0;
    lease.on('keepaliveSucceeded', () => {
      keepalives++;
    });
    const id = await lease.grant();
    await lease.put(p + 'k').value('v');
    await t.advance(1000);
    assert.ok(keepalives >= 1);
    lease.release();
    // etcd3 marks a released lease as revoked locally, but the server still has it
    assert.equal(lease.revoked(), true);
    const info = await client.leaseClient.leaseTimeToLive({ ID: id });
    assert.ok(Number(info.TTL) >= 1, `remaining ${info.TTL}`);
    assert.equal(await client.get(p + 'k').string(), 'v');
    const kept = keepalives;
    await eventuallyAsync(t, async () => !(await client.get(p + 'k').exists()), 'the lease to expire', 4000);
    assert.equal(keepalives, kept);
    assert.equal((await client.leaseClient.leaseTimeToLive({ ID: id })).TTL, '-1');
    assert.deepEqual(lost, []);
    // a keep-alive now finds the lease gone
    await assert.rejects(lease.keepaliveOnce(), EtcdLeaseInvalidError);
  }));
