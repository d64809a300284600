/**
 * src/http/h2's ping policy (grpc-go's keepalive enforcement) against hand-made PING frames, on a clock the
 * test sets before each PING: which PINGs are early, how a response forgives them, and how the connection
 * ends on the third early one in a row (GOAWAY ENHANCE_YOUR_CALM "too_many_pings").
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrorCode, Flags, FrameType, frame } from '../../src/h2/frames.js';
import { HpackEncoder } from '../../src/h2/hpack.js';
import type { PingPolicy } from '../../src/h2/connection.js';
import type { H2Stream } from '../../src/h2/stream.js';
import { RawClient, startServer } from './helpers.js';

const HOUR = 60 * 60 * 1000;
const REQUEST = [':method', 'POST', ':scheme', 'http', ':path', '/p.S/M', ':authority', 'localhost', 'content-type', 'application/grpc'];

interface Setup {
  readonly client: RawClient;
  readonly streams: H2Stream[];
  /** Sends PING number `n` at time `at` and waits for its ACK; false when the server ended the connection on it. */
  ping(n: number, at: number): Promise<boolean>;
  /** Opens streams `ids` (headers only; the server holds them open), then PINGs once at the current time to know they arrived. */
  open(...ids: number[]): Promise<H2Stream[]>;
  close(): Promise<void>;
}

async function setup(policy: Omit<PingPolicy, 'now'> | undefined): Promise<Setup> {
  let now = 0;
  const streams: H2Stream[] = [];
  const srv = await startServer(
    (st) => {
      streams.push(st);
      st.onData = () => {};
    },
    { pingPolicy: policy === undefined ? undefined : { ...policy, now: () => now } },
  );
  const client = await RawClient.connect(srv.port);
  const encoder = new HpackEncoder();
  const self: Setup = {
    client,
    streams,
    async ping(n, at) {
      now = at;
      const payload = Buffer.alloc(8);
      payload.writeUInt32BE(n, 4);
      client.send(frame(FrameType.PING, 0, 0, payload));
      const ack = await client.waitFor((f) => f.type === FrameType.PING && (f.flags & Flags.ACK) !== 0 && f.payload.readUInt32BE(4) === n);
      // A GOAWAY for it comes right behind the ACK, in the same write.
      return ack !== undefined && !client.frames.some((f) => f.type === FrameType.GOAWAY);
    },
    async open(...ids) {
      const before = streams.length;
      for (const id of ids) client.send(frame(FrameType.HEADERS, Flags.END_HEADERS, id, encoder.encode(REQUEST)));
      // A PING after them comes back once the server has handled them.
      assert.ok(await self.ping(0x7fff0000 + before, now));
      assert.equal(streams.length, before + ids.length);
      return streams.slice(before);
    },
    async close() {
      client.destroy();
      await srv.close();
    },
  };
  return self;
}

/** The GOAWAY the server ended the connection with, once the socket closed. */
async function endedWith(c: RawClient): Promise<{ lastStreamId: number; code: number; debug: string } | undefined> {
  const g = await c.goaway();
  await c.closed();
  return g;
}

test('without a ping policy every PING is answered, however often', async () => {
  const s = await setup(undefined);
  try {
    for (let n = 1; n <= 20; n++) assert.ok(await s.ping(n, 0), `PING ${n}`);
    assert.equal(s.client.frames.filter((f) => f.type === FrameType.GOAWAY).length, 0);
  } finally {
    await s.close();
  }
});

test('no stream open: PINGs under two hours apart are early; the third early one is answered, then GOAWAY too_many_pings', async () => {
  const s = await setup({ minTimeMs: 1000, permitWithoutStream: false });
  try {
    // Spaced by two hours, any number is fine.
    let t = 0;
    for (let n = 1; n <= 5; n++) assert.ok(await s.ping(n, (t += 2 * HOUR)), `PING ${n}`);
    // An hour apart: early. Two early ones are tolerated.
    for (let n = 6; n <= 7; n++) assert.ok(await s.ping(n, (t += HOUR)), `PING ${n}`);
    assert.equal(await s.ping(8, (t += HOUR)), false);
    assert.ok(s.client.frames.some((f) => f.type === FrameType.PING && (f.flags & Flags.ACK) !== 0 && f.payload.readUInt32BE(4) === 8), 'the last PING is answered first');
    assert.deepStrictEqual(await endedWith(s.client), { lastStreamId: 0, code: ErrorCode.ENHANCE_YOUR_CALM, debug: 'too_many_pings' });
  } finally {
    await s.close();
  }
});

test('permitWithoutStream: with no stream open, PINGs are held to minTime only', async () => {
  const s = await setup({ minTimeMs: 1000, permitWithoutStream: true });
  try {
    for (let n = 1; n <= 8; n++) assert.ok(await s.ping(n, n * 1000), `PING ${n}`);
    for (let n = 9; n <= 10; n++) assert.ok(await s.ping(n, 8500), `PING ${n}`);
    assert.equal(await s.ping(11, 8500), false);
    assert.equal((await endedWith(s.client))?.debug, 'too_many_pings');
  } finally {
    await s.close();
  }
});

test('a stream open: PINGs minTime apart are fine; the third early one in a row ends the connection, naming the last stream', async () => {
  const s = await setup({ minTimeMs: 1000, permitWithoutStream: false });
  try {
    await s.open(1, 3);
    let t = 0;
    for (let n = 1; n <= 6; n++) assert.ok(await s.ping(n, (t += 1000)), `PING ${n}`);
    for (let n = 7; n <= 8; n++) assert.ok(await s.ping(n, (t += 999)), `PING ${n}`);
    assert.equal(await s.ping(9, t), false);
    assert.deepStrictEqual(await endedWith(s.client), { lastStreamId: 3, code: ErrorCode.ENHANCE_YOUR_CALM, debug: 'too_many_pings' });
    // The open streams close with the GOAWAY's code.
    assert.deepStrictEqual(
      s.streams.map((st) => st.closed),
      [true, true],
    );
  } finally {
    await s.close();
  }
});

test('response HEADERS or DATA sent since the last PING forgive the early PINGs so far', async () => {
  const s = await setup({ minTimeMs: 1000, permitWithoutStream: false });
  try {
    const [st] = await s.open(1);
    // The PING that confirmed the stream counts as the first; two early ones follow.
    for (let n = 1; n <= 2; n++) assert.ok(await s.ping(n, 0), `PING ${n}`);
    st!.respond([':status', '200', 'content-type', 'application/grpc']);
    for (let n = 3; n <= 5; n++) assert.ok(await s.ping(n, 0), `PING ${n} after HEADERS`);
    st!.write(Buffer.from([0, 0, 0, 0, 1, 7]));
    for (let n = 6; n <= 8; n++) assert.ok(await s.ping(n, 0), `PING ${n} after DATA`);
    // Nothing sent since: the third early PING in a row is one too many.
    assert.equal(await s.ping(9, 0), false);
    assert.equal((await endedWith(s.client))?.code, ErrorCode.ENHANCE_YOUR_CALM);
  } finally {
    await s.close();
  }
});
