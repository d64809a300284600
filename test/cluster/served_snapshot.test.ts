/**
 * Maintenance.Snapshot on a served cluster member (src/grpc/serve_cluster.ts) streams as a single served
 * member's does (MaintenanceService.snapshotStream through the front door's DoorServerStreamCall): the
 * member's own backend — a follower answers with its own file, as etcd's member-local Maintenance call does —
 * written as the HTTP/2 stream drains, its SHA-256 last. A client that stops reading holds the writer back
 * at grpc-go's write quota; a cancel lets the file go; a paused member (SIGSTOP) sends nothing until it is
 * resumed; a crash resets the stream with the port. The cluster runs on the wall clock at --clock-speed 10,
 * as `etcdsim serve` runs it; nothing waits a fixed time: every wait is for an event or a state the test
 * reads (the levers go through the control endpoint, /etcdsim/cluster).
 */
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as http2 from 'node:http2';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { after, before, test } from 'node:test';
import { serveCluster, type ServeClusterHandle } from '../../src/grpc/serve_cluster.js';
import type { EtcdServer } from '../../src/server/index.js';
import type * as M from '../../src/server/messages.js';
import { requireCommands } from '../support/prerequisites.js';
import { ctlOk, scratchDir } from '../snapshot/helpers.js';
import { frame, snapshotResponseFields } from '../grpc/raw_h2.js';

const noEtcdctl = requireCommands(['etcdctl']);
const SNAPSHOT = '/etcdserverpb.Maintenance/Snapshot';
const BLOB = 32 * 1024;

// To see that a cancelled stream let its file go: a WeakRef to it, then a full collection.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

