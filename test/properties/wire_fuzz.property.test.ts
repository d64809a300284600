/**
 * The over-gRPC half of issue 14 item 4 (the in-process half is bad_input.property.test.ts): seeded random
 * sequences of calls against `serve()`, each either a well-formed KV/Lease request sent with the grpc-js
 * client (connectEtcd) or a junk request sent raw over HTTP/2 (test/grpc/raw_h2.ts) to a random KV/Lease
 * method:
 *
 *   - a valid message with one field re-encoded with the wrong wire type (at the top level, or for Txn
 *     inside a nested Compare / RequestOp / Put / Range / DeleteRange / Txn);
 *   - truncated bytes: the gRPC frame cut short, no message at all, or a message whose last
 *     length-delimited field claims more bytes than follow;
 *   - random bytes, or the valid message with one byte replaced, inserted or deleted;
 *   - the valid message with one varint (a tag, a length, a value) in a longer encoding (up to 10 bytes,
 *     as gogo reads them): not junk to etcd, which takes it as the same request;
 *   - an illegal tag (field number 0 or one whose int32 truncation is negative);
 *   - a length overflow (a length varint of 11+ bytes, a negative one, one whose end overflows int64, one
 *     past the end);
 *   - the compressed flag (or another flag byte) without an encoding;
 *   - a message over the receive limit (the prefix alone, the prefix and some bytes, or all of it);
 *   - an unknown method / service / path.
 *
 * Asserted for every call:
 *   - a junk request gets exactly the wire error etcd answers it with (code and message as in
 *     docs/observed-etcd-3.4.23.md §17), computed here from the bytes sent, independently of
 *     src/grpc/gogo_check.ts; random or mutated bytes get either one of gogo's Unmarshal texts naming a
 *     message or field the method's request can contain, or are decoded and answered as a request (below);
 *     a longer varint encoding is answered as the request it encodes (a Put writes its key and value);
 *   - a well-formed request (or random bytes that decode) succeeds or fails with one of etcd's own errors
 *     (code and text from src/{mvcc,auth,lease}/errors.ts), never UNKNOWN / INTERNAL from a JS exception;
 *   - a rejected call changes nothing: revision, compaction revision, `server.kv.hash()` (a digest of the
 *     whole stored history) and the lease IDs are equal before and after; for a wire error the raft index
 *     too (the request never reached the member); a successful read-only call also changes nothing;
 * and over the whole run:
 *   - a Watch on the prefix /fz/ (prev_kv), opened at the start with the grpc-js client, receives every
 *     committed change in its range exactly once, in order — judged by src/watch/guarantees.ts against the
 *     recorded history with drainedThrough = the final revision, and compared event by event with the
 *     history, after a progress notification at the final revision has closed the stream's tail (the
 *     checker's Unique / IsCreate reports for a key a txn deletes and puts again in one revision are not
 *     violations; see excusable());
 *   - at the end the member has exactly that one stream call open (0 once it is canceled), the server's
 *     HTTP/2 side has no stream left open (ServeHandle.openHttp2Streams), and after all runs, with a forced GC, the heap grew less
 *     than 64 MiB.
 *
 * Clock: serve({ port: 0, clock: new VirtualClock() }), never advanced. Nothing then happens between two
 * calls (no lease expires, no periodic sync runs), so "before" and "after" a call differ only by that call,
 * and a run is a function of its inputs and seed. Watch delivery needs no time: serve() schedules it on a
 * microtask and the one watcher stays synced.
 *
 * Memory bound: measured after a forced full GC (--expose-gc switched on at run time), so what is left is
 * what the process keeps. The runs legitimately keep ~5–11 MiB (V8 code and grpc-js/protobuf.js caches; each
 * run's server is closed and collected), whatever the run count; 64 MiB leaves room for hosts and Node
 * versions while still catching a leak proportional to calls: ~650 calls by default (~100 KiB kept per call
 * fails), ~90,000 under `npm run test:long` (ETCDSIM_NUM_RUNS=2000: ~1 KiB per call fails), and an over-limit
 * message's 2 MiB kept per send fails within a few hundred runs.
 *
 * Runs: ETCDSIM_NUM_RUNS (default 15, 1–90 calls each, ~45 on average; ~1–2 s). Replay: ETCDSIM_SEED=<seed>
 * ETCDSIM_PATH=<path> (printed on failure, see harness.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import * as grpc from '@grpc/grpc-js';

import { connectEtcd, type EtcdGrpcClient, type GrpcBidiCall } from '../../src/grpc/client.js';
import { DEFAULT_MAX_REQUEST_BYTES, GRPC_OVERHEAD_BYTES, serve, type ServeHandle } from '../../src/grpc/server.js';
import { etcdService } from '../../src/grpc/index.js';
import * as authErrors from '../../src/auth/errors.js';
import * as leaseErrors from '../../src/lease/errors.js';
import * as etcdErrors from '../../src/mvcc/errors.js';
import type { EtcdErrorKind } from '../../src/etcd/index.js';
import type * as M from '../../src/server/messages.js';
import { VirtualClock } from '../../src/sim/index.js';
import { checkWatch, formatViolations, isProgressNotify, recordHistory, type CommittedHistory, type WatchViolation } from '../../src/watch/guarantees.js';
import type { WatchCreateRequest, WatchResponse } from '../../src/watch/index.js';
import { checkAsyncProperty, numRuns } from './harness.js';
import { responseIn } from './watch_harness.js';
import { frame, WireClient, type WireAnswer, type WireRequest } from '../grpc/raw_h2.js';

const FILE = 'test/properties/wire_fuzz.property.test.ts';
const DEFAULT_RUNS = 15;
/** The receive limit serve() sets by default: --max-request-bytes + 512 KiB. */
const MAX_RECEIVE = DEFAULT_MAX_REQUEST_BYTES + GRPC_OVERHEAD_BYTES;
const HEAP_GROWTH_LIMIT = 64 * 1024 * 1024;
/** Real time one wait (an answer, the watch's drain) may take before the run fails. */
const WAIT_MS = 10_000;
const UNMARSHAL = 'grpc: error unmarshalling request: ';

// ---------------------------------------------------------------------------------------------------
// Keys, methods, and the request schemas as gogo's generated Unmarshal names them

/** The watched prefix is [/fz/, /fz0); '/fz', '/fz0' and '/fy/a' sit just outside it. */
const KEYS = ['/fz/a', '/fz/b', '/fz/c', '/fz/d', '/fz', '/fz0', '/fy/a'] as const;
const RANGE_ENDS = ['/fz0', '/fz/c', '\0'] as const;
const WATCH_KEY = '/fz/';
const WATCH_END = '/fz0';

const KV_METHODS = ['Range', 'Put', 'DeleteRange', 'Txn', 'Compact'] as const;
const LEASE_METHODS = ['LeaseGrant', 'LeaseRevoke', 'LeaseTimeToLive', 'LeaseLeases'] as const;
type Method = (typeof KV_METHODS)[number] | (typeof LEASE_METHODS)[number];
const serviceOf = (m: Method): 'KV' | 'Lease' => ((KV_METHODS as readonly string[]).includes(m) ? 'KV' : 'Lease');

