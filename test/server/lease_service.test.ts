import { test } from 'node:test';
import assert from 'node:assert/strict';
import { B, hdr, newSim } from './helpers.js';

test('grant, time-to-live, leases, revoke: whole responses', () => {
  const sim = newSim();
  const l = sim.services.lease;
  assert.deepStrictEqual(l.leaseGrant({ ID: '7', TTL: '60' }), { header: hdr(1), ID: '7', TTL: '60', error: '' });
  assert.deepStrictEqual(l.leaseGrant({ ID: '-3', TTL: '1' }), { header: hdr(1), ID: '-3', TTL: '2', error: '' }); // raised to 2 s
  assert.deepStrictEqual(l.leaseGrant({ ID: '8', TTL: '-5' }), { header: hdr(1), ID: '8', TTL: '2', error: '' });
  for (const key of ['c', 'a', 'b']) sim.services.kv.put({ key: B(key), value: B('v'), lease: '7' });
  sim.server.advance(1500);
  assert.deepStrictEqual(l.leaseTimeToLive({ ID: '7', keys: true }), {
    header: hdr(4),
    ID: '7',
    TTL: '58',
    grantedTTL: '60',
    keys: [B('a'), B('b'), B('c')],
  });
  assert.deepStrictEqual(l.leaseTimeToLive({ ID: '7' }), { header: hdr(4), ID: '7', TTL: '58', grantedTTL: '60', keys: [] });
  assert.deepStrictEqual(l.leaseTimeToLive({ ID: '12345', keys: true }), { header: hdr(4), ID: '12345', TTL: '-1', grantedTTL: '0', keys: [] });
  assert.deepStrictEqual(l.leaseLeases(), { header: hdr(4), leases: [{ ID: '-3' }, { ID: '7' }, { ID: '8' }] });
  assert.deepStrictEqual(l.leaseRevoke({ ID: '7' }), { header: hdr(5) }); // three deletes, one revision
  assert.deepStrictEqual(l.leaseRevoke({ ID: '8' }), { header: hdr(5) }); // no keys: no new revision
  assert.deepStrictEqual(sim.services.kv.range({ key: B('a'), range_end: B('z') }).count, '0');
  sim.server.advance(1000); // lease -3 (2 s) expires
  assert.deepStrictEqual(l.leaseLeases(), { header: hdr(5), leases: [] });
  assert.deepStrictEqual(l.leaseTimeToLive({ ID: '-3' }), { header: hdr(5), ID: '-3', TTL: '-1', grantedTTL: '0', keys: [] });
});

test('keep-alive stream: TTL of a live lease, "0" for unknown and expired leases, no error', () => {
  const sim = newSim();
  const l = sim.services.lease;
  l.leaseGrant({ ID: '9223372036854775807', TTL: '10' });
  const call = l.leaseKeepAlive();
  call.write({ ID: '9223372036854775807' });
  call.write({ ID: '12345' });
  call.write({});
  assert.deepStrictEqual(call.take(), [
    { header: hdr(1), ID: '9223372036854775807', TTL: '10' },
    { header: hdr(1), ID: '12345', TTL: '0' },
    { header: hdr(1), ID: '0', TTL: '0' },
  ]);
  // Keep-alives renew: after 8 s, renew, 8 s more, still alive.
  sim.server.advance(8000);
  call.write({ ID: '9223372036854775807' });
  sim.server.advance(8000);
  assert.equal(l.leaseTimeToLive({ ID: '9223372036854775807' }).TTL, '2');
  const got: string[] = [];
  call.onResponse((rs) => got.push(...rs.map((r) => `${r.ID}:${r.TTL}`)));
  sim.server.flush();
  assert.deepEqual(got, ['9223372036854775807:10']);
  sim.server.advance(3000);
  call.write({ ID: '9223372036854775807' });
  sim.server.flush();
  assert.deepEqual(got, ['9223372036854775807:10', '9223372036854775807:0']);
  const ends: string[] = [];
  call.onEnd((err) => ends.push(String(err?.code)));
  assert.equal(sim.breakKeepAliveStreams(), 1);
  assert.deepEqual(ends, ['14']);
  assert.equal(call.ended, true);
  call.write({ ID: '1' });
  assert.deepStrictEqual(call.take(), []);
});

test('server-chosen lease IDs are positive int63 and deterministic for a seed', () => {
  const ids = (seed: number): string[] => {
    const l = newSim({ seed }).services.lease;
    return [1, 2, 3].map(() => l.leaseGrant({ TTL: '60' }).ID);
  };
  const a = ids(42);
  assert.deepEqual(ids(42), a);
  assert.notDeepEqual(ids(43), a);
  for (const id of a) {
    assert.ok(BigInt(id) > 0n && BigInt(id) < 2n ** 63n, id);
  }
});
