/**
 * `etcdsim demo`: a short, deterministic tour of the MVCC store that prints what etcd would answer —
 * revisions, versions that reset after a delete, a historical read, a txn as one revision, compaction.
 */
import { MvccStore, isEtcdError, text, utf8, type KeyValue } from '../mvcc/index.js';

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
  print(`compact 5          -> revision ${store.compact(5).revision}`);
  try {
    store.range({ key: b('/demo/a'), revision: 4 });
  } catch (err) {
    if (!isEtcdError(err)) throw err;
    print(`get /demo/a --rev=4 -> error code ${err.code}: ${err.message}`);
  }
  print(`get /demo/a --rev=5 -> ${store.range({ key: b('/demo/a'), revision: 5 }).kvs.length} keys  (the compaction revision itself is still readable)`);
}
