/**
 * grpc-go's keepalive enforcement on etcd's client port, differentially: the same PING frames against
 * `serve({ port: 0 })` and a real etcd 3.4.23, each on a raw HTTP/2 socket. etcd runs with
 * --grpc-keepalive-min-time 5 s and permits no PING without a stream: a client that pings more often has
 * its connection ended with GOAWAY ENHANCE_YOUR_CALM "too_many_pings" (its open calls fail UNAVAILABLE) — a
 * client with an aggressive keepalive setting meets that on etcd, so it must meet it here. A response sent
 * forgives the PINGs so far; over TLS etcd serves gRPC through Go's net/http, which enforces nothing.
 * Outside CI the tests skip without `etcd` (and openssl for TLS) on PATH; in CI a missing one fails.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startEtcd, type EtcdTlsFiles } from '../../src/diff/etcd_process.js';
import { serve, type ServeOptions } from '../../src/grpc/server.js';
import { ErrorCode, Flags, FrameType, frame, settingsFrame } from '../../src/h2/frames.js';
import { HpackEncoder } from '../../src/h2/hpack.js';
import { RawClient } from '../h2/helpers.js';
import { SERVER_EXT, TestPki } from './pki.js';
import { requireCommand, requireCommands } from '../support/prerequisites.js';

const skip = requireCommand('etcd');
const skipTls = requireCommands(['etcd', 'openssl']);

const pki = new TestPki('etcdsim-keepalive-');
before(() => {
  if (skipTls !== false) return;
  pki.ca('ca');
  pki.issue('server', '/CN=localhost', 'ca', SERVER_EXT);
});

/** What a raw client saw: the PINGs acknowledged (their numbers), the GOAWAY if one came, whether the socket closed. */
interface Seen {
  readonly acks: number[];
  readonly goaway: { lastStreamId: number; code: number; debug: string } | undefined;
  readonly closed: boolean;
}

const WATCH_HEADERS = [':method', 'POST', ':scheme', 'http', ':path', '/etcdserverpb.Watch/Watch', ':authority', 'localhost', 'content-type', 'application/grpc', 'te', 'trailers'];
/** WatchRequest{create_request{key: "a"}}, gRPC-framed. */
const WATCH_CREATE = Buffer.from('00000000050a030a0161', 'hex');

function pings(...numbers: number[]): Buffer {
  return Buffer.concat(
    numbers.map((n) => {
      const p = Buffer.alloc(8);
      p.writeUInt32BE(n, 4);
      return frame(FrameType.PING, 0, 0, p);
    }),
  );
}

const acked = (c: RawClient): number[] => c.frames.filter((f) => f.type === FrameType.PING && (f.flags & Flags.ACK) !== 0).map((f) => f.payload.readUInt32BE(4));

/** SETTINGS frames each client sent. */
const settingsSent = new WeakMap<RawClient, number>();

/**
 * What the server did about what was sent: waits for the socket to close, or — when it stays open — for
 * the ACK of a SETTINGS frame sent last, which a server writes only after anything it had to say about the
 * frames before it.
 */
async function outcome(c: RawClient): Promise<Seen> {
  // Every SETTINGS sent so far — the one RawClient.connect sent included — is acknowledged in order.
  const sent = (settingsSent.get(c) ?? 1) + 1;
  settingsSent.set(c, sent);
  c.send(settingsFrame([]));
  await c.waitFor((f) => f.type === FrameType.GOAWAY || c.frames.filter((x) => x.type === FrameType.SETTINGS && (x.flags & Flags.ACK) !== 0).length >= sent);
  const goaway = await (c.frames.some((f) => f.type === FrameType.GOAWAY) ? c.goaway() : undefined);
  if (goaway !== undefined) await c.closed();
  return { acks: acked(c), goaway, closed: c.ended };
}

/** An etcd and a simulator, started once per transport for the whole file. */
interface Pair {
  readonly etcd: Awaited<ReturnType<typeof startEtcd>>;
  readonly sim: Awaited<ReturnType<typeof serve>>;
}
const pairs = new Map<boolean, Promise<Pair>>();

/**
 * grpc-go counts PING strikes per connection (its transport's own counter, reset by a response it sends), so
 * every scenario runs on a fresh connection to the same two servers: starting an etcd per scenario cost seconds
 * and decided nothing.
 */
