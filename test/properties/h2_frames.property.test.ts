/**
 * A frame-level fuzzer for our HTTP/2 server (src/h2) over real loopback sockets (issue 32). Each run opens
 * a connection and sends, in randomly cut writes, a fast-check sequence of frames — every frame type and
 * unknown ones, random flags (PADDED, PRIORITY, END_STREAM, END_HEADERS, ACK), pad lengths that fit and
 * ones that do not, stream ids in and out of order (0, even, reused, far ahead), SETTINGS with valid and
 * invalid values, WINDOW_UPDATEs of 0 to 2^31-1, HPACK blocks that churn the dynamic table (incremental
 * indexing of random fields, size updates, references past the table), HEADERS left open with CONTINUATION
 * chains — then closes early, or checks the connection with a PING and sends one final violation whose
 * answer RFC 9113 fixes whatever came before.
 *
 * Asserted for every run:
 *   - no crash: nothing thrown out of the connection (an exception in a socket callback fails the test);
 *   - memory: the octets the connection holds (Http2ServerConnection.heldBytes, sampled after every read
 *     it handled) never exceed HELD_BOUND, a constant independent of how long the input is (see below);
 *   - a connection error the noise caused is a GOAWAY with an RFC 9113 code; the final violation gets
 *     exactly its code (a GOAWAY, or an RST_STREAM for a stream error);
 *   - an innocent client on its own connection still gets a request answered after the run.
 *
 * HELD_BOUND: one socket read (64 KiB) and one frame (16 KiB + 9) unparsed, a header block being continued
 * (1 MiB, maxHeaderBlockSize), 64 KiB of output before DATA waits, the control replies before reading
 * pauses (50 × 17 octets, in that 64 KiB), and what this server queues per stream (at most 1 KiB of echo,
 * 100 streams): 1,234,953 octets, rounded up to 1.25 MiB.
 *
 * Runs: ETCDSIM_NUM_RUNS (default 60; `npm run test:long` 2000). Replay: ETCDSIM_SEED=<seed> ETCDSIM_PATH=<path>.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import fc from 'fast-check';
import { CLIENT_PREFACE, ErrorCode, Flags, FrameType, Setting, frame, settingsFrame, type ParsedFrame } from '../../src/h2/frames.js';
import { HpackEncoder } from '../../src/h2/hpack.js';
import type { H2Stream } from '../../src/h2/stream.js';
import { RawClient, startServer, type TestServer } from '../h2/helpers.js';
import { checkAsyncProperty } from './harness.js';

const FILE = 'test/properties/h2_frames.property.test.ts';
const HELD_BOUND = 1.25 * 1024 * 1024;
const ECHO_LIMIT = 1024;

// ---------------------------------------------------------------------------------------------------
// HPACK blocks, raw: representations of RFC 7541 §6 written here, independently of src/h2/hpack.ts.

/** An integer with an N-bit prefix (RFC 7541 §5.1), the prefix's other bits `high`. */
function hpackInt(prefixBits: number, high: number, value: number): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [high | value];
  const out = [high | max];
  let v = value - max;
  while (v >= 128) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}
const str = (s: Buffer): number[] => [...hpackInt(7, 0, s.length), ...s];

