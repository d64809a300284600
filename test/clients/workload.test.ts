/**
 * Client-level differential (a): a seeded random workload through etcd3 — puts (some leased, some with
 * prev_kv), single and prefix deletes, txns, reads, lease grant / time-to-live / revoke, occasional
 * compactions — under a dozen prefix watchers opened at PAST revisions (a few with prev_kv), plus watches
 * opened below the compacted revision. At the end every watcher's full event stream is compared.
 *
 * Timing independence, on both sides: a watcher opened at a past revision is caught up by etcd's sync loop
 * (every 100 ms), so whether a compaction overtakes it would be timing. Before compacting at c, every open
 * watcher that starts at or below c and is not yet known to be past c gets a ping key written under its
 * prefix, and the program waits for that ping to arrive. Which pings are written depends only on the
 * seed, never on how far a watcher got. The end is a sentinel key under each watcher's prefix; a watcher
 * is done when it has the last sentinel its prefix covers.
 *
 * Load: a preload of PRELOAD puts and, now and then, a burst, both 64 in flight, so watchers opened early
 * replay more than etcd's 1000 revisions per sync batch and live watchers get events faster than one by
 * one. A burst writes one key with one value, so which put gets which revision does not matter: the
 * events are the same whatever the order the server took the requests in.
 *
 * Seed: ETCDSIM_SEED (default DEFAULT_CLIENT_SEED); ops: ETCDSIM_CLIENT_OPS (default 400).
 */
import { test } from 'node:test';
import {
  clientOps,
  clientSeed,
  differential,
  kvOf,
  Prng,
  prefixEnd,
  recordWatcher,
  cancelWatcher,
  skipWithoutEtcd,
  type ProgramContext,
  type WatchLog,
} from './harness.js';

const FILE = 'test/clients/workload.test.ts';
const OPS = clientOps(400);
const SEED = clientSeed();

const ROOT = 'wl/';
const SUBS = ['wl/a/', 'wl/a/x/', 'wl/b/', 'wl/c/'] as const;
const KEYS = SUBS.flatMap((s) => [0, 1, 2, 3, 4, 5].map((j) => `${s}k${j}`));
/** Watched prefixes: the root, each sub-prefix, and two narrower ones (`wl/b/k1` also covers `wl/b/k1~...`). */
const WATCH_PREFIXES = [ROOT, ...SUBS, 'wl/b/k1', 'wl/a/k'] as const;
const WATCHERS = 12;
const PREV_KV_WATCHERS = new Set([2, 5, 9]);
/** A lease no workload outlives: leases end by revoke only, never by time. */
const LEASE_TTL = 3600;
/** Deadlines of the waits (a real etcd catches a watcher up within ~100 ms). */
const PING_WAIT_MS = 5000;
const PRELOAD = 1500;
const IN_FLIGHT = 64;
const END_WAIT_MS = 10_000;

interface OpenWatcher {
  readonly i: number;
  readonly prefix: string;
  readonly start: number;
  readonly prevKv: boolean;
  readonly log: WatchLog;
  /** A ping this program waited for proved the watcher has delivered everything up to here. */
  provenThrough: number;
}

/** An error as etcd3 surfaces it: its class and message (etcd's text). */
function errorOf(err: unknown): { name: string; message: string } {
  const e = err instanceof Error ? err : new Error(String(err));
  return { name: e.constructor.name, message: e.message.split('\n')[0]! };
}

