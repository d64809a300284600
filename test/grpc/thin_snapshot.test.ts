/**
 * Maintenance.Snapshot on the thin streaming path (front_door.ts DoorServerStreamCall, snapshot_wire.ts)
 * answers on the wire as the grpc-js path does (`grpcUnary: 'grpc-js'`): the same messages byte for byte,
 * the same status, trailers and RST_STREAM, for snapshots, for errors (a malformed request, a passed
 * deadline, auth) and with the request side left open; `etcdctl snapshot save` writes the same file through
 * both and `etcdctl snapshot status` reads the same. And it streams as grpc-go does, without holding what
 * flow control holds back: a client that stops reading stops the server's writes at grpc-go's write quota,
 * and a cancelled stream stops them for good.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { serve, type ServeHandle } from '../../src/grpc/server.js';
import { installFrontDoor, type DoorServerStreamCall } from '../../src/grpc/front_door.js';
import { snapshotResponseFrames } from '../../src/grpc/snapshot_wire.js';
import { sendResponses } from '../../src/server/index.js';
import type * as M from '../../src/server/messages.js';
import { readEtcdSnapshot } from '../../src/snapshot/index.js';
import { requireCommands } from '../support/prerequisites.js';
import { ctlOk, scratchDir } from '../snapshot/helpers.js';
import { WireClient, frame, snapshotResponseFields, type WireAnswer, type WireRequest } from './raw_h2.js';

const SNAPSHOT = '/etcdserverpb.Maintenance/Snapshot';
const PUT = '/etcdserverpb.KV/Put';

interface Pair {
  readonly door: ServeHandle;
  readonly grpcJs: ServeHandle;
  readonly doorWire: WireClient;
  readonly grpcJsWire: WireClient;
}

async function pair(etcdVersion: '3.4' | '3.7'): Promise<Pair> {
  // Same seed and advertised URL: the same member and cluster IDs, so the same backend bytes on both.
  const common = { port: 0, etcdVersion, seed: 11, clientUrls: ['http://127.0.0.1:2379'] } as const;
  const door = await serve({ ...common, grpcUnary: 'door' });
  const grpcJs = await serve({ ...common, grpcUnary: 'grpc-js' });
  return { door, grpcJs, doorWire: new WireClient(door.address), grpcJsWire: new WireClient(grpcJs.address) };
}

async function closePair(p: Pair): Promise<void> {
  p.doorWire.close();
  p.grpcJsWire.close();
  await p.door.close();
  await p.grpcJs.close();
}

interface Seen {
  readonly answer: Omit<WireAnswer, 'elapsedMs'>;
  readonly messages: readonly Buffer[];
}

async function call(wire: WireClient, req: WireRequest): Promise<Seen> {
  const messages: Buffer[] = [];
  const { elapsedMs: _e, ...answer } = await wire.call({ timeoutMs: 60_000, ...req, onMessage: (m) => void messages.push(Buffer.from(m)) });
  return { answer, messages };
}

/** Sends `req` to both servers of `p`; their answers must be the same, byte for byte. */
async function same(p: Pair, req: WireRequest): Promise<Seen> {
  const a = await call(p.doorWire, req);
  const b = await call(p.grpcJsWire, req);
  assert.deepEqual(a.answer, b.answer, `${req.path}: thin path vs grpc-js`);
  assert.equal(a.messages.length, b.messages.length, `${req.path}: messages`);
  a.messages.forEach((m, i) => assert.ok(m.equals(b.messages[i]!), `${req.path}: message ${i} differs`));
  return a;
}

/** A Put request: key, then a value of `size` bytes. */
function putFrame(key: string, size: number, fill: number): Buffer {
  const k = Buffer.from(key);
  const v = Buffer.alloc(size, fill);
  const head = (field: number, len: number): Buffer => {
    const out = [field << 3 | 2];
    for (let n = len; ; n >>>= 7) {
      if (n < 0x80) {
        out.push(n);
        break;
      }
      out.push((n & 0x7f) | 0x80);
    }
    return Buffer.from(out);
  };
  return frame(Buffer.concat([head(1, k.length), k, head(2, v.length), v]));
}

/** The same history on both servers: `n` puts of `size`-byte values. */
async function load(p: Pair, n: number, size: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const body = [putFrame(`key-${String(i).padStart(5, '0')}`, size, 97 + (i % 26))];
    await Promise.all([p.doorWire.call({ path: PUT, body }), p.grpcJsWire.call({ path: PUT, body })]);
  }
}


let p34: Pair;
before(async () => {
  p34 = await pair('3.4');
  await load(p34, 40, 4000);
});
after(async () => {
  await closePair(p34);
});

