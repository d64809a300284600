/**
 * The thin unary path (front_door.ts, ServeOptions.grpcUnary 'door', the default) answers on the wire as the
 * grpc-js path does: the same status, message, trailers-only shape, content-type, RST_STREAM and response
 * bytes for the same requests — answers, errors of the service layer, decoding errors, requests with bytes
 * after their one message, a request side left open, content subtypes. (wire_errors.test.ts holds both to
 * etcd's own answers.)
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { serve, type ServeHandle } from '../../src/grpc/server.js';
import { WireClient, frame, type WireAnswer, type WireRequest } from './raw_h2.js';

let door: ServeHandle;
let grpcJs: ServeHandle;
let doorWire: WireClient;
let grpcJsWire: WireClient;

before(async () => {
  // Same seed and advertised URL: the same member and cluster IDs, lease IDs and revisions on both.
  const common = { port: 0, etcdVersion: '3.4', seed: 7, clientUrls: ['http://127.0.0.1:2379'] } as const;
  door = await serve({ ...common, grpcUnary: 'door' });
  grpcJs = await serve({ ...common, grpcUnary: 'grpc-js' });
  doorWire = new WireClient(door.address);
  grpcJsWire = new WireClient(grpcJs.address);
});

after(async () => {
  doorWire.close();
  grpcJsWire.close();
  await door.close();
  await grpcJs.close();
});

interface Seen {
  readonly answer: Omit<WireAnswer, 'elapsedMs'>;
  readonly messages: readonly string[];
}

async function call(wire: WireClient, req: WireRequest): Promise<Seen> {
  const messages: string[] = [];
  const { elapsedMs: _e, ...answer } = await wire.call({ ...req, onMessage: (m) => void messages.push(m.toString('hex')) });
  return { answer, messages };
}

/** Sends `req` to both servers, one after the other; their answers must be the same. */
async function same(req: WireRequest): Promise<Seen> {
  const a = await call(doorWire, req);
  const b = await call(grpcJsWire, req);
  assert.deepEqual(a, b, `${req.path}: thin path vs grpc-js`);
  return a;
}

const KV = '/etcdserverpb.KV/';

test('answers: Put, Range, Txn, DeleteRange, Compact, LeaseGrant, MemberList — the same bytes as through grpc-js', async () => {
  const put = await same({ path: `${KV}Put`, body: [frame('0a0161120131')] }); // key a, value 1
  assert.equal(put.answer.code, 0);
  assert.equal(put.messages.length, 1);
  await same({ path: `${KV}Put`, body: [frame('0a0161120132 2001')] }); // prev_kv
  const range = await same({ path: `${KV}Range`, body: [frame('0a0161')] });
  assert.equal(range.answer.code, 0);
  assert.ok(range.messages[0]!.includes(Buffer.from('2').toString('hex')), 'the range returns the value');
  // Txn: compare version(a) > 0, then range a, else put a=3.
  const txn = await same({ path: `${KV}Txn`, body: [frame('0a07 0801 1a0161 2000 1205 0a030a0161 1a08 12060a0161120133')] });
  const others = [
    txn,
    await same({ path: `${KV}DeleteRange`, body: [frame('0a0161')] }),
    await same({ path: `${KV}Compact`, body: [frame('0802')] }),
    await same({ path: '/etcdserverpb.Lease/LeaseGrant', body: [frame('080a')] }),
    await same({ path: '/etcdserverpb.Cluster/MemberList', body: [frame('')] }),
    await same({ path: '/etcdserverpb.Auth/AuthStatus', body: [frame('')] }),
  ];
  assert.deepEqual(
    others.map((o) => [o.answer.code, o.answer.trailersOnly, o.messages.length]),
    others.map(() => [0, false, 1]),
  );
});

test('errors: the service layer’s (compacted revision, lease not found, auth not enabled) and decoding errors', async () => {
  const compacted = await same({ path: `${KV}Range`, body: [frame('0a0161 2001')] });
  assert.deepEqual([compacted.answer.code, compacted.answer.message, compacted.answer.trailersOnly], [11, 'etcdserver: mvcc: required revision has been compacted', true]);
  const noLease = await same({ path: '/etcdserverpb.Lease/LeaseRevoke', body: [frame('0801')] });
  assert.equal(noLease.answer.code, 5);
  await same({ path: '/etcdserverpb.Auth/Authenticate', body: [frame('0a0161120162')] });
  const bad = await same({ path: `${KV}Range`, body: [frame('0801')] });
  assert.deepEqual([bad.answer.code, bad.answer.message], [13, 'grpc: error unmarshalling request: proto: wrong wireType = 0 for field Key']);
  await same({ path: '/etcdserverpb.Lease/LeaseGrant', body: [frame('0a00')] });
});

test('the wire around the message: bytes after it, a request side left open, a content subtype, a deadline', async () => {
  // What follows the one message of a unary call is not read (grpc-go reads one message).
  await same({ path: `${KV}Range`, body: [frame('0a0161'), frame('ff')] });
  // The client keeps its side open: status, then RST_STREAM NO_ERROR.
  const open = await same({ path: `${KV}Range`, body: [frame('0a0161')], keepOpen: true });
  assert.equal(open.answer.code, 0);
  // The response's content-type mirrors the request's.
  const proto = await same({ path: `${KV}Range`, body: [frame('0a0161')], headers: { 'content-type': 'application/grpc+proto' } });
  assert.equal(proto.answer.contentType, 'application/grpc+proto');
  // A deadline far away changes nothing; one that has passed when the message is read: 4, the handler not run.
  await same({ path: `${KV}Range`, body: [frame('0a0161')], headers: { 'grpc-timeout': '10S' } });
  const late = await same({ path: `${KV}Put`, body: [frame('0a0178120131')], headers: { 'grpc-timeout': '1n' } });
  assert.deepEqual([late.answer.code, late.answer.message], [4, 'context deadline exceeded']);
  const after = await same({ path: `${KV}Range`, body: [frame('0a0178')] });
  assert.equal(after.answer.code, 0);
});
