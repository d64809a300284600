/**
 * The WAL in etcd's format (src/storage): what is saved reads back after a reopen (entries, hard state,
 * snapshot marks, across cut segments), Raft's overwrite of a log's tail, a torn last record repaired as
 * etcd repairs it, a flipped bit refused with etcd's words — and the WAL etcd's own `etcdctl snapshot
 * restore` writes reads here (outside CI that one skips without etcdctl).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Wal, WalError, dataDirLayout, readBackendFile, type WalEntry } from '../../src/storage/index.js';
import { readEtcdSnapshot, writeEtcdSnapshot, backendOfMember } from '../../src/snapshot/index.js';
import { requireCommand } from '../support/prerequisites.js';

const META = { nodeId: 0xec1314ea52838568n, clusterId: 0xdfd396ec7b4c7b9en };
const entry = (index: number, term = 2, text = `e${index}`): WalEntry => ({ index: BigInt(index), term: BigInt(term), type: 'normal', data: new TextEncoder().encode(text) });
const texts = (es: readonly WalEntry[]): string[] => es.map((e) => `${e.term}/${e.index}:${new TextDecoder().decode(e.data)}`);

function withDir(fn: (dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-wal-'));
  try {
    fn(join(dir, 'wal'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('saved entries, hard state and snapshot marks read back after a reopen, across cut segments', () => {
  withDir((dir) => {
    const w = Wal.create(dir, META);
    w.save({ term: 2n, vote: META.nodeId, commit: 2n }, [entry(1), entry(2)]);
    w.saveSnapshot({ index: 2n, term: 2n });
    w.cut();
    w.save({ term: 3n, vote: META.nodeId, commit: 3n }, [entry(3, 3)]);
    w.close();
    assert.deepEqual(readdirSync(dir).sort(), ['0000000000000000-0000000000000000.wal', '0000000000000001-0000000000000003.wal']);
    const { wal, contents } = Wal.open(dir);
    assert.deepEqual(contents.metadata, META);
    assert.deepEqual(texts(contents.entries), ['2/1:e1', '2/2:e2', '3/3:e3']);
    assert.deepEqual(contents.hardState, { term: 3n, vote: META.nodeId, commit: 3n });
    assert.deepEqual(contents.snapshot, { index: 2n, term: 2n });
    assert.equal(contents.repairedFile, undefined);
    assert.equal(wal.lastIndex, 3n);
    // Appending after a reopen continues the running CRC; folding releases the first segment.
    wal.save(undefined, [entry(4, 3)]);
    wal.releaseTo(3n);
    wal.close();
    assert.deepEqual(readdirSync(dir), ['0000000000000001-0000000000000003.wal']);
    const again = Wal.open(dir);
    again.wal.close();
    assert.deepEqual(texts(again.contents.entries), ['3/3:e3', '3/4:e4']);
  });
});

test("an entry at an index already held overwrites it and everything after it (Raft's log truncation)", () => {
  withDir((dir) => {
    const w = Wal.create(dir, META);
    w.save(undefined, [entry(1), entry(2), entry(3)]);
    w.save(undefined, [entry(2, 3, 'new')]);
    w.close();
    const { wal, contents } = Wal.open(dir);
    wal.close();
    assert.deepEqual(texts(contents.entries), ['2/1:e1', '3/2:new']);
  });
});

test('a last record cut short by a crash is cut off (etcd: repaired WAL error), and the log goes on from there', () => {
  withDir((dir) => {
    const w = Wal.create(dir, META);
    w.save(undefined, [entry(1), entry(2, 2, 'x'.repeat(100))]);
    w.close();
    const file = join(dir, '0000000000000000-0000000000000000.wal');
    truncateSync(file, statSync(file).size - 40);
    const { wal, contents } = Wal.open(dir);
    assert.equal(contents.repairedFile, file);
    assert.deepEqual(texts(contents.entries), ['2/1:e1']);
    wal.save(undefined, [entry(2, 2, 'again')]);
    wal.close();
    const again = Wal.open(dir);
    again.wal.close();
    assert.deepEqual(texts(again.contents.entries), ['2/1:e1', '2/2:again']);
    assert.equal(again.contents.repairedFile, undefined);
  });
});

test("a changed byte inside the log is refused with etcd's words, and the file is left as it is", () => {
  withDir((dir) => {
    const w = Wal.create(dir, META);
    w.save(undefined, [entry(1, 2, 'value-one'), entry(2)]);
    w.close();
    const file = join(dir, '0000000000000000-0000000000000000.wal');
    const bytes = readFileSync(file);
    const at = bytes.indexOf('value-one');
    bytes[at] = bytes[at]! ^ 1;
    writeFileSync(file, bytes);
    assert.throws(() => Wal.open(dir), (e: unknown) => e instanceof WalError && e.message === 'walpb: crc mismatch');
    assert.deepEqual(readFileSync(file), bytes);
  });
});

test("the WAL and db of etcd's own `etcdctl snapshot restore` read here", { skip: requireCommand('etcdctl') }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-restore-'));
  try {
    const snap = writeEtcdSnapshot(backendOfMember({ store: { keys: [], compactRev: 0 }, auth: { enabled: false, revision: 1, users: [], roles: [] }, leases: [], consistentIndex: 9n, members: [], removedMembers: [], version: '3.4.23' }));
    writeFileSync(join(dir, 'in.db'), snap);
    const dataDir = join(dir, 'restored');
    execFileSync('etcdctl', ['snapshot', 'restore', join(dir, 'in.db'), '--data-dir', dataDir, '--name', 'n1', '--initial-cluster', 'n1=http://127.0.0.1:41380', '--initial-advertise-peer-urls', 'http://127.0.0.1:41380'], {
      env: { ...process.env, ETCDCTL_API: '3' },
      stdio: 'pipe',
    });
    const layout = dataDirLayout(dataDir);
    const { wal, contents } = Wal.open(layout.walDir);
    wal.close();
    // etcd's IDs for that member and cluster; one conf change adding it, committed at 1; the log folded at 1.
    assert.deepEqual(contents.metadata, META);
    assert.deepEqual(contents.entries.map((e) => [e.index, e.term, e.type]), [[1n, 1n, 'confChange']]);
    assert.deepEqual(contents.hardState, { term: 1n, vote: META.nodeId, commit: 1n });
    assert.deepEqual(contents.snapshot, { index: 1n, term: 1n });
    // etcd preallocates segments: the zeroed rest is cut before this WAL appends.
    assert.ok(statSync(join(layout.walDir, '0000000000000000-0000000000000000.wal')).size < 4096);
    const db = readBackendFile(layout);
    assert.ok(db !== undefined);
    assert.equal(readEtcdSnapshot(db).consistentIndex, 1n);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
