/**
 * `etcdsim demo`: a short, deterministic tour of the MVCC store that prints what etcd would answer —
 * revisions, versions that reset after a delete, a historical read, a txn as one revision, compaction (which
 * makes no revision) — then watches (each named: one from the past, one from the future, one canceled by
 * compaction) and a lease, its ID in hex as etcdctl prints it.
 */
import { createEtcdSim } from '../client/index.js';
import { MvccStore, text, utf8, type KeyValue } from '../mvcc/index.js';
import { isEtcdError } from '../etcd/index.js';
import type { WatchResponse } from '../watch/index.js';

function show(kv: KeyValue): string {
  return `${text(kv.key)}=${text(kv.value)} (create ${kv.createRevision}, mod ${kv.modRevision}, version ${kv.version})`;
}

export function runDemo(print: (line: string) => void): void {
  const store = new MvccStore();
  const b = utf8;
  print(`fresh store: revision ${store.currentRevision}`);
  print(`put /demo/a=1      -> revision ${store.put({ key: b('/demo/a'), value: b('1') }).revision}`);
  print(`put /demo/a=2      -> revision ${store.put({ key: b('/demo/a'), value: b('2') }).revision}`);
  print(`put /demo/a=2      -> revision ${store.put({ key: b('/demo/a'), value: b('2') }).revision}  (an identical put still takes a revision)`);
  const del = store.deleteRange({ key: b('/demo/a') });
  print(`del /demo/a        -> revision ${del.revision}, deleted ${del.deleted}`);
  print(`del /demo/missing  -> revision ${store.deleteRange({ key: b('/demo/missing') }).revision}, deleted 0  (nothing changed: no new revision)`);
  print(`put /demo/a=3      -> revision ${store.put({ key: b('/demo/a'), value: b('3') }).revision}  (a new generation: version restarts at 1)`);
  print(`get /demo/a        -> ${store.range({ key: b('/demo/a') }).kvs.map(show).join(', ')}`);
  print(`get /demo/a --rev=3 -> ${store.range({ key: b('/demo/a'), revision: 3 }).kvs.map(show).join(', ')}`);
  const txn = store.txn({
    compare: [{ key: b('/demo/b'), target: 'CREATE', result: 'EQUAL', createRevision: 0 }],
    success: [{ requestPut: { key: b('/demo/b'), value: b('x') } }, { requestPut: { key: b('/demo/c'), value: b('y') } }],
  });
  print(`txn (b absent) put b, put c -> succeeded ${txn.succeeded}, revision ${txn.revision}  (two keys, one revision)`);
  // Compaction writes nothing: the header carries the store's revision, unchanged by it.
  print(`compact 5          -> history below revision 5 dropped (the header's revision stays ${store.compact(5).revision}: compaction makes no revision)`);
  try {
    store.range({ key: b('/demo/a'), revision: 4 });
  } catch (err) {
    if (!isEtcdError(err)) throw err;
    print(`get /demo/a --rev=4 -> error code ${err.code}: ${err.message}`);
  }
  print(`get /demo/a --rev=5 -> ${store.range({ key: b('/demo/a'), revision: 5 }).kvs.length} keys  (the compaction revision itself is still readable)`);
}

/** A watch response in words, naming the watch it is for (`names`: the tour's name for each watch ID). */
function showResponse(r: WatchResponse, names: ReadonlyMap<number, string>): string {
  const w = `watch ${names.get(r.watchId) ?? '?'} (id ${r.watchId})`;
  if (r.created) return `${w} created (header revision ${r.revision})`;
  if (r.canceled) return `${w} canceled, compact_revision ${r.compactRevision}`;
  if (r.events.length === 0) return `${w}: progress notification at revision ${r.revision}`;
  return `${w}: ` + r.events.map((e) => `${e.type} ${text(e.kv.key)} @${e.kv.modRevision}`).join(', ') + `  (one response, header revision ${r.revision})`;
}

/** A lease ID as etcdctl prints it: 16 hex digits. */
function leaseHex(id: bigint): string {
  return id.toString(16).padStart(16, '0');
}

/** The second half of the tour: watches and leases on the virtual clock. */
export function runWatchLeaseDemo(print: (line: string) => void): void {
  const sim = createEtcdSim({ time: 'virtual', seed: 1 });
  const b = utf8;
  const R = sim.mvcc.put({ key: b('/w/start'), value: b('x') }).revision;
  for (let i = 1; i <= 3; i++) sim.mvcc.put({ key: b(`/w/k${i}`), value: b(String(i)) });
  sim.mvcc.deleteRange({ key: b('/w/k2') });
  print('');
  print(`history: put /w/start at ${R}, put /w/k1..k3, del /w/k2 -> current revision ${sim.mvcc.currentRevision}`);
  // Two watches on one stream, told apart by their IDs: H replays history from R, F waits for revision 1000.
  const stream = sim.watchStream();
  const names = new Map([
    [0, `H (--rev=${R}, in the past)`],
    [1, 'F (--rev=1000, in the future)'],
  ]);
  stream.watch({ key: b('/w/'), rangeEnd: b('/w0'), startRevision: R });
  stream.watch({ key: b('/w/'), rangeEnd: b('/w0'), startRevision: 1000 });
  sim.server.advance(100); // one watch sync step (etcd: every 100 ms) replays the history
  for (const r of stream.take()) print(`-> ${showResponse(r, names)}`);
  const lease = sim.lessor.grant(0n, 1);
  print(`lease grant 1 -> lease ${leaseHex(lease.id)} granted with TTL(${lease.ttl}s)  (raised to etcd's minimum TTL)`);
  sim.mvcc.txn({ success: [{ requestPut: { key: b('/w/a'), value: b('1'), lease: lease.id } }, { requestPut: { key: b('/w/b'), value: b('2'), lease: lease.id } }] });
  for (const r of stream.take()) print(`-> ${showResponse(r, names)}`);
  sim.server.advance(2500);
  print(`advance 2.5 s of virtual time -> lease ${leaseHex(lease.id)} expired, ttl now ${sim.lessor.timeToLive(lease.id).ttl}`);
  for (const r of stream.take()) print(`-> ${showResponse(r, names)}  (F is still waiting for revision 1000)`);
  sim.compact(sim.mvcc.currentRevision);
  const behind = sim.watchStream();
  behind.watch({ key: b('/w/'), rangeEnd: b('/w0'), startRevision: R });
  sim.server.advance(100);
  const late = new Map([[0, `H2 (--rev=${R}, on a new stream, after compact ${sim.mvcc.currentRevision})`]]);
  for (const r of behind.take()) print(`-> ${showResponse(r, late)}`);
}
