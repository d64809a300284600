/**
 * The gRPC door (door.ts) answers unary calls on the wire exactly as grpc-js's server did before the door
 * replaced it: the same status, message, trailers-only shape, HTTP status, content-type, RST_STREAM and
 * response bytes, for answers, errors of the service layer, decoding errors, requests with bytes after their
 * one message, a request side left open, content subtypes and deadlines. grpc-js's answers were recorded on
 * the same requests, in the same order, on a server of the same seed (fixtures/grpc_js_unary_answers.json,
 * from commit 96ecdb9's serve({ grpcUnary: 'grpc-js' })). (wire_errors.test.ts holds the door to etcd's own
 * answers.)
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { readFileSync } from 'node:fs';
import { serve, type ServeHandle } from '../../src/grpc/server.js';
import { WireClient, frame, type WireAnswer, type WireRequest } from './raw_h2.js';

/** A request as the fixture names it: path, body chunks in hex, extra headers, a side left open. */
interface RecordedRequest {
  readonly path: string;
  readonly body?: readonly string[];
  readonly headers?: Readonly<Record<string, string>>;
  readonly keepOpen?: boolean;
}

interface Seen {
  readonly answer: Omit<WireAnswer, 'elapsedMs'>;
  /** The response messages in hex, without their 5-byte prefix. */
  readonly messages: readonly string[];
}

interface Golden {
  readonly answers: Readonly<Record<string, { readonly request: RecordedRequest } & Seen>>;
}

const golden = JSON.parse(readFileSync(new URL('./fixtures/grpc_js_unary_answers.json', import.meta.url), 'utf8')) as Golden;

let door: ServeHandle;
let wire: WireClient;

before(async () => {
  // The seed and advertised URL of the recording: the same member and cluster IDs, lease IDs and revisions.
  const common = { port: 0, etcdVersion: '3.4', seed: 7, clientUrls: ['http://127.0.0.1:2379'] } as const;
  door = await serve({ ...common });
  wire = new WireClient(door.address);
});

after(async () => {
  wire.close();
  await door.close();
});

/** `req` in the fixture's form (JSON drops what is undefined). */
function recorded(req: WireRequest): RecordedRequest {
  return JSON.parse(
    JSON.stringify({ path: req.path, body: req.body?.map((b) => b.toString('hex')), headers: req.headers, keepOpen: req.keepOpen }),
  ) as RecordedRequest;
}

/** Sends `req` to the door; its answer must be grpc-js's recorded answer to the request named `name`. */
async function same(name: string, req: WireRequest): Promise<Seen> {
  const want = golden.answers[name];
  assert.ok(want !== undefined, `no recorded answer named ${name}`);
  assert.deepEqual(recorded(req), want.request, `${name}: not the request that was recorded`);
  const messages: string[] = [];
  const { elapsedMs: _e, ...answer } = await wire.call({ ...req, onMessage: (m) => void messages.push(m.toString('hex')) });
  // Through JSON as the recording went: a field left undefined is absent on both sides.
  const seen = JSON.parse(JSON.stringify({ answer, messages })) as Seen;
  assert.deepEqual(seen, { answer: want.answer, messages: want.messages }, `${name}: the door vs grpc-js`);
  return seen;
}

const KV = '/etcdserverpb.KV/';