type MsgName =
  | 'RangeRequest'
  | 'PutRequest'
  | 'DeleteRangeRequest'
  | 'TxnRequest'
  | 'Compare'
  | 'RequestOp'
  | 'CompactionRequest'
  | 'LeaseGrantRequest'
  | 'LeaseRevokeRequest'
  | 'LeaseTimeToLiveRequest'
  | 'LeaseLeasesRequest';

const REQUEST_TYPE: Readonly<Record<Method, MsgName>> = {
  Range: 'RangeRequest',
  Put: 'PutRequest',
  DeleteRange: 'DeleteRangeRequest',
  Txn: 'TxnRequest',
  Compact: 'CompactionRequest',
  LeaseGrant: 'LeaseGrantRequest',
  LeaseRevoke: 'LeaseRevokeRequest',
  LeaseTimeToLive: 'LeaseTimeToLiveRequest',
  LeaseLeases: 'LeaseLeasesRequest',
};

/** A known field: number, gogo's Go name, the wire type it must come with (0 varint, 2 length-delimited). */
interface FieldDef {
  readonly num: number;
  readonly go: string;
  readonly wt: 0 | 2;
}
const f = (num: number, go: string, wt: 0 | 2): FieldDef => ({ num, go, wt });

/** From src/proto/etcdserverpb/rpc.proto; the Go names as protoc-gen-gogo spells them (rpc.pb.go). */
const SCHEMA: Readonly<Record<MsgName, readonly FieldDef[]>> = {
  RangeRequest: [
    f(1, 'Key', 2), f(2, 'RangeEnd', 2), f(3, 'Limit', 0), f(4, 'Revision', 0), f(5, 'SortOrder', 0), f(6, 'SortTarget', 0),
    f(7, 'Serializable', 0), f(8, 'KeysOnly', 0), f(9, 'CountOnly', 0), f(10, 'MinModRevision', 0), f(11, 'MaxModRevision', 0),
    f(12, 'MinCreateRevision', 0), f(13, 'MaxCreateRevision', 0),
  ],
  PutRequest: [f(1, 'Key', 2), f(2, 'Value', 2), f(3, 'Lease', 0), f(4, 'PrevKv', 0), f(5, 'IgnoreValue', 0), f(6, 'IgnoreLease', 0)],
  DeleteRangeRequest: [f(1, 'Key', 2), f(2, 'RangeEnd', 2), f(3, 'PrevKv', 0)],
  TxnRequest: [f(1, 'Compare', 2), f(2, 'Success', 2), f(3, 'Failure', 2)],
  Compare: [
    f(1, 'Result', 0), f(2, 'Target', 0), f(3, 'Key', 2), f(4, 'Version', 0), f(5, 'CreateRevision', 0), f(6, 'ModRevision', 0),
    f(7, 'Value', 2), f(8, 'Lease', 0), f(64, 'RangeEnd', 2),
  ],
  RequestOp: [f(1, 'RequestRange', 2), f(2, 'RequestPut', 2), f(3, 'RequestDeleteRange', 2), f(4, 'RequestTxn', 2)],
  CompactionRequest: [f(1, 'Revision', 0), f(2, 'Physical', 0)],
  LeaseGrantRequest: [f(1, 'TTL', 0), f(2, 'ID', 0)],
  LeaseRevokeRequest: [f(1, 'ID', 0)],
  LeaseTimeToLiveRequest: [f(1, 'ID', 0), f(2, 'Keys', 0)],
  LeaseLeasesRequest: [],
};

/** Messages a message can contain (for judging which names a random request's error may mention). */
const SUBMESSAGES: Readonly<Partial<Record<MsgName, readonly MsgName[]>>> = {
  TxnRequest: ['Compare', 'RequestOp'],
  RequestOp: ['RangeRequest', 'PutRequest', 'DeleteRangeRequest', 'TxnRequest'],
};

function reachable(root: MsgName): Set<MsgName> {
  const out = new Set<MsgName>();
  const visit = (m: MsgName): void => {
    if (out.has(m)) return;
    out.add(m);
    for (const s of SUBMESSAGES[m] ?? []) visit(s);
  };
  visit(root);
  return out;
}

/** A field number no message here knows: an unknown length-delimited field is skipped (or refused) by skipRpc. */
const UNKNOWN_FIELD = 15;

/**
 * Where a Txn's bad field goes: the path of length-delimited field numbers from the TxnRequest down, and the
 * message at its end (whose name or field the error names). Other methods: the request itself.
 */
const TXN_CHAINS: readonly { readonly path: readonly number[]; readonly target: MsgName }[] = [
  { path: [], target: 'TxnRequest' },
  { path: [1], target: 'Compare' },
  { path: [2], target: 'RequestOp' },
  { path: [3, 2], target: 'PutRequest' },
  { path: [2, 1], target: 'RangeRequest' },
  { path: [2, 3], target: 'DeleteRangeRequest' },
  { path: [2, 4], target: 'TxnRequest' },
  { path: [3, 4, 2, 2], target: 'PutRequest' },
];

// ---------------------------------------------------------------------------------------------------
// Well-formed requests (data; turned into messages against the server's state when sent)

type OpSpec =
  | { readonly o: 'put'; readonly key: number; readonly value: number; readonly lease: number | null; readonly prevKv: boolean }
  | { readonly o: 'del'; readonly key: number; readonly end: number | null; readonly prevKv: boolean }
  | { readonly o: 'range'; readonly key: number; readonly end: number | null; readonly limit: number }
  | { readonly o: 'txn'; readonly txn: TxnSpec };

interface CmpSpec {
  readonly key: number;
  readonly target: 'VERSION' | 'CREATE' | 'MOD' | 'VALUE';
  readonly result: 'EQUAL' | 'GREATER' | 'LESS' | 'NOT_EQUAL';
  readonly n: number;
}

interface TxnSpec {
  readonly compare: readonly CmpSpec[];
  readonly success: readonly OpSpec[];
  readonly failure: readonly OpSpec[];
}

type Req =
  | { readonly m: 'Range'; readonly key: number; readonly end: number | null; readonly limit: number; readonly back: number | null; readonly serializable: boolean }
  | { readonly m: 'Put'; readonly key: number; readonly value: number; readonly lease: number | null; readonly prevKv: boolean }
  | { readonly m: 'DeleteRange'; readonly key: number; readonly end: number | null; readonly prevKv: boolean }
  | { readonly m: 'Txn'; readonly txn: TxnSpec }
  | { readonly m: 'Compact'; readonly back: number; readonly physical: boolean }
  | { readonly m: 'LeaseGrant'; readonly ttl: number; readonly id: number }
  | { readonly m: 'LeaseRevoke'; readonly lease: number }
  | { readonly m: 'LeaseTimeToLive'; readonly lease: number; readonly keys: boolean }
  | { readonly m: 'LeaseLeases' };

const keyArb = fc.nat({ max: KEYS.length - 1 });
const endArb = fc.option(fc.nat({ max: RANGE_ENDS.length - 1 }), { freq: 3 });
const valueArb = fc.nat({ max: 20 });
/** An index into the leases granted so far (null: no lease). */
const leaseRefArb = fc.option(fc.nat({ max: 5 }), { freq: 2 });

