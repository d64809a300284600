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
    wal.releaseTo(4n);
    assert.deepEqual(wal.purge(0), [join(dir, '0000000000000000-0000000000000000.wal')]);
    wal.close();
    assert.deepEqual(readdirSync(dir), ['0000000000000001-0000000000000003.wal']);
    const again = Wal.open(dir);
    again.wal.close();
    assert.deepEqual(texts(again.contents.entries), ['3/3:e3', '3/4:e4']);
  });
});

test("purge keeps --max-wals segments and never one a snapshot has not released (etcd's ReleaseLockTo and purge)", () => {
  withDir((dir) => {
    const w = Wal.create(dir, META);
    for (let i = 1; i <= 7; i++) {
      w.save({ term: 2n, vote: META.nodeId, commit: BigInt(i) }, [entry(i)]);
      w.cut();
    }
    const names = (): string[] => readdirSync(dir).sort();
    assert.equal(names().length, 8);
    // Nothing released yet: nothing goes, however many there are.
    assert.deepEqual(w.purge(2), []);
    // A snapshot at 3: the segment before the first starting at 3 (it holds entry 2) is kept, as etcd keeps it.
    w.releaseTo(3n);
    assert.deepEqual(w.purge(2).map((p) => p.slice(dir.length + 1)), ['0000000000000000-0000000000000000.wal']);
    // A snapshot at 7: the segments from the one holding entry 6 on are kept; of the rest, five stay.
    w.releaseTo(7n);
    assert.deepEqual(w.purge(5).map((p) => p.slice(dir.length + 1)), ['0000000000000001-0000000000000002.wal', '0000000000000002-0000000000000003.wal']);
    assert.equal(names().length, 5);
    // However few are asked for, the purge stops at the first segment not released.
    assert.equal(w.purge(1).length, 2);
    assert.deepEqual(names(), ['0000000000000005-0000000000000006.wal', '0000000000000006-0000000000000007.wal', '0000000000000007-0000000000000008.wal']);
    w.close();
    const { wal, contents } = Wal.open(dir);
    wal.close();
    assert.deepEqual(texts(contents.entries), ['2/6:e6', '2/7:e7']);
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