test('Snapshot: the same messages, status and trailers as through grpc-js; as etcd 3.4.23 sends them', async () => {
  const snap = await same(p34, { path: SNAPSHOT, body: [frame('')] });
  assert.deepEqual([snap.answer.code, snap.answer.message, snap.answer.trailersOnly, snap.answer.contentType], [0, '', false, 'application/grpc']);
  // etcd's layout (observed on 3.4.23): 32 KiB of the file per message, no header, remaining_bytes counting
  // down to 0, then the file's SHA-256 alone.
  const parsed = snap.messages.map(snapshotResponseFields);
  const db = Buffer.concat(parsed.slice(0, -1).map((f) => f.blob));
  assert.ok(parsed.slice(0, -2).every((f) => f.blob.length === 32 * 1024));
  let left = db.length;
  for (const f of parsed.slice(0, -1)) {
    left -= f.blob.length;
    assert.equal(f.remaining, left);
  }
  assert.deepEqual(parsed.at(-1), { remaining: 0, blob: createHash('sha256').update(db).digest(), version: undefined });
  assert.equal(readEtcdSnapshot(Buffer.concat([db, parsed.at(-1)!.blob])).revisions.length, 40);
  // The request side left open: status, then RST_STREAM NO_ERROR, on both.
  await same(p34, { path: SNAPSHOT, body: [frame('')], keepOpen: true });
  await same(p34, { path: SNAPSHOT, body: [frame(''), frame('ff')] });
  await same(p34, { path: SNAPSHOT, body: [frame('')], headers: { 'content-type': 'application/grpc+proto' } });
});

test('a slow reader gets the whole snapshot: reading resumed, every byte and the SHA-256 arrive', async () => {
  // Before auth is enabled on p34 (the next test).
  const stream = http2.connect(`http://${p34.door.address}`);
  try {
    const req = stream.request({ ':method': 'POST', ':path': SNAPSHOT, 'content-type': 'application/grpc', te: 'trailers' });
    req.end(frame(''));
    const chunks: Buffer[] = [];
    let paused = false;
    const trailers = new Promise<http2.IncomingHttpHeaders>((resolve) => req.on('trailers', resolve));
    req.on('data', (d: Buffer) => {
      chunks.push(d);
      if (!paused) {
        // Stop after the first chunk for a few turns, then read on.
        paused = true;
        req.pause();
        setImmediate(() => setImmediate(() => req.resume()));
      }
    });
    await new Promise((resolve) => req.on('close', resolve));
    assert.equal((await trailers)['grpc-status'], '0');
    const all = Buffer.concat(chunks);
    const messages: Buffer[] = [];
    for (let at = 0; at < all.length; ) {
      const len = all.readUInt32BE(at + 1);
      messages.push(all.subarray(at + 5, at + 5 + len));
      at += 5 + len;
    }
    const parsed = messages.map(snapshotResponseFields);
    const db = Buffer.concat(parsed.slice(0, -1).map((f) => f.blob));
    assert.ok(parsed.at(-1)!.blob.equals(createHash('sha256').update(db).digest()));
  } finally {
    stream.close();
  }
});

test('Snapshot errors: a malformed request, a deadline passed, auth — the same answers as through grpc-js', async () => {
  const bad = await same(p34, { path: SNAPSHOT, body: [frame('08')] });
  assert.equal(bad.answer.code, 13);
  const late = await same(p34, { path: SNAPSHOT, body: [frame('')], headers: { 'grpc-timeout': '1n' } });
  assert.deepEqual([late.answer.code, late.answer.message], [4, 'context deadline exceeded']);
  await same(p34, { path: SNAPSHOT, body: [frame('')], headers: { 'grpc-timeout': '30S' } });
  // Auth on: a caller without a token, and one with a bad token.
  const root = Buffer.from('0a04726f6f74', 'hex');
  for (const [path, body] of [
    ['/etcdserverpb.Auth/UserAdd', Buffer.concat([root, Buffer.from('120172', 'hex')])],
    ['/etcdserverpb.Auth/UserGrantRole', Buffer.concat([root, Buffer.from('1204726f6f74', 'hex')])],
    ['/etcdserverpb.Auth/AuthEnable', Buffer.alloc(0)],
  ] as const) {
    const r = await same(p34, { path, body: [frame(body)] });
    assert.equal(r.answer.code, 0, path);
  }
  const anonymous = await same(p34, { path: SNAPSHOT, body: [frame('')] });
  assert.deepEqual([anonymous.answer.code, anonymous.answer.trailersOnly], [2, true]);
  await same(p34, { path: SNAPSHOT, body: [frame('')], headers: { token: 'nope.1' } });
});

test('etcd 3.7 profile: every response carries the storage version, as through grpc-js', async () => {
  const p = await pair('3.7');
  try {
    await load(p, 3, 100);
    const snap = await same(p, { path: SNAPSHOT, body: [frame('')] });
    assert.deepEqual(new Set(snap.messages.map((m) => snapshotResponseFields(m).version)), new Set(['3.7.0']));
  } finally {
    await closePair(p);
  }
});