const fieldName = fc.oneof(fc.constantFrom('content-type', 'te', 'x-a', 'X-Upper', 'connection', ':path', ':bogus', ''), fc.stringMatching(/^[a-z-]{1,12}$/));
const representation: fc.Arbitrary<number[]> = fc.oneof(
  { arbitrary: fc.integer({ min: 1, max: 61 }).map((i) => hpackInt(7, 0x80, i)), weight: 3 }, // static table
  { arbitrary: fc.integer({ min: 62, max: 140 }).map((i) => hpackInt(7, 0x80, i)), weight: 2 }, // dynamic (maybe past its end)
  { arbitrary: fc.constant<number[]>([0x80]), weight: 1 }, // index 0: a decoding error
  {
    // Literal with incremental indexing, new name: churns the dynamic table.
    arbitrary: fc.tuple(fieldName, fc.integer({ min: 0, max: 300 })).map(([n, len]) => [0x40, ...str(Buffer.from(n)), ...str(Buffer.alloc(len, 0x76))]),
    weight: 4,
  },
  { arbitrary: fc.tuple(fc.integer({ min: 1, max: 61 }), fc.string({ maxLength: 20 })).map(([i, v]) => [...hpackInt(4, 0x00, i), ...str(Buffer.from(v))]), weight: 2 },
  { arbitrary: fc.integer({ min: 0, max: 8192 }).map((n) => hpackInt(5, 0x20, n)), weight: 1 }, // table size update (past 4096: an error)
  { arbitrary: fc.uint8Array({ maxLength: 8 }).map((a) => [...a]), weight: 1 }, // junk
);
/** A valid request's pseudo-headers by static index: POST, http, `/`, and an :authority literal. */
const REQUEST_START = [0x83, 0x86, 0x84, 0x41, ...str(Buffer.from('fuzz'))];
const hpackBlock: fc.Arbitrary<Buffer> = fc
  .tuple(fc.boolean(), fc.array(representation, { maxLength: 12 }))
  .map(([asRequest, reps]) => Buffer.from([...(asRequest ? REQUEST_START : []), ...reps.flat()]));

// ---------------------------------------------------------------------------------------------------
// Frames.

const streamId = fc.oneof(
  { arbitrary: fc.constant(0), weight: 1 },
  { arbitrary: fc.integer({ min: 0, max: 12 }).map((k) => 2 * k + 1), weight: 6 },
  { arbitrary: fc.integer({ min: 1, max: 8 }).map((k) => 2 * k), weight: 1 },
  { arbitrary: fc.constantFrom(1001, 0x40000001), weight: 1 },
);
const flags = fc.oneof(fc.constantFrom(0, Flags.END_HEADERS, Flags.END_HEADERS | Flags.END_STREAM, Flags.END_STREAM, Flags.PADDED, Flags.PRIORITY | Flags.END_HEADERS), fc.integer({ min: 0, max: 255 }));
const u32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
};
const windowIncrement = fc.oneof(fc.constantFrom(0, 1, 65535, 0x7fffffff, 0x80000001), fc.integer({ min: 0, max: 0x7fffffff }));
const settingValue = fc.oneof(fc.constantFrom(0, 1, 2, 16383, 16384, 65535, 0x7fffffff, 0x80000000, 0xffffffff), fc.nat());

/** A payload for `type` with `f` flags: mostly well-formed for the type, sometimes not. */
function payloadFor(type: number, f: number): fc.Arbitrary<Buffer> {
  const padded = (body: fc.Arbitrary<Buffer>): fc.Arbitrary<Buffer> =>
    (f & Flags.PADDED) === 0
      ? body
      : fc.tuple(body, fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 40 })).map(([b, padLen, have]) => Buffer.concat([Buffer.from([padLen]), b, Buffer.alloc(have)]));
  switch (type) {
    case FrameType.DATA:
      return padded(fc.integer({ min: 0, max: 3000 }).map((n) => Buffer.alloc(n, 0x64)));
    case FrameType.HEADERS: {
      const prio = (f & Flags.PRIORITY) === 0 ? fc.constant(Buffer.alloc(0)) : fc.tuple(streamId, fc.nat(255)).map(([dep, w]) => Buffer.concat([u32(dep), Buffer.from([w])]));
      return padded(fc.tuple(prio, hpackBlock).map(([p, b]) => Buffer.concat([p, b])));
    }
    case FrameType.CONTINUATION:
      return hpackBlock;
    case FrameType.PRIORITY:
      return fc.oneof(fc.tuple(streamId, fc.nat(255)).map(([dep, w]) => Buffer.concat([u32(dep), Buffer.from([w])])), fc.uint8Array({ maxLength: 7 }).map((a) => Buffer.from(a)));
    case FrameType.RST_STREAM:
      return fc.oneof(fc.integer({ min: 0, max: 14 }).map(u32), fc.uint8Array({ maxLength: 6 }).map((a) => Buffer.from(a)));
    case FrameType.SETTINGS:
      return fc.oneof(
        { arbitrary: fc.array(fc.tuple(fc.integer({ min: 0, max: 8 }), settingValue), { maxLength: 4 }).map((list) => settingsFrame(list).subarray(9)), weight: 5 },
        { arbitrary: fc.uint8Array({ maxLength: 7 }).map((a) => Buffer.from(a)), weight: 1 },
      );
    case FrameType.PING:
      return fc.oneof({ arbitrary: fc.constant(Buffer.alloc(8, 0x70)), weight: 5 }, { arbitrary: fc.uint8Array({ maxLength: 10 }).map((a) => Buffer.from(a)), weight: 1 });
    case FrameType.GOAWAY:
      return fc.tuple(streamId, fc.integer({ min: 0, max: 14 })).map(([last, code]) => Buffer.concat([u32(last), u32(code)]));
    case FrameType.WINDOW_UPDATE:
      return fc.oneof({ arbitrary: windowIncrement.map(u32), weight: 5 }, { arbitrary: fc.uint8Array({ maxLength: 6 }).map((a) => Buffer.from(a)), weight: 1 });
    default:
      return fc.uint8Array({ maxLength: 32 }).map((a) => Buffer.from(a));
  }
}