const cmpArb: fc.Arbitrary<CmpSpec> = fc.record({
  key: keyArb,
  target: fc.constantFrom('VERSION' as const, 'CREATE' as const, 'MOD' as const, 'VALUE' as const),
  result: fc.constantFrom('EQUAL' as const, 'GREATER' as const, 'LESS' as const, 'NOT_EQUAL' as const),
  n: fc.nat({ max: 8 }),
});

const { txn: txnArb } = fc.letrec<{ op: OpSpec; txn: TxnSpec }>((tie) => ({
  op: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 4, arbitrary: fc.record({ o: fc.constant('put' as const), key: keyArb, value: valueArb, lease: leaseRefArb, prevKv: fc.boolean() }) },
    { weight: 2, arbitrary: fc.record({ o: fc.constant('del' as const), key: keyArb, end: endArb, prevKv: fc.boolean() }) },
    { weight: 1, arbitrary: fc.record({ o: fc.constant('range' as const), key: keyArb, end: endArb, limit: fc.nat({ max: 3 }) }) },
    { weight: 1, arbitrary: fc.record({ o: fc.constant('txn' as const), txn: tie('txn') as fc.Arbitrary<TxnSpec> }) },
  ),
  txn: fc.record({
    compare: fc.array(cmpArb, { maxLength: 2 }),
    success: fc.array(tie('op') as fc.Arbitrary<OpSpec>, { maxLength: 3 }),
    failure: fc.array(tie('op') as fc.Arbitrary<OpSpec>, { maxLength: 2 }),
  }),
}));

