/**
 * Maintenance.Snapshot through the gRPC door (door.ts, call.ts responseSink, snapshot_wire.ts) answers on
 * the wire exactly as grpc-js's server did before the door replaced it: the same messages byte for byte, the
 * same status, trailers and RST_STREAM, for snapshots, for errors (a malformed request, a passed deadline,
 * auth) and with the request side left open; `etcdctl snapshot save` writes the same file as it did through
 * grpc-js and `etcdctl snapshot status` reads the same. grpc-js's answers were recorded on the same requests,
 * in the same order, on servers of the same seed and history (fixtures/grpc_js_snapshot_answers.json, from
 * commit 96ecdb9's serve({ grpcUnary: 'grpc-js' })). And it streams as grpc-go does, without holding what
 * flow control holds back: a client that stops reading stops the member's snapshot at grpc-go's write quota,
 * and a cancelled stream stops it for good.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as http2 from 'node:http2';
import { serve, type ServeHandle } from '../../src/grpc/server.js';
import type * as M from '../../src/server/messages.js';
import { readEtcdSnapshot } from '../../src/snapshot/index.js';
import { requireCommands } from '../support/prerequisites.js';
import { ctlOk, scratchDir } from '../snapshot/helpers.js';
import { WireClient, frame, snapshotResponseFields, type WireAnswer, type WireRequest } from './raw_h2.js';

const SNAPSHOT = '/etcdserverpb.Maintenance/Snapshot';
const PUT = '/etcdserverpb.KV/Put';

/** A request as the fixture names it: path, body chunks in hex, extra headers, a side left open. */
interface RecordedRequest {
  readonly path: string;
  readonly body?: readonly string[];
  readonly headers?: Readonly<Record<string, string>>;
  readonly keepOpen?: boolean;
}

interface Golden {
  readonly answers: Readonly<
    Record<
      string,
      {
        readonly request: RecordedRequest;
        readonly answer: Omit<WireAnswer, 'elapsedMs'>;
        /** The messages in hex, or a stream of several recorded once under `streams` by its SHA-256. */
        readonly messages: readonly string[] | { readonly stream: string };
      }
    >
  >;
  /** What etcdctl 3.4.23 saved through grpc-js: the file's size and SHA-256, and `snapshot status -w json`. */
  readonly etcdctl: { readonly file: { readonly bytes: number; readonly sha256: string }; readonly status: unknown };
  readonly streams: Readonly<Record<string, readonly string[]>>;
}

const golden = JSON.parse(readFileSync(new URL('./fixtures/grpc_js_snapshot_answers.json', import.meta.url), 'utf8')) as Golden;

interface Served {
  readonly h: ServeHandle;
  readonly wire: WireClient;
}

async function served(etcdVersion: '3.4' | '3.7'): Promise<Served> {
  // The seed and advertised URL of the recording: the same member and cluster IDs, so the same backend bytes.
  const common = { port: 0, etcdVersion, seed: 11, clientUrls: ['http://127.0.0.1:2379'] } as const;
  const h = await serve({ ...common });
  return { h, wire: new WireClient(h.address) };
}

async function close(s: Served): Promise<void> {
  s.wire.close();
  await s.h.close();
}

interface Seen {
  readonly answer: Omit<WireAnswer, 'elapsedMs'>;
  readonly messages: readonly Buffer[];
}

/** `req` in the fixture's form (JSON drops what is undefined). */
function recorded(req: WireRequest): RecordedRequest {
  return JSON.parse(
    JSON.stringify({ path: req.path, body: req.body?.map((b) => b.toString('hex')), headers: req.headers, keepOpen: req.keepOpen }),
  ) as RecordedRequest;
}

/** Sends `req` to `s`; the answer must be grpc-js's recorded answer to the request named `name`, byte for byte. */
async function same(s: Served, name: string, req: WireRequest): Promise<Seen> {
  const want = golden.answers[name];
  assert.ok(want !== undefined, `no recorded answer named ${name}`);
  assert.deepEqual(recorded(req), want.request, `${name}: not the request that was recorded`);
  const messages: Buffer[] = [];
  const { elapsedMs: _e, ...answer } = await s.wire.call({ timeoutMs: 60_000, ...req, onMessage: (m) => void messages.push(Buffer.from(m)) });
  // Through JSON as the recording went: a field left undefined is absent on both sides.
  assert.deepEqual(JSON.parse(JSON.stringify(answer)), want.answer, `${name}: the door vs grpc-js`);
  const wanted = Array.isArray(want.messages) ? want.messages : golden.streams[(want.messages as { stream: string }).stream];
  assert.ok(wanted !== undefined, `${name}: the recorded stream is missing`);
  assert.equal(messages.length, wanted.length, `${name}: messages`);
  messages.forEach((m, i) => assert.ok(m.equals(Buffer.from(wanted[i]!, 'hex')), `${name}: message ${i} differs`));
  return { answer, messages };
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

/** The history of the recording: `n` puts of `size`-byte values. */
async function load(s: Served, n: number, size: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const a = await s.wire.call({ path: PUT, body: [putFrame(`key-${String(i).padStart(5, '0')}`, size, 97 + (i % 26))] });
    assert.equal(a.code, 0);
  }
}

