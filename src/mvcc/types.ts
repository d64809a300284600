/**
 * The MVCC store's request and result types: etcd's KV messages (api/etcdserverpb/rpc.proto,
 * api/mvccpb/kv.proto) in a form fit for an in-process engine — keys and values are bytes, revisions are
 * numbers (a main revision stays far below 2^53 in any simulation), lease IDs are exact int64 as bigint.
 * The server layer converts these to and from the wire's message form.
 */

/** A key-value pair as etcd stores it (mvccpb.KeyValue). A tombstone has createRevision 0 and version 0. @public */
export interface KeyValue {
  readonly key: Uint8Array;
  /** Revision of the put that created this generation of the key. */
  readonly createRevision: number;
  /** Revision of the last change to the key. */
  readonly modRevision: number;
  /** Number of puts in the current generation; resets to 1 after a delete. */
  readonly version: number;
  readonly value: Uint8Array;
  /** Attached lease ID, 0n for none. */
  readonly lease: bigint;
}

/** mvccpb.Event type. @public */
export type EventType = 'PUT' | 'DELETE';

/** A committed change, as watchers see it: DELETE events carry the key and the delete's mod revision. @public */
export interface Event {
  readonly type: EventType;
  readonly kv: KeyValue;
}

/** @public */
export type SortOrder = 'NONE' | 'ASCEND' | 'DESCEND';
/** @public */
export type SortTarget = 'KEY' | 'VERSION' | 'CREATE' | 'MOD' | 'VALUE';

/**
 * RangeRequest. `rangeEnd` absent or empty: the single key; `[0]`: every key >= key; else [key, rangeEnd).
 * Numeric fields use 0 for "not set", as protobuf does.
 * @public
 */
export interface RangeRequest {
  readonly key: Uint8Array;
  readonly rangeEnd?: Uint8Array | undefined;
  readonly limit?: number | undefined;
  /** <= 0: the current revision. */
  readonly revision?: number | undefined;
  readonly sortOrder?: SortOrder | undefined;
  readonly sortTarget?: SortTarget | undefined;
  /** Accepted and ignored: a single member is always linearizable. */
  readonly serializable?: boolean | undefined;
  readonly keysOnly?: boolean | undefined;
  readonly countOnly?: boolean | undefined;
  readonly minModRevision?: number | undefined;
  readonly maxModRevision?: number | undefined;
  readonly minCreateRevision?: number | undefined;
  readonly maxCreateRevision?: number | undefined;
}

/** @public */
export interface RangeResponse {
  /** Header revision: the store's current revision, even for a historical read. */
  readonly revision: number;
  readonly kvs: KeyValue[];
  readonly more: boolean;
  /** Number of keys in the range at the read revision, ignoring limit and the revision filters. */
  readonly count: number;
}

/** @public */
export interface PutRequest {
  readonly key: Uint8Array;
  readonly value?: Uint8Array | undefined;
  /** 0n or absent: no lease (and a plain put detaches the key from its old lease). */
  readonly lease?: bigint | undefined;
  readonly prevKv?: boolean | undefined;
  readonly ignoreValue?: boolean | undefined;
  readonly ignoreLease?: boolean | undefined;
}

/** @public */
export interface PutResponse {
  readonly revision: number;
  readonly prevKv?: KeyValue | undefined;
}

/** @public */
export interface DeleteRangeRequest {
  readonly key: Uint8Array;
  readonly rangeEnd?: Uint8Array | undefined;
  readonly prevKv?: boolean | undefined;
}

/** @public */
export interface DeleteRangeResponse {
  readonly revision: number;
  readonly deleted: number;
  readonly prevKvs: KeyValue[];
}

/** @public */
export type CompareTarget = 'VERSION' | 'CREATE' | 'MOD' | 'VALUE' | 'LEASE';
/** @public */
export type CompareResult = 'EQUAL' | 'GREATER' | 'LESS' | 'NOT_EQUAL';

/** A txn guard. The field matching `target` is the operand; an absent operand compares as its zero value. @public */
export interface Compare {
  readonly key: Uint8Array;
  readonly rangeEnd?: Uint8Array | undefined;
  readonly target: CompareTarget;
  readonly result: CompareResult;
  readonly version?: number | undefined;
  readonly createRevision?: number | undefined;
  readonly modRevision?: number | undefined;
  readonly value?: Uint8Array | undefined;
  readonly lease?: bigint | undefined;
}

/** RequestOp: exactly one member set (etcd answers "key not found" when none is). @public */
export interface RequestOp {
  readonly requestRange?: RangeRequest | undefined;
  readonly requestPut?: PutRequest | undefined;
  readonly requestDeleteRange?: DeleteRangeRequest | undefined;
  readonly requestTxn?: TxnRequest | undefined;
}

/** @public */
export type ResponseOp =
  | { readonly responseRange: RangeResponse }
  | { readonly responsePut: PutResponse }
  | { readonly responseDeleteRange: DeleteRangeResponse }
  | { readonly responseTxn: TxnResponse };

/** @public */
export interface TxnRequest {
  readonly compare?: readonly Compare[] | undefined;
  readonly success?: readonly RequestOp[] | undefined;
  readonly failure?: readonly RequestOp[] | undefined;
}

/** @public */
export interface TxnResponse {
  readonly revision: number;
  readonly succeeded: boolean;
  readonly responses: ResponseOp[];
}

/** @public */
export interface CompactResponse {
  readonly revision: number;
}

/**
 * What the store needs from a lessor: etcd's mvcc store checks that a lease exists before a put and keeps
 * the lessor's key sets in step with puts and deletes. The lessor plugs in here; the store knows no clock.
 * @public
 */
export interface LeaseHook {
  exists(id: bigint): boolean;
  attach(id: bigint, key: Uint8Array): void;
  detach(id: bigint, key: Uint8Array): void;
}