function pairFor(tls: boolean): Promise<Pair> {
  let p = pairs.get(tls);
  if (p === undefined) {
    const files: EtcdTlsFiles | undefined = tls ? { certFile: pki.path('server.crt'), keyFile: pki.path('server.key') } : undefined;
    const simOpts: ServeOptions = { port: 0, etcdVersion: '3.4', ...(tls ? { tls: { cert: readFileSync(files!.certFile), key: readFileSync(files!.keyFile) } } : {}) };
    p = Promise.all([startEtcd({ tls: files }), serve(simOpts)]).then(([etcd, sim]) => ({ etcd, sim }));
    pairs.set(tls, p);
  }
  return p;
}

after(async () => {
  for (const p of pairs.values()) {
    const { etcd, sim } = await p;
    await sim.close();
    await etcd.stop();
  }
  pki.remove();
});

/** Runs `scenario` on a fresh raw connection to each of etcd and the simulator (both plain, or both TLS). */
async function onBoth<T>(scenario: (c: RawClient) => Promise<T>, tls = false): Promise<{ etcd: T; sim: T }> {
  const { etcd, sim } = await pairFor(tls);
  const run = async (address: string): Promise<T> => {
    const c = await RawClient.connect(Number(address.split(':').pop()), true, tls);
    try {
      return await scenario(c);
    } finally {
      c.destroy();
    }
  };
  return { etcd: await run(etcd.address), sim: await run(sim.address) };
}

const TOO_MANY = { lastStreamId: 0, code: ErrorCode.ENHANCE_YOUR_CALM, debug: 'too_many_pings' };

test('an idle connection: the fourth PING in a row is answered, then GOAWAY ENHANCE_YOUR_CALM too_many_pings; three are fine', { skip }, async () => {
  const four = await onBoth(async (c) => {
    c.send(pings(1, 2, 3, 4));
    return outcome(c);
  });
  assert.deepStrictEqual(four.sim, four.etcd);
  assert.deepStrictEqual(four.etcd, { acks: [1, 2, 3, 4], goaway: TOO_MANY, closed: true });
  const three = await onBoth(async (c) => {
    c.send(pings(1, 2, 3));
    return outcome(c);
  });
  assert.deepStrictEqual(three.sim, three.etcd);
  assert.deepStrictEqual(three.etcd, { acks: [1, 2, 3], goaway: undefined, closed: false });
});

test('a Watch stream open: four PINGs within 5 s end the connection; the GOAWAY names the stream', { skip }, async () => {
  const r = await onBoth(async (c) => {
    c.send(frame(FrameType.HEADERS, Flags.END_HEADERS, 1, new HpackEncoder().encode(WATCH_HEADERS)), pings(1, 2, 3, 4));
    return outcome(c);
  });
  assert.deepStrictEqual(r.sim, r.etcd);
  assert.deepStrictEqual(r.etcd, { acks: [1, 2, 3, 4], goaway: { ...TOO_MANY, lastStreamId: 1 }, closed: true });
});

test('a response sent forgives the PINGs before it: after the watch is created, three more PINGs are fine, the fourth is not', { skip }, async () => {
  const r = await onBoth(async (c) => {
    c.send(frame(FrameType.HEADERS, Flags.END_HEADERS, 1, new HpackEncoder().encode(WATCH_HEADERS)), pings(1, 2, 3), frame(FrameType.DATA, 0, 1, WATCH_CREATE));
    // The created response: HEADERS and a DATA frame on stream 1.
    await c.waitFor((f) => f.type === FrameType.DATA && f.streamId === 1);
    c.send(pings(4, 5, 6));
    const calm = await outcome(c);
    c.send(pings(7));
    return { calm, then: await outcome(c) };
  });
  assert.deepStrictEqual(r.sim, r.etcd);
  assert.deepStrictEqual(r.etcd, {
    calm: { acks: [1, 2, 3, 4, 5, 6], goaway: undefined, closed: false },
    then: { acks: [1, 2, 3, 4, 5, 6, 7], goaway: { ...TOO_MANY, lastStreamId: 1 }, closed: true },
  });
});

test('over TLS (Go net/http serving gRPC) every PING is answered: no keepalive enforcement', { skip: skipTls }, async () => {
  const r = await onBoth(async (c) => {
    c.send(pings(1, 2, 3, 4, 5, 6, 7, 8));
    return outcome(c);
  }, true);
  assert.deepStrictEqual(r.sim, r.etcd);
  assert.deepStrictEqual(r.etcd, { acks: [1, 2, 3, 4, 5, 6, 7, 8], goaway: undefined, closed: false });
});