const frameType = fc.oneof(
  { arbitrary: fc.constantFrom(FrameType.HEADERS, FrameType.DATA, FrameType.CONTINUATION), weight: 6 },
  { arbitrary: fc.constantFrom(FrameType.PRIORITY, FrameType.RST_STREAM, FrameType.SETTINGS, FrameType.PING, FrameType.WINDOW_UPDATE), weight: 4 },
  { arbitrary: fc.constantFrom(FrameType.PUSH_PROMISE, FrameType.GOAWAY), weight: 1 },
  { arbitrary: fc.integer({ min: 10, max: 255 }), weight: 1 },
);
const anyFrame: fc.Arbitrary<Buffer> = fc
  .tuple(frameType, flags, streamId)
  .chain(([type, f, id]) => payloadFor(type, f).map((p) => frame(type, f, id, p)));

/** A violation whose answer does not depend on what came before (the connection alive, no header block open). */
interface Violation {
  readonly name: string;
  readonly bytes: Buffer;
  /** The answer: GOAWAY with this code, or RST_STREAM with it on `stream`. */
  readonly code: number;
  readonly stream?: number;
}
const FAR = 0x7ffffff1; // above any id the noise opens
const violations: readonly Violation[] = [
  { name: 'DATA on stream 0', bytes: frame(FrameType.DATA, 0, 0, Buffer.from('x')), code: ErrorCode.PROTOCOL_ERROR },
  { name: 'HEADERS on stream 0', bytes: frame(FrameType.HEADERS, Flags.END_HEADERS, 0, Buffer.from(REQUEST_START)), code: ErrorCode.PROTOCOL_ERROR },
  { name: 'HEADERS on an even stream', bytes: frame(FrameType.HEADERS, Flags.END_HEADERS, 0x7ffffff2, Buffer.from(REQUEST_START)), code: ErrorCode.PROTOCOL_ERROR },
  { name: 'HPACK index 0', bytes: frame(FrameType.HEADERS, Flags.END_HEADERS, FAR, Buffer.from([0x80])), code: ErrorCode.COMPRESSION_ERROR },
  { name: 'SETTINGS on a stream', bytes: frame(FrameType.SETTINGS, 0, 1, Buffer.alloc(0)), code: ErrorCode.PROTOCOL_ERROR },
  { name: 'SETTINGS of 5 octets', bytes: frame(FrameType.SETTINGS, 0, 0, Buffer.alloc(5)), code: ErrorCode.FRAME_SIZE_ERROR },
  { name: 'SETTINGS ACK with a payload', bytes: frame(FrameType.SETTINGS, Flags.ACK, 0, Buffer.alloc(6)), code: ErrorCode.FRAME_SIZE_ERROR },
  { name: 'SETTINGS_ENABLE_PUSH 2', bytes: settingsFrame([[Setting.ENABLE_PUSH, 2]]), code: ErrorCode.PROTOCOL_ERROR },
  { name: 'SETTINGS_INITIAL_WINDOW_SIZE 2^31', bytes: settingsFrame([[Setting.INITIAL_WINDOW_SIZE, 0x80000000]]), code: ErrorCode.FLOW_CONTROL_ERROR },
  { name: 'SETTINGS_MAX_FRAME_SIZE 100', bytes: settingsFrame([[Setting.MAX_FRAME_SIZE, 100]]), code: ErrorCode.PROTOCOL_ERROR },
  { name: 'PING on a stream', bytes: frame(FrameType.PING, 0, 1, Buffer.alloc(8)), code: ErrorCode.PROTOCOL_ERROR },
  { name: 'PING of 7 octets', bytes: frame(FrameType.PING, 0, 0, Buffer.alloc(7)), code: ErrorCode.FRAME_SIZE_ERROR },
  { name: 'PUSH_PROMISE', bytes: frame(FrameType.PUSH_PROMISE, Flags.END_HEADERS, 1, Buffer.alloc(4)), code: ErrorCode.PROTOCOL_ERROR },
  { name: 'WINDOW_UPDATE of 0 on the connection', bytes: frame(FrameType.WINDOW_UPDATE, 0, 0, u32(0)), code: ErrorCode.PROTOCOL_ERROR },
  { name: 'WINDOW_UPDATE of 3 octets', bytes: frame(FrameType.WINDOW_UPDATE, 0, 0, Buffer.alloc(3)), code: ErrorCode.FRAME_SIZE_ERROR },
  { name: 'RST_STREAM on stream 0', bytes: frame(FrameType.RST_STREAM, 0, 0, u32(0)), code: ErrorCode.PROTOCOL_ERROR },
  { name: 'RST_STREAM on an idle stream', bytes: frame(FrameType.RST_STREAM, 0, FAR, u32(0)), code: ErrorCode.PROTOCOL_ERROR },
  { name: 'CONTINUATION without HEADERS', bytes: frame(FrameType.CONTINUATION, Flags.END_HEADERS, FAR, Buffer.from(REQUEST_START)), code: ErrorCode.PROTOCOL_ERROR },
  { name: 'a frame over SETTINGS_MAX_FRAME_SIZE', bytes: frame(FrameType.DATA, 0, 1, Buffer.alloc(16385)), code: ErrorCode.FRAME_SIZE_ERROR },
  { name: 'GOAWAY on a stream', bytes: frame(FrameType.GOAWAY, 0, 1, Buffer.alloc(8)), code: ErrorCode.PROTOCOL_ERROR },
  { name: 'a request without :path', bytes: frame(FrameType.HEADERS, Flags.END_HEADERS, FAR, Buffer.from([0x83, 0x86])), code: ErrorCode.PROTOCOL_ERROR, stream: FAR },
];

