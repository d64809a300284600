/**
 * Lessor.checkValid(), the invariant checker the property tests run after every step: every lease's keys
 * are live and name it, and every live key that names a lease is attached to it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { createLeasedStore } from '../../src/lease/index.js';
import { utf8 } from '../../src/mvcc/index.js';
import { VirtualClock } from '../../src/sim/index.js';

test('Lessor.checkValid passes through grant, attach, move, revoke and expiry, and names a stray attachment', () => {
  const clock = new VirtualClock();
  const { store, lessor } = createLeasedStore({ clock });
  const a = lessor.grant(1n, 5).id;
  const c = lessor.grant(2n, 60).id;
  store.put({ key: utf8('k1'), value: utf8('v'), lease: a });
  store.put({ key: utf8('k2'), value: utf8('v'), lease: a });
  store.put({ key: utf8('k1'), value: utf8('w'), lease: c });
  assert.equal(lessor.checkValid(), undefined);
  clock.advance(6000);
  assert.equal(lessor.leases().length, 1, 'lease 1 expired');
  assert.equal(lessor.checkValid(), undefined);
  // A key attached by hand behind the store's back: attached to lease 2 but not live.
  lessor.attach(c, utf8('ghost'));
  assert.match(lessor.checkValid() ?? '', /1 live keys name one \("ghost" is not live\)|"ghost"/);
  lessor.detach(c, utf8('ghost'));
  lessor.detach(c, utf8('k1'));
  assert.match(lessor.checkValid() ?? '', /key "k1" names lease 2 but is attached to none/);
});
