/**
 * Two compiled builds of etcdsim in one process, side by side with etcd3's canned `mock()` floor: how a change
 * to the put, get and CAS paths is judged on a machine whose load moves a row by ±20 % between runs
 * (docs/performance.md, "In-process calls against the client's floor"). Each round runs every row on build A,
 * build B and the floor, the order flipped each round, timed in process CPU time; the table gives medians and
 * the median of the per-round ratio B/A. Nothing here waits on anything outside the process.
 *
 *   node scripts/build.mjs --js && cp -r dist /tmp/dist-before   # before the change
 *   ... change, then node scripts/build.mjs --js ...
 *   node --expose-gc bench/ab_builds.mjs /tmp/dist-before $PWD/dist [rounds=40] [forcedGc=0|1] [rows,...]
 *
 * Rows: etcd3's sequential put, get and 64 CAS txns in flight, watch delivery of 10 000 events (the floor bench's
 * rows); the member's own put, get and CAS, and its put with a prefix watch's events delivered (no floor); the store's putOne alone.
 * A copied build must find node_modules: link it beside the copy (ln -s $PWD/node_modules /tmp/node_modules).
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Etcd3 } from 'etcd3';
import { tsImport } from 'tsx/esm/api';
const [, , distA, distB, roundsArg = '40', gcArg = '1', rowsArg = ''] = process.argv;
const ROUNDS = Number(roundsArg);
const FORCE_GC = gcArg === '1';
const build = (dir) => import(pathToFileURL(resolve(dir, 'index.js')).href);
const A = await build(distA);
const B = await build(distB);
const KEYS = 1000;
const VALUE = 'value-0123456789';
const keyBufs = Array.from({ length: KEYS }, (_, i) => Buffer.from(`bench/k${i}`));
const keyStr = (i) => `bench/k${i % KEYS}`;
const valBuf = Buffer.from(VALUE);
const header = { cluster_id: '1', member_id: '2', revision: '3', raft_term: '4' };
const canned = {
  put: { header },
  range: { header, kvs: [{ key: Buffer.from(keyStr(0)), value: Buffer.from(VALUE), create_revision: '2', mod_revision: '3', version: '2', lease: '0' }], count: '1', more: false },
  txn: { header, succeeded: true, responses: [{ response: 'response_put', response_put: { header } }] },
};
function floorClient() {
  const c = new Etcd3({ hosts: '127.0.0.1:1' });
  c.mock({ exec: (_s, m) => Promise.resolve(canned[m]), withConnection: () => Promise.reject(new Error('no')) });
  return c;
}
function simOf(lib) {
  const sim = lib.createEtcdSim({ time: 'virtual' });
  for (let i = 0; i < KEYS; i++) sim.services.kv.put({ key: keyBufs[i], value: valBuf });
  return sim;
}
const N = 20000;
/** The floor bench's watch-delivery row (floor_watch.ts): 10 000 puts 64 in flight until an etcd3 Watcher emitted each. */
const { watchDeliveryCases } = await tsImport('./floor_watch.ts', import.meta.url);
async function watchDelivery(lib) {
  const { subject, baseline } = watchDeliveryCases(() => simOf(lib), N / 2, 64);
  const c = lib ? subject : baseline;
  const w = await c.setup();
  const t = cpu();
  const n = await c.run(w);
  const d = cpu() - t;
  await c.teardown(w);
  return d / n;
}
const cas = (c, i) => c.if(keyStr(i), 'Mod', '>', 0).then(c.put(keyStr(i)).value(VALUE)).else(c.get(keyStr(i))).commit();
async function inFlight(n, f) { let next = 0; await Promise.all(Array.from({ length: 64 }, async () => { for (let i = next++; i < n; i = next++) await f(i); })); }
const ROWS = {
  'etcd3 put': async (lib) => { const sim = lib ? simOf(lib) : undefined; const c = sim ? sim.etcd3() : floorClient(); const t = cpu(); for (let i = 0; i < N; i++) await c.put(keyStr(i)).value(VALUE).exec(); const d = cpu() - t; c.close(); sim?.close(); return d / N; },
  'etcd3 get': async (lib) => { const sim = lib ? simOf(lib) : undefined; const c = sim ? sim.etcd3() : floorClient(); const t = cpu(); for (let i = 0; i < N; i++) await c.get(keyStr(i)).string(); const d = cpu() - t; c.close(); sim?.close(); return d / N; },
  'etcd3 CAS64': async (lib) => { const sim = lib ? simOf(lib) : undefined; const c = sim ? sim.etcd3() : floorClient(); const t = cpu(); await inFlight(N / 2, (i) => cas(c, i)); const d = cpu() - t; c.close(); sim?.close(); return d / (N / 2); },
  'watch delivery': watchDelivery,
  'member watch': async (lib) => {
    if (!lib) return NaN;
    const sim = simOf(lib);
    const kv = sim.services.kv;
    const call = sim.services.watch.watch();
    let seen = 0;
    call.onResponse((rs) => { for (const r of rs) seen += r.events.length; });
    call.write({ create_request: { key: Buffer.from('watched/'), range_end: Buffer.from('watched0') } });
    const wk = Array.from({ length: KEYS }, (_, i) => Buffer.from(`watched/k${i}`));
    const n = N / 2;
    const t = cpu();
    // 64 puts, then their events delivered: what a flush after a turn of 64 callers' puts does.
    for (let i = 0; i < n; i++) { kv.put({ key: wk[i % KEYS], value: valBuf }); if (i % 64 === 63) call.flush(); }
    call.flush();
    const d = cpu() - t;
    if (seen !== n) throw new Error(`member watch: ${seen} events of ${n}`);
    call.end(); sim.close();
    return d / n;
  },
  'member put': async (lib) => { if (!lib) return NaN; const sim = simOf(lib); const kv = sim.services.kv; const t = cpu(); for (let i = 0; i < N * 2; i++) kv.put({ key: keyBufs[i % KEYS], value: valBuf }); const d = cpu() - t; sim.close(); return d / (N * 2); },
  'member get': async (lib) => { if (!lib) return NaN; const sim = simOf(lib); const kv = sim.services.kv; const t = cpu(); for (let i = 0; i < N * 2; i++) kv.range({ key: keyBufs[i % KEYS] }); const d = cpu() - t; sim.close(); return d / (N * 2); },
  'member CAS': async (lib) => { if (!lib) return NaN; const sim = simOf(lib); const kv = sim.services.kv; const t = cpu(); for (let i = 0; i < N; i++) { const k = keyBufs[i % KEYS]; kv.txn({ compare: [{ key: k, target: 'MOD', result: 'GREATER', mod_revision: '0' }], success: [{ request_put: { key: k, value: valBuf } }], failure: [{ request_range: { key: k } }] }); } const d = cpu() - t; sim.close(); return d / N; },
  'putOne': async (lib) => { if (!lib) return NaN; const sim = simOf(lib); const st = sim.mvcc.storage; const ks = keyBufs.map((k) => k.toString('latin1')); const t = cpu(); for (let i = 0; i < N * 2; i++) (st.putOne.length === 3 ? st.putOne(keyBufs[i % KEYS], valBuf, 0n) : st.putOne(ks[i % KEYS], keyBufs[i % KEYS], valBuf, 0n)); const d = cpu() - t; sim.close(); return d / (N * 2); },
};
function cpu() { const u = process.cpuUsage(); return (u.user + u.system); } // µs
const rows = rowsArg ? rowsArg.split(',') : Object.keys(ROWS);
const res = {};
for (const r of rows) res[r] = { A: [], B: [], F: [] };
const med = (a) => { const s = [...a].filter((x) => !Number.isNaN(x)).sort((x, y) => x - y); return s.length ? s[s.length >> 1] : NaN; };
// warm-up
for (const r of rows) { await ROWS[r](A); await ROWS[r](B); await ROWS[r](undefined); }
for (let round = 0; round < ROUNDS; round++) {
  for (const r of rows) {
    const order = round % 2 === 0 ? [['A', A], ['B', B], ['F', undefined]] : [['F', undefined], ['B', B], ['A', A]];
    for (const [name, lib] of order) {
      if (FORCE_GC) globalThis.gc();
      res[r][name].push(await ROWS[r](lib));
    }
  }
}
console.log(`rounds ${ROUNDS}, forced GC ${FORCE_GC}, load ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')}`);
console.log('row'.padEnd(14), 'floor'.padStart(7), 'A'.padStart(7), 'B'.padStart(7), 'B/A'.padStart(7), 'A/F'.padStart(7), 'B/F'.padStart(7), '  (CPU µs per op, medians)');
for (const r of rows) {
  const f = med(res[r].F), a = med(res[r].A), b = med(res[r].B);
  // per-round paired ratio B/A, median
  const pr = med(res[r].A.map((x, i) => res[r].B[i] / x));
  console.log(r.padEnd(14), f.toFixed(3).padStart(7), a.toFixed(3).padStart(7), b.toFixed(3).padStart(7), pr.toFixed(3).padStart(7), (a / f).toFixed(2).padStart(7), (b / f).toFixed(2).padStart(7));
}
