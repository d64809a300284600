import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runDemo, runWatchLeaseDemo } from '../../src/cli/demo.js';

test('the demo tells the etcd rules it claims: no revision for a no-op delete, readable compaction point', () => {
  const lines: string[] = [];
  runDemo((l) => lines.push(l));
  assert.ok(lines.includes('del /demo/missing  -> revision 5, deleted 0  (nothing changed: no new revision)'));
  assert.ok(lines.some((l) => l.startsWith('get /demo/a --rev=4 -> error code 11: etcdserver: mvcc: required revision has been compacted')));
  assert.ok(lines.includes('get /demo/a --rev=5 -> 0 keys  (the compaction revision itself is still readable)'));
  assert.ok(lines.includes("compact 5          -> history below revision 5 dropped (the header's revision stays 7: compaction makes no revision)"));
});

test('the watch and lease tour replays inclusively, expires the lease in one revision, and cancels the behind watch', () => {
  const lines: string[] = [];
  runWatchLeaseDemo((l) => lines.push(l));
  assert.ok(lines.includes('-> watch H (--rev=2, in the past) (id 0): PUT /w/start @2, PUT /w/k1 @3, PUT /w/k2 @4, PUT /w/k3 @5, DELETE /w/k2 @6  (one response, header revision 6)'), lines.join('\n'));
  assert.ok(lines.includes('-> watch F (--rev=1000, in the future) (id 1) created (header revision 6)'), 'each watch is named');
  assert.ok(lines.includes('-> watch H (--rev=2, in the past) (id 0): DELETE /w/a @8, DELETE /w/b @8  (one response, header revision 8)  (F is still waiting for revision 1000)'));
  assert.ok(lines.includes('-> watch H2 (--rev=2, on a new stream, after compact 8) (id 0) canceled, compact_revision 8'));
  // Lease IDs in hex, as etcdctl prints them.
  assert.ok(lines.some((l) => /^lease grant 1 -> lease [0-9a-f]{16} granted with TTL\(2s\)/.test(l)), lines.join('\n'));
});