const reqArb: fc.Arbitrary<Req> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      m: fc.constant('Range' as const),
      key: keyArb,
      end: endArb,
      limit: fc.nat({ max: 3 }),
      back: fc.option(fc.nat({ max: 6 }), { freq: 2 }),
      serializable: fc.boolean(),
    }),
  },
  { weight: 5, arbitrary: fc.record({ m: fc.constant('Put' as const), key: keyArb, value: valueArb, lease: leaseRefArb, prevKv: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ m: fc.constant('DeleteRange' as const), key: keyArb, end: endArb, prevKv: fc.boolean() }) },
  { weight: 4, arbitrary: fc.record({ m: fc.constant('Txn' as const), txn: txnArb }) },
  // back -2..-1: a future revision (refused); larger: below the compaction point after a few (refused).
  { weight: 1, arbitrary: fc.record({ m: fc.constant('Compact' as const), back: fc.integer({ min: -2, max: 8 }), physical: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ m: fc.constant('LeaseGrant' as const), ttl: fc.integer({ min: 5, max: 600 }), id: fc.nat({ max: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ m: fc.constant('LeaseRevoke' as const), lease: fc.nat({ max: 5 }) }) },
  { weight: 1, arbitrary: fc.record({ m: fc.constant('LeaseTimeToLive' as const), lease: fc.nat({ max: 5 }), keys: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ m: 'LeaseLeases' as const }) },
);

/** What a request's data needs of the run: the current and compaction revisions, the leases granted. */
interface Ctx {
  readonly current: () => number;
  readonly granted: bigint[];
}

const B = (s: string): Buffer => Buffer.from(s, 'latin1');
const val = (n: number): Buffer => B(`v${n}`);

/** A granted lease (by index, cycling), or a made-up ID when none was granted. */
function leaseId(ctx: Ctx, i: number): string {
  return ctx.granted.length > 0 ? String(ctx.granted[i % ctx.granted.length]) : String(1000 + i);
}

function opMessage(op: OpSpec, ctx: Ctx): M.RequestOp {
  switch (op.o) {
    case 'put':
      return { request_put: { key: B(KEYS[op.key]!), value: val(op.value), lease: op.lease === null ? '0' : leaseId(ctx, op.lease), prev_kv: op.prevKv } };
    case 'del':
      return { request_delete_range: { key: B(KEYS[op.key]!), ...(op.end === null ? {} : { range_end: B(RANGE_ENDS[op.end]!) }), prev_kv: op.prevKv } };
    case 'range':
      return { request_range: { key: B(KEYS[op.key]!), ...(op.end === null ? {} : { range_end: B(RANGE_ENDS[op.end]!) }), limit: String(op.limit) } };
    case 'txn':
      return { request_txn: txnMessage(op.txn, ctx) };
  }
}

function txnMessage(t: TxnSpec, ctx: Ctx): M.TxnRequest {
  return {
    compare: t.compare.map((c): M.Compare => {
      const key = B(KEYS[c.key]!);
      const base = { result: c.result, target: c.target, key };
      switch (c.target) {
        case 'VERSION':
          return { ...base, version: String(c.n) };
        case 'CREATE':
          return { ...base, create_revision: String(c.n) };
        case 'MOD':
          return { ...base, mod_revision: String(c.n) };
        case 'VALUE':
          return { ...base, value: val(c.n) };
      }
    }),
    success: t.success.map((o) => opMessage(o, ctx)),
    failure: t.failure.map((o) => opMessage(o, ctx)),
  };
}

/** The message of a request, as the grpc-js client sends it (proto-loader's form). */
function message(req: Req, ctx: Ctx): object {
  switch (req.m) {
    case 'Range':
      return {
        key: B(KEYS[req.key]!),
        ...(req.end === null ? {} : { range_end: B(RANGE_ENDS[req.end]!) }),
        limit: String(req.limit),
        revision: req.back === null ? '0' : String(Math.max(1, ctx.current() - req.back)),
        serializable: req.serializable,
      } satisfies M.RangeRequest;
    case 'Put':
      return { key: B(KEYS[req.key]!), value: val(req.value), lease: req.lease === null ? '0' : leaseId(ctx, req.lease), prev_kv: req.prevKv } satisfies M.PutRequest;
    case 'DeleteRange':
      return { key: B(KEYS[req.key]!), ...(req.end === null ? {} : { range_end: B(RANGE_ENDS[req.end]!) }), prev_kv: req.prevKv } satisfies M.DeleteRangeRequest;
    case 'Txn':
      return txnMessage(req.txn, ctx);
    case 'Compact':
      return { revision: String(Math.max(1, ctx.current() - req.back)), physical: req.physical } satisfies M.CompactionRequest;
    case 'LeaseGrant':
      return { TTL: String(req.ttl), ID: String(req.id) } satisfies M.LeaseGrantRequest;
    case 'LeaseRevoke':
      return { ID: leaseId(ctx, req.lease) } satisfies M.LeaseRevokeRequest;
    case 'LeaseTimeToLive':
      return { ID: leaseId(ctx, req.lease), keys: req.keys } satisfies M.LeaseTimeToLiveRequest;
    case 'LeaseLeases':
      return {};
  }
}

/** Sends a well-formed request with the grpc-js client; resolves to its response or rejects with grpc-js's error. */
function sendGood(etcd: EtcdGrpcClient, req: Req, ctx: Ctx): Promise<unknown> {
  const msg = message(req, ctx) as never;
  switch (req.m) {
    case 'Range':
      return etcd.kv.range(msg);
    case 'Put':
      return etcd.kv.put(msg);
    case 'DeleteRange':
      return etcd.kv.deleteRange(msg);
    case 'Txn':
      return etcd.kv.txn(msg);
    case 'Compact':
      return etcd.kv.compact(msg);
    case 'LeaseGrant':
      return etcd.lease.leaseGrant(msg);
    case 'LeaseRevoke':
      return etcd.lease.leaseRevoke(msg);
    case 'LeaseTimeToLive':
      return etcd.lease.leaseTimeToLive(msg);
    case 'LeaseLeases':
      return etcd.lease.leaseLeases(msg);
  }
}

/** Whether a request only reads (a successful one must change nothing either). */
function readOnly(req: Req): boolean {
  const opReads = (o: OpSpec): boolean => o.o === 'range' || (o.o === 'txn' && txnReads(o.txn));
  const txnReads = (t: TxnSpec): boolean => t.success.every(opReads) && t.failure.every(opReads);
  return req.m === 'Range' || req.m === 'LeaseTimeToLive' || req.m === 'LeaseLeases' || (req.m === 'Txn' && txnReads(req.txn));
}

// ---------------------------------------------------------------------------------------------------
// Junk

type BadTail =
  | { readonly k: 'wrongWire'; readonly field: number; readonly wt: number }
  | { readonly k: 'illegalTag'; readonly hi: number; readonly lo: number; readonly wt: number; readonly trailing: Uint8Array }
  | { readonly k: 'lengthOverflow'; readonly how: 'eleven' | 'negative' | 'huge' | 'pastEnd'; readonly n: bigint; readonly known: boolean }
  | { readonly k: 'msgCut'; readonly cut: 'tag' | 'lenByte' | 'content'; readonly len: number; readonly keep: number; readonly known: boolean };

type Junk =
  | { readonly k: 'field'; readonly tail: BadTail; readonly chain: number }
  | { readonly k: 'frameCut'; readonly keep: number }
  | { readonly k: 'empty' }
  | { readonly k: 'random'; readonly bytes: Uint8Array }
  | { readonly k: 'mutate'; readonly op: 'set' | 'insert' | 'delete'; readonly pos: number; readonly byte: number }
  | { readonly k: 'overlong'; readonly varint: number; readonly extra: number }
  | { readonly k: 'flag'; readonly flag: number; readonly identity: boolean }
  | { readonly k: 'overLimit'; readonly how: 'prefix' | 'partial' | 'full'; readonly claim: number }
  | { readonly k: 'path'; readonly how: 'method' | 'service' | 'extra' | 'noMethod'; readonly name: string };

const nameArb = fc.stringMatching(/^[A-Za-z][A-Za-z0-9]{0,11}$/);

const badTailArb: fc.Arbitrary<BadTail> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ k: fc.constant('wrongWire' as const), field: fc.nat({ max: 12 }), wt: fc.nat({ max: 6 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant('illegalTag' as const),
      hi: fc.oneof(fc.constant(0), fc.nat({ max: 2 ** 29 - 1 })),
      // The low 32 bits of the field number: 0, or with bit 31 set (a negative int32).
      lo: fc.oneof(fc.constant(0), fc.integer({ min: 2 ** 31, max: 2 ** 32 - 1 })),
      wt: fc.nat({ max: 7 }),
      trailing: fc.uint8Array({ maxLength: 3 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant('lengthOverflow' as const),
      how: fc.constantFrom('eleven' as const, 'negative' as const, 'huge' as const, 'pastEnd' as const),
      n: fc.bigInt({ min: 0n, max: 2n ** 62n }),
      known: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant('msgCut' as const),
      cut: fc.constantFrom('tag' as const, 'lenByte' as const, 'content' as const),
      len: fc.integer({ min: 1, max: 300 }),
      keep: fc.nat({ max: 299 }),
      known: fc.boolean(),
    }),
  },
);

const junkArb: fc.Arbitrary<Junk> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ k: fc.constant('field' as const), tail: badTailArb, chain: fc.nat({ max: TXN_CHAINS.length - 1 }) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('frameCut' as const), keep: fc.nat({ max: 200 }) }) },
  { weight: 1, arbitrary: fc.constant({ k: 'empty' as const }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('random' as const), bytes: fc.uint8Array({ minLength: 1, maxLength: 24 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({ k: fc.constant('mutate' as const), op: fc.constantFrom('set' as const, 'insert' as const, 'delete' as const), pos: fc.nat({ max: 200 }), byte: fc.nat({ max: 255 }) }),
  },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('overlong' as const), varint: fc.nat({ max: 40 }), extra: fc.integer({ min: 1, max: 9 }) }) },
  {
    weight: 1,
    arbitrary: fc.record({ k: fc.constant('flag' as const), flag: fc.oneof(fc.constant(1), fc.integer({ min: 2, max: 255 })), identity: fc.boolean() }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('overLimit' as const),
      how: fc.constantFrom('prefix' as const, 'partial' as const, 'full' as const),
      claim: fc.oneof(fc.integer({ min: MAX_RECEIVE + 1, max: MAX_RECEIVE + 64 }), fc.integer({ min: MAX_RECEIVE + 1, max: 2 ** 32 - 1 })),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ k: fc.constant('path' as const), how: fc.constantFrom('method' as const, 'service' as const, 'extra' as const, 'noMethod' as const), name: nameArb }),
  },
);

/** A protobuf varint of an unsigned (or two's complement int64) value. */
function varint(v: bigint | number): Buffer {
  let x = BigInt.asUintN(64, BigInt(v));
  const out: number[] = [];
  do {
    let b = Number(x & 0x7fn);
    x >>= 7n;
    if (x > 0n) b |= 0x80;
    out.push(b);
  } while (x > 0n);
  return Buffer.from(out);
}

const tag = (num: bigint | number, wt: number): Buffer => varint((BigInt(num) << 3n) | BigInt(wt));
const lenField = (num: number, payload: Buffer): Buffer => Buffer.concat([tag(num, 2), varint(payload.length), payload]);

/** A payload of the given wire type, so the bytes after a wrongly typed tag are well-formed for that type. */
function payloadOf(wt: number): Buffer {
  if (wt === 0) return varint(1);
  if (wt === 1) return Buffer.alloc(8);
  if (wt === 2) return Buffer.from([1, 0x61]);
  if (wt === 5) return Buffer.alloc(4);
  return Buffer.alloc(0);
}

/** The number of a length-delimited field of `target`: a known one (when asked and there is one) or an unknown one. */
function lenFieldOf(target: MsgName, known: boolean): number {
  const k = SCHEMA[target].find((x) => x.wt === 2);
  return known && k !== undefined ? k.num : UNKNOWN_FIELD;
}