interface Run {
  readonly noise: Buffer[];
  /** Where the byte stream is cut into writes (fractions of its length). */
  readonly cuts: number[];
  /** How the run ends: the client goes, or a PING then the violation (if any). */
  readonly end: { kind: 'close' } | { kind: 'check'; violation: number | undefined };
}
const run: fc.Arbitrary<Run> = fc.record({
  noise: fc.array(anyFrame, { maxLength: 30 }),
  cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 4 }),
  end: fc.oneof(
    { arbitrary: fc.constant({ kind: 'close' as const }), weight: 1 },
    { arbitrary: fc.option(fc.nat(violations.length - 1), { nil: undefined }).map((violation) => ({ kind: 'check' as const, violation })), weight: 4 },
  ),
});

// ---------------------------------------------------------------------------------------------------
// The server, the fuzzing client, the innocent client.

/** The server: every request answered 200, its DATA echoed (up to ECHO_LIMIT), trailers at its end; requests on ids 3 mod 4 held open. */
function onStream(st: H2Stream): void {
  let echoed = 0;
  st.respond([':status', '200']);
  st.onData = (chunk) => {
    if (echoed >= ECHO_LIMIT) return;
    const part = chunk.subarray(0, ECHO_LIMIT - echoed);
    echoed += part.length;
    st.write(Buffer.from(part));
  };
  st.onEnd = () => {
    if (st.id % 4 !== 3) st.end(['grpc-status', '0']);
  };
}