async function workload(t: ProgramContext): Promise<void> {
  const { client } = t;
  const rnd = new Prng(t.seed);
  let rev = 1;
  let compacted = 0;
  let pings = 0;
  const leases: string[] = [];
  const watchers: OpenWatcher[] = [];
  const compactedWatches: WatchLog[] = [];
  // The ops at which the watchers open: spread over the first 90 % of the run.
  const openAt = new Set<number>();
  while (openAt.size < Math.min(WATCHERS, OPS)) openAt.add(rnd.int(0, Math.max(0, Math.floor(OPS * 0.9) - 1)));
  const seen = (r: { header: { revision: string } }): number => (rev = Math.max(rev, Number(r.header.revision)));

  const put = async (key: string, value: string, lease?: string, prevKv = false): Promise<number> => {
    const res = await client.kv.put({ key: Buffer.from(key), value: Buffer.from(value), lease: lease ?? '0', prev_kv: prevKv });
    seen(res);
    t.observe('put', { key, value, lease: lease ?? '0', prevKv, rev: res.header.revision, prev: res.prev_kv ? kvOf(res.prev_kv) : null });
    return Number(res.header.revision);
  };

  /** `n` puts of one key and one value, IN_FLIGHT at a time; records the range of revisions they took. */
  const burst = async (key: string, value: string, n: number): Promise<void> => {
    let left = n;
    let lo = Infinity;
    let hi = 0;
    const worker = async (): Promise<void> => {
      while (left > 0) {
        left--;
        const r = Number((await client.put(key).value(value).exec()).header.revision);
        lo = Math.min(lo, r);
        hi = Math.max(hi, r);
      }
    };
    await Promise.all([...Array(Math.min(IN_FLIGHT, n)).keys()].map(worker));
    rev = Math.max(rev, hi);
    t.observe('burst', { key, value, n, revisions: `${lo}..${hi}` });
  };

  const openWatcher = async (i: number): Promise<void> => {
    const prefix = rnd.pick(WATCH_PREFIXES);
    const start = rnd.chance(0.5) ? rnd.int(Math.max(compacted, 1), rev) : rnd.int(Math.max(compacted, 1, rev - 10), rev);
    const prevKv = PREV_KV_WATCHERS.has(i);
    let b = client.watch().prefix(prefix).startRevision(String(start));
    if (prevKv) b = b.withPreviousKV();
    const w = await b.create();
    watchers.push({ i, prefix, start, prevKv, log: recordWatcher(t, w), provenThrough: 0 });
    t.observe('watch', { i, prefix, start, prevKv });
  };

  /** Waits until each watcher in `ws` has an event at or above its target revision. */
  const waitDelivered = async (targets: [OpenWatcher, number][], what: string, ms: number): Promise<void> => {
    await t.until(
      () => targets.every(([w, r]) => w.log.maxMod >= r || w.log.errors.length > 0),
      what,
      ms,
      () =>
        targets
          .filter(([w, r]) => w.log.maxMod < r)
          .map(([w, r]) => `watcher ${w.i} (${w.prefix} from ${w.start}) has events up to ${w.log.maxMod}, needs ${r}` +
            `${w.log.errors.length > 0 ? `, errors ${JSON.stringify(w.log.errors)}` : ''}`)
          .join('; '),
    );
    const failed = targets.filter(([w]) => w.log.errors.length > 0);
    if (failed.length > 0) {
      throw new Error(`${what}: watcher(s) ${failed.map(([w]) => `${w.i} ${JSON.stringify(w.log.errors)}`).join(', ')} failed`);
    }
  };

  const compact = async (): Promise<void> => {
    const c = rnd.int(compacted + 1, rev);
    // Watchers that might still be catching up below c: prove them past c first.
    const lagging = watchers.filter((w) => w.start <= c && w.provenThrough < c);
    const targets: [OpenWatcher, number][] = [];
    for (const w of lagging) {
      const r = await put(`${w.prefix}~ping`, `ping-${++pings}`);
      targets.push([w, r]);
    }
    await waitDelivered(targets, `pings before compacting at ${c}`, PING_WAIT_MS);
    for (const [w, r] of targets) w.provenThrough = r;
    const res = await client.kv.compact({ revision: String(c), physical: true });
    seen(res);
    compacted = c;
    t.observe('compact', { revision: c, rev: res.header.revision });
  };

  /** A watch below the compacted revision: etcd cancels it (compact_revision set); etcd3 emits 'error'. */
  const watchCompacted = async (): Promise<void> => {
    const start = rnd.int(1, compacted - 1);
    const prefix = rnd.pick(WATCH_PREFIXES);
    const w = await client.watch().prefix(prefix).startRevision(String(start)).create();
    const log = recordWatcher(t, w);
    compactedWatches.push(log);
    await t.until(() => log.errors.length > 0 || log.events.length > 0, `the watch at compacted revision ${start} to be canceled`, PING_WAIT_MS);
    t.observe('watch-compacted', { prefix, start, compacted, errors: log.errors, events: log.events });
  };

  const deleteOp = async (): Promise<void> => {
    const prefix = rnd.chance(0.25);
    const key = prefix ? rnd.pick(SUBS) : rnd.pick(KEYS);
    const prevKv = rnd.chance(0.5);
    const res = await client.kv.deleteRange({
      key: Buffer.from(key),
      range_end: prefix ? prefixEnd(key) : Buffer.alloc(0),
      prev_kv: prevKv,
    });
    seen(res);
    t.observe('delete', { key, prefix, prevKv, rev: res.header.revision, deleted: res.deleted, prev: (res.prev_kvs ?? []).map(kvOf) });
  };

  const txn = async (i: number): Promise<void> => {
    const k = rnd.pick(KEYS);
    const k2 = rnd.pick(KEYS);
    // now and then the same key twice: etcd refuses the txn (duplicate key), which is compared too
    const k3 = rnd.chance(0.1) ? k2 : rnd.pick(KEYS.filter((x) => x !== k2));
    const sub = rnd.pick(SUBS);
    const kind = rnd.int(0, 2);
    const cmp = kind === 0 ? client.if(k, 'Version', '>', 0) : kind === 1 ? client.if(k, 'Value', '==', `v${rnd.int(0, i)}`) : client.if(k, 'Mod', '<', rev - rnd.int(0, 20));
    let res;
    try {
      res = await cmp
        .then(client.put(k2).value(`t${i}`), client.delete().key(k3))
        .else(client.getAll().prefix(sub), client.put(`${sub}k${rnd.int(0, 5)}`).value(`e${i}`))
        .commit();
    } catch (err) {
      t.observe('txn refused', { k, k2, k3, error: errorOf(err) });
      return;
    }
    seen(res);
    t.observe('txn', {
      k,
      kind,
      succeeded: res.succeeded,
      rev: res.header.revision,
      responses: res.responses.map((r) =>
        r.response_put
          ? { put: r.response_put.header.revision }
          : r.response_delete_range
            ? { deleted: r.response_delete_range.deleted }
            : { range: (r.response_range?.kvs ?? []).map(kvOf), count: r.response_range?.count, more: r.response_range?.more },
      ),
    });
  };

  const get = async (): Promise<void> => {
    const prefix = rnd.pick([ROOT, ...SUBS]);
    const res = await client.kv.range({ key: Buffer.from(prefix), range_end: prefixEnd(prefix) });
    seen(res);
    t.observe('get', { prefix, rev: res.header.revision, count: res.count, kvs: res.kvs.map(kvOf) });
  };

  const grant = async (): Promise<void> => {
    const res = await client.leaseClient.leaseGrant({ TTL: LEASE_TTL });
    leases.push(res.ID);
    t.observe('grant', { lease: res.ID, TTL: res.TTL, error: res.error });
  };

  const revoke = async (): Promise<void> => {
    const id = leases.splice(rnd.int(0, leases.length - 1), 1)[0]!;
    const res = await client.leaseClient.leaseRevoke({ ID: id });
    seen(res);
    t.observe('revoke', { lease: id, rev: res.header.revision });
  };

  const timeToLive = async (): Promise<void> => {
    const id = rnd.pick(leases);
    const res = await client.leaseClient.leaseTimeToLive({ ID: id, keys: true });
    // The remaining TTL is timing; the granted TTL and the attached keys are not (keys: Go map order).
    t.observe('ttl', {
      lease: res.ID,
      alive: Number(res.TTL) > 0,
      grantedTTL: res.grantedTTL,
      keys: res.keys.map((k) => k.toString('latin1')).sort(),
    });
  };

  try {
    await burst(`${ROOT}c/k0`, 'preload', PRELOAD);
    for (let i = 0; i < OPS; i++) {
      if (openAt.has(i)) await openWatcher(watchers.length);
      const x = rnd.next();
      if (x < 0.36) {
        const lease = leases.length > 0 && rnd.chance(0.3) ? rnd.pick(leases) : undefined;
        await put(rnd.pick(KEYS), `v${i}`, lease, rnd.chance(0.3));
      } else if (x < 0.5) await deleteOp();
      else if (x < 0.66) await txn(i);
      else if (x < 0.72) await get();
      else if (x < 0.8) {
        if (leases.length < 5) await grant();
        else await revoke();
      } else if (x < 0.86) {
        if (leases.length > 0) await revoke();
        else await grant();
      } else if (x < 0.9) {
        if (leases.length > 0) await timeToLive();
      } else if (x < 0.925) {
        await compact();
      } else if (x < 0.93) {
        if (compacted > 1) await watchCompacted();
      } else if (x < 0.945) {
        await burst(rnd.pick(KEYS), `b${i}`, rnd.int(50, 300));
      } else {
        // more puts on few keys: long version chains
        await put(rnd.pick(KEYS.slice(0, 4)), `v${i}`);
      }
    }
    // The end: one sentinel per watcher under its prefix; each watcher must reach the last sentinel its prefix covers.
    const sentinels: [string, number][] = [];
    for (const w of watchers) {
      const key = `${w.prefix}~sentinel-${w.i}`;
      sentinels.push([key, await put(key, 'end')]);
    }
    const targets: [OpenWatcher, number][] = watchers.map((w) => [
      w,
      Math.max(...sentinels.filter(([k]) => k.startsWith(w.prefix)).map(([, r]) => r)),
    ]);
    await waitDelivered(targets, 'every watcher to reach the end', END_WAIT_MS);
    const final = await client.kv.range({ key: Buffer.from(ROOT), range_end: prefixEnd(ROOT) });
    t.observe('final', { rev: final.header.revision, kvs: final.kvs.map(kvOf) });
  } finally {
    // Every watcher's full stream: recorded even when the run stopped early, so the report shows where it diverged.
    for (const w of watchers) {
      const canceled = await cancelWatcher(w.log);
      t.observe(`watcher ${w.i}`, {
        prefix: w.prefix,
        start: w.start,
        prevKv: w.prevKv,
        events: w.log.events,
        errors: w.log.errors,
        disconnects: w.log.disconnects,
        canceled,
      });
    }
    for (const log of compactedWatches) await cancelWatcher(log);
  }
}

test(`client workload: ${OPS} random ops through etcd3, ${WATCHERS} watchers from past revisions, compactions, leases (seed ${SEED})`, { skip: skipWithoutEtcd, timeout: 120_000 }, async () => {
  await differential('client workload', workload, { file: FILE, env: { ETCDSIM_SEED: SEED, ETCDSIM_CLIENT_OPS: OPS } });
});
