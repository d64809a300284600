/**
 * Client-level differential (d): a lease kept alive by etcd3 (TTL = the minimum lease TTL, 2 s on both
 * sides), observed alive for about two TTLs, then keep-alive stopped (`lease.release()`, which stops the
 * keep-alive loop without revoking) and the expiry observed: the watcher sees the attached key's DELETE,
 * time-to-live answers TTL -1, the key is gone. Compared: that sequence, not when things happened.
 *
 * Waits are for events: "two TTLs" is counted in keep-alive responses etcd3 received (it sends one every
 * TTL/3), and the expiry is the watcher's DELETE.
 */
import { test } from 'node:test';
import { CLIENT_MIN_LEASE_TTL, differential, kvOf, recordWatcher, cancelWatcher, skipWithoutEtcd, type ProgramContext } from './harness.js';

const FILE = 'test/clients/lease_keepalive.test.ts';
const TTL = CLIENT_MIN_LEASE_TTL;
/** etcd3 keeps alive at once, then every TTL/3: seven responses span two TTLs. */
const KEEPALIVES = 7;

async function leaseKeepAlive(t: ProgramContext): Promise<void> {
  const { client } = t;
  const key = 'lease/attached';
  const lease = client.lease(TTL);
  let keepalives = 0;
  const lost: string[] = [];
  lease.on('keepaliveSucceeded', () => {
    keepalives++;
    t.changed();
  });
  lease.on('lost', (err) => {
    lost.push(err.message);
    t.changed();
  });
  const id = await lease.grant();
  t.observe('grant', { lease: id });
  const put = await lease.put(key).value('alive').exec();
  t.observe('put', { rev: put.header.revision });
  const w = await client.watch().key(key).startRevision(put.header.revision).withPreviousKV().create();
  const log = recordWatcher(t, w);
  try {
    await t.until(() => keepalives >= KEEPALIVES || lost.length > 0, `${KEEPALIVES} keep-alive responses`, (TTL * 3 + 5) * 1000, () => `${keepalives} so far`);
    t.observe('kept alive', { keepalives: keepalives >= KEEPALIVES, lost });
    const alive = await client.leaseClient.leaseTimeToLive({ ID: id, keys: true });
    t.observe('time to live while kept alive', {
      lease: alive.ID,
      // remaining TTL is timing: just alive, and not above the granted TTL
      alive: Number(alive.TTL) > 0 && Number(alive.TTL) <= TTL,
      grantedTTL: alive.grantedTTL,
      keys: alive.keys.map((k) => k.toString()),
    });
    t.observe('get while kept alive', (await client.kv.range({ key: Buffer.from(key) })).kvs.map(kvOf));

    lease.release(); // keep-alive stops; the lease is not revoked
    await t.until(() => log.events.some((e) => e.type === 'Delete') || log.errors.length > 0, 'the DELETE of the attached key (lease expiry)', (TTL * 2 + 5) * 1000, () =>
      `events ${JSON.stringify(log.events)}; errors ${JSON.stringify(log.errors)}`);
    t.observe('watch events', { events: log.events, errors: log.errors });
    const gone = await client.leaseClient.leaseTimeToLive({ ID: id, keys: true });
    t.observe('time to live after expiry', { lease: gone.ID, TTL: gone.TTL, grantedTTL: gone.grantedTTL, keys: gone.keys.map((k) => k.toString()) });
    const get = await client.kv.range({ key: Buffer.from(key) });
    t.observe('get after expiry', { count: get.count, rev: get.header.revision });
    let revokeError: unknown = null;
    try {
      await client.leaseClient.leaseRevoke({ ID: id });
    } catch (err) {
      revokeError = { name: (err as Error).constructor.name, message: (err as Error).message.split('\n')[0] };
    }
    t.observe('revoke after expiry', revokeError);
  } finally {
    lease.release(); // stops etcd3's keep-alive timers, whatever happened
    await cancelWatcher(log);
  }
}

test(`lease keep-alive (TTL ${TTL} s): alive while kept, then expiry seen by a watcher and time-to-live`, { skip: skipWithoutEtcd, timeout: 60_000 }, async () => {
  await differential('lease keep-alive', leaseKeepAlive, { file: FILE });
});