let server: TestServer;
let raw: net.Server;
let port = 0;
/** The largest heldBytes seen on the connection of the current run. */
let maxHeld = 0;
let innocent: RawClient;
let innocentId = 1;

before(async () => {
  server = await startServer(onStream, { maxConcurrentStreams: 100 });
  raw = net.createServer((socket) => {
    server.accept(socket);
    const conn = server.connections[server.connections.length - 1]!;
    socket.on('data', () => (maxHeld = Math.max(maxHeld, conn.heldBytes)));
  });
  await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
  port = (raw.address() as net.AddressInfo).port;
  innocent = await RawClient.connect(port);
});
after(async () => {
  innocent.socket.destroy();
  await new Promise<void>((resolve) => raw.close(() => resolve()));
  await server.close();
});

const REQUEST = new HpackEncoder().encode([':method', 'POST', ':scheme', 'http', ':path', '/innocent', ':authority', 'x']);
const isGoaway = (f: ParsedFrame): boolean => f.type === FrameType.GOAWAY;

async function innocentAnswered(): Promise<void> {
  const id = innocentId;
  innocentId += 4; // ids 1 mod 4: the server answers those
  const from = innocent.frames.length;
  innocent.socket.write(Buffer.concat([frame(FrameType.HEADERS, Flags.END_HEADERS, id, REQUEST), frame(FrameType.DATA, Flags.END_STREAM, id, Buffer.from('hi'))]));
  const end = await innocent.waitFor((f) => f.streamId === id && f.type === FrameType.HEADERS && (f.flags & Flags.END_STREAM) !== 0, from);
  assert.ok(end !== undefined, 'the innocent client got no answer');
}

async function runOne(r: Run): Promise<void> {
  maxHeld = 0;
  const peer = await RawClient.connect(port, false);
  try {
    const bytes = Buffer.concat([CLIENT_PREFACE, settingsFrame([]), ...r.noise]);
    const points = [...new Set(r.cuts.map((c) => Math.floor(c * bytes.length)))].sort((a, b) => a - b);
    let at = 0;
    for (const p of [...points, bytes.length]) {
      if (p > at) peer.socket.write(bytes.subarray(at, p));
      at = p;
    }
    if (r.end.kind === 'close') {
      peer.socket.end();
      await peer.waitFor(() => false); // until the server closes its side too
    } else {
      const ping = Buffer.from('fuzzping');
      peer.socket.write(frame(FrameType.PING, 0, 0, ping));
      const answer = await peer.waitFor((f) => isGoaway(f) || (f.type === FrameType.PING && (f.flags & Flags.ACK) !== 0 && f.payload.equals(ping)));
      if (answer !== undefined && isGoaway(answer)) {
        const code = answer.payload.readUInt32BE(4);
        assert.ok(code <= ErrorCode.HTTP_1_1_REQUIRED, `GOAWAY with code ${code}, not one of RFC 9113's`);
      } else if (answer !== undefined && r.end.violation !== undefined) {
        const v = violations[r.end.violation]!;
        const from = peer.frames.length;
        peer.socket.write(v.bytes);
        const got = await peer.waitFor((f) => isGoaway(f) || (v.stream !== undefined && f.type === FrameType.RST_STREAM && f.streamId === v.stream), from);
        assert.ok(got !== undefined, `${v.name}: no answer`);
        assert.equal(got.type, v.stream === undefined ? FrameType.GOAWAY : FrameType.RST_STREAM, v.name);
        assert.equal(got.payload.readUInt32BE(got.type === FrameType.GOAWAY ? 4 : 0), v.code, v.name);
      }
    }
    assert.ok(maxHeld <= HELD_BOUND, `the connection held ${maxHeld} octets`);
    await innocentAnswered();
  } finally {
    peer.socket.destroy();
  }
}

test('HTTP/2 frame fuzzing: no crash, bounded memory per connection, RFC 9113 error codes, an innocent connection still served', async () => {
  await checkAsyncProperty(fc.asyncProperty(run, runOne), { file: FILE, numRuns: 60 });
});