let h: ServeClusterHandle;
before(async () => {
  h = await serveCluster({ members: [{ port: 0 }, { port: 0 }, { port: 0 }], clockSpeed: 10, seed: 5, etcdVersion: '3.4' });
  // About 4 MiB of file: far more than the HTTP/2 windows, the write quota and the writer's reused buffers.
  const leader = h.cluster.connect(h.cluster.members.findIndex((m) => m.role === 'leader'));
  for (let t = 0; t < 8; t++) {
    await leader.kv.txn({ success: Array.from({ length: 128 }, (_, j) => ({ request_put: { key: Buffer.from(`snap/${t}/${j}`), value: Buffer.alloc(4000, j) } })) });
  }
  // Every member applied the last write (a serializable read on each sees it).
  for (let i = 0; i < 3; i++) {
    for (;;) {
      const r = await h.cluster.connect(i).kv.range({ key: Buffer.from('snap/7/127'), serializable: true });
      if (r.kvs.length === 1) break;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
});
after(async () => {
  await h?.close();
});

/** A follower that is up (snapshots are member-local: a follower answers from its own backend). */
function follower(): number {
  const i = h.cluster.members.findIndex((m) => m.role !== 'leader' && !m.crashed && !m.paused);
  assert.ok(i >= 0, 'a follower that is up');
  return i;
}

/** A lever of the control endpoint, on member `via`'s port. */
async function lever(path: string, via: number): Promise<void> {
  const res = await fetch(`${h.endpoints[via]}/etcdsim/cluster/${path}`, { method: 'POST' });
  assert.equal(res.status, 200, `${path}: ${await res.text()}`);
}

/** Resolves once `cond()` holds, checking after each turn of the event loop (no timer: it waits on I/O and the cluster's own timers). */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let turns = 0; !cond(); turns++) {
    if (turns > 2_000_000) assert.fail(`never happened: ${what}`);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** What a member's snapshot writer was asked for: streams opened, responses taken, and a WeakRef to the last stream. */
interface Pulls {
  opened: number;
  taken: number;
  last: WeakRef<object> | undefined;
  restore(): void;
}

/** Counts what the door asks of `server`'s snapshot writer (the one path a served member's Snapshot takes). */
function countPulls(server: EtcdServer): Pulls {
  const ms = server.services.maintenance;
  const original = ms.snapshotStream;
  const pulls: Pulls = { opened: 0, taken: 0, last: undefined, restore: () => void (ms.snapshotStream = original) };
  ms.snapshotStream = function (this: typeof ms, ...args: Parameters<typeof original>): IterableIterator<M.SnapshotResponse> {
    const inner = original.apply(this, args);
    pulls.opened++;
    pulls.last = new WeakRef(inner);
    return (function* counted(): Generator<M.SnapshotResponse, undefined, undefined> {
      for (const r of inner) {
        pulls.taken++;
        yield r;
      }
      return undefined;
    })();
  };
  return pulls;
}


/** The gRPC messages of a response body. */
function messagesOf(body: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < body.length; ) {
    const len = body.readUInt32BE(at + 1);
    out.push(body.subarray(at + 5, at + 5 + len));
    at += 5 + len;
  }
  return out;
}

/** A raw Snapshot call on member `i`'s port: its bytes as they arrive, its response headers and trailers. */
function snapshotCall(i: number) {
  const session = http2.connect(h.endpoints[i]!);
  session.on('error', () => {});
  const stream = session.request({ ':method': 'POST', ':path': SNAPSHOT, 'content-type': 'application/grpc', te: 'trailers' });
  stream.on('error', () => {});
  stream.end(frame(''));
  const chunks: Buffer[] = [];
  const seen = { received: 0, headers: false, closed: false };
  stream.on('response', () => void (seen.headers = true));
  const trailers = new Promise<http2.IncomingHttpHeaders>((resolve) => stream.on('trailers', resolve));
  const closed = new Promise<void>((resolve) =>
    stream.on('close', () => {
      seen.closed = true;
      resolve();
    }),
  );
  const onData = (d: Buffer): void => {
    chunks.push(d);
    seen.received += d.length;
  };
  stream.on('data', onData);
  return {
    session,
    stream,
    seen,
    trailers,
    closed,
    /** Stops reading once `bytes` arrived (the rest stays with HTTP/2 flow control). */
    stopAfter: (bytes: number): Promise<void> =>
      new Promise<void>((resolve) => {
        const check = (): void => {
          if (seen.received < bytes) return;
          stream.off('data', check);
          stream.off('data', onData);
          stream.pause();
          resolve();
        };
        stream.on('data', check);
      }),
    /** Reads again after stopAfter. */
    readAgain: (): void => {
      stream.on('data', onData);
      stream.resume();
    },
    body: (): Buffer => Buffer.concat(chunks),
  };
}

test('etcdctl snapshot save on a follower: the member\'s own file, byte for byte; snapshot status reads it', { skip: noEtcdctl }, async () => {
  const f = follower();
  const server = h.cluster.member(f).server;
  const pulls = countPulls(server);
  const scratch = scratchDir();
  try {
    const before = Buffer.from(server.etcdSnapshot());
    const file = join(scratch.dir, 'follower.db');
    await ctlOk(['snapshot', 'save', file], h.addresses[f]);
    const after = Buffer.from(server.etcdSnapshot());
    const saved = readFileSync(file);
    assert.ok(saved.length > 4 << 20, `a file of ${saved.length} bytes`);
    // The backend of the moment the call reached the member (nothing is written meanwhile: before = after).
    assert.ok(saved.equals(before) || saved.equals(after), 'the saved file is the member\'s own');
    // Through the streaming writer: one response per 32 KiB of the file, then the SHA-256.
    assert.equal(pulls.opened, 1);
    assert.equal(pulls.taken, Math.ceil((saved.length - 32) / BLOB) + 1);
    const status = JSON.parse(await ctlOk(['snapshot', 'status', file, '-w', 'json'])) as { revision: number; totalKey: number };
    assert.equal(status.revision, Number(server.mvcc.currentRevision));
  } finally {
    pulls.restore();
    scratch.cleanup();
  }
});

test('a client that stops reading holds the member\'s writer back; a cancel lets the file go', async () => {
  const f = follower();
  const pulls = countPulls(h.cluster.member(f).server);
  const call = snapshotCall(f);
  try {
    // A few messages read, so the door has been through its drain cycle; then the client stops reading.
    await call.stopAfter(8 * BLOB);
    // Not read any further: HTTP/2 flow control holds the server's writes, and the door stops asking the
    // writer for more once grpc-go's write quota waits in the stream.
    await until(() => call.stream.state.localWindowSize === 0, 'the stream window spent');
    let steady = pulls.taken;
    for (let turns = 0; turns < 200; turns++) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (pulls.taken !== steady) {
        steady = pulls.taken;
        turns = 0;
      }
    }
    const received = call.seen.received;
    // Asked for beyond what the client read: at most the HTTP/2 window (65,535 bytes), the write quota and
    // one message; and nothing more while the client does not read.
    assert.ok(pulls.taken * BLOB - received <= 65_535 + 64 * 1024 + BLOB, `${pulls.taken} responses taken while the client read ${received} bytes`);
    assert.ok(pulls.taken * BLOB < (4 << 20) / 2, 'far from the whole file');
    assert.equal(pulls.opened, 1);
    assert.notEqual(pulls.last?.deref(), undefined, 'the open stream holds its writer');
    // Cancel: nothing more is taken, and the stream (with its file and buffers) is let go.
    call.stream.close(http2.constants.NGHTTP2_CANCEL);
    await call.closed;
    const taken = pulls.taken;
    await until(() => {
      gc();
      return pulls.last?.deref() === undefined;
    }, 'the cancelled snapshot stream is collected');
    assert.equal(pulls.taken, taken);
  } finally {
    pulls.restore();
    call.session.destroy();
  }
});

