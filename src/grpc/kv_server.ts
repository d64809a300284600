/**
 * etcd's KV service as served (etcd's server/etcdserver/api/v3rpc/kv.go): each method hands its request to
 * the member's KVService (src/server/kv_service.ts; a cluster member's answers once Raft let it). Range,
 * Put, DeleteRange and Txn answer through codec.ts's encoders, straight into one framed buffer — the hot
 * path (docs/performance.md). RangeStream (etcd 3.7) is the Range result cut into chunks.
 */
import { andThen } from '../server/index.js';
import type * as M from '../server/messages.js';
import { framedEncoders } from './codec.js';
import type { Handlers, MethodTable } from './handlers.js';

export function kvServer(h: Handlers): MethodTable {
  const kv = () => h.member().services.kv;
  return {
    // Compact, and any unary method KVService gains: forwarded by name.
    ...h.forwarded('KV'),
    Range: h.unary((req: M.RangeRequest, ctx) => kv().range(req, ctx), framedEncoders.range),
    Put: h.unary((req: M.PutRequest, ctx) => kv().put(req, ctx), framedEncoders.put),
    DeleteRange: h.unary((req: M.DeleteRangeRequest, ctx) => kv().deleteRange(req, ctx), framedEncoders.deleteRange),
    Txn: h.unary((req: M.TxnRequest, ctx) => kv().txn(req, ctx), framedEncoders.txn),
    RangeStream: h.serverStream((req: M.RangeRequest, ctx) => andThen(kv().range(req, ctx), rangeStream)),
  };
}

/** RangeStream chunk size (keys per response). */
const RANGE_STREAM_CHUNK = 1000;

/**
 * RangeStream (etcd 3.7): the Range result at one revision, cut into responses of up to 1000 keys.
 * Every chunk carries the header, `more` and `count`, so merging the chunks (protobuf merge: repeated
 * fields concatenate, scalars keep the last value) gives exactly the Range response.
 */
export function rangeStream(r: M.RangeResponse): Array<{ range_response: M.RangeResponse }> {
  const out: Array<{ range_response: M.RangeResponse }> = [];
  for (let i = 0; i === 0 || i < r.kvs.length; i += RANGE_STREAM_CHUNK) {
    out.push({ range_response: { header: r.header, kvs: r.kvs.slice(i, i + RANGE_STREAM_CHUNK), more: r.more, count: r.count } });
  }
  return out;
}
