/**
 * MvccStore: etcd's KV API (Range, Put, DeleteRange, Txn, Compact) over one revision index, with etcd's
 * validation, exact errors and revision rules. Every front door (in-process client, gRPC server, scenario
 * runner) reaches the KV semantics through this class, so each rule exists once.
 *
 * A rejected request throws an EtcdError and leaves revision, keys, leases and watchers untouched: all
 * checks run before the write transaction starts.
 *
 * Each request passes etcd's steps once, in etcd's order: validate (v3rpc's checks) → size (the proposal
 * must fit --max-request-bytes; writes only) → apply (the apply-time checks, then the change). range, put,
 * deleteRange and txn run all of them. A layer with steps of its own in between — the server checks the
 * token before the size and permissions before applying — calls the steps one by one (validatePut →
 * checkPutSize → applyPut, ...): each step takes the type the previous one returns (validate.ts), so a
 * request can be neither applied unvalidated nor validated twice.
 */
import { EMPTY_BYTES, type KeyString } from './bytes.js';
import { ErrCompacted, ErrFutureRev } from './errors.js';
import { fail, DEFAULT_ETCD_VERSION, type EtcdVersion } from '../etcd/index.js';
import { compatFor, type Compat } from './compat.js';
import { executeRange } from './range.js';
import { deleteRangeSize, putSize, txnSize } from './request_size.js';
import { Storage, retainedOf, type CommitListener, type StoreSnapshot } from './store.js';
import { checkPut, checkTxn, compareToPath, executeDeleteRange, executeLonePut, executePut, executeTxn } from './txn.js';
import type {
  CompactResponse,
  DeleteRangeRequest,
  DeleteRangeResponse,
  Event,
  KeyValue,
  LeaseHook,
  PutRequest,
  PutResponse,
  RangeRequest,
  RangeResponse,
  TxnRequest,
  TxnResponse,
} from './types.js';
import {
  checkDeleteRequest,
  checkPutRequest,
  checkRangeRequest,
  checkRequestSize,
  requestFits,
  checkTxnOnce,
  DEFAULT_MAX_REQUEST_BYTES,
  DEFAULT_MAX_TXN_OPS,
  isTxnReadOnly,
  type Proposable,
  type ReadOnlyTxn,
  type TxnFacts,
  type Validated,
} from './validate.js';
import { historyDigest } from './hash.js';
import { checkDeleteShape, checkPutShape, checkRangeShape, checkRevisionShape } from './shape.js';
import { hashKV } from './hash_kv.js';

/** What HashKV answers: the hash, the revision it covers and the compaction revision (-1: none yet). @public */
export interface HashKVResult {
  readonly hash: number;
  readonly hashRevision: number;
  readonly compactRevision: number;
}

/** @public */
export interface MvccOptions {
  /** --max-txn-ops (etcd default 128). */
  readonly maxTxnOps?: number | undefined;
  /** --max-request-bytes (etcd default 1.5 MiB). */
  readonly maxRequestBytes?: number | undefined;
  /** The lessor's hook; leases are unknown to a store without one. */
  readonly lessor?: LeaseHook | undefined;
  /** Which etcd release's rules to follow where releases differ (default: the newest, 3.7). */
  readonly etcdVersion?: EtcdVersion | undefined;
}

/** @public */
export class MvccStore {
  /** @internal The tree index and revisions the steps below work on: the member's, not a user's. */
  readonly storage: Storage;
  readonly maxTxnOps: number;
  readonly maxRequestBytes: number;
  /** @internal The release's rules (etcdVersion), read by the floors above. */
  readonly compat: Compat;

  constructor(opts: MvccOptions = {}) {
    this.compat = compatFor(opts.etcdVersion ?? DEFAULT_ETCD_VERSION);
    this.storage = new Storage({ lessor: opts.lessor, keepTombstoneAtCompactRev: this.compat.keepTombstoneAtCompactRev });
    this.maxTxnOps = opts.maxTxnOps ?? DEFAULT_MAX_TXN_OPS;
    this.maxRequestBytes = opts.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
  }

