/**
 * Watch messages (etcdserverpb WatchCreateRequest / WatchResponse, mvccpb.Event) in the engine's form:
 * bytes for keys, numbers for revisions and watch IDs.
 */
import type { EventType, KeyValue } from '../mvcc/index.js';

/** WatchCreateRequest.FilterType: NOPUT drops PUT events, NODELETE drops DELETE events. @public */
export type WatchFilter = 'NOPUT' | 'NODELETE';

/** @public */
export interface WatchCreateRequest {
  /** Empty means "\0", the smallest key. */
  readonly key: Uint8Array;
  /** Absent/empty: the single key; "\0": every key >= key; else [key, rangeEnd). */
  readonly rangeEnd?: Uint8Array | undefined;
  /** 0: from the next revision; a past revision replays from it inclusive; a future one waits. */
  readonly startRevision?: number | undefined;
  readonly progressNotify?: boolean | undefined;
  readonly filters?: readonly WatchFilter[] | undefined;
  readonly prevKv?: boolean | undefined;
  /** 0: the stream picks the next free ID. */
  readonly watchId?: number | undefined;
  readonly fragment?: boolean | undefined;
}

/** An event as a watcher receives it; prevKv only when the watch asked for it and it is still readable. @public */
export interface WatchEvent {
  readonly type: EventType;
  readonly kv: KeyValue;
  readonly prevKv?: KeyValue | undefined;
}

/** A WatchResponse as the client receives it. @public */
export interface WatchResponse {
  /** Header revision. */
  readonly revision: number;
  /** -1 for a stream-wide progress notification or a create that failed. */
  readonly watchId: number;
  readonly created: boolean;
  readonly canceled: boolean;
  /** Set (with canceled) when the watcher fell behind the compaction point. */
  readonly compactRevision: number;
  readonly cancelReason: string;
  /** More responses of the same revision batch follow (only for watches created with `fragment`). */
  readonly fragment: boolean;
  readonly events: readonly WatchEvent[];
}