let s34: Served;
before(async () => {
  s34 = await served('3.4');
  await load(s34, 40, 4000);
});
after(async () => {
  await close(s34);
});

test('Snapshot: the same messages, status and trailers as grpc-js sent; as etcd 3.4.23 sends them', async () => {
  const snap = await same(s34, 'Snapshot', { path: SNAPSHOT, body: [frame('')] });
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
  // The request side left open: status, then RST_STREAM NO_ERROR.
  await same(s34, 'Snapshot, the request side left open', { path: SNAPSHOT, body: [frame('')], keepOpen: true });
  await same(s34, 'Snapshot, then bytes after the message', { path: SNAPSHOT, body: [frame(''), frame('ff')] });
  await same(s34, 'Snapshot, content-type application/grpc+proto', { path: SNAPSHOT, body: [frame('')], headers: { 'content-type': 'application/grpc+proto' } });
});

test('a slow reader gets the whole snapshot: reading resumed, every byte and the SHA-256 arrive', async () => {
  // Before auth is enabled on s34 (the next test).
  const session = http2.connect(`http://${s34.h.address}`);
  try {
    const req = session.request({ ':method': 'POST', ':path': SNAPSHOT, 'content-type': 'application/grpc', te: 'trailers' });
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
    session.close();
  }
});

test('Snapshot errors: a malformed request, a deadline passed, auth — the same answers as grpc-js sent', async () => {
  const bad = await same(s34, 'Snapshot with a malformed request', { path: SNAPSHOT, body: [frame('08')] });
  assert.equal(bad.answer.code, 13);
  const late = await same(s34, 'Snapshot, grpc-timeout 1n', { path: SNAPSHOT, body: [frame('')], headers: { 'grpc-timeout': '1n' } });
  assert.deepEqual([late.answer.code, late.answer.message], [4, 'context deadline exceeded']);
  await same(s34, 'Snapshot, grpc-timeout 30S', { path: SNAPSHOT, body: [frame('')], headers: { 'grpc-timeout': '30S' } });
  // Auth on: a caller without a token, and one with a bad token.
  const root = Buffer.from('0a04726f6f74', 'hex');
  for (const [path, body] of [
    ['/etcdserverpb.Auth/UserAdd', Buffer.concat([root, Buffer.from('120172', 'hex')])],
    ['/etcdserverpb.Auth/UserGrantRole', Buffer.concat([root, Buffer.from('1204726f6f74', 'hex')])],
    ['/etcdserverpb.Auth/AuthEnable', Buffer.alloc(0)],
  ] as const) {
    const r = await same(s34, path.slice(path.lastIndexOf('/') + 1), { path, body: [frame(body)] });
    assert.equal(r.answer.code, 0, path);
  }
  const anonymous = await same(s34, 'Snapshot without a token (auth on)', { path: SNAPSHOT, body: [frame('')] });
  assert.deepEqual([anonymous.answer.code, anonymous.answer.trailersOnly], [2, true]);
  await same(s34, 'Snapshot with a bad token (auth on)', { path: SNAPSHOT, body: [frame('')], headers: { token: 'nope.1' } });
});

test('etcd 3.7 profile: every response carries the storage version, as grpc-js sent it', async () => {
  const s = await served('3.7');
  try {
    await load(s, 3, 100);
    const snap = await same(s, 'etcd 3.7: Snapshot', { path: SNAPSHOT, body: [frame('')] });
    assert.deepEqual(new Set(snap.messages.map((m) => snapshotResponseFields(m).version)), new Set(['3.7.0']));
  } finally {
    await close(s);
  }
});