  /** The revision of the last committed change (1 for an empty store). */
  get currentRevision(): number {
    return this.storage.currentRev;
  }

  /** The revisions the store retains (tombstones included): what etcd's key bucket holds. Compaction lowers it. */
  get retainedRevisions(): number {
    return this.storage.retainedRevisions;
  }

  /** The key and value bytes of the retained revisions. */
  get retainedBytes(): number {
    return this.storage.retainedBytes;
  }

  /** The last compaction revision, -1 before the first compaction. */
  get compactRevision(): number {
    return this.storage.compactRev;
  }

  /** Range: keys at a revision; header revision is the current one even for historical reads. */
  range(r: RangeRequest): RangeResponse {
    return this.applyRange(this.validateRange(r));
  }

  /** Put: always takes a new revision, even when nothing about the key changes. */
  put(r: PutRequest): PutResponse {
    return this.applyPut(this.checkPutSize(this.validatePut(r)));
  }

  /** DeleteRange: one revision for every deleted key; none at all when nothing matched. */
  deleteRange(r: DeleteRangeRequest): DeleteRangeResponse {
    return this.applyDeleteRange(this.checkDeleteRangeSize(this.validateDeleteRange(r)));
  }

  /**
   * Txn: guards, then one branch as one revision (or none if the branch changes nothing). A read-only txn
   * is not proposed in etcd, so only a txn that writes must fit --max-request-bytes.
   */
  txn(r: TxnRequest): TxnResponse {
    const v = this.validateTxn(r);
    return this.applyTxn(this.readOnlyTxn(v) ?? this.checkTxnSize(v));
  }

  // -------------------------------------------------------------------------------------------------
  // The steps one by one (see the file comment): validate → size → apply.

  /** @internal v3rpc checkRangeRequest (on etcd 3.4 the key only: Compat.sortOrderUnchecked). */
  validateRange(r: RangeRequest): Validated<RangeRequest> {
    checkRangeShape(r);
    checkRangeRequest(r, !this.compat.sortOrderUnchecked);
    return r as Validated<RangeRequest>;
  }

  /** @internal v3rpc checkPutRequest: a key; no value with ignore_value, no lease with ignore_lease. */
  validatePut(r: PutRequest): Validated<PutRequest> {
    checkPutShape(r);
    checkPutRequest(r);
    return r as Validated<PutRequest>;
  }

  /** @internal v3rpc checkDeleteRequest: a key. */
  validateDeleteRange(r: DeleteRangeRequest): Validated<DeleteRangeRequest> {
    checkDeleteShape(r);
    checkDeleteRequest(r);
    return r as Validated<DeleteRangeRequest>;
  }