/**
 * The bytes of a bad field in `target` and the text gogo's generated Unmarshal (3.4.23's rpc.pb.go, gogo
 * 1.3.2) returns for them, read off the generated code: the tag's wire type 4 is refused before anything
 * else; a field number whose int32 is <= 0 is an illegal tag (printing the whole wire value); a known field
 * with another wire type than its own is a wrong wire type; a length varint running past 64 bits is an
 * integer overflow; a negative length (or, as in later gogo, one whose end overflows int64 — 3.4.23 itself
 * panics there, docs §17 row 7) is a negative length; a length past the end, or bytes ending inside a tag or
 * varint, is an unexpected EOF.
 */
function badTail(t: BadTail, target: MsgName): { bytes: Buffer; text: string } {
  const endGroup = `proto: ${target}: wiretype end group for non-group`;
  switch (t.k) {
    case 'wrongWire': {
      const fields = SCHEMA[target];
      if (fields.length === 0) {
        // A message without fields (LeaseLeasesRequest): any tag is an unknown field; use field 0 instead.
        return { bytes: tag(0, t.wt), text: t.wt === 4 ? endGroup : `proto: ${target}: illegal tag 0 (wire type ${t.wt})` };
      }
      const fd = fields[t.field % fields.length]!;
      const wrong = [0, 1, 2, 3, 4, 5, 6, 7].filter((w) => w !== fd.wt);
      const wt = wrong[t.wt % wrong.length]!;
      return { bytes: Buffer.concat([tag(fd.num, wt), payloadOf(wt)]), text: wt === 4 ? endGroup : `proto: wrong wireType = ${wt} for field ${fd.go}` };
    }
    case 'illegalTag': {
      const fieldNum = BigInt(t.hi) * 2n ** 32n + BigInt(t.lo);
      const wire = fieldNum * 8n + BigInt(t.wt);
      const asInt32 = BigInt.asIntN(32, fieldNum);
      assert.ok(asInt32 <= 0n);
      return {
        bytes: Buffer.concat([varint(wire), Buffer.from(t.trailing)]),
        text: t.wt === 4 ? endGroup : `proto: ${target}: illegal tag ${asInt32} (wire type ${wire})`,
      };
    }
    case 'lengthOverflow': {
      const head = tag(lenFieldOf(target, t.known), 2);
      switch (t.how) {
        case 'eleven': {
          // 10 or more continuation bytes: the 11th step's shift is 70 >= 64.
          const cont = 10 + Number(t.n % 3n);
          return { bytes: Buffer.concat([head, Buffer.alloc(cont, 0xff), Buffer.from([0x01])]), text: 'proto: integer overflow' };
        }
        case 'negative':
          return { bytes: Buffer.concat([head, varint(2n ** 63n + t.n)]), text: 'proto: negative length found during unmarshaling' };
        case 'huge':
          // 2^63 - 1 - j with j < 10: the length varint alone is 9 bytes, so its end is past 2^63 - 1.
          return { bytes: Buffer.concat([head, varint(2n ** 63n - 1n - (t.n % 10n))]), text: 'proto: negative length found during unmarshaling' };
        case 'pastEnd':
          return { bytes: Buffer.concat([head, varint(64n + t.n), Buffer.from('abc')]), text: 'unexpected EOF' };
      }
      break;
    }
    case 'msgCut': {
      const num = lenFieldOf(target, t.known);
      const whole = lenField(num, Buffer.alloc(t.len, 0x61));
      const tagLen = tag(num, 2).length;
      const lenLen = varint(t.len).length;
      let keep: number;
      if (t.cut === 'tag') keep = tagLen; // the tag alone: the length varint is missing
      else if (t.cut === 'lenByte' && lenLen > 1) keep = tagLen + 1; // inside a two-byte length varint
      else keep = tagLen + lenLen + (t.keep % t.len); // fewer content bytes than claimed
      return { bytes: whole.subarray(0, keep), text: 'unexpected EOF' };
    }
  }
}

type Serializer = (value: object) => Buffer;
const serializers = new Map<Method, Serializer>();
function serializer(m: Method): Serializer {
  let s = serializers.get(m);
  if (s === undefined) {
    const def = etcdService(serviceOf(m)).service[m];
    assert.ok(def !== undefined, `no method ${m}`);
    s = def.requestSerialize as Serializer;
    serializers.set(m, s);
  }
  return s;
}

/** A few valid bytes to put in front of a nested bad field (what the message would hold anyway). */
function innerPrefix(target: MsgName): Buffer {
  switch (target) {
    case 'PutRequest':
      return serializer('Put')({ key: B('/fz/n'), value: B('n') });
    case 'RangeRequest':
      return serializer('Range')({ key: B('/fz/a'), range_end: B('/fz0') });
    case 'DeleteRangeRequest':
      return serializer('DeleteRange')({ key: B('/fz/a') });
    case 'TxnRequest':
      return serializer('Txn')({ success: [{ request_put: { key: B('/fz/x'), value: B('x') } }] });
    case 'Compare':
      return lenField(3, B('/fz/a'));
    default:
      return Buffer.alloc(0);
  }
}

const KNOWN_METHODS: Readonly<Record<'KV' | 'Lease', ReadonlySet<string>>> = {
  KV: new Set(Object.keys(etcdService('KV').service)),
  Lease: new Set(Object.keys(etcdService('Lease').service)),
};

interface Expected {
  readonly code: number;
  readonly message: string;
}

/** [start, end) of every varint at the top level of a valid message: each tag, length and varint value. */
function varintSpans(msg: Buffer): Array<[number, number]> {
  const spans: Array<[number, number]> = [];
  const skip = (i: number): number => {
    while (msg[i]! >= 0x80) i++;
    return i + 1;
  };
  for (let i = 0; i < msg.length; ) {
    const wt = msg[i]! & 7;
    const afterTag = skip(i);
    spans.push([i, afterTag]);
    i = afterTag;
    if (wt === 0) {
      const e = skip(i);
      spans.push([i, e]);
      i = e;
    } else if (wt === 2) {
      const e = skip(i);
      spans.push([i, e]);
      let len = 0;
      for (let j = e - 1; j >= i; j--) len = len * 128 + (msg[j]! & 0x7f);
      i = e + len;
    } else {
      i += wt === 1 ? 8 : 4;
    }
  }
  return spans;
}

/**
 * The raw request of a junk call and what etcd answers it (docs/observed-etcd-3.4.23.md §17); 'decoded?'
 * for random or mutated bytes, which may well be a request; 'request' for bytes etcd decodes as the very
 * request the call's data describes.
 */
