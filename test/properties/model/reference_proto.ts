/**
 * A reference for the sizes and bytes etcd marshals (Go's protobuf, proto3): protobufjs, an encoder written
 * apart from src/mvcc's, over etcd's own .proto files (src/proto), and a naive varint written with BigInt
 * arithmetic only. The properties that judge src/mvcc/wire.ts (mvccpb.KeyValue as etcd's backend stores it)
 * and src/mvcc/request_size.ts (the InternalRaftRequest etcd measures against --max-request-bytes) compare
 * with these.
 *
 * proto3 leaves a scalar at its default out of the encoding, where protobufjs writes any field the object
 * has: `proto3` below drops them first, which is the rule the reference states once. A oneof member is
 * written whenever it is set (RequestOp's request, Compare's operand, 0 included).
 */
import protobuf from 'protobufjs';
import { fileURLToPath } from 'node:url';
import type { Compare, DeleteRangeRequest, KeyValue, PutRequest, RangeRequest, RequestOp, TxnRequest } from '../../../src/mvcc/types.js';

const PROTO_DIR = fileURLToPath(new URL('../../../src/proto/', import.meta.url));

const root = new protobuf.Root();
root.resolvePath = (_origin, target) => PROTO_DIR + target;
root.loadSync(['etcdserverpb/rpc.proto'], { keepCase: true });
// etcd's raft_internal.proto, the part the size rule reads: the header (field 100) and one request.
root.add(
  new protobuf.Type('RaftRequestHeader').add(new protobuf.Field('ID', 1, 'uint64')).add(new protobuf.Field('username', 2, 'string')).add(new protobuf.Field('auth_revision', 3, 'uint64')),
);
root.add(
  new protobuf.Type('InternalRaftRequest')
    .add(new protobuf.Field('header', 100, 'RaftRequestHeader'))
    .add(new protobuf.Field('ID', 1, 'uint64'))
    .add(new protobuf.Field('range', 3, 'etcdserverpb.RangeRequest'))
    .add(new protobuf.Field('put', 4, 'etcdserverpb.PutRequest'))
    .add(new protobuf.Field('delete_range', 5, 'etcdserverpb.DeleteRangeRequest'))
    .add(new protobuf.Field('txn', 6, 'etcdserverpb.TxnRequest')),
);
root.resolveAll();

const KeyValueType = root.lookupType('mvccpb.KeyValue');
const Raft = root.lookupType('InternalRaftRequest');

type Plain = Record<string, unknown>;

/** Drops scalars at their proto3 default (0, false, empty bytes, absent). Messages stay. */
function proto3(o: Plain): Plain {
  const out: Plain = {};
  for (const [k, v] of Object.entries(o)) {
    if (v === undefined || v === 0 || v === 0n || v === false || (v instanceof Uint8Array && v.length === 0)) continue;
    out[k] = typeof v === 'bigint' ? v.toString() : v;
  }
  return out;
}

const ORDER: Readonly<Record<string, number>> = { NONE: 0, ASCEND: 1, DESCEND: 2 };
const TARGET: Readonly<Record<string, number>> = { KEY: 0, VERSION: 1, CREATE: 2, MOD: 3, VALUE: 4 };
const CMP_RESULT: Readonly<Record<string, number>> = { EQUAL: 0, GREATER: 1, LESS: 2, NOT_EQUAL: 3 };
const CMP_TARGET: Readonly<Record<string, number>> = { VERSION: 0, CREATE: 1, MOD: 2, VALUE: 3, LEASE: 4 };

function range(r: RangeRequest): Plain {
  return proto3({
    key: r.key,
    range_end: r.rangeEnd,
    limit: r.limit,
    revision: r.revision,
    sort_order: ORDER[r.sortOrder ?? 'NONE'],
    sort_target: TARGET[r.sortTarget ?? 'KEY'],
    serializable: r.serializable,
    keys_only: r.keysOnly,
    count_only: r.countOnly,
    min_mod_revision: r.minModRevision,
    max_mod_revision: r.maxModRevision,
    min_create_revision: r.minCreateRevision,
    max_create_revision: r.maxCreateRevision,
  });
}

function put(r: PutRequest): Plain {
  return proto3({ key: r.key, value: r.value, lease: r.lease, prev_kv: r.prevKv, ignore_value: r.ignoreValue, ignore_lease: r.ignoreLease });
}

