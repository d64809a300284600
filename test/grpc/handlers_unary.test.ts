/**
 * How a unary handler whose answer comes later (a cluster member's, once Raft let it) treats its call, as
 * grpc-go treats a handler: the call counts as in progress until the answer is there, even after the client
 * reset it (busy, the rapid-reset bound of src/h2), and an answer for a client that went away is not encoded.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Handlers, type HandlerHost } from '../../src/grpc/handlers.js';
import type { UnaryCall } from '../../src/grpc/call.js';
import type { MemberView } from '../../src/server/index.js';

const host: HandlerHost = {
  member: () => ({ tokenWaitIndex: () => undefined }) as unknown as MemberView,
  callContext: () => ({}),
  shuttingDown: () => false,
  streamUnmarshalPrefix: '',
  streamEnded: () => {},
};

/** A unary call whose client goes away (`gone`) while the handler's promise is pending, or stays. */
async function run(clientLeaves: boolean): Promise<{ encoded: number; replies: number; busy: number; released: number }> {
  const seen = { encoded: 0, replies: 0, busy: 0, released: 0 };
  let resolve: (v: string) => void = () => {};
  const pending = new Promise<string>((r) => (resolve = r));
  const impl = new Handlers(host).unary(
    () => pending,
    () => {
      seen.encoded++;
      return Buffer.from('framed');
    },
  );
  const method = impl({ path: '/p.S/M', requestStream: false, responseStream: false, requestDeserialize: () => ({}), responseSerialize: () => Buffer.alloc(0) });
  assert.equal(method.kind, 'unary');
  let gone = false;
  const call: UnaryCall = {
    message: Buffer.alloc(0),
    deadline: undefined,
    header: () => undefined,
    peerCertificate: () => undefined,
    onCancel: () => () => {},
    busy: () => {
      seen.busy++;
      return () => seen.released++;
    },
    reply: () => void seen.replies++,
    fail: () => assert.fail('no failure expected'),
    get gone() {
      return gone;
    },
  };
  if (method.kind === 'unary') method.serve(call);
  assert.equal(seen.released, 0, 'released before the answer came');
  gone = clientLeaves;
  resolve('answer');
  await pending;
  await new Promise((r) => setImmediate(r));
  return seen;
}

test('a later answer keeps the call busy until it comes, and is not encoded for a client that went away', async () => {
  assert.deepEqual(await run(false), { encoded: 1, replies: 1, busy: 1, released: 1 });
  assert.deepEqual(await run(true), { encoded: 0, replies: 0, busy: 1, released: 1 });
});
