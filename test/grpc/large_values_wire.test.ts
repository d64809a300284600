/**
 * A large Put through the served door (issue 32): its value is stored as a view of the request message the
 * door assembled from its DATA frames, not copied a second time. Under a flood of 64 KiB puts the external
 * memory a Node process allocates per put sets how often its collector marks the whole heap, so a put that
 * allocates the value once instead of twice costs a third fewer mark-compacts (docs/security.md). Counted
 * here by what the stored value's buffer is: the request message's (the key and field tags included), where a
 * copy would be a buffer of the value's length alone.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { serve, servedServerOf, type ServeHandle } from '../../src/grpc/server.js';
import { WireClient, frame } from './raw_h2.js';

let door: ServeHandle;
let wire: WireClient;

before(async () => {
  door = await serve({ port: 0, etcdVersion: '3.4' });
  wire = new WireClient(door.address);
});

after(async () => {
  wire.close();
  await door.close();
});

/** A PutRequest of key and value (fields 1 and 2, lengths as varints). */
function putRequest(key: string, value: Buffer): Buffer {
  const varint = (n: number): number[] => {
    const out: number[] = [];
    for (; n >= 0x80; n >>>= 7) out.push((n & 0x7f) | 0x80);
    out.push(n);
    return out;
  };
  return Buffer.concat([Buffer.from([0x0a, ...varint(key.length)]), Buffer.from(key), Buffer.from([0x12, ...varint(value.length)]), value]);
}

test('a 64 KiB put over the wire is stored in the request message the door assembled, not in a copy', async () => {
  const value = Buffer.alloc(64 * 1024, 0x76);
  const message = putRequest('/big', value);
  // Several DATA frames (16 KiB each at most): the door assembles the message from them.
  const answer = await wire.call({ path: '/etcdserverpb.KV/Put', body: [frame(message)] });
  assert.equal(answer.code, 0);
  const kv = servedServerOf(door).mvcc.range({ key: Buffer.from('/big') }).kvs[0]!;
  assert.deepEqual(Buffer.from(kv.value), value);
  assert.equal(kv.value.buffer.byteLength, message.length, 'the value is a view of the whole request message');
  // A small put is copied into the store's shared slabs as before (a view would keep its read buffer alive).
  assert.equal((await wire.call({ path: '/etcdserverpb.KV/Put', body: [frame(putRequest('/small', Buffer.from('v')))] })).code, 0);
  assert.equal(Buffer.from(servedServerOf(door).mvcc.range({ key: Buffer.from('/small') }).kvs[0]!.value).toString(), 'v');
});
