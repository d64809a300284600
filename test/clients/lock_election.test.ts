/**
 * Client-level differential (e): lock and election hand-over through etcd3's own recipes, with two
 * contenders on their own clients and an observer.
 *
 * Lock: etcd3's `client.lock(name)` does not queue — `acquire()` fails with EtcdLockFailedError while the
 * lock is held — so "B waits" is what an etcd3 user writes: B's attempt fails, B watches the lock key
 * and tries again once it sees the key's DELETE (A's release revokes A's lease).
 *
 * Election: `client.election(name)`: A campaigns and is elected, B campaigns and waits, an observer
 * (`election.observe()`) reports leaders; A resigns, B is elected; B resigns. The observer must see A, then
 * B, then no leader, in that order.
 *
 * Compared: the sequence of what each party saw, with revisions (lease IDs named L1, L2, ...; the keys
 * etcd3's election writes contain lease IDs, so they are recorded as "the campaign key of <party>").
 */
import { test } from 'node:test';
import { EtcdLockFailedError, type Campaign } from 'etcd3';
import { differential, recordWatcher, cancelWatcher, skipWithoutEtcd, withDeadline, type ProgramContext } from './harness.js';

const FILE = 'test/clients/lock_election.test.ts';
const WAIT_MS = 10_000;
/** Lock and campaign leases: longer than the test, so nothing here expires by time. */
const LEASE_TTL = 60;

async function lockHandOver(t: ProgramContext): Promise<void> {
  const a = t.connect();
  const b = t.connect();
  const name = 'locks/resource';
  const lockA = a.lock(name).ttl(LEASE_TTL);
  const locks = [lockA];
  await lockA.acquire();
  t.observe('A acquired', { lease: await lockA.leaseId() });
  const holder = await t.client.kv.range({ key: Buffer.from(name) });
  t.observe('lock key while A holds', { rev: holder.header.revision, kvs: holder.kvs.map((kv) => ({ lease: kv.lease, create: kv.create_revision, mod: kv.mod_revision })) });

  // B tries, fails, watches the lock key from the revision it saw, and tries again after the DELETE.
  let failed: unknown = null;
  try {
    await b.lock(name).ttl(LEASE_TTL).acquire();
  } catch (err) {
    failed = { lockFailed: err instanceof EtcdLockFailedError, message: (err as Error).message };
  }
  t.observe('B first attempt', failed);
  const w = await b.watch().key(name).startRevision(String(Number(holder.header.revision) + 1)).create();
  const log = recordWatcher(t, w);
  try {
    const releasing = lockA.release();
    await t.until(() => log.events.some((e) => e.type === 'Delete') || log.errors.length > 0, "B's watcher to see the lock key's DELETE", WAIT_MS, () =>
      `events ${JSON.stringify(log.events)}, errors ${JSON.stringify(log.errors)}`);
    await releasing;
    t.observe('B saw', { events: log.events.map((e) => ({ type: e.type, mod: e.kv.mod })), errors: log.errors });
    const lockB = b.lock(name).ttl(LEASE_TTL);
    locks.push(lockB);
    await lockB.acquire();
    t.observe('B acquired', { lease: await lockB.leaseId() });
    const now = await t.client.kv.range({ key: Buffer.from(name) });
    t.observe('lock key while B holds', { rev: now.header.revision, kvs: now.kvs.map((kv) => ({ lease: kv.lease, create: kv.create_revision, mod: kv.mod_revision })) });
    await lockB.release();
    const after = await t.client.kv.range({ key: Buffer.from(name) });
    t.observe('after B released', { rev: after.header.revision, count: after.count });
  } finally {
    await cancelWatcher(log);
    // a lock's lease is kept alive until released: release any still held (revoking twice is harmless)
    for (const l of locks) await withDeadline(Promise.resolve().then(() => l.release()).catch(() => undefined), 2000, undefined);
  }
}