function junkRequest(req: Req, junk: Junk, ctx: Ctx, profile: '3.4' | '3.6'): { wire: WireRequest; expect: Expected | 'decoded?' | 'request' } {
  const svc = serviceOf(req.m);
  const path = `/etcdserverpb.${svc}/${req.m}`;
  const valid = serializer(req.m)(message(req, ctx));
  switch (junk.k) {
    case 'field': {
      const chain = req.m === 'Txn' ? TXN_CHAINS[junk.chain % TXN_CHAINS.length]! : { path: [] as number[], target: REQUEST_TYPE[req.m] };
      const { bytes: tail, text } = badTail(junk.tail, chain.target);
      let body: Buffer;
      if (chain.path.length === 0) {
        body = Buffer.concat([valid, tail]);
      } else {
        let inner: Buffer = Buffer.concat([innerPrefix(chain.target), tail]);
        for (const num of [...chain.path].reverse()) inner = lenField(num, inner);
        body = Buffer.concat([valid, inner]);
      }
      return { wire: { path, body: [frame(body)] }, expect: { code: 13, message: UNMARSHAL + text } };
    }
    case 'frameCut': {
      // Part of the frame (inside the prefix or the message), then the end of the request: 2 unexpected EOF.
      const whole = frame(valid);
      return { wire: { path, body: [whole.subarray(0, 1 + (junk.keep % (whole.length - 1)))] }, expect: { code: 2, message: 'unexpected EOF' } };
    }
    case 'empty':
      return { wire: { path, body: [Buffer.alloc(0)] }, expect: { code: 2, message: 'EOF' } };
    case 'random':
      return { wire: { path, body: [frame(Buffer.from(junk.bytes))] }, expect: 'decoded?' };
    case 'overlong': {
      // The same request with one top-level varint (a tag, a length or a value) in a longer encoding: gogo
      // reads varints of up to 10 bytes whatever their value, so etcd takes it as the very same request.
      const spans = varintSpans(valid);
      if (spans.length === 0) return { wire: { path, body: [frame(valid)] }, expect: 'request' };
      const [start, end] = spans[junk.varint % spans.length]!;
      const extra = Math.min(junk.extra, 10 - (end - start));
      if (extra < 1) return { wire: { path, body: [frame(valid)] }, expect: 'request' };
      const longer = Buffer.concat([valid.subarray(0, end - 1), Buffer.from([valid[end - 1]! | 0x80]), Buffer.alloc(extra - 1, 0x80), Buffer.from([0]), valid.subarray(end)]);
      return { wire: { path, body: [frame(longer)] }, expect: 'request' };
    }
    case 'mutate': {
      // The valid request with one byte replaced, inserted or deleted: often still a request, often not.
      const bytes = [...valid];
      const at = junk.pos % (bytes.length + 1);
      if (junk.op === 'insert' || bytes.length === 0) bytes.splice(at, 0, junk.byte);
      else if (junk.op === 'delete') bytes.splice(at % bytes.length, 1);
      else bytes[at % bytes.length] = junk.byte;
      return { wire: { path, body: [frame(Buffer.from(bytes))] }, expect: 'decoded?' };
    }
    case 'flag':
      return {
        wire: { path, body: [frame(valid, junk.flag)], ...(junk.identity ? { headers: { 'grpc-encoding': 'identity' } } : {}) },
        expect: { code: 13, message: junk.flag === 1 ? 'grpc: compressed flag set with identity or empty encoding' : `grpc: received unexpected payload format ${junk.flag}` },
      };
    case 'overLimit': {
      const expect = { code: 8, message: `grpc: received message larger than max (${junk.claim} vs. ${MAX_RECEIVE})` };
      const prefix = Buffer.alloc(5);
      prefix.writeUInt32BE(junk.claim, 1);
      if (junk.how === 'prefix') return { wire: { path, body: [prefix], keepOpen: true, untilStatus: true }, expect };
      if (junk.how === 'partial') return { wire: { path, body: [prefix, valid] }, expect };
      // The whole message (only for claims just over the limit: 2 MiB of bytes).
      const size = Math.min(junk.claim, MAX_RECEIVE + 64);
      prefix.writeUInt32BE(size, 1);
      return { wire: { path, body: [prefix, Buffer.alloc(size, 0x0a)], untilStatus: true }, expect: { code: 8, message: `grpc: received message larger than max (${size} vs. ${MAX_RECEIVE})` } };
    }
    case 'path': {
      const body = [frame(valid)];
      switch (junk.how) {
        case 'method': {
          const name = KNOWN_METHODS[svc].has(junk.name) ? `${junk.name}X` : junk.name;
          return { wire: { path: `/etcdserverpb.${svc}/${name}`, body }, expect: { code: 12, message: `unknown method ${name} for service etcdserverpb.${svc}` } };
        }
        case 'service':
          return {
            wire: { path: `/etcdserverpb.${svc}${junk.name}/${req.m}`, body },
            expect: { code: 12, message: `unknown service etcdserverpb.${svc}${junk.name}` },
          };
        case 'extra':
          return { wire: { path: `${path}/${junk.name}`, body }, expect: { code: 12, message: `unknown service etcdserverpb.${svc}/${req.m}` } };
        case 'noMethod':
          return { wire: { path: `/${junk.name}`, body }, expect: { code: profile === '3.4' ? 8 : 12, message: `malformed method name: "/${junk.name}"` } };
      }
    }
  }
}

/** gogo's Unmarshal texts, with the message or field they name (checked against the method's request). */
const GOGO_TEXTS: readonly RegExp[] = [
  /^unexpected EOF$/,
  /^proto: integer overflow$/,
  /^proto: negative length found during unmarshaling$/,
  /^proto: illegal wireType \d+$/,
  /^proto: wrong wireType = \d+ for field (?<field>[A-Za-z]+)$/,
  /^proto: (?<msg>[A-Za-z]+): illegal tag -?\d+ \(wire type \d+\)$/,
  /^proto: (?<msg>[A-Za-z]+): wiretype end group for non-group$/,
];

/** Whether `text` is a text gogo's Unmarshal of the request of `m` can return. */
function isGogoText(text: string, m: Method): boolean {
  const msgs = reachable(REQUEST_TYPE[m]);
  for (const re of GOGO_TEXTS) {
    const g = re.exec(text);
    if (g === null) continue;
    const msg = g.groups?.['msg'];
    const field = g.groups?.['field'];
    if (msg !== undefined && !msgs.has(msg as MsgName)) return false;
    if (field !== undefined && ![...msgs].some((n) => SCHEMA[n].some((fd) => fd.go === field))) return false;
    return true;
  }
  return false;
}

/** Every error etcd answers a request with (each layer's errors.ts: code and exact text). */
const ETCD_ERRORS: ReadonlySet<string> = new Set(
  [...Object.values(etcdErrors), ...Object.values(authErrors), ...Object.values(leaseErrors)]
    .filter((v): v is EtcdErrorKind => typeof v === 'object' && v !== null && typeof (v as { code?: unknown }).code === 'number' && typeof (v as { message?: unknown }).message === 'string')
    .map((k) => `${k.code} ${k.message}`),
);

const isEtcdError = (code: number, details: string): boolean => ETCD_ERRORS.has(`${code} ${details}`);

// ---------------------------------------------------------------------------------------------------
// A run

type Call = { readonly t: 'good'; readonly req: Req } | { readonly t: 'junk'; readonly req: Req; readonly junk: Junk };

const callArb: fc.Arbitrary<Call> = fc.oneof(
  { weight: 1, arbitrary: fc.record({ t: fc.constant('good' as const), req: reqArb }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('junk' as const), req: reqArb, junk: junkArb }) },
);

interface Run {
  readonly seed: number;
  /**
   * The version profile serve() answers as (the malformed-method-name code differs). Both decode with gogo:
   * 3.7's protobuf-go rules are pinned by test/grpc/wire_errors_protobuf_go.test.ts instead.
   */
  readonly profile: '3.4' | '3.6';
  readonly calls: readonly Call[];
}

