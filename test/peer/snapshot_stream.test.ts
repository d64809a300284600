/**
 * A leader's snapshot over the peer port (src/peer/snapshot_stream.ts): the MsgSnap and a db of some
 * hundreds of KiB go on a connection of their own and arrive whole, in `member/snap/<index>.snap.db`, before
 * the message is delivered; a connection that brings fewer or more bytes than it announced, a snap frame
 * that is no MsgSnap, or a member that takes no snapshots delivers nothing and leaves no file. Real
 * loopback TCP; every wait is for a condition with a deadline.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, test } from 'node:test';
import { mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { PeerFrameError, decodeFrame, encodeFrame } from '../../src/peer/codec.js';
import { receivedDbPath } from '../../src/peer/snapshot_stream.js';
import { PeerTransport } from '../../src/peer/transport.js';
import type { Message } from '../../src/raft/index.js';
import { RealClock } from '../../src/sim/index.js';

const clock = new RealClock({ unref: true });
const root = mkdtempSync(join(tmpdir(), 'etcdsim-snapshot-stream-'));
after(() => {
  clock.close();
  rmSync(root, { recursive: true, force: true });
});
const CLUSTER = 0xc1n;
const snapMsg = (index: number): Message => ({ type: 'MsgSnap', from: 1n, to: 2n, term: 3n, snapshot: { index, term: 3n, conf: { voters: [1n, 2n], learners: [] }, data: new TextEncoder().encode('{"members":[]}') } });

async function until(what: string, holds: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!holds()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('a MsgSnap and its db arrive whole on a connection of their own, the db on disk before the message', async () => {
  const dir = mkdtempSync(join(root, 'recv-'));
  const delivered: Message[] = [];
  const onDisk: boolean[] = [];
  const receiver = new PeerTransport({ id: 2n, clusterId: CLUSTER, listen: { host: '127.0.0.1', port: 0 }, clock, snapDir: dir, deliver: (m) => {
    delivered.push(m);
    onDisk.push(readdirSync(dir).includes('0000000000000064.snap.db'));
  } });
  const port = await receiver.start();
  const db = new Uint8Array(700 * 1024).map((_, i) => (i * 31) & 0xff);
  const file = join(root, 'db');
  writeFileSync(file, db);
  let opened = 0;
  const sender = new PeerTransport({ id: 1n, clusterId: CLUSTER, listen: { host: '127.0.0.1', port: 0 }, clock, deliver: () => undefined, snapshotDb: () => {
    opened++;
    return { fd: openSync(file, 'r'), size: db.length };
  } });
  await sender.start();
  sender.addPeer(2n, { host: '127.0.0.1', port });
  sender.send(snapMsg(100));
  // A second MsgSnap while the first is in flight is dropped (Raft sends again when no answer comes).
  sender.send(snapMsg(100));
  await until('the snapshot delivered', () => delivered.length === 1);
  assert.deepEqual(delivered, [snapMsg(100)]);
  assert.deepEqual(onDisk, [true]);
  assert.equal(opened, 1);
  assert.deepEqual(new Uint8Array(readFileSync(receivedDbPath(dir, 100))), db);
  assert.deepEqual(readdirSync(dir), ['0000000000000064.snap.db'], 'no temporary file left');
  sender.close();
  receiver.close();
});

test('a snapshot connection with fewer or more bytes than announced, a snap frame that is no MsgSnap, or no snapDir delivers nothing', async () => {
  const dir = mkdtempSync(join(root, 'bad-'));
  const delivered: Message[] = [];
  const refused: string[] = [];
  const withDir = new PeerTransport({ id: 2n, clusterId: CLUSTER, listen: { host: '127.0.0.1', port: 0 }, clock, snapDir: dir, deliver: (m) => delivered.push(m), refused: (r) => refused.push(r) });
  const withoutDir = new PeerTransport({ id: 2n, clusterId: CLUSTER, listen: { host: '127.0.0.1', port: 0 }, clock, deliver: (m) => delivered.push(m), refused: (r) => refused.push(r) });
  const [p1, p2] = [await withDir.start(), await withoutDir.start()];
  const head = (size: number, msg = snapMsg(7)): Uint8Array => encodeFrame({ kind: 'snap', clusterId: CLUSTER, msg, size });
  const tries: [number, Uint8Array[]][] = [
    [p1, [head(10), new Uint8Array(5)]],
    [p1, [head(10), new Uint8Array(20)]],
    [p1, [encodeFrame({ kind: 'snap', clusterId: 0xbadn, msg: snapMsg(7), size: 1 }), new Uint8Array(1)]],
    [p2, [head(1), new Uint8Array(1)]],
  ];
  for (const [port, chunks] of tries) {
    const s = net.connect({ host: '127.0.0.1', port });
    await new Promise<void>((resolve) => {
      s.on('connect', () => {
        for (const c of chunks) s.write(c);
        s.end();
      });
      s.on('error', () => undefined);
      s.on('close', () => resolve());
    });
  }
  await until('the connections closed on the receiving side', () => refused.length === 2);
  await until('no db left of the broken ones', () => readdirSync(dir).length === 0);
  withDir.close();
  withoutDir.close();
  assert.deepEqual(delivered, []);
  assert.match(refused.join('\n'), /cluster ID mismatch[^]*snapshots are not received here/);
  // The codec: a snap frame carries a MsgSnap with its snapshot, nothing else.
  const notSnap = new TextEncoder().encode('{"kind":"snap","clusterId":"1","size":3,"type":"MsgApp","from":"1","to":"2","term":"1"}');
  assert.throws(() => decodeFrame(notSnap), PeerFrameError);
  assert.deepEqual(decodeFrame(head(3).subarray(4)), { kind: 'snap', clusterId: CLUSTER, msg: snapMsg(7), size: 3 });
});