async function electionHandOver(t: ProgramContext): Promise<void> {
  const a = t.connect();
  const b = t.connect();
  const o = t.connect();
  const name = 'leader';
  const seen: (string | null)[] = [];
  const observer = await o.election(name).observe();
  seen.push(observer.leader() ?? null);
  observer.on('change', (leader) => {
    seen.push(leader ?? null);
    t.changed();
  });
  const errors: string[] = [];
  observer.on('error', (err) => errors.push(err.message));
  const elected = new Set<string>();
  const campaigns: Campaign[] = [];
  const campaign = (c: Campaign, who: string): void => {
    campaigns.push(c);
    c.on('elected', () => {
      elected.add(who);
      t.changed();
    });
    c.on('error', (err) => errors.push(`${who}: ${err.message}`));
  };
  try {
    const ca = a.election(name, LEASE_TTL).campaign('A');
    campaign(ca, 'A');
    await t.until(() => elected.has('A'), 'A to be elected', WAIT_MS);
    await t.until(() => seen.includes('A'), 'the observer to see A', WAIT_MS, () => JSON.stringify(seen));
    // B campaigns; its campaign key (a PUT under the election prefix with value B) shows it is in line.
    const from = await t.client.kv.range({ key: Buffer.from('election/none') });
    const pw = await t.client.watch().prefix(`election/${name}/`).startRevision(String(Number(from.header.revision) + 1)).create();
    const prefixLog = recordWatcher(t, pw);
    const cb = b.election(name, LEASE_TTL).campaign('B');
    campaign(cb, 'B');
    await t.until(() => prefixLog.events.some((e) => e.type === 'Put' && e.kv.value === 'B'), "B's campaign key", WAIT_MS);
    await cancelWatcher(prefixLog);
    const keyA = await ca.getCampaignKey();
    const keyB = await cb.getCampaignKey();
    const campaignKeys = async (): Promise<unknown> => {
      const r = await t.client.getAll().prefix(`election/${name}/`).sort('Create', 'Ascend').exec();
      return r.kvs.map((kv) => ({
        key: kv.key.toString() === keyA ? 'campaign key of A' : kv.key.toString() === keyB ? 'campaign key of B' : kv.key.toString(),
        value: kv.value.toString(),
        create: kv.create_revision,
        lease: kv.lease,
      }));
    };
    const ck = await campaignKeys();
    t.observe('campaign keys while A leads', ck);
    t.observe('B elected before A resigns', elected.has('B'));
    await ca.resign();
    await t.until(() => elected.has('B'), 'B to be elected after A resigned', WAIT_MS);
    await t.until(() => seen.includes('B'), 'the observer to see B', WAIT_MS, () => JSON.stringify(seen));
    t.observe('campaign keys while B leads', await campaignKeys());
    t.observe('leader()', await o.election(name).leader());
    await cb.resign();
    await t.until(() => seen[seen.length - 1] === null, 'the observer to see no leader', WAIT_MS, () => JSON.stringify(seen));
    t.observe('observer saw', seen);
    t.observe('errors', errors);
  } finally {
    // A campaign keeps its lease alive until it resigns: resign every one (a no-op for those that did),
    // or etcd3's keep-alive timers would outlive the test.
    for (const c of campaigns) await withDeadline(c.resign().catch(() => undefined), 2000, undefined);
    await withDeadline(observer.cancel(), 2000, undefined);
  }
}

test('lock hand-over: A holds, B fails and waits for the DELETE, B acquires', { skip: skipWithoutEtcd, timeout: 60_000 }, async () => {
  await differential('lock hand-over', lockHandOver, { file: FILE });
});

test('election hand-over: A leads, B waits, A resigns, B leads, B resigns; the observer sees A, B, none', { skip: skipWithoutEtcd, timeout: 60_000 }, async () => {
  await differential('election hand-over', electionHandOver, { file: FILE });
});
