import { test } from 'node:test';
import assert from 'node:assert/strict';
import { base64Error, goString, messageFromJson, messageToJson, readJsonValue } from '../../src/http/json.js';

// The gateway's JSON mapping (src/http/json.ts), on what the endpoint tests compare with etcd less directly.

test('responses: proto names in declaration order, defaults left out, int64 as strings, bytes as base64, enums by name', () => {
  const json = messageToJson('etcdserverpb.WatchResponse', {
    header: { cluster_id: '1', member_id: '2', revision: '0', raft_term: '0' },
    watch_id: '0',
    created: false,
    canceled: false,
    compact_revision: '0',
    cancel_reason: '',
    fragment: false,
    events: [
      { type: 'PUT', kv: { key: Buffer.from('a'), create_revision: '2', mod_revision: '2', version: '1', value: Buffer.alloc(0), lease: '0' }, prev_kv: null },
      { type: 'DELETE', kv: { key: Buffer.from('a'), create_revision: '0', mod_revision: '3', version: '0', value: Buffer.alloc(0), lease: '0' } },
    ],
  });
  assert.equal(
    json,
    '{"header":{"cluster_id":"1","member_id":"2"},"events":[{"kv":{"key":"YQ==","create_revision":"2","mod_revision":"2","version":"1"}},{"type":"DELETE","kv":{"key":"YQ==","mod_revision":"3"}}]}',
  );
  // A present message is written even when all its fields are defaults; uint32 is a number.
  assert.equal(messageToJson('etcdserverpb.HashResponse', { header: {}, hash: 7 }), '{"header":{},"hash":7}');
  assert.equal(messageToJson('etcdserverpb.AlarmResponse', { header: null, alarms: [] }), '{}');
});

test('strings are escaped as Go escapes them', () => {
  assert.equal(goString('a<b>&"\\\n\u0001\u2028é'), '"a\\u003cb\\u003e\\u0026\\"\\\\\\n\\u0001\\u2028é"');
});

test('requests: JSON names and proto names both read, unknown fields dropped, nested messages mapped', () => {
  assert.deepEqual(
    messageFromJson('etcdserverpb.TxnRequest', {
      compare: [{ key: 'YQ==', target: 'VALUE', createRevision: '3' }],
      success: [{ requestPut: { key: 'YQ==', prevKv: true, bogus: 1 } }],
      failure: null,
      extra: 'x',
    }),
    { compare: [{ key: 'YQ==', target: 'VALUE', create_revision: '3' }], success: [{ request_put: { key: 'YQ==', prev_kv: true } }] },
  );
  assert.throws(() => messageFromJson('etcdserverpb.RangeRequest', { sort_order: 'SIDEWAYS' }), {
    message: 'unknown value "SIDEWAYS" for enum etcdserverpb.RangeRequest_SortOrder',
  });
});

test('bodies are read one JSON value at a time; long integers keep every digit', () => {
  const text = '{"ID":7587869018744586780} {"a":[1,{"b":null}]}  {"c"';
  const first = readJsonValue(text, 0);
  assert.ok('value' in first);
  assert.deepEqual(first.value, { ID: '7587869018744586780' });
  const second = readJsonValue(text, first.end);
  assert.ok('value' in second);
  assert.deepEqual(second.value, { a: [1, { b: null }] });
  assert.deepEqual(readJsonValue(text, second.end), { incomplete: true });
  assert.deepEqual(readJsonValue('{"a" 1}', 0), { error: "invalid character '1' after object key" });
  assert.deepEqual(readJsonValue('[1 2]', 0), { error: "invalid character '2' after array element" });
});

test("base64 as Go's StdEncoding reads it: padding required, the first bad byte named", () => {
  assert.equal(base64Error('Zm9v'), undefined);
  assert.equal(base64Error('Zm8='), undefined);
  assert.equal(base64Error('Zg=='), undefined);
  assert.equal(base64Error(''), undefined);
  assert.equal(base64Error('Zm9v!'), 4);
  assert.equal(base64Error('Zm9'), 0);
  assert.equal(base64Error('Zg='), 3);
  assert.equal(base64Error('Zg==Zg=='), 4);
});