const runArb: fc.Arbitrary<Run> = fc.record({
  seed: fc.integer(),
  profile: fc.constantFrom('3.4' as const, '3.6' as const),
  // Lengths spread evenly over 1–90 (mean ~45) rather than a minimum of 30: a counterexample then shrinks
  // to the few calls that matter.
  calls: fc.array(callArb, { minLength: 1, maxLength: 90, size: 'max' }),
});

/** What the runs did, for the diagnostic line. */
interface Stats {
  runs: number;
  calls: number;
  junk: Record<string, number>;
  randomDecoded: number;
  goodOk: number;
  goodEtcdError: number;
  maxCallMs: number;
}

/** The member's state as far as a call could change it. */
interface Fingerprint {
  readonly revision: number;
  readonly compactRevision: number;
  readonly hash: number;
  readonly leases: string;
  readonly raftIndex: number;
}

function fingerprint(h: ServeHandle): Fingerprint {
  const s = h.server;
  return {
    revision: s.mvcc.currentRevision,
    compactRevision: s.mvcc.compactRevision,
    hash: s.mvcc.hash(),
    leases: s.lessor.leases().join(','),
    raftIndex: s.raftIndex,
  };
}

const withoutRaft = ({ raftIndex: _r, ...rest }: Fingerprint): Omit<Fingerprint, 'raftIndex'> => rest;

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Waits (event-loop turns, real I/O) until `cond` holds; fails after WAIT_MS. */
async function until(cond: () => boolean, what: string, detail: () => string = () => ''): Promise<void> {
  const deadline = performance.now() + WAIT_MS;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`timed out after ${WAIT_MS} ms waiting for ${what}${detail() === '' ? '' : `: ${detail()}`}`);
    await turn();
  }
}


const latin1 = (u: Uint8Array): string => Buffer.from(u.buffer, u.byteOffset, u.byteLength).toString('latin1');
const inWatch = (key: string): boolean => key >= WATCH_KEY && key < WATCH_END;

/** The committed changes the watch must deliver, in order: `rev TYPE key`. */
function expectedEvents(history: CommittedHistory): string[] {
  const out: string[] = [];
  for (const hr of history.revisions) {
    for (const ev of hr.events) {
      const key = latin1(ev.kv.key);
      if (inWatch(key)) out.push(`${hr.revision} ${ev.type} ${key}`);
    }
  }
  return out;
}

/**
 * The checker's reports that are not violations: guarantees.ts identifies a change by (revision, key) and
 * judges IsCreate by the key's state before the revision, but one txn may delete a key and put it again in
 * the same revision — etcd's checkIntervals compares a delete's range_end "\0" literally, so [k, "\0")
 * contains nothing and a put inside the range it deletes passes (src/mvcc/validate.ts keeps the quirk).
 * The history then holds a DELETE and a PUT of one key at one revision, which the checker reports as
 * Unique ("delivered twice") and IsCreate. Only those reports, for exactly such a (revision, key), are
 * dropped; the event-by-event comparison with the history still judges those events.
 */
function excusable(violations: readonly WatchViolation[], history: CommittedHistory): WatchViolation[] {
  const twice = new Set<string>();
  for (const hr of history.revisions) {
    const types = new Map<string, Set<string>>();
    for (const ev of hr.events) {
      const key = latin1(ev.kv.key);
      let t = types.get(key);
      if (t === undefined) types.set(key, (t = new Set()));
      t.add(ev.type);
    }
    for (const [key, t] of types) if (t.size > 1) twice.add(`${hr.revision} ${key}`);
  }
  return violations.filter((v) => {
    if (v.guarantee !== 'Unique' && v.guarantee !== 'IsCreate') return true;
    const m = /^event (?:PUT|DELETE) ("(?:[^"\\]|\\.)*")@(\d+) /.exec(v.message);
    return m === null || !twice.has(`${m[2]} ${JSON.parse(m[1]!) as string}`);
  });
}