  /**
   * @internal v3rpc's Txn checks: checkTxnRequest (--max-txn-ops, keys, ops), then checkIntervals on each branch —
   * one walk (checkTxnOnce), which also notes for readOnlyTxn and checkTxnSize what they would walk it again for.
   */
  validateTxn(r: TxnRequest): Validated<TxnRequest> {
    checkTxnOnce(r, this.maxTxnOps, !this.compat.sortOrderUnchecked, this.#txnFacts);
    return r as Validated<TxnRequest>;
  }

  /**
   * What validateTxn learned of the txn it last passed (`request`), reused: the steps after it read it for that
   * txn and walk any other one again. It holds on to one request at most.
   */
  readonly #txnFacts: TxnFacts = { request: undefined, readOnly: false, size: 0 };

  /** @internal The txn as a read (etcd's isTxnReadonly: its own ops all ranges; a nested txn makes it a write), or undefined if it writes. */
  readOnlyTxn(r: Validated<TxnRequest>): ReadOnlyTxn | undefined {
    const f = this.#txnFacts;
    return (f.request === r ? f.readOnly : isTxnReadOnly(r)) ? (r as ReadOnlyTxn) : undefined;
  }

  /** @internal The Put's proposal must fit --max-request-bytes (etcd: ErrRequestTooLarge before proposing). */
  checkPutSize(r: Validated<PutRequest>): Proposable<PutRequest> {
    checkRequestSize(putSize(r), this.maxRequestBytes);
    return r as Proposable<PutRequest>;
  }

  /** @internal The DeleteRange's proposal must fit --max-request-bytes. */
  checkDeleteRangeSize(r: Validated<DeleteRangeRequest>): Proposable<DeleteRangeRequest> {
    checkRequestSize(deleteRangeSize(r), this.maxRequestBytes);
    return r as Proposable<DeleteRangeRequest>;
  }

  /** @internal A writing Txn's proposal must fit --max-request-bytes. */
  checkTxnSize(r: Validated<TxnRequest>): Proposable<TxnRequest> {
    const f = this.#txnFacts;
    checkRequestSize(f.request === r ? f.size : txnSize(r), this.maxRequestBytes);
    return r as Proposable<TxnRequest>;
  }

  /** @internal Serves a validated Range (applierV3.Range): the revision checks, then the read. */
  applyRange(r: Validated<RangeRequest>): RangeResponse {
    return executeRange(this.storage, r);
  }

  /**
   * @internal The common Range — one key at the current revision, no option that changes the answer — in one pass
   * instead of validateRange → applyRange: of their checks only an empty key can refuse it. Undefined
   * then: the caller takes the steps, which refuse it with etcd's error.
   */
  tryPlainRange(key: Uint8Array): RangeResponse | undefined {
    if (key.length === 0) return undefined;
    const s = this.storage;
    const kv = s.getCurrent(key);
    return { revision: s.currentRev, kvs: kv === undefined ? [] : [kv], more: false, count: kv === undefined ? 0 : 1 };
  }

  /** @internal Applies a validated Put: the lease must exist, ignore_* needs the key; then the write. */
  applyPut(r: Proposable<PutRequest>): PutResponse {
    checkPut(this.storage, r, false);
    if (r.prevKv !== true && r.ignoreValue !== true && r.ignoreLease !== true) {
      return { revision: this.storage.putOne(r.key, r.value ?? EMPTY_BYTES, r.lease ?? 0n) };
    }
    const tw = this.storage.write();
    try {
      return executePut(tw, r);
    } finally {
      tw.end();
    }
  }

  /** @internal Applies a validated DeleteRange. */
  applyDeleteRange(r: Proposable<DeleteRangeRequest>): DeleteRangeResponse {
    const tw = this.storage.write();
    try {
      return executeDeleteRange(tw, r);
    } finally {
      tw.end();
    }
  }

  /** @internal Applies a validated Txn: the guards pick the branches, their ops are checked, then run as one revision. */
  applyTxn(r: Proposable<TxnRequest> | ReadOnlyTxn): TxnResponse {
    const s = this.storage;
    const path = compareToPath(s, r);
    if (this.compat.txnChecksPutsFirst) checkTxn(s, r, path, { i: 0 }, true);
    checkTxn(s, r, path, { i: 0 });
    const lone = executeLonePut(s, r, path);
    if (lone !== undefined) return lone;
    const tw = s.write();
    let resp: TxnResponse;
    try {
      resp = executeTxn(tw, r, path, { i: 0 }, false);
    } catch (err) {
      tw.rollback();
      throw err;
    }
    tw.end();
    return resp;
  }

  /**
   * @internal Deletes the given keys in one write txn, in the order given (etcd's lessor RangeDeleter: a lease revoke
   * is one revision and is not subject to request validation such as --max-txn-ops).
   */
  deleteKeys(keys: readonly KeyString[]): { revision: number; deleted: number } {
    const tw = this.storage.write();
    let deleted = 0;
    for (const k of keys) deleted += tw.deleteRange(k, undefined).deleted;
    tw.end();
    return { revision: this.storage.currentRev, deleted };
  }

  /** Compact: drops history before `revision` by etcd's keep rule. Errors: compacted or future revision. */
  compact(revision: number): CompactResponse {
    checkRevisionShape('compact revision', revision);
    this.storage.compact(revision);
    return { revision: this.storage.currentRev };
  }

  /**
   * A digest of every stored revision up to `revision` (<= 0 or absent: current) and of the compaction
   * point: equal digests mean equal histories, so tests can assert "nothing changed" (etcd's own HashKV
   * value, which leaves the compaction point out, is hashKV()). Errors as HashKV's: a revision at or below the compaction point is compacted, one above the
   * current revision is a future revision.
   */
  hash(revision = 0): number {
    checkRevisionShape('hash revision', revision);
    const s = this.storage;
    if (revision > 0 && revision <= s.compactRev) fail(ErrCompacted);
    if (revision > s.currentRev) fail(ErrFutureRev);
    return historyDigest(s, revision > 0 ? revision : s.currentRev);
  }

  /**
   * etcd's HashKV (Maintenance.HashKV, `etcdctl endpoint hashkv`): the very value etcd computes for the same
   * history, so a simulator and a real etcd that applied the same requests report the same hash (see
   * hash_kv.ts). `revision` <= 0: current. Errors as etcd's: at or below the compaction point
   * ErrCompacted (unlike Range, which may read the compaction revision itself), above current ErrFutureRev.
   */
  hashKV(revision = 0): HashKVResult {
    checkRevisionShape('hashKV revision', revision);
    const s = this.storage;
    if (revision > 0 && revision <= s.compactRev) fail(ErrCompacted);
    if (revision > s.currentRev) fail(ErrFutureRev);
    const at = revision > 0 ? revision : s.currentRev;
    return { hash: hashKV(s, at), hashRevision: at, compactRevision: s.compactRev };
  }

  /** The KeyValue of `key` visible at `revision`, or undefined (no compaction check: callers decide). */
  kvAt(key: Uint8Array, revision: number): KeyValue | undefined {
    return this.storage.index.getAtBytes(key, revision);
  }

  /** The events of one revision, or none when it was compacted or never written. */
  eventsAt(revision: number): readonly Event[] {
    return this.storage.eventsAt(revision);
  }

  /** Subscribes to every committed write (watchers use this). Returns an unsubscribe function. */
  subscribe(listener: CommitListener): () => void {
    return this.storage.subscribe(listener);
  }

  snapshot(): StoreSnapshot {
    return this.storage.snapshot();
  }

  restore(snap: StoreSnapshot): void {
    this.storage.restore(snap);
  }

  // Stryker disable all: an invariant checker is the properties' oracle (docs/mutation.md)
  /** Checks the index's invariants; returns the first violation found, or undefined. */
  checkValid(): string | undefined {
    const s = this.storage;
    let problem: string | undefined;
    let prevKey: string | undefined;
    s.index.forEachPair((key, ki) => {
      if (problem !== undefined) return;
      if (ki.key !== key) problem = `index key ${JSON.stringify(key)} holds keyIndex of ${JSON.stringify(ki.key)}`;
      else if (prevKey !== undefined && prevKey >= key) problem = `index out of order at ${JSON.stringify(key)}`;
      else problem = ki.checkValid();
      const newest = ki.current();
      if (problem === undefined && newest !== undefined && newest.modRevision > s.currentRev) {
        problem = `${JSON.stringify(key)} has revision ${newest.modRevision} above current ${s.currentRev}`;
      }
      prevKey = key;
    });
    problem ??= s.index.checkLookups();
    problem ??= s.checkHistory();
    if (problem === undefined && s.compactRev > s.currentRev) problem = `compact revision ${s.compactRev} above current ${s.currentRev}`;
    if (problem === undefined) {
      const held = retainedOf(s.index);
      if (held.revisions !== s.retainedRevisions || held.bytes !== s.retainedBytes) {
        problem = `counted ${s.retainedRevisions} retained revisions of ${s.retainedBytes} bytes; the index holds ${held.revisions} of ${held.bytes}`;
      }
    }
    return problem;
  }
  // Stryker restore all
}
