/**
 * A process member's Raft state on its data dir (src/peer/wal_persistence.ts): three members on the
 * simulated network (test/raft/sim_network.ts) save every Ready to a WAL and snap files beside their
 * in-memory disks, through partitions, snapshots and a leader change; read back, each data dir gives the
 * same hard state, snapshot (index, term, voters, state) and log as the memory disk — the memory disk
 * being what the property test restarts members from.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';

import { WalPersistence } from '../../src/peer/wal_persistence.js';
import { dataDirLayout } from '../../src/storage/index.js';
import { SimNetwork } from '../raft/sim_network.js';

const root = mkdtempSync(join(tmpdir(), 'etcdsim-wal-persistence-'));
after(() => rmSync(root, { recursive: true, force: true }));
const IDS = [1n, 2n, 3n];
const layoutOf = (id: bigint) => dataDirLayout(join(root, `m${id}`));

test('each member\'s data dir reads back as its memory disk', () => {
  const net = new SimNetwork(11, IDS, 20, (id, initial) => WalPersistence.create(layoutOf(id), { nodeId: id, clusterId: 0xc1n }, initial));
  net.faults = { drop: 0.05, duplicate: 0, maxDelayMs: 3 };
  assert.ok(net.runUntil(() => net.leaders().length === 1, 5000));
  for (let i = 0; i < 30; i++) net.propose(net.leaders()[0] ?? 1n);
  net.run(500);
  const lone = IDS.find((id) => id !== net.leaders()[0])!;
  net.partition(new Map([[lone, 1]]));
  for (let i = 0; i < 40; i++) net.propose(net.leaders()[0] ?? 1n);
  net.run(500);
  net.heal();
  net.run(1000);
  net.checker.assertHolds();
  for (const id of IDS) {
    const m = net.members.get(id)!;
    const mem = m.disk.storage();
    const { storage, metadata } = WalPersistence.open(layoutOf(id));
    assert.deepEqual(metadata, { nodeId: id, clusterId: 0xc1n });
    assert.deepEqual(storage.hardState, mem.hardState, `member ${id} hard state`);
    assert.deepEqual(storage.snapshot, mem.snapshot, `member ${id} snapshot`);
    assert.ok(mem.snapshot.index > 0, 'the run snapshotted');
    assert.deepEqual(storage.entries.map((e) => [e.index, e.term, e.type, e.conf?.type]), mem.entries.map((e) => [e.index, e.term, e.type, e.conf?.type]), `member ${id} log`);
    assert.deepEqual(storage.entries.filter((e) => e.type === 'normal').map((e) => e.data), mem.entries.filter((e) => e.type === 'normal').map((e) => e.data));
    assert.ok(readdirSync(layoutOf(id).snapDir).some((n) => n.endsWith('.snap')));
  }
});

test('a data dir holding bootstrap conf changes reads back their members', () => {
  const layout = dataDirLayout(join(root, 'boot'));
  const initial = { hardState: { term: 1n, vote: 0n, commit: 2 }, snapshot: { index: 0, term: 0n, conf: { voters: [5n, 6n], learners: [] }, data: new Uint8Array(0) }, entries: [
    { index: 1, term: 1n, type: 'conf' as const, data: new Uint8Array(0), conf: { type: 'add' as const, id: 5n, context: new TextEncoder().encode('{"name":"a"}') } },
    { index: 2, term: 1n, type: 'conf' as const, data: new Uint8Array(0), conf: { type: 'addLearner' as const, id: 0xffffffffffffffffn } },
  ] };
  WalPersistence.create(layout, { nodeId: 5n, clusterId: 9n }, initial);
  const { storage } = WalPersistence.open(layout);
  assert.deepEqual(storage.entries, initial.entries);
  assert.deepEqual(storage.hardState, initial.hardState);
});

test("a leader's snapshot cuts the member's old log from its data dir; its own snapshot keeps what follows", () => {
  const conf = { voters: [1n], learners: [] };
  const empty = new Uint8Array(0);
  const old = [1, 2, 3, 4, 5].map((index) => ({ index, term: 1n, type: 'normal' as const, data: Uint8Array.of(index) }));
  const start = { hardState: { term: 1n, vote: 0n, commit: 0 }, snapshot: { index: 0, term: 0n, conf, data: empty }, entries: [] };
  const received = dataDirLayout(join(root, 'received'));
  const r = WalPersistence.create(received, { nodeId: 1n, clusterId: 1n }, start);
  r.save({ entries: old, committedEntries: [], messages: [], readStates: [], hardState: { term: 1n, vote: 0n, commit: 2 } });
  // The leader of term 2 sends a snapshot at 3 from another history.
  const snap = { index: 3, term: 2n, conf, data: Uint8Array.of(9) };
  r.save({ entries: [], committedEntries: [], messages: [], readStates: [], snapshot: snap, hardState: { term: 2n, vote: 0n, commit: 3 } });
  const back = WalPersistence.open(received).storage;
  assert.deepEqual([back.snapshot, back.entries, back.hardState.commit], [snap, [], 3]);

  const own = dataDirLayout(join(root, 'own'));
  const o = WalPersistence.create(own, { nodeId: 1n, clusterId: 1n }, start);
  o.save({ entries: old, committedEntries: [], messages: [], readStates: [], hardState: { term: 1n, vote: 0n, commit: 5 } });
  o.snapshotted({ index: 3, term: 1n, conf, data: Uint8Array.of(7) });
  assert.deepEqual(WalPersistence.open(own).storage.entries.map((e) => e.index), [4, 5]);
});