function del(r: DeleteRangeRequest): Plain {
  return proto3({ key: r.key, range_end: r.rangeEnd, prev_kv: r.prevKv });
}

function compare(c: Compare): Plain {
  const out = proto3({ result: CMP_RESULT[c.result], target: CMP_TARGET[c.target], key: c.key, range_end: c.rangeEnd });
  // The operand is a oneof member: written when set, whatever its value.
  if (c.target === 'VERSION' && c.version !== undefined) out['version'] = c.version;
  if (c.target === 'CREATE' && c.createRevision !== undefined) out['create_revision'] = c.createRevision;
  if (c.target === 'MOD' && c.modRevision !== undefined) out['mod_revision'] = c.modRevision;
  if (c.target === 'VALUE' && c.value !== undefined) out['value'] = c.value;
  if (c.target === 'LEASE' && c.lease !== undefined) out['lease'] = c.lease.toString();
  return out;
}

function op(o: RequestOp): Plain {
  if (o.requestRange !== undefined) return { request_range: range(o.requestRange) };
  if (o.requestPut !== undefined) return { request_put: put(o.requestPut) };
  if (o.requestDeleteRange !== undefined) return { request_delete_range: del(o.requestDeleteRange) };
  if (o.requestTxn !== undefined) return { request_txn: txn(o.requestTxn) };
  return {};
}

function txn(t: TxnRequest): Plain {
  return { compare: (t.compare ?? []).map(compare), success: (t.success ?? []).map(op), failure: (t.failure ?? []).map(op) };
}

/** The InternalRaftRequest etcd marshals for a write, with the header's ID at its widest (etcd's IDs use all 64 bits). */
export type RaftBody = { readonly put: PutRequest } | { readonly deleteRange: DeleteRangeRequest } | { readonly txn: TxnRequest } | { readonly range: RangeRequest };

/** The request's own encoding (what request_size.ts's putSize and the others measure). */
export function encodedRequest(body: RaftBody): Uint8Array {
  const type = (name: string): protobuf.Type => root.lookupType(`etcdserverpb.${name}`);
  if ('put' in body) return type('PutRequest').encode(type('PutRequest').fromObject(put(body.put))).finish();
  if ('deleteRange' in body) return type('DeleteRangeRequest').encode(type('DeleteRangeRequest').fromObject(del(body.deleteRange))).finish();
  if ('txn' in body) return type('TxnRequest').encode(type('TxnRequest').fromObject(txn(body.txn))).finish();
  return type('RangeRequest').encode(type('RangeRequest').fromObject(range(body.range))).finish();
}

/** Bytes of the InternalRaftRequest etcd would propose for `body`. */
export function raftRequestBytes(body: RaftBody): number {
  const header = { header: { ID: '18446744073709551615' } };
  const inner = 'put' in body ? { put: put(body.put) } : 'deleteRange' in body ? { delete_range: del(body.deleteRange) } : 'txn' in body ? { txn: txn(body.txn) } : { range: range(body.range) };
  return Raft.encode(Raft.fromObject({ ...header, ...inner })).finish().length;
}

/** mvccpb.KeyValue as etcd's backend stores a revision: every field of a put, the key alone for a tombstone. */
export function referenceKeyValue(kv: KeyValue, tombstone: boolean): Uint8Array {
  const fields = tombstone
    ? proto3({ key: kv.key })
    : proto3({ key: kv.key, create_revision: kv.createRevision, mod_revision: kv.modRevision, version: kv.version, value: kv.value, lease: kv.lease });
  return KeyValueType.encode(KeyValueType.fromObject(fields)).finish();
}

/** An unsigned varint, naively: seven bits at a time of a BigInt, low group first. */
export function naiveVarint(v: bigint): number[] {
  const out: number[] = [];
  let x = v;
  do {
    const low = Number(x % 128n);
    x /= 128n;
    out.push(x > 0n ? low + 128 : low);
  } while (x > 0n);
  return out;
}

/** The varint protobuf writes for an int64 field's value: a negative one as its 64-bit two's complement. */
export function naiveInt64Varint(v: bigint): number[] {
  return naiveVarint(v < 0n ? v + 2n ** 64n : v);
}
