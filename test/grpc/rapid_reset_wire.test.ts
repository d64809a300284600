/**
 * Rapid reset (CVE-2023-44487) at the gRPC door, frame by frame through a real socket: a call the client
 * resets in the same write that sent it costs the parse of its frames, not its handler's work — grpc-go runs
 * a handler on a goroutine of its own, which finds the call's context cancelled when the reset was read
 * first, so etcd applies and answers none of them either (docs/security.md).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { serve, type ServeHandle } from '../../src/grpc/server.js';
import { ErrorCode, Flags, FrameType, frame, settingsFrame } from '../../src/h2/frames.js';
import { HpackEncoder } from '../../src/h2/hpack.js';
import { RawClient } from '../h2/helpers.js';
import { frame as grpcFrame } from './raw_h2.js';

let door: ServeHandle;
before(async () => {
  door = await serve({ port: 0, etcdVersion: '3.4' });
});
after(async () => {
  await door.close();
});

const PUT = new HpackEncoder().encode([':method', 'POST', ':scheme', 'http', ':path', '/etcdserverpb.KV/Put', ':authority', 'x', 'content-type', 'application/grpc', 'te', 'trailers']);
/** PutRequest{key, value: "v"}, gRPC-framed. */
const put = (key: string): Buffer => grpcFrame(Buffer.concat([Buffer.from([0x0a, key.length]), Buffer.from(key), Buffer.from([0x12, 0x01, 0x76])]));
const CANCEL = Buffer.from([0, 0, 0, ErrorCode.CANCEL]);
const stored = (key: string): number => door.server.services.kv.range({ key: Buffer.from(key) }).kvs.length;

/** Sends SETTINGS and waits for its ACK: the server has handled (and answered) every frame sent before it. */
async function settled(c: RawClient, acksBefore: number): Promise<void> {
  c.send(settingsFrame([]));
  await c.waitFor(() => c.frames.filter((f) => f.type === FrameType.SETTINGS && (f.flags & Flags.ACK) !== 0).length > acksBefore);
}
const acks = (c: RawClient): number => c.frames.filter((f) => f.type === FrameType.SETTINGS && (f.flags & Flags.ACK) !== 0).length;

test('a Put reset in the write that sent it is neither applied nor answered; the call beside it is', async () => {
  const c = await RawClient.connect(door.port);
  try {
    const before = acks(c);
    c.send(
      frame(FrameType.HEADERS, Flags.END_HEADERS, 1, PUT),
      frame(FrameType.DATA, Flags.END_STREAM, 1, put('reset')),
      frame(FrameType.RST_STREAM, 0, 1, CANCEL),
      frame(FrameType.HEADERS, Flags.END_HEADERS, 3, PUT),
      frame(FrameType.DATA, Flags.END_STREAM, 3, put('kept')),
    );
    await c.waitFor((f) => f.streamId === 3 && f.type === FrameType.HEADERS && (f.flags & Flags.END_STREAM) !== 0);
    await settled(c, before);
    assert.deepEqual(
      c.frames.filter((f) => f.streamId === 1).map((f) => f.type),
      [],
      'the reset call was answered',
    );
    assert.equal(stored('reset'), 0, 'the reset Put was applied');
    assert.equal(stored('kept'), 1);
    // A reset that comes in a later write finds the call answered already: nothing to undo, nothing sent.
    c.send(frame(FrameType.HEADERS, Flags.END_HEADERS, 5, PUT), frame(FrameType.DATA, Flags.END_STREAM, 5, put('late')));
    await c.waitFor((f) => f.streamId === 5 && f.type === FrameType.HEADERS && (f.flags & Flags.END_STREAM) !== 0);
    c.send(frame(FrameType.RST_STREAM, 0, 5, CANCEL));
    await settled(c, acks(c));
    assert.equal(stored('late'), 1);
    assert.equal(c.ended, false);
  } finally {
    c.destroy();
  }
});

test('1000 calls reset before their answer, net of the calls answered, end the connection: GOAWAY ENHANCE_YOUR_CALM too_many_early_resets', async () => {
  const c = await RawClient.connect(door.port);
  try {
    let id = 1;
    const resetCalls = (n: number): Buffer[] => {
      const out: Buffer[] = [];
      for (let i = 0; i < n; i++, id += 2) out.push(frame(FrameType.HEADERS, Flags.END_HEADERS, id, PUT), frame(FrameType.DATA, 0, id, put('r')), frame(FrameType.RST_STREAM, 0, id, CANCEL));
      return out;
    };
    c.send(...resetCalls(1000));
    await settled(c, acks(c));
    assert.equal(c.ended, false, 'a thousand early resets ended the connection');
    // An answered call gives one back.
    const answered = id;
    id += 2;
    c.send(frame(FrameType.HEADERS, Flags.END_HEADERS, answered, PUT), frame(FrameType.DATA, Flags.END_STREAM, answered, put('a')));
    await c.waitFor((f) => f.streamId === answered && f.type === FrameType.HEADERS && (f.flags & Flags.END_STREAM) !== 0);
    c.send(...resetCalls(1));
    await settled(c, acks(c));
    assert.equal(c.ended, false);
    c.send(...resetCalls(1));
    const goaway = await c.goaway();
    assert.deepEqual(goaway, { lastStreamId: id - 2, code: ErrorCode.ENHANCE_YOUR_CALM, debug: 'too_many_early_resets' });
    await c.closed();
    assert.equal(stored('r'), 0);
    assert.equal(door.openHttp2Streams, 0);
  } finally {
    c.destroy();
  }
});
