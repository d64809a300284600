// etcd3 public API, errors: what etcd3's error classes and messages are for etcd's refusals. The
// messages are grpc-js's "<code> <NAME>: <details>"; an adapter must produce the same text so that
// castGrpcError (message match first, then numeric code) picks the same class.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  EtcdLeaseInvalidError,
  GRPCFailedPreconditionError,
  GRPCInvalidArgumentError,
  GRPCOutOfRangeError,
} from 'etcd3';
import { withTarget, currentRevision } from './target.js';

const FUTURE = '11 OUT_OF_RANGE: etcdserver: mvcc: required revision is a future revision';
const COMPACTED = '11 OUT_OF_RANGE: etcdserver: mvcc: required revision has been compacted';

async function rejectsWith(p: Promise<unknown>, ctor: new (...args: never[]) => Error, message: string): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof ctor, `expected ${ctor.name}, got ${String(err)}`);
    assert.equal(err.message, message);
    return true;
  });
}

test('GRPCOutOfRangeError for future and compacted revisions (reads and compactions)', () =>
  withTarget('errors/range', async (t, p) => {
    const { client } = t;
    const first = await client.put(p + 'k').value('1');
    await client.put(p + 'k').value('2');
    const third = await client.put(p + 'k').value('3');
    const cur = await currentRevision(t);
    await rejectsWith(client.get(p + 'k').revision(String(cur + 1000n)).string(), GRPCOutOfRangeError, FUTURE);
    await rejectsWith(client.getAll().prefix(p).revision(String(cur + 1000n)).keys(), GRPCOutOfRangeError, FUTURE);
    await rejectsWith(client.kv.compact({ revision: String(cur + 1000n) }), GRPCOutOfRangeError, FUTURE);

    await t.compact(third.header.revision);
    await rejectsWith(client.get(p + 'k').revision(first.header.revision).string(), GRPCOutOfRangeError, COMPACTED);
    // inside a txn too
    await rejectsWith(
      client.if(p + 'k', 'Version', '>', 0).then(client.get(p + 'k').revision(first.header.revision)).commit(),
      GRPCOutOfRangeError,
      COMPACTED,
    );
    // the compaction revision itself is still readable
    assert.equal(await client.get(p + 'k').revision(third.header.revision).string(), '3');
    // compacting again at or below the compaction revision
    await rejectsWith(client.kv.compact({ revision: third.header.revision }), GRPCOutOfRangeError, COMPACTED);
    await rejectsWith(client.kv.compact({ revision: first.header.revision }), GRPCOutOfRangeError, COMPACTED);
  }));

test('EtcdLeaseInvalidError for an unknown lease (put, revoke, keepaliveOnce)', () =>
  withTarget('errors/lease', async ({ client }, p) => {
    const lease = client.lease(10, { autoKeepAlive: false });
    const id = await lease.grant();
    await lease.revoke();
    // etcd3 builds the message from the whole gRPC message: "Lease <message> is expired or revoked"
    const msg = 'Lease 5 NOT_FOUND: etcdserver: requested lease not found is expired or revoked';
    await rejectsWith(client.put(p + 'k').value('v').lease(id).exec(), EtcdLeaseInvalidError, msg);
    await rejectsWith(client.leaseClient.leaseRevoke({ ID: id }), EtcdLeaseInvalidError, msg);
    assert.equal(await client.get(p + 'k').exists(), false);
    // a keep-alive of an unknown lease is answered with TTL 0, which etcd3 turns into the same class
    const other = client.lease(10, { autoKeepAlive: false });
    const otherId = await other.grant();
    await client.leaseClient.leaseRevoke({ ID: otherId });
    await rejectsWith(other.keepaliveOnce(), EtcdLeaseInvalidError, `Lease ${otherId} is expired or revoked`);
  }));

test('lease grant refusals: TTL too large, ID already in use', () =>
  withTarget('errors/grant', async ({ client }) => {
    await rejectsWith(
      client.leaseClient.leaseGrant({ TTL: '9000000001' }),
      GRPCOutOfRangeError,
      '11 OUT_OF_RANGE: etcdserver: too large lease TTL',
    );
    const granted = await client.leaseClient.leaseGrant({ TTL: 10 });
    try {
      await rejectsWith(
        client.leaseClient.leaseGrant({ TTL: 10, ID: granted.ID }),
        GRPCFailedPreconditionError,
        '9 FAILED_PRECONDITION: etcdserver: lease already exists',
      );
    } finally {
      await client.leaseClient.leaseRevoke({ ID: granted.ID });
    }
  }));

test('GRPCInvalidArgumentError for invalid requests', () =>
  withTarget('errors/invalid', async ({ client }, p) => {
    const invalid = (details: string): string => `3 INVALID_ARGUMENT: etcdserver: ${details}`;
    await rejectsWith(client.put('').value('v').exec(), GRPCInvalidArgumentError, invalid('key is not provided'));
    await rejectsWith(client.get('').exec(), GRPCInvalidArgumentError, invalid('key is not provided'));
    await rejectsWith(client.delete().key('').exec(), GRPCInvalidArgumentError, invalid('key is not provided'));
    // touch / ignoreLease on a key that does not exist
    await rejectsWith(client.put(p + 'missing').touch(), GRPCInvalidArgumentError, invalid('key not found'));
    await rejectsWith(
      client.put(p + 'missing').value('v').ignoreLease().exec(),
      GRPCInvalidArgumentError,
      invalid('key not found'),
    );
    // ignoreLease together with a lease
    const lease = client.lease(10, { autoKeepAlive: false });
    try {
      const id = await lease.grant();
      await client.put(p + 'k').value('v');
      await rejectsWith(
        client.put(p + 'k').value('w').lease(id).ignoreLease().exec(),
        GRPCInvalidArgumentError,
        invalid('lease is provided'),
      );
    } finally {
      await lease.revoke();
    }
    // txn: the same key put twice in one branch; too many operations
    await rejectsWith(
      client.if(p + 'k', 'Version', '>', 0).then(client.put(p + 'x').value('1'), client.put(p + 'x').value('2')).commit(),
      GRPCInvalidArgumentError,
      invalid('duplicate key given in txn request'),
    );
    await rejectsWith(
      client.if(p + 'k', 'Version', '>', 0).then(client.put(p + 'x').value('1'), client.delete().prefix(p)).commit(),
      GRPCInvalidArgumentError,
      invalid('duplicate key given in txn request'),
    );
    const many = Array.from({ length: 129 }, (_, i) => client.put(`${p}m${i}`).value('v'));
    await rejectsWith(
      client.if(p + 'k', 'Version', '>', 0).then(...many).commit(),
      GRPCInvalidArgumentError,
      invalid('too many operations in txn request'),
    );
    // 128 is fine
    const res = await client.if(p + 'k', 'Version', '>', 0).then(...many.slice(0, 128)).commit();
    assert.equal(res.succeeded, true);
    assert.equal(await client.getAll().prefix(p + 'm').count(), 128);
    // nothing from the refused requests was applied
    assert.equal(await client.get(p + 'x').exists(), false);
    assert.equal(await client.get(p + 'k').string(), 'v');
  }));

test('builder misuse is caught client-side, before any request', () =>
  withTarget('errors/client', async ({ client }, p) => {
    assert.throws(() => client.if(p + 'k', 'Bogus' as 'Value', '==', 1), /Unexpected "Bogus" in comparison target/);
    assert.throws(() => client.if(p + 'k', 'Value', '~' as '==', 1), /Unexpected "~" in comparator/);
    assert.throws(() => client.lease(0.5), RangeError);
  }));
