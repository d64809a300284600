import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runDemo, runWatchLeaseDemo } from '../../src/cli/demo.js';

test('the demo tells the etcd rules it claims: no revision for a no-op delete, readable compaction point', () => {
  const lines: string[] = [];
  runDemo((l) => lines.push(l));
  assert.ok(lines.includes('del /demo/missing  -> revision 5, deleted 0  (nothing changed: no new revision)'));
  assert.ok(lines.some((l) => l.startsWith('get /demo/a --rev=4 -> error code 11: etcdserver: mvcc: required revision has been compacted')));
  assert.ok(lines.includes('get /demo/a --rev=5 -> 0 keys  (the compaction revision itself is still readable)'));
});

test('the watch and lease tour replays inclusively, expires the lease in one revision, and cancels the behind watch', () => {
  const lines: string[] = [];
  runWatchLeaseDemo((l) => lines.push(l));
  assert.ok(lines.includes('watch  -> PUT /w/start @2, PUT /w/k1 @3, PUT /w/k2 @4, PUT /w/k3 @5, DELETE /w/k2 @6  (one response, header revision 6)'));
  assert.ok(lines.includes('watch  -> DELETE /w/a @8, DELETE /w/b @8  (one response, header revision 8)'));
  assert.ok(lines.includes('watch from 2 after compaction -> watch 0 canceled, compact_revision 8'));
});
