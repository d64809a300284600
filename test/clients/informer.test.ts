/**
 * Client-level differential (b): an informer, as Kubernetes' reflector is one. It lists ~500 keys in pages
 * of 50 at one revision R (the first page's header revision; later pages ask for R explicitly with etcd3's
 * raw KV range, as etcd3's range builder has no revision), while writers keep writing; then it watches
 * from R+1 and applies the events to its cache. At the end its cache must equal a final get of the prefix
 * and the events it applied must be gap-free: every revision in (R, F], in order, once.
 *
 * What is compared between the targets is what does not depend on timing: R (the writers start once the
 * first page is in), every page, each writer's events in its own order, the set of events, the final
 * cache, and the checks' verdicts. How the writers' operations interleave is timing, and is not compared.
 */
import { test } from 'node:test';
import { differential, kvOf, prefixEnd, recordWatcher, cancelWatcher, skipWithoutEtcd, type Kv, type ProgramContext, type WatchLog } from './harness.js';

const FILE = 'test/clients/informer.test.ts';
const P = 'inf/';
const KEYS = 500;
const PAGE = 50;
const WRITERS = 3;
const WRITES_PER_WRITER = 200;
const WAIT_MS = 10_000;

const keyOf = (i: number): string => `${P}k${String(i).padStart(4, '0')}`;

async function informer(t: ProgramContext): Promise<void> {
  const { client } = t;
  const writerClient = t.connect();
  // The initial objects, one after the other (so their revisions are fixed).
  for (let i = 0; i < KEYS; i++) await client.put(keyOf(i)).value(`init-${i}`).exec();

  // Writers: each owns the keys i ≡ w (mod WRITERS) and updates, deletes and recreates them in a fixed order.
  const writes: { w: number; type: 'Put' | 'Delete'; key: string; value: string; rev: number }[][] = [];
  let writersStarted!: () => void;
  const started = new Promise<void>((resolve) => (writersStarted = resolve));
  const writer = async (w: number): Promise<void> => {
    await started;
    const mine: (typeof writes)[number] = (writes[w] = []);
    const owned = [...Array(KEYS).keys()].filter((i) => i % WRITERS === w);
    const deleted = new Set<number>();
    for (let n = 0; n < WRITES_PER_WRITER; n++) {
      const i = owned[(n * 7) % owned.length]!;
      const key = keyOf(i);
      if (n % 5 === 4 && !deleted.has(i)) {
        const res = await writerClient.delete().key(key).exec();
        deleted.add(i);
        mine.push({ w, type: 'Delete', key, value: '', rev: Number(res.header.revision) });
      } else {
        const value = `w${w}-${n}`;
        const res = await writerClient.put(key).value(value).exec();
        deleted.delete(i);
        mine.push({ w, type: 'Put', key, value, rev: Number(res.header.revision) });
      }
    }
  };
  const writersDone = Promise.all([...Array(WRITERS).keys()].map(writer));

  // List: the first page at the current revision, then the rest at that revision R.
  const cache = new Map<string, Kv>();
  const pages: { count: string; more: boolean; keys: string[] }[] = [];
  let R = 0;
  let from = Buffer.from(P);
  for (;;) {
    const res = await client.kv.range({ key: from, range_end: prefixEnd(P), limit: PAGE, revision: R === 0 ? '0' : String(R) });
    if (R === 0) {
      R = Number(res.header.revision);
      writersStarted(); // the writers run while the remaining pages are read
    }
    const kvs = res.kvs.map(kvOf);
    for (const kv of kvs) cache.set(kv.key, kv);
    pages.push({ count: res.count, more: res.more, keys: kvs.map((kv) => kv.key) });
    if (!res.more || res.kvs.length === 0) break;
    from = Buffer.concat([res.kvs[res.kvs.length - 1]!.key, Buffer.from([0])]);
  }
  // timing, so reported only: how far the writers got while the pages were read
  console.log(`[informer] ${t.side}: ${writes.flat().length} writes were done when the ${pages.length} pages had been read`);
  t.observe('list', { R, pages: pages.length, listed: cache.size });
  t.observe('pages', pages);
  t.observe('listed state', [...cache.values()]);

  // Watch from R+1 (a past revision by now: the writers are running).
  const w = await client.watch().prefix(P).startRevision(String(R + 1)).create();
  const log: WatchLog = recordWatcher(t, w);
  try {
    await writersDone;
    const sentinel = await client.put(`${P}~sentinel`).value('end').exec();
    const F = Number(sentinel.header.revision);
    await t.until(() => log.maxMod >= F || log.errors.length > 0, `the informer's watch to reach the sentinel at ${F}`, WAIT_MS, () =>
      `it has ${log.events.length} events, up to revision ${log.maxMod}; errors ${JSON.stringify(log.errors)}`);
    // Apply the events.
    for (const e of log.events) {
      if (e.type === 'Put') cache.set(e.kv.key, e.kv);
      else cache.delete(e.kv.key);
    }
    const final = await client.kv.range({ key: Buffer.from(P), range_end: prefixEnd(P), revision: String(F) });
    const finalKvs = final.kvs.map(kvOf);
    const cached = [...cache.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const revs = log.events.map((e) => Number(e.kv.mod));
    const gapFree = revs.length === F - R && revs.every((r, i) => r === R + 1 + i);
    const allWrites = writes.flat();
    // Events, by writer, in that writer's order (each writer's own order is fixed; the interleaving is timing).
    const byWriter = [...Array(WRITERS).keys()].map((wi) =>
      log.events
        .filter((e) => e.kv.key !== `${P}~sentinel` && allWrites.find((x) => x.rev === Number(e.kv.mod))?.w === wi)
        .map((e) => `${e.type} ${e.kv.key}=${e.kv.value} v${e.kv.version}`),
    );
    const eventsMatchWrites = log.events.every((e) => {
      if (e.kv.key === `${P}~sentinel`) return e.kv.mod === String(F);
      const x = allWrites.find((y) => y.rev === Number(e.kv.mod));
      return x !== undefined && x.key === e.kv.key && x.type === e.type && (x.type === 'Delete' || x.value === e.kv.value);
    });
    t.observe('checks', {
      cacheEqualsFinalGet: JSON.stringify(cached) === JSON.stringify(finalKvs),
      gapFree,
      eventsMatchWrites,
      events: log.events.length,
      expected: F - R,
      errors: log.errors,
      disconnects: log.disconnects,
    });
    t.observe('events by writer', byWriter);
    t.observe(
      'event set',
      log.events.map((e) => `${e.type} ${e.kv.key}=${e.kv.value} v${e.kv.version}`).sort(),
    );
    // The final cache without create/mod revisions (those depend on the writers' interleaving).
    t.observe('final cache', cached.map((kv) => ({ key: kv.key, value: kv.value, version: kv.version, lease: kv.lease })));
    t.observe('final revision relative to R', F - R);
  } finally {
    await cancelWatcher(log);
  }
}

test(`informer: paginated list of ${KEYS} keys at a fixed revision while ${WRITERS} writers write, then watch from R+1`, { skip: skipWithoutEtcd, timeout: 60_000 }, async () => {
  await differential('informer', informer, { file: FILE });
});