test('a paused member sends nothing until resumed; then its snapshot streams whole', async () => {
  const f = follower();
  const via = (f + 1) % 3;
  const pulls = countPulls(h.cluster.member(f).server);
  await lever(`pause?member=${f}`, via);
  const call = snapshotCall(f);
  try {
    // The call reached the member and waits with it (as a SIGSTOPped etcd's does): no HEADERS, no byte, the
    // file not even begun.
    await until(() => h.cluster.member(f).held.length > 0, 'the call is held by the paused member');
    assert.deepEqual([call.seen.headers, call.seen.received, pulls.opened], [false, 0, 0]);
    await lever(`resume?member=${f}`, via);
    const trailers = await call.trailers;
    await call.closed;
    assert.equal(trailers['grpc-status'], '0');
    assert.equal(pulls.opened, 1);
    const messages = messagesOf(call.body()).map(snapshotResponseFields);
    assert.ok(messages.every((m) => m.version === undefined), 'no version field on the 3.4 profile');
    const db = Buffer.concat(messages.slice(0, -1).map((m) => m.blob));
    assert.ok(messages.at(-1)!.blob.equals(createHash('sha256').update(db).digest()), 'the SHA-256 of what was sent comes last');
    assert.ok(Buffer.concat([db, messages.at(-1)!.blob]).equals(Buffer.from(h.cluster.member(f).server.etcdSnapshot())), 'the member\'s own file');
  } finally {
    pulls.restore();
    if (h.cluster.member(f).paused) await lever(`resume?member=${f}`, via);
    call.session.destroy();
  }
});

