// etcd3 public API, elections: campaign, leader, observe, proclaim, resign (lease + create-revision
// compares, sort/limit/maxCreateRevision reads, watches with startRevision and only('delete')).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EtcdLeaseInvalidError, type Campaign } from 'etcd3';
import { withTarget, eventually, eventuallyAsync } from './target.js';

function track(c: Campaign): { elected: boolean; errors: Error[] } {
  const s = { elected: false, errors: [] as Error[] };
  c.on('elected', () => {
    s.elected = true;
  });
  c.on('error', (e) => s.errors.push(e));
  return s;
}

test('election: campaign, leader, observe, proclaim, resign hands over, last resign leaves no leader', () =>
  withTarget('election/basic', async (t, p) => {
    const { client } = t;
    const election = client.namespace(p).election('e', 5);
    assert.equal(await election.leader(), undefined);

    const one = election.campaign('one');
    const s1 = track(one);
    await eventually(t, () => s1.elected, 'the first candidate to be elected');
    assert.equal(await election.leader(), 'one');
    const key1 = await one.getCampaignKey(); // the full key: namespace prefix + lease ID
    assert.ok(key1.startsWith(p + 'election/e/'), key1);
    assert.match(key1.slice(p.length + 'election/e/'.length), /^[1-9][0-9]*$/);
    assert.equal(await client.get(key1).string(), 'one');

    const campaigns: Campaign[] = [one];
    const observer = await election.observe();
    const changes: (string | undefined)[] = [];
    observer.on('change', (v) => changes.push(v));
    assert.equal(observer.leader(), 'one');
    try {
      const two = election.campaign('two');
      campaigns.push(two);
      const s2 = track(two);
      const key2 = await two.getCampaignKey();
      await eventuallyAsync(t, () => client.get(key2).exists(), "the second candidate's key");
      assert.equal(s2.elected, false);
      assert.equal(await election.leader(), 'one');

      await one.proclaim('one-b');
      await eventually(t, () => changes.includes('one-b'), 'the proclaimed value');
      assert.equal(await election.leader(), 'one-b');
      await two.proclaim('two-b'); // a waiting candidate updates its own key only
      assert.equal(await client.get(key2).string(), 'two-b');
      assert.equal(await election.leader(), 'one-b');

      await one.resign();
      assert.equal(await client.get(key1).exists(), false);
      await eventually(t, () => s2.elected, 'the second candidate to be elected');
      await eventually(t, () => changes[changes.length - 1] === 'two-b', 'the observer to see the new leader');
      assert.equal(await election.leader(), 'two-b');
      assert.equal(observer.leader(), 'two-b');

      await two.resign();
      await eventually(t, () => changes.length > 0 && changes[changes.length - 1] === undefined, 'no leader');
      assert.equal(await election.leader(), undefined);
      assert.deepEqual(changes, ['one-b', 'two-b', undefined]);
      assert.deepEqual([...s1.errors, ...s2.errors], []);
    } finally {
      await observer.cancel();
      for (const c of campaigns) await c.resign();
    }
  }));

test('election: observe from no leader, two candidates, losing its lease ends the leader’s term and the next is elected', () =>
  withTarget('election/lease-loss', async (t, p) => {
    const { client } = t;
    const election = client.namespace(p).election('e', 2);
    const observer = await election.observe(); // resolves on the initial change (no leader yet)
    assert.equal(observer.leader(), undefined);
    const changes: (string | undefined)[] = [];
    observer.on('change', (v) => changes.push(v));
    const one = election.campaign('one');
    const s1 = track(one);
    const campaigns: Campaign[] = [one];
    try {
      await eventually(t, () => s1.elected, 'the first candidate to be elected');
      await eventually(t, () => changes.includes('one'), 'the observer to see the first leader');
      assert.equal(await election.leader(), 'one');

      const two = election.campaign('two');
      campaigns.push(two);
      const s2 = track(two);
      const key2 = await two.getCampaignKey();
      await eventuallyAsync(t, () => client.get(key2).exists(), "the second candidate's key");
      await t.advance(3000); // longer than the TTL: keep-alives hold both campaigns
      assert.equal(s2.elected, false);
      assert.equal(await election.leader(), 'one');
      assert.deepEqual([...s1.errors, ...s2.errors], []);

      // the leader's lease is revoked by someone else: its key goes, its campaign errors, two takes over
      const key1 = await one.getCampaignKey();
      const leaseId = key1.slice(key1.lastIndexOf('/') + 1);
      await t.another().leaseClient.leaseRevoke({ ID: leaseId });
      await eventually(t, () => s2.elected, 'the second candidate to be elected');
      await eventually(t, () => s1.errors.length > 0, "the first campaign's error", 2000);
      assert.ok(s1.errors[0] instanceof EtcdLeaseInvalidError, String(s1.errors[0]));
      await eventually(t, () => changes[changes.length - 1] === 'two', 'the observer to see the new leader');
      assert.equal(await election.leader(), 'two');
      assert.equal(observer.leader(), 'two');
      assert.deepEqual(changes, ['one', 'two']);
      assert.deepEqual(s2.errors, []);
    } finally {
      await observer.cancel();
      for (const c of campaigns) await c.resign();
    }
  }));
