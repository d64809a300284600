/**
 * Watch streams whose clients never read, through real sockets (the attack bench's slow readers, issue 32):
 * once a stream's window and channel are full its watchers are victims, and from then on a put costs
 * nothing on its account — as in etcd, where such a stream's send loop sits in gRPC's Send and the put path
 * leaves its victims to the victim loop. Counted as work (the calls a delivery looks at), not as time.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import * as net from 'node:net';
import { serve, servedServerOf, type ServeHandle } from '../../src/grpc/server.js';
import { CLIENT_PREFACE, Flags, FrameType, frame, settingsFrame } from '../../src/h2/frames.js';
import { HpackEncoder } from '../../src/h2/hpack.js';
import { B, RawClient, nextMessages, type Msg } from './helpers.js';
import { frame as grpcFrame } from './raw_h2.js';

let door: ServeHandle;
let kv: RawClient;
let watch: RawClient;
const sockets: net.Socket[] = [];
before(async () => {
  door = await serve({ port: 0, etcdVersion: '3.4' });
  kv = new RawClient(door.address, 'KV');
  watch = new RawClient(door.address, 'Watch');
});
after(async () => {
  for (const s of sockets) s.destroy();
  kv.close();
  watch.close();
  await door.close();
});

const WATCH = new HpackEncoder().encode([':method', 'POST', ':scheme', 'http', ':path', '/etcdserverpb.Watch/Watch', ':authority', 'x', 'content-type', 'application/grpc', 'te', 'trailers']);
/** WatchRequest{create_request{key: "k"}}, gRPC-framed. */
const CREATE = grpcFrame('0a 03 0a 01 6b');

/** Opens `n` watch streams on key "k" over one raw connection that never reads a byte. */
async function slowReader(n: number): Promise<void> {
  const s = net.connect(door.port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => s.once('connect', resolve).once('error', reject));
  s.on('error', () => {});
  s.pause();
  sockets.push(s);
  const parts = [CLIENT_PREFACE, settingsFrame([])];
  for (let i = 0; i < n; i++) parts.push(frame(FrameType.HEADERS, Flags.END_HEADERS, 2 * i + 1, WATCH), frame(FrameType.DATA, 0, 2 * i + 1, CREATE));
  s.write(Buffer.concat(parts));
}

/** Waits (turn by turn, 30 s at most: a loaded machine) until `cond` holds. */
const until = async (cond: () => boolean, what: string): Promise<void> => {
  const end = performance.now() + 30_000;
  while (!cond() && performance.now() < end) await new Promise((r) => setImmediate(r));
  assert.ok(cond(), what);
};
const victims = (): number => door.server.watchable.victims.reduce((n, b) => n + b.size, 0);

/**
 * Blocks every slow reader's watchers: two values over the write quota (the connection's window lets the
 * first stream send 64 KiB of the first), then the channel's 128 responses and more.
 */
async function fillSlowReaders(expected: number): Promise<void> {
  await until(() => door.openStreams >= expected, `${expected} watch streams open`);
  await until(() => door.server.watchable.synced.size + victims() >= expected, 'every watcher created');
  // Put in process (the innocent's puts below go over the wire): only what the watchers receive matters here.
  const put = (value: Buffer): unknown => door.server.services.kv.put({ key: B('k'), value });
  for (let i = 0; i < 2; i++) put(Buffer.alloc(70 * 1024, 0x76));
  for (let i = 0; i < 130; i++) put(B(`v${i}`));
  await until(() => victims() === expected, `all ${expected} slow watchers are victims (${victims()})`);
}

/** Calls a delivery looks at per put of the innocent client, whose own watcher on the same key reads each event. */
async function visitsPerPut(puts: number): Promise<number> {
  const w = watch.bidi('watch');
  w.on('error', () => {}); // the cancel below
  try {
    w.write({ create_request: { key: B('k') } });
    await nextMessages(w, 1);
    const before = servedServerOf(door).delivery.visited;
    for (let i = 0; i < puts; i++) {
      const event = nextMessages(w, 1);
      await kv.unary('put', { key: B('k'), value: B(`innocent ${i}`) });
      const [m] = (await event) as [Msg & { events: unknown[] }];
      assert.equal(m.events.length, 1);
    }
    return (servedServerOf(door).delivery.visited - before) / puts;
  } finally {
    w.cancel();
  }
}

test('watch streams that never read cost an innocent put nothing once their watchers are victims, however many', async () => {
  await slowReader(10);
  await fillSlowReaders(10);
  const few = await visitsPerPut(20);
  for (let c = 0; c < 4; c++) await slowReader(50);
  await fillSlowReaders(210);
  const many = await visitsPerPut(20);
  // The innocent watcher's call is looked at once per put (now and then once more: a read of its own, a
  // timer step), never the blocked ones: before, every flush looked at every open call, twice (22 and 422).
  const seen = `calls looked at per put: ${few} with 10 slow readers, ${many} with 210`;
  assert.ok(few >= 1 && few <= 2, seen);
  assert.ok(many >= 1 && many <= 2, seen);
});