test('a member paused mid-stream sends nothing more until resumed, as a SIGSTOPped etcd; then the rest of its file', async () => {
  const f = follower();
  const via = (f + 1) % 3;
  const pulls = countPulls(h.cluster.member(f).server);
  const call = snapshotCall(f);
  try {
    await call.stopAfter(4 * BLOB);
    await lever(`pause?member=${f}`, via);
    const takenAtPause = pulls.taken;
    // The client reads again: what was already written reaches it, and then nothing, however many turns pass.
    call.readAgain();
    let steady = `${pulls.taken}/${call.seen.received}`;
    for (let turns = 0; turns < 200; turns++) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      const now = `${pulls.taken}/${call.seen.received}`;
      if (now !== steady) {
        steady = now;
        turns = 0;
      }
    }
    assert.equal(pulls.taken, takenAtPause, 'no piece of the file taken while the member is stopped');
    assert.equal(call.seen.closed, false);
    assert.ok(call.seen.received < (4 << 20) / 2, `${call.seen.received} bytes: far from the whole file`);
    await lever(`resume?member=${f}`, via);
    assert.equal((await call.trailers)['grpc-status'], '0');
    await call.closed;
    const messages = messagesOf(call.body()).map(snapshotResponseFields);
    assert.ok(Buffer.concat(messages.map((m) => m.blob)).equals(Buffer.from(h.cluster.member(f).server.etcdSnapshot())), 'the whole file, once');
  } finally {
    pulls.restore();
    if (h.cluster.member(f).paused) await lever(`resume?member=${f}`, via);
    call.session.destroy();
  }
});

test('a member that crashes mid-stream resets it with its port; once crashed it refuses, and after restart it streams again', async () => {
  const f = follower();
  const via = (f + 1) % 3;
  const call = snapshotCall(f);
  try {
    await call.stopAfter(4 * BLOB);
    await lever(`crash?member=${f}`, via);
    // The port's connections reset: the stream ends without a status.
    await call.closed;
    await h.settled();
    const refused = snapshotCall(f);
    await refused.closed;
    assert.deepEqual([refused.seen.headers, refused.seen.received], [false, 0]);
    refused.session.destroy();
  } finally {
    call.session.destroy();
    await lever(`restart?member=${f}`, via);
    await h.settled();
  }
  // Restarted: its new server streams its file again.
  const again = snapshotCall(f);
  try {
    const trailers = await again.trailers;
    await again.closed;
    assert.equal(trailers['grpc-status'], '0');
    const messages = messagesOf(again.body()).map(snapshotResponseFields);
    const db = Buffer.concat(messages.slice(0, -1).map((m) => m.blob));
    assert.ok(messages.at(-1)!.blob.equals(createHash('sha256').update(db).digest()));
    assert.ok(db.length > 4 << 20);
  } finally {
    again.session.destroy();
  }
});

test('a member without a leader still answers Snapshot (member-local), unless the call requires a leader', async () => {
  const f = follower();
  const via = (f + 1) % 3;
  await lever(`isolate?member=${f}`, via);
  try {
    await until(() => h.cluster.status(f).leader === 0n, 'the isolated member has lost its leader');
    // clientv3's WithRequireLeader: etcd's stream interceptor refuses at once, with a trailers-only status.
    const session = http2.connect(h.endpoints[f]!);
    try {
      const stream = session.request({ ':method': 'POST', ':path': SNAPSHOT, 'content-type': 'application/grpc', te: 'trailers', hasleader: 'true' });
      stream.end(frame(''));
      const headers = await new Promise<http2.IncomingHttpHeaders>((resolve) => stream.on('response', resolve));
      assert.deepEqual([headers['grpc-status'], headers['grpc-message']], ['14', 'etcdserver: no leader']);
    } finally {
      session.destroy();
    }
    const call = snapshotCall(f);
    try {
      const trailers = await call.trailers;
      await call.closed;
      assert.equal(trailers['grpc-status'], '0');
      const messages = messagesOf(call.body()).map(snapshotResponseFields);
      assert.ok(Buffer.concat(messages.map((m) => m.blob)).equals(Buffer.from(h.cluster.member(f).server.etcdSnapshot())), 'the member\'s own file');
    } finally {
      call.session.destroy();
    }
  } finally {
    await lever('heal', via);
  }
});
