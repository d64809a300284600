/**
 * The 3.7 profile decodes requests as etcd 3.7 does, with protobuf-go (src/grpc/protobuf_go_check.ts;
 * docs/version-differences.md, "Request decoding"), one test per rule, over real gRPC (a raw HTTP/2 client
 * against serve({ port: 0 })); the 3.6 profile keeps gogo's answer to the same bytes. No etcd 3.7 is
 * installed: the expectations come from etcd's and protobuf-go's sources, cited in that module.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { serve, type ServeHandle } from '../../src/grpc/server.js';
import { connectEtcd, type EtcdGrpcClient } from '../../src/grpc/client.js';
import { WireClient, frame, type WireAnswer } from './raw_h2.js';

const RANGE = '/etcdserverpb.KV/Range';
const PUT = '/etcdserverpb.KV/Put';
const UNMARSHAL = 'grpc: error unmarshalling request: ';
const DECODE = 'proto: cannot parse invalid wire-format data';
const OK = { code: 0, message: '' } as const;

let sim37: ServeHandle;
let sim37nbsp: ServeHandle;
let sim36: ServeHandle;
let wire37: WireClient;
let wireNbsp: WireClient;
let wire36: WireClient;
let grpc37: EtcdGrpcClient;

before(async () => {
  sim37 = await serve({ port: 0 }); // the default profile, 3.7; seed 0: a regular space after "proto:"
  sim37nbsp = await serve({ port: 0, seed: 1 }); // an odd seed plays a build whose detrand bit is set
  sim36 = await serve({ port: 0, etcdVersion: '3.6' });
  wire37 = new WireClient(sim37.address);
  wireNbsp = new WireClient(sim37nbsp.address);
  wire36 = new WireClient(sim36.address);
  grpc37 = connectEtcd(sim37.address);
});

after(async () => {
  for (const w of [wire37, wireNbsp, wire36]) w?.close();
  grpc37?.close();
  await sim37?.close();
  await sim37nbsp?.close();
  await sim36?.close();
});

const answer = async (w: WireClient, path: string, body: Buffer | string): Promise<{ code: number | undefined; message: string | undefined }> => {
  const a: WireAnswer = await w.call({ path, body: [frame(body)] });
  return { code: a.code, message: a.message };
};

test('3.7: a known field with another wire type is skipped as unknown, not refused (3.6: gogo\'s wrong wireType)', async () => {
  // Range with key sent as a varint: the key stays empty, and the Range is refused for that.
  assert.deepEqual(await answer(wire37, RANGE, '0801'), { code: 3, message: 'etcdserver: key is not provided' });
  assert.deepEqual(await answer(wire36, RANGE, '0801'), { code: 13, message: `${UNMARSHAL}proto: wrong wireType = 0 for field Key` });
  // Put key "pg" with its value sent as a varint: stored with an empty value; the fields after it still count.
  assert.deepEqual(await answer(wire37, PUT, '0a02 7067 1005 2001'), OK);
  const r = await grpc37.kv.range({ key: Buffer.from('pg') } as never);
  assert.deepEqual([String(r.count), Buffer.from(r.kvs[0]!.value).toString()], ['1', '']);
  assert.deepEqual(await answer(wire36, PUT, '0a02 7067 1005'), { code: 13, message: `${UNMARSHAL}proto: wrong wireType = 0 for field Value` });
  // Inside nested messages too: a Txn whose put (success[0].request_put) has its value as a varint.
  const txn = '1208 1206 0a027478 1005';
  assert.deepEqual(await answer(wire37, '/etcdserverpb.KV/Txn', txn), OK);
  const t = await grpc37.kv.range({ key: Buffer.from('tx') } as never);
  assert.deepEqual([String(t.count), Buffer.from(t.kvs[0]!.value).toString()], ['1', '']);
  assert.deepEqual(await answer(wire36, '/etcdserverpb.KV/Txn', txn), { code: 13, message: `${UNMARSHAL}proto: wrong wireType = 0 for field Value` });
  // A known field as an unknown group, with its end tag, is skipped as well.
  assert.deepEqual(await answer(wire37, RANGE, '0b0c'), { code: 3, message: 'etcdserver: key is not provided' });
});

test('3.7: invalid UTF-8 in a proto3 string field is refused: string field contains invalid UTF-8 (no proto: prefix); bytes fields take any bytes', async () => {
  const roleAdd = '/etcdserverpb.Auth/RoleAdd';
  assert.deepEqual(await answer(wire37, roleAdd, '0a02c328'), { code: 13, message: `${UNMARSHAL}string field contains invalid UTF-8` });
  assert.deepEqual(await answer(wire37, roleAdd, '0a03eda080'), { code: 13, message: `${UNMARSHAL}string field contains invalid UTF-8` }, 'a surrogate');
  assert.deepEqual(await answer(wire36, roleAdd, '0a02c328'), OK, 'gogo does not check strings');
  assert.deepEqual(await answer(wire37, roleAdd, '0a04f09f9880'), OK, 'valid UTF-8 (an emoji)');
  // A key is bytes: 0xff is fine.
  assert.deepEqual(await answer(wire37, PUT, '0a01ff'), OK);
  // Unknown to Range: a string-looking field number is not checked.
  assert.deepEqual(await answer(wire37, RANGE, '0a0161 fa0101ff'), OK);
});

test('3.7: every structural error is 13 grpc: error unmarshalling request: proto: cannot parse invalid wire-format data', async () => {
  const cases: Array<[string, string]> = [
    [RANGE, '0a6401'], // a length past the end
    [RANGE, '00'], // field number 0
    [RANGE, '0c'], // an end-group tag outside a group
    [RANGE, 'ffffffffffffffffffff01'], // a tag whose field number is past 2^29-1
    [RANGE, '80808080808001'], // likewise (gogo: illegal tag 0)
    [RANGE, '8080808010 00'], // field 2^29: one past the largest
    [RANGE, '0affffffffffffffffff01'], // a length of 2^63 and more
    [RANGE, '08ffffffffffffffffff02'], // a varint whose tenth byte is over 1
    [RANGE, '7f'], // wire type 7
    [RANGE, '7e'], // wire type 6
    [RANGE, '7b'], // a group that never ends
    [RANGE, '7b 0a0161'], // a group that ends with the message
    [RANGE, '7b 84 01'], // a group ended by another field's end tag
    [RANGE, '21 0000'], // a fixed64 (known field 4 is a varint: unknown) with 2 of its 8 bytes
    ['/etcdserverpb.KV/Txn', '0a020000'], // field 0 inside a Compare
    ['/etcdserverpb.Lease/LeaseGrant', '08'], // a truncated varint
    ['/v3lockpb.Lock/Unlock', '00'], // the Lock service decodes the same way
  ];
  for (const [path, bytes] of cases) {
    assert.deepEqual(await answer(wire37, path, bytes), { code: 13, message: UNMARSHAL + DECODE }, `${path} ${bytes}`);
  }
  assert.deepEqual(await answer(wire37, RANGE, '0a0161 7b7c'), OK, 'a well-formed unknown group is skipped');
  assert.deepEqual(await answer(wire37, RANGE, '0a0161 f8ffffff0f00'), OK, 'field 2^29-1, the largest, is an unknown field');
  assert.deepEqual(await answer(wire36, RANGE, '00'), { code: 13, message: `${UNMARSHAL}proto: RangeRequest: illegal tag 0 (wire type 0)` });
});

test('3.7: a stream request it cannot decode: 13 grpc: failed to unmarshal the received message: proto: cannot parse ...', async () => {
  const a = await wire37.call({ path: '/etcdserverpb.Maintenance/Snapshot', body: [frame('00')] });
  assert.deepEqual([a.code, a.message], [13, `grpc: failed to unmarshal the received message: ${DECODE}`]);
  const w = await wire37.call({ path: '/etcdserverpb.Watch/Watch', body: [frame('0a020a6401')], keepOpen: true, untilStatus: true });
  assert.deepEqual([w.code, w.message], [13, `grpc: failed to unmarshal the received message: ${DECODE}`]);
});

test('3.7: a message nested deeper than 10000 levels: proto: exceeded maximum recursion depth', async () => {
  // TxnRequest { success: [RequestOp { request_txn: TxnRequest { ... } }] }: two levels per step.
  const nested = (levels: number): Buffer => {
    let body = Buffer.alloc(0); // the innermost message, empty
    for (let level = levels; level > 1; level--) {
      // The message at `level` sits in its parent: a RequestOp holds it as field 4, a TxnRequest holds a RequestOp as field 2.
      const parentIsTxn = level % 2 === 0;
      body = Buffer.concat([Buffer.from([parentIsTxn ? 0x12 : 0x22]), varint(body.length), body]);
    }
    return body;
  };
  const deep = await answer(wire37, '/etcdserverpb.KV/Txn', nested(10001));
  assert.deepEqual(deep, { code: 13, message: `${UNMARSHAL}proto: exceeded maximum recursion depth` });
  // Before that level, the decoder moves on: a structural error after 10000 levels is the usual one.
  const withError = Buffer.concat([nested(10000), Buffer.from('00', 'hex')]);
  assert.deepEqual(await answer(wire37, '/etcdserverpb.KV/Txn', withError), { code: 13, message: UNMARSHAL + DECODE });
});

test('3.7: the space after proto: is per build (here per seed): a non-breaking space for an odd seed; the text after it is the same', async () => {
  assert.deepEqual(await answer(wireNbsp, RANGE, '00'), { code: 13, message: `${UNMARSHAL}proto:\u00a0cannot parse invalid wire-format data` });
  const deep = await answer(wireNbsp, RANGE, '0a6401');
  assert.match(deep.message ?? '', /^grpc: error unmarshalling request: proto:[ \u00a0]cannot parse invalid wire-format data$/, 'what a client can rely on');
  // The UTF-8 error has no prefix in any build.
  assert.deepEqual(await answer(wireNbsp, '/etcdserverpb.Auth/RoleAdd', '0a01ff'), { code: 13, message: `${UNMARSHAL}string field contains invalid UTF-8` });
});

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return Buffer.from(out);
}
