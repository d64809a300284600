/**
 * The Snapshot stream writes the file as it sends it (MaintenanceService.snapshotStream, bbolt_writer.ts
 * BoltLayout.pieces): the key bucket's leaves are produced a piece at a time and the SHA-256 computed over
 * what was sent. What arrives must be byte for byte the file the member writes in one go
 * (EtcdServer.etcdSnapshot), whatever the pieces' sizes: overflow pages, inline buckets, branch pages.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createEtcdSim, serverOf } from '../../src/client/create.js';
import { layoutBolt, writeBolt } from '../../src/snapshot/bbolt_writer.js';
import { readBolt } from '../../src/snapshot/bbolt_reader.js';
import { encodeEtcdBackend, readEtcdSnapshot, writeEtcdSnapshot } from '../../src/snapshot/index.js';

const B = (s: string): Uint8Array => new TextEncoder().encode(s);

/** A member whose file has every kind of node: many keys (branch pages), values over a page, small buckets inline. */
function varied() {
  const sim = createEtcdSim({ time: 'virtual', seed: 16, etcdVersion: '3.4' });
  const kv = sim.services.kv;
  for (let t = 0; t < 40; t++) {
    kv.txn({ success: Array.from({ length: 50 }, (_, j) => ({ request_put: { key: B(`/many/${(t * 50 + j) % 900}`), value: new Uint8Array(30 + ((t + j) % 120)).fill(j) } })) });
  }
  // Overflow pages: values of one, three and twenty-five pages.
  kv.put({ key: B('/big/1'), value: new Uint8Array(5000).fill(1) });
  kv.put({ key: B('/big/2'), value: new Uint8Array(12_000).fill(2) });
  kv.put({ key: B('/big/3'), value: new Uint8Array(100_000).fill(3) });
  kv.deleteRange({ key: B('/many/1'), range_end: B('/many/2') });
  kv.compact({ revision: 20 });
  const { id } = sim.lessor.grant(0n, 60);
  sim.mvcc.put({ key: B('/leased'), value: B('x'), lease: id });
  return sim;
}

const concat = (parts: readonly Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};

test('the streamed Snapshot is the in-memory file byte for byte, in 32 KiB blobs, with the SHA-256 of what was sent last', () => {
  const sim = varied();
  const file = sim.server.etcdSnapshot();
  const responses = [...sim.server.services.maintenance.snapshotStream({})];
  const blobs = responses.map((r) => r.blob);
  const sha = blobs.pop()!;
  const db = concat(blobs);
  assert.ok(db.length > 64 * 4096, `a file of many pages (${db.length} bytes)`);
  assert.deepEqual(Buffer.from(db), Buffer.from(file.subarray(0, file.length - 32)));
  assert.deepEqual(Buffer.from(sha), Buffer.from(file.subarray(file.length - 32)));
  assert.deepEqual(Buffer.from(sha), createHash('sha256').update(db).digest());
  let remaining = db.length;
  for (const [i, r] of responses.entries()) {
    if (i < responses.length - 1) {
      assert.equal(r.blob.length, Math.min(32 * 1024, remaining), `blob ${i}`);
      remaining -= r.blob.length;
    }
    assert.equal(r.remaining_bytes, String(remaining));
  }
  // snapshot() gives the same responses all at once.
  assert.deepEqual(Buffer.from(concat(sim.server.services.maintenance.snapshot({}).map((r) => r.blob))), Buffer.from(file));
  // And the file reads back: overflowing values and all.
  const back = readEtcdSnapshot(file);
  assert.equal(back.revisions.find((r) => new TextDecoder().decode(r.kv.key) === '/big/3')!.kv.value.length, 100_000);
});

test('a layout gives the same bytes whole (writeTo) and in pieces of any size, and both equal the entry-by-entry writer', () => {
  const sim = varied();
  const backend = serverOf(sim).etcdBackend();
  const whole = writeEtcdSnapshot(backend);
  const db = whole.subarray(0, whole.length - 32);
  // The entry-by-entry layout (no source, nothing deferred), from the same backend's revisions.
  assert.deepEqual(Buffer.from(writeBolt(encodeEtcdBackend(backend))), Buffer.from(db));
  // A backend given as revisions (a spread copy drops the member's columns) lays out the same.
  assert.deepEqual(Buffer.from(writeEtcdSnapshot({ ...backend })), Buffer.from(whole));
  const layout = layoutBolt(encodeEtcdBackend(backend, { lazyKeys: true }));
  assert.equal(layout.size, db.length);
  for (const batch of [1, 4096, 10_000, 1 << 20]) {
    const pieces = [...layout.pieces(batch)];
    if (batch === 1) assert.ok(pieces.length > 20, 'one leaf a piece');
    assert.deepEqual(Buffer.from(concat(pieces)), Buffer.from(db), `pieces of about ${batch} bytes`);
  }
  // The pieces are fresh memory each time: laying out twice changes nothing already handed out.
  const first = [...layout.pieces()];
  const again = [...layout.pieces()];
  assert.deepEqual(Buffer.from(concat(first)), Buffer.from(concat(again)));
  assert.notEqual(first[1]!.buffer, again[1]!.buffer);
  assert.equal(readBolt(db).pageCount * 4096, db.length);
  // Reused buffers: each piece copied as it comes (as a socket takes it) gives the same bytes, the ring wraps.
  for (const [batch, reuse] of [[4096, 2], [10_000, 3], [1, 1]] as const) {
    const copies: Uint8Array[] = [];
    const buffers = new Set<ArrayBufferLike>();
    for (const p of layout.pieces(batch, reuse)) {
      copies.push(p.slice());
      buffers.add(p.buffer);
    }
    // The ring's buffers (grown for a leaf larger than they are), and the pages before and after the leaves.
    assert.ok(buffers.size * 3 < copies.length, `${buffers.size} buffers for ${copies.length} pieces, a ring of ${reuse}`);
    assert.deepEqual(Buffer.from(concat(copies)), Buffer.from(db), `pieces of about ${batch} bytes in ${reuse} reused buffers`);
  }
});

test('the stream for the front door (reused pieces, each response sent before the next few MiB are written) gives the file', () => {
  const sim = createEtcdSim({ time: 'virtual', seed: 16, etcdVersion: '3.4', maxTxnOps: 1000 });
  for (let t = 0; t < 40; t++) {
    sim.services.kv.txn({ success: Array.from({ length: 1000 }, (_, j) => ({ request_put: { key: B(`/k/${(t * 1000 + j) % 7000}`), value: new Uint8Array(100).fill(t) } })) });
  }
  const file = sim.server.etcdSnapshot();
  assert.ok(file.length > 5 << 20, `more than the reused buffers hold (${file.length} bytes)`);
  const copies: Uint8Array[] = [];
  for (const r of sim.server.services.maintenance.snapshotStream({}, undefined, { reusePieces: true })) copies.push(new Uint8Array(r.blob)); // a copy (Buffer.slice would be a view)
  assert.deepEqual(Buffer.from(concat(copies)), Buffer.from(file));
});

test('a snapshot is of the moment it was asked for: writes while it streams are not in it', () => {
  const sim = varied();
  const before = sim.server.etcdSnapshot();
  const stream = sim.server.services.maintenance.snapshotStream({});
  const firstBlob = stream.next();
  assert.equal(firstBlob.done, false);
  for (let i = 0; i < 200; i++) sim.services.kv.put({ key: B(`/later/${i}`), value: B('v') });
  const rest = [...stream].map((r) => r.blob);
  const got = concat([firstBlob.value!.blob, ...rest]);
  assert.deepEqual(Buffer.from(got), Buffer.from(before));
});