test('answers: Put, Range, Txn, DeleteRange, Compact, LeaseGrant, MemberList — the same bytes as grpc-js sent', async () => {
  const put = await same('Put a=1', { path: `${KV}Put`, body: [frame('0a0161120131')] }); // key a, value 1
  assert.equal(put.answer.code, 0);
  assert.equal(put.messages.length, 1);
  await same('Put a=2 prev_kv', { path: `${KV}Put`, body: [frame('0a0161120132 2001')] });
  const range = await same('Range a', { path: `${KV}Range`, body: [frame('0a0161')] });
  assert.equal(range.answer.code, 0);
  assert.ok(range.messages[0]!.includes(Buffer.from('2').toString('hex')), 'the range returns the value');
  // Txn: compare version(a) > 0, then range a, else put a=3.
  const txn = await same('Txn version(a)>0 ? Range a : Put a=3', { path: `${KV}Txn`, body: [frame('0a07 0801 1a0161 2000 1205 0a030a0161 1a08 12060a0161120133')] });
  const others = [
    txn,
    await same('DeleteRange a', { path: `${KV}DeleteRange`, body: [frame('0a0161')] }),
    await same('Compact 2', { path: `${KV}Compact`, body: [frame('0802')] }),
    await same('LeaseGrant TTL 10', { path: '/etcdserverpb.Lease/LeaseGrant', body: [frame('080a')] }),
    await same('MemberList', { path: '/etcdserverpb.Cluster/MemberList', body: [frame('')] }),
    await same('AuthStatus', { path: '/etcdserverpb.Auth/AuthStatus', body: [frame('')] }),
  ];
  assert.deepEqual(
    others.map((o) => [o.answer.code, o.answer.trailersOnly, o.messages.length]),
    others.map(() => [0, false, 1]),
  );
});

test('errors: the service layer’s (compacted revision, lease not found, auth not enabled) and decoding errors', async () => {
  const compacted = await same('Range a at revision 1: compacted', { path: `${KV}Range`, body: [frame('0a0161 2001')] });
  assert.deepEqual([compacted.answer.code, compacted.answer.message, compacted.answer.trailersOnly], [11, 'etcdserver: mvcc: required revision has been compacted', true]);
  const noLease = await same('LeaseRevoke 1: not found', { path: '/etcdserverpb.Lease/LeaseRevoke', body: [frame('0801')] });
  assert.equal(noLease.answer.code, 5);
  await same('Authenticate a/b: auth not enabled', { path: '/etcdserverpb.Auth/Authenticate', body: [frame('0a0161120162')] });
  const bad = await same('Range with a wrong wire type', { path: `${KV}Range`, body: [frame('0801')] });
  assert.deepEqual([bad.answer.code, bad.answer.message], [13, 'grpc: error unmarshalling request: proto: wrong wireType = 0 for field Key']);
  await same('LeaseGrant with a wrong wire type', { path: '/etcdserverpb.Lease/LeaseGrant', body: [frame('0a00')] });
});

test('the wire around the message: bytes after it, a request side left open, a content subtype, a deadline', async () => {
  // What follows the one message of a unary call is not read (grpc-go reads one message).
  await same('Range a, then bytes after the message', { path: `${KV}Range`, body: [frame('0a0161'), frame('ff')] });
  // The client keeps its side open: status, then RST_STREAM NO_ERROR.
  const open = await same('Range a, the request side left open', { path: `${KV}Range`, body: [frame('0a0161')], keepOpen: true });
  assert.equal(open.answer.code, 0);
  // The response's content-type mirrors the request's.
  const proto = await same('Range a, content-type application/grpc+proto', { path: `${KV}Range`, body: [frame('0a0161')], headers: { 'content-type': 'application/grpc+proto' } });
  assert.equal(proto.answer.contentType, 'application/grpc+proto');
  // A deadline far away changes nothing; one that has passed when the message is read: 4, the handler not run.
  await same('Range a, grpc-timeout 10S', { path: `${KV}Range`, body: [frame('0a0161')], headers: { 'grpc-timeout': '10S' } });
  const late = await same('Put x=1, grpc-timeout 1n', { path: `${KV}Put`, body: [frame('0a0178120131')], headers: { 'grpc-timeout': '1n' } });
  assert.deepEqual([late.answer.code, late.answer.message], [4, 'context deadline exceeded']);
  const after = await same('Range x after the late Put', { path: `${KV}Range`, body: [frame('0a0178')] });
  assert.equal(after.answer.code, 0);
});