async function fuzzRun(run: Run, stats: Stats): Promise<void> {
  const clock = new VirtualClock();
  const handle = await serve({ port: 0, clock, seed: run.seed, etcdVersion: run.profile });
  const server = handle.server;
  const recorder = recordHistory(server.mvcc);
  const etcd = connectEtcd(handle.address);
  const wire = new WireClient(handle.address);
  const ctx: Ctx = { current: () => server.mvcc.currentRevision, granted: [] };
  const responses: WatchResponse[] = [];
  let watchEnded: string | undefined;
  let watch: GrpcBidiCall<M.WatchRequest, M.WatchResponse> | undefined;
  try {
    // The watch, opened first: every change from revision 2 on in [/fz/, /fz0), with prev_kv.
    const createReq: WatchCreateRequest = { key: B(WATCH_KEY), rangeEnd: B(WATCH_END), startRevision: 0, prevKv: true, filters: [] };
    watch = etcd.watch.watch();
    watch.onResponse((rs) => {
      for (const r of rs) responses.push(responseIn(r));
    });
    watch.onEnd((err) => (watchEnded = err === undefined ? 'ended' : `${err.code} ${err.details}`));
    watch.write({ create_request: { key: B(WATCH_KEY), range_end: B(WATCH_END), prev_kv: true } });
    await until(() => responses.some((r) => r.created) || watchEnded !== undefined, 'the watch to be created');
    assert.equal(watchEnded, undefined, 'the watch ended');
    assert.equal(handle.openStreams, 1);

    for (const [i, call] of run.calls.entries()) {
      const where = (): string => `call #${i} ${fc.stringify(call)}`;
      const before = fingerprint(handle);
      const t0 = performance.now();
      stats.calls++;
      if (call.t === 'good') {
        let err: unknown;
        let res: unknown;
        try {
          res = await sendGood(etcd, call.req, ctx);
        } catch (e) {
          err = e;
        }
        if (err !== undefined) {
          const { code, details } = err as { code?: unknown; details?: unknown };
          assert.ok(typeof code === 'number' && typeof details === 'string', `${where()}: not a gRPC error: ${String(err)}`);
          assert.ok(isEtcdError(code, details), `${where()}: answered ${code} ${JSON.stringify(details)}, which is no error of etcd's`);
          assert.deepEqual(withoutRaft(fingerprint(handle)), withoutRaft(before), `${where()}: refused with ${code} ${details}, yet the state changed`);
          stats.goodEtcdError++;
        } else {
          stats.goodOk++;
          if (call.req.m === 'LeaseGrant') ctx.granted.push(BigInt((res as M.LeaseGrantResponse).ID));
          if (readOnly(call.req)) assert.deepEqual(withoutRaft(fingerprint(handle)), withoutRaft(before), `${where()}: a read changed the state`);
        }
      } else {
        const { wire: wreq, expect } = junkRequest(call.req, call.junk, ctx, run.profile);
        const kind = call.junk.k === 'field' ? call.junk.tail.k : call.junk.k;
        stats.junk[kind] = (stats.junk[kind] ?? 0) + 1;
        // A whole over-limit message goes on a connection of its own: Node's http2 server does not give back
        // the connection's flow-control credit for DATA it had buffered on a stream closed early, so after a
        // few such 2 MiB sends one connection stalls (etcd keeps serving it). Known, in the issue's note;
        // test/grpc/wire_errors.test.ts has the one-message case.
        const fullOverLimit = call.junk.k === 'overLimit' && call.junk.how === 'full';
        const via = fullOverLimit ? new WireClient(handle.address) : wire;
        let a: WireAnswer;
        try {
          a = await via.call({ ...wreq, timeoutMs: WAIT_MS });
        } finally {
          if (via !== wire) via.close();
        }
        const got = `${a.code} ${JSON.stringify(a.message)} (timed out: ${a.timedOut}, RST_STREAM ${a.rstCode})`;
        assert.ok(!a.timedOut && a.code !== undefined, `${where()}: no answer: ${got}`);
        if (expect === 'request') {
          // Decoded as the valid request: answered as that request is (OK or an error of etcd's), and a Put
          // wrote the key and value it names.
          assert.ok(a.code === 0 || isEtcdError(a.code, a.message ?? ''), `${where()}: answered ${got}, not as the request it encodes`);
          if (a.code !== 0) assert.deepEqual(withoutRaft(fingerprint(handle)), withoutRaft(before), `${where()}: refused (${got}), yet the state changed`);
          else if (call.req.m === 'Put') {
            const kvs = server.services.kv.range({ key: B(KEYS[call.req.key]!) }).kvs;
            assert.deepEqual(
              kvs.map((kv) => [latin1(kv.key), latin1(kv.value), Number(kv.mod_revision)]),
              [[KEYS[call.req.key]!, `v${call.req.value}`, before.revision + 1]],
              `${where()}: the Put did not write what it encodes`,
            );
          }
        } else if (expect === 'decoded?') {
          if (a.code === 13 && a.message !== undefined && a.message.startsWith(UNMARSHAL)) {
            // Refused as gogo refuses it: one of its texts, naming something the request type can hold.
            assert.ok(isGogoText(a.message.slice(UNMARSHAL.length), call.req.m), `${where()}: ${got} is no text of gogo's Unmarshal for ${REQUEST_TYPE[call.req.m]}`);
            assert.deepEqual(fingerprint(handle), before, `${where()}: refused (${got}), yet the state changed`);
          } else if (a.code !== 0) {
            // Decoded, then refused as a request: etcd's error, nothing changed.
            assert.ok(isEtcdError(a.code, a.message ?? ''), `${where()}: answered ${got}, which is neither an unmarshal error nor an error of etcd's`);
            assert.deepEqual(withoutRaft(fingerprint(handle)), withoutRaft(before), `${where()}: refused (${got}), yet the state changed`);
            stats.randomDecoded++;
          } else {
            stats.randomDecoded++;
          }
        } else {
          assert.deepEqual({ code: a.code, message: a.message }, expect, `${where()}: answered ${got}`);
          assert.deepEqual(fingerprint(handle), before, `${where()}: refused (${got}), yet the state changed`);
        }
      }
      stats.maxCallMs = Math.max(stats.maxCallMs, performance.now() - t0);
      assert.equal(watchEnded, undefined, `${where()}: the watch ended`);
    }

    // Drain: the watch has every change of its range up to the final revision, then a progress notification
    // at that revision closes the tail (anything duplicated or late would come before it).
    const current = server.mvcc.currentRevision;
    const want = expectedEvents(recorder.history);
    const received = (): string[] =>
      responses.filter((r) => !r.created).flatMap((r) => r.events.map((e) => `${e.kv.modRevision} ${e.type} ${latin1(e.kv.key)}`));
    const lastWanted = want.length === 0 ? undefined : Number(want[want.length - 1]!.split(' ')[0]);
    await until(
      () => watchEnded !== undefined || lastWanted === undefined || responses.some((r) => r.events.some((e) => e.kv.modRevision === lastWanted)),
      `the watch to receive revision ${lastWanted}`,
      () => `received ${received().length} of ${want.length} events`,
    );
    watch.write({ progress_request: {} });
    await until(() => watchEnded !== undefined || responses.some((r) => isProgressNotify(r) && r.revision >= current), `a progress notification at revision ${current}`);
    assert.equal(watchEnded, undefined, 'the watch ended');
    const violations = excusable(checkWatch(recorder.history, createReq, responses, { drainedThrough: current }), recorder.history);
    assert.equal(violations.length, 0, `watch guarantees violated:\n${formatViolations(violations)}`);
    assert.deepEqual(received(), want, 'the watch received every committed change in its range exactly once, in order');

    // The server's open calls: exactly the watch, and none once it is canceled.
    assert.equal(handle.openStreams, 1, 'open stream calls besides the watch');
    assert.equal(server.services.watch.calls().length, 1, 'open watch calls');
    watch.cancel();
    await until(() => handle.openStreams === 0 && server.services.watch.calls().length === 0, 'the canceled watch to close on the server', () => `${handle.openStreams} open`);
    // And the server's HTTP/2 side has ended every stream, the junk's included (the client's are all done).
    await until(() => handle.openHttp2Streams === 0, 'every HTTP/2 stream to end', () => `${handle.openHttp2Streams} open`);
    stats.runs++;
  } finally {
    watch?.cancel();
    recorder.stop();
    wire.close();
    etcd.close();
    await handle.close();
  }
}

/** A forced full GC (node's --expose-gc, switched on at run time), so heapUsed measures what is kept. */
function exposeGc(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

const RUNS = numRuns(DEFAULT_RUNS);

test('wire fuzz over gRPC: junk gets etcd\'s wire errors and changes nothing, good calls only etcd\'s errors, the watch sees every change once, memory bounded', { timeout: 60_000 + RUNS * 5_000 }, async (t) => {
  const gc = exposeGc();
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const stats: Stats = { runs: 0, calls: 0, junk: {}, randomDecoded: 0, goodOk: 0, goodEtcdError: 0, maxCallMs: 0 };
  const t0 = performance.now();
  await checkAsyncProperty(fc.asyncProperty(runArb, (run) => fuzzRun(run, stats)), { file: FILE, numRuns: DEFAULT_RUNS });
  gc();
  const growth = process.memoryUsage().heapUsed - heapBefore;
  t.diagnostic(
    `${stats.runs} runs, ${stats.calls} calls in ${Math.round(performance.now() - t0)} ms (slowest call ${Math.round(stats.maxCallMs)} ms); ` +
      `good: ${stats.goodOk} ok, ${stats.goodEtcdError} etcd errors; junk: ${JSON.stringify(stats.junk)}, random/mutated bytes decoded as requests: ${stats.randomDecoded}; ` +
      `heap growth ${(growth / 1024 / 1024).toFixed(1)} MiB`,
  );
  assert.ok(growth < HEAP_GROWTH_LIMIT, `the heap grew ${(growth / 1024 / 1024).toFixed(1)} MiB over ${stats.runs} runs (bound ${HEAP_GROWTH_LIMIT / 1024 / 1024} MiB)`);
});

