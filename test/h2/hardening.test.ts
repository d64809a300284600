/**
 * The HTTP/2 connection against the inputs of issue 32, frame by frame over a real socket: what a client
 * can make the server hold or send must stay bounded, and a violation gets the answer RFC 9113 names.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrorCode, Flags, FrameType, frame } from '../../src/h2/frames.js';
import { HpackEncoder } from '../../src/h2/hpack.js';
import type { H2Stream } from '../../src/h2/stream.js';
import { RawClient, startServer } from './helpers.js';

const REQUEST = [':method', 'POST', ':scheme', 'http', ':path', '/p.S/M', ':authority', 'localhost', 'content-type', 'application/grpc'];
const block = (): Buffer => new HpackEncoder().encode(REQUEST);

/** A server answering each request at its end (200, a DATA frame, trailers), and one raw client on it. */
async function setup(): Promise<{ client: RawClient; streams: H2Stream[]; close(): Promise<void> }> {
  const streams: H2Stream[] = [];
  const srv = await startServer((st) => {
    streams.push(st);
    st.onData = () => {};
    st.onEnd = () => {
      st.respond([':status', '200']);
      st.write(Buffer.from('ok'));
      st.end(['grpc-status', '0']);
    };
  });
  const client = await RawClient.connect(srv.port);
  return {
    client,
    streams,
    close: async () => {
      client.destroy();
      await srv.close();
    },
  };
}

test('empty CONTINUATION frames count against the header block limit with their frame headers: GOAWAY ENHANCE_YOUR_CALM', async () => {
  const { client, streams, close } = await setup();
  try {
    // 1 MiB / 9 octets: this many empty frames carry no header octet but exceed the limit by their frame headers.
    const empty = frame(FrameType.CONTINUATION, 0, 1, Buffer.alloc(0));
    const n = Math.ceil((1 << 20) / empty.length) + 1;
    client.send(frame(FrameType.HEADERS, Flags.END_STREAM, 1, Buffer.alloc(0)), Buffer.concat(Array.from({ length: n }, () => empty)));
    // Completed now, the block would be a valid request: the server must have given up on it before.
    client.send(frame(FrameType.CONTINUATION, Flags.END_HEADERS, 1, block()));
    const first = await client.waitFor((f) => f.type === FrameType.GOAWAY || f.streamId === 1);
    assert.equal(first?.type, FrameType.GOAWAY, 'the request was answered');
    assert.equal(first.payload.readUInt32BE(4), ErrorCode.ENHANCE_YOUR_CALM);
    assert.equal(streams.length, 0);
    await client.closed();
  } finally {
    await close();
  }
});