test('etcdctl snapshot save / status: the same file and status through both paths', { skip: requireCommands(['etcdctl']), timeout: 120_000 }, async () => {
  const p = await pair('3.4');
  const scratch = scratchDir();
  try {
    await load(p, 30, 3000);
    const files = [join(scratch.dir, 'door.db'), join(scratch.dir, 'grpc-js.db')];
    await ctlOk(['snapshot', 'save', files[0]!], p.door.address);
    await ctlOk(['snapshot', 'save', files[1]!], p.grpcJs.address);
    assert.ok(readFileSync(files[0]!).equals(readFileSync(files[1]!)), 'the saved files differ');
    const [a, b] = await Promise.all(files.map((f) => ctlOk(['snapshot', 'status', f, '-w', 'json'])));
    assert.deepEqual(JSON.parse(a!), JSON.parse(b!));
  } finally {
    scratch.cleanup();
    await closePair(p);
  }
});

/** Resolves once `cond()` holds, checking after each turn of the event loop (no timer: it waits on I/O). */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let turns = 0; !cond(); turns++) {
    if (turns > 1_000_000) assert.fail(`never happened: ${what}`);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

test('a client that stops reading: the door stops at the write quota, and a cancel stops it for good', async () => {
  // A door of its own, with a server-streaming method that counts what it is asked for: 1 MiB messages
  // of 64 KiB, far more than the HTTP/2 windows (64 KiB per stream and per connection by default).
  const server = new grpc.Server();
  await new Promise<void>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err) => (err === null ? resolve() : reject(err))));
  const port = (server as unknown as { http2Servers: Map<http2.Http2Server, unknown> }).http2Servers.keys().next().value!.address() as { port: number };
  const MESSAGE = 64 * 1024;
  const TOTAL = 1024;
  let asked = 0;
  let served: DoorServerStreamCall | undefined;
  const body = Buffer.alloc(MESSAGE, 7);
  installFrontDoor(server, {
    methods: new Map([['/test.Big/Stream', 'serverStream']]),
    services: new Set(['test.Big']),
    maxReceiveBytes: 1 << 20,
    malformedMethodCode: 12,
    headerErrorsAnswered: false,
    serverStream: new Map([
      [
        '/test.Big/Stream',
        (c: DoorServerStreamCall) => {
          served = c;
          // The responses, made as they are asked for.
          const responses = {
            [Symbol.iterator]: () => ({
              next: (): IteratorResult<M.SnapshotResponse> =>
                asked < TOTAL ? { done: false, value: { header: null, remaining_bytes: String((TOTAL - ++asked) * MESSAGE), blob: body } } : { done: true, value: undefined },
            }),
          };
          const sink = c.sink(snapshotResponseFrames);
          if (sink !== undefined) sendResponses(responses, sink);
        },
      ],
    ]),
  });
  const session = http2.connect(`http://127.0.0.1:${port.port}`);
  try {
    const stream = session.request({ ':method': 'POST', ':path': '/test.Big/Stream', 'content-type': 'application/grpc', te: 'trailers' });
    stream.on('error', () => {});
    stream.end(frame(''));
    let received = 0;
    await new Promise<void>((resolve) => {
      const onData = (d: Buffer): void => {
        received += d.length;
        // Eight messages read, so the door has been through its drain cycle; then the client stops.
        if (received >= 8 * MESSAGE) {
          stream.off('data', onData);
          stream.pause();
          resolve();
        }
      };
      stream.on('data', onData);
    });
    // Not read any further: the server's writes wait on flow control, and it stops asking for messages
    // once grpc-go's write quota is queued (it waits for 'drain').
    await until(() => served !== undefined && served.stream.listenerCount('drain') > 0 && served.stream.session!.state.remoteWindowSize === 0, 'the door waits for drain, the connection window spent');
    const askedWhenBlocked = asked;
    // Asked for beyond what the client read: at most the HTTP/2 window (65,535 bytes) and the quota, in
    // messages; and no more while the client does not read, however many turns pass.
    assert.ok(askedWhenBlocked * MESSAGE - received <= 65_535 + 64 * 1024 + MESSAGE, `asked for ${askedWhenBlocked} messages while the client read ${received} bytes`);
    assert.ok(served!.stream.writableLength <= 64 * 1024 + MESSAGE, `queued ${served!.stream.writableLength} bytes`);
    for (let turn = 0; turn < 200; turn++) await new Promise<void>((resolve) => setImmediate(resolve));
    assert.equal(asked, askedWhenBlocked);
    // Cancel: the stream closes, nothing more is asked for, and the door no longer waits on it.
    stream.close(http2.constants.NGHTTP2_CANCEL);
    await until(() => served!.stream.closed && served!.stream.destroyed, 'the stream closes on cancel');
    await new Promise<void>((resolve) => setImmediate(resolve));
    assert.equal(asked, askedWhenBlocked);
    assert.equal(served!.stream.listenerCount('drain'), 0);
  } finally {
    session.destroy();
    server.forceShutdown();
  }
});