test('etcdctl snapshot save / status: the same file and status as etcdctl got through grpc-js', { skip: requireCommands(['etcdctl']), timeout: 120_000 }, async () => {
  const s = await served('3.4');
  const scratch = scratchDir();
  try {
    await load(s, 30, 3000);
    const file = join(scratch.dir, 'door.db');
    await ctlOk(['snapshot', 'save', file], s.h.address);
    const bytes = readFileSync(file);
    assert.deepEqual({ bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') }, golden.etcdctl.file, 'the saved file differs');
    assert.deepEqual(JSON.parse((await ctlOk(['snapshot', 'status', file, '-w', 'json']))!), golden.etcdctl.status);
  } finally {
    scratch.cleanup();
    await close(s);
  }
});

/** Resolves once `cond()` holds, checking after each turn of the event loop (no timer: it waits on I/O). */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let turns = 0; !cond(); turns++) {
    if (turns > 1_000_000) assert.fail(`never happened: ${what}`);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** Resolves once `value()` has not changed for `turns` turns of the event loop in a row. */
async function settled(value: () => number, turns: number, what: string): Promise<number> {
  let last = value();
  let still = 0;
  await until(() => {
    const v = value();
    still = v === last ? still + 1 : 0;
    last = v;
    return still >= turns;
  }, what);
  return last;
}

test('a client that stops reading: the door stops pulling the snapshot at the write quota, and a cancel stops it for good', async () => {
  // A member of its own with a snapshot far larger than the HTTP/2 windows (node:http2's client: 64 KiB per
  // stream and per connection): 2 MiB of values, some 70 messages of 32 KiB.
  const s = await served('3.4');
  try {
    await load(s, 256, 8000);
    // How far the member's snapshot was pulled: sendResponses asks the iterator for a response only when the
    // stream takes more (call.ts responseSink, grpc-go's write quota of 64 KiB).
    const maintenance = s.h.server.services.maintenance;
    const snapshotStream = maintenance.snapshotStream.bind(maintenance);
    let pulled = 0;
    let total = 0;
    maintenance.snapshotStream = (...args) => {
      const it = snapshotStream(...args);
      const counted: IterableIterator<M.SnapshotResponse> = {
        next: () => {
          const r = it.next();
          if (r.done !== true) pulled++;
          return r;
        },
        [Symbol.iterator]: () => counted,
      };
      return counted;
    };
    // The whole snapshot, read at once, to count its messages.
    const whole = await s.wire.call({ path: SNAPSHOT, body: [frame('')], timeoutMs: 60_000, onMessage: () => void total++ });
    assert.equal(whole.code, 0);
    assert.equal(pulled, total);
    assert.ok(total > 60, `${total} messages`);
    pulled = 0;

    const MESSAGE = 32 * 1024;
    const session = http2.connect(`http://${s.h.address}`);
    session.on('error', () => {});
    try {
      const stream = session.request({ ':method': 'POST', ':path': SNAPSHOT, 'content-type': 'application/grpc', te: 'trailers' });
      stream.on('error', () => {});
      const closed = new Promise<void>((resolve) => stream.on('close', resolve));
      stream.end(frame(''));
      let received = 0;
      await new Promise<void>((resolve) => {
        const onData = (d: Buffer): void => {
          received += d.length;
          // Four messages read, so the door has been through its drain cycle; then the client stops.
          if (received >= 4 * MESSAGE) {
            stream.off('data', onData);
            stream.pause();
            resolve();
          }
        };
        stream.on('data', onData);
      });
      // Not read any further: the windows fill, the door's writes queue up to the quota, and then it stops
      // asking the member for responses (it waits for onDrain) — however many turns pass.
      await until(() => stream.state.localWindowSize === 0, 'the stream window spent');
      const pulledWhenBlocked = await settled(() => pulled, 200, 'the door stops pulling');
      // Pulled beyond what the client read: at most the HTTP/2 window (65,535 bytes), the write quota and one
      // message (the write that reached the quota).
      assert.ok(pulledWhenBlocked * MESSAGE - received <= 65_535 + 64 * 1024 + MESSAGE, `pulled ${pulledWhenBlocked} responses while the client read ${received} bytes`);
      assert.ok(pulledWhenBlocked < total - 10, `pulled ${pulledWhenBlocked} of ${total}`);
      for (let turn = 0; turn < 200; turn++) await new Promise<void>((resolve) => setImmediate(resolve));
      assert.equal(pulled, pulledWhenBlocked);
      // Cancel: the stream closes and nothing more is pulled.
      stream.close(http2.constants.NGHTTP2_CANCEL);
      await closed;
      for (let turn = 0; turn < 200; turn++) await new Promise<void>((resolve) => setImmediate(resolve));
      assert.equal(pulled, pulledWhenBlocked);
      // The connection serves on: the cancelled stream's unsent responses no longer hold it up.
      const range = session.request({ ':method': 'POST', ':path': '/etcdserverpb.KV/Range', 'content-type': 'application/grpc', te: 'trailers' });
      range.end(frame('0a096b65792d3030303030')); // key-00000
      range.resume();
      const status = await new Promise<unknown>((resolve) => range.on('trailers', (t) => resolve(t['grpc-status'])));
      assert.equal(status, '0');
    } finally {
      session.destroy();
    }
  } finally {
    await close(s);
  }
});
