/**
 * protobuf-go's decoding rules (src/grpc/protobuf_go_check.ts) at their limits, on the check alone: the
 * recursion limit of messages and of unknown groups, field numbers inside groups, and the bytes handed to
 * protobuf.js when known fields came with another wire type.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { etcdPackageDefinition } from '../../src/proto/index.js';
import { requestChecks, requestDecodingOf } from '../../src/grpc/request_decoding.js';
import { RECURSION_LIMIT } from '../../src/grpc/protobuf_go_check.js';

const pd = etcdPackageDefinition();
const checks = requestChecks(pd, 'etcdserverpb', requestDecodingOf('3.7', 0));
const txn = checks('TxnRequest');
const range = checks('RangeRequest');
const DECODE = 'proto: cannot parse invalid wire-format data';
const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return Buffer.from(out);
}

/** A TxnRequest nesting `levels` messages (TxnRequest → success RequestOp → request_txn TxnRequest → ...), `inner` in the innermost. */
function nestedTxn(levels: number, inner: Uint8Array = new Uint8Array(0)): Uint8Array {
  let body: Uint8Array = inner;
  for (let level = levels; level > 1; level--) body = Buffer.concat([Buffer.from([level % 2 === 0 ? 0x12 : 0x22]), varint(body.length), body]);
  return body;
}

test('messages nest up to 10000 levels; the 10001st is exceeded maximum recursion depth', () => {
  assert.equal(RECURSION_LIMIT, 10000);
  assert.equal(txn(nestedTxn(10000)), undefined);
  assert.equal(txn(nestedTxn(10001)), 'proto: exceeded maximum recursion depth');
  // Within the limit, a structural error deep down is found where it is.
  assert.equal(txn(nestedTxn(9999, hex('00'))), DECODE);
});

test('unknown groups: matched end tags, nesting up to 10001 groups, field numbers up to 2^31-1 inside', () => {
  const groups = (n: number): Buffer => Buffer.concat([Buffer.alloc(n, 0x7b), Buffer.alloc(n, 0x7c)]); // field 15 start / end
  assert.equal(range(groups(10001)), undefined);
  assert.equal(range(groups(10002)), DECODE);
  assert.equal(range(hex('7b 7c 7c')), DECODE, 'an end tag with no group open');
  // Inside a group, protowire.ConsumeTag takes field numbers up to 2^31-1 (a message's own tags stop at 2^29-1).
  assert.equal(range(hex('7b f8ffffff3f 00 7c')), undefined);
  assert.equal(range(hex('7b 8080808040 00 7c')), DECODE);
  assert.equal(range(hex('8080808010 00')), DECODE);
});

test('known fields with another wire type: the bytes handed on leave them out, at any depth, lengths rewritten', () => {
  // Range: key as a varint, then range_end "b" and limit 3 as they should be.
  const out = range(hex('0805 1201 62 1803'));
  assert.ok(out instanceof Uint8Array);
  assert.equal(Buffer.from(out).toString('hex'), '120162' + '1803');
  // Txn: success[0].request_put with the value as fixed32; the put's and the op's lengths shrink.
  const t = txn(hex('120b 1209 0a027478 1501020304'));
  assert.ok(t instanceof Uint8Array);
  assert.equal(Buffer.from(t).toString('hex'), '1206' + '1204' + '0a027478');
  // Unknown fields (not known ones) are handed on as they are: protobuf.js skips them.
  assert.equal(range(hex('0a0161 7b7c fa0101ff')), undefined);
});

test('the 3.4 to 3.6 profiles keep gogo\'s checks; only 3.7 decodes with protobuf-go', () => {
  for (const v of ['3.4', '3.5', '3.6'] as const) {
    assert.equal(requestChecks(pd, 'etcdserverpb', requestDecodingOf(v, 0))('RangeRequest')(hex('0801')), 'proto: wrong wireType = 0 for field Key', v);
  }
  assert.equal(requestDecodingOf('3.7', 7n).nonBreakingSpace, true);
  assert.equal(requestDecodingOf('3.7', undefined).nonBreakingSpace, false);
});
