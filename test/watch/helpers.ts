/** Shared helpers for the watch tests: hand-built stores and a readable form of watch responses. */
import { MvccStore, text, utf8, type KeyValue, type MvccOptions, type TxnRequest } from '../../src/mvcc/index.js';
import { WatchableStore, type WatchableStoreOptions, type WatchResponse, type WatchStream } from '../../src/watch/index.js';

export const b = utf8;
/** etcd's range_end "\0". */
export const NUL = new Uint8Array([0]);

export const DUPLICATE_ID = 'mvcc: duplicate watch ID provided on the WatchStream';
export const EMPTY_RANGE = 'mvcc: watcher range is empty';
export const COMPACTED = 'etcdserver: mvcc: required revision has been compacted';

/** A store pair with one stream, for the common case. */
export function setup(
  kvOpts: MvccOptions = {},
  wsOpts: WatchableStoreOptions = {},
): { kv: MvccStore; ws: WatchableStore; st: WatchStream } {
  const kv = new MvccStore(kvOpts);
  const ws = new WatchableStore(kv, wsOpts);
  return { kv, ws, st: ws.newWatchStream() };
}

export function put(kv: MvccStore, key: string, value: string): number {
  return kv.put({ key: b(key), value: b(value) }).revision;
}

export function del(kv: MvccStore, key: string, end?: string): number {
  return kv.deleteRange({ key: b(key), rangeEnd: end === undefined ? undefined : b(end) }).revision;
}

/** One txn putting every [key, value] pair: one revision. */
export function txnPut(kv: MvccStore, pairs: ReadonlyArray<readonly [string, string]>): number {
  const req: TxnRequest = { success: pairs.map(([k, v]) => ({ requestPut: { key: b(k), value: b(v) } })) };
  return kv.txn(req).revision;
}

/** A KeyValue as text. */
export interface ShownKv {
  readonly key: string;
  readonly value: string;
  readonly create: number;
  readonly mod: number;
  readonly version: number;
}

export interface ShownEvent {
  readonly type: 'PUT' | 'DELETE';
  readonly kv: ShownKv;
  readonly prev?: ShownKv;
}

/** A WatchResponse with every field, keys and values as text. */
export interface Shown {
  readonly revision: number;
  readonly watchId: number;
  readonly created: boolean;
  readonly canceled: boolean;
  readonly compactRevision: number;
  readonly cancelReason: string;
  readonly fragment: boolean;
  readonly events: readonly ShownEvent[];
}

function showKv(kv: KeyValue): ShownKv {
  if (kv.lease !== 0n) throw new Error('these tests use no leases');
  return { key: text(kv.key), value: text(kv.value), create: kv.createRevision, mod: kv.modRevision, version: kv.version };
}

export function show(resps: readonly WatchResponse[]): Shown[] {
  return resps.map((r) => ({
    revision: r.revision,
    watchId: r.watchId,
    created: r.created,
    canceled: r.canceled,
    compactRevision: r.compactRevision,
    cancelReason: r.cancelReason,
    fragment: r.fragment,
    events: r.events.map((ev) => {
      const e: { type: 'PUT' | 'DELETE'; kv: ShownKv; prev?: ShownKv } = { type: ev.type, kv: showKv(ev.kv) };
      if (ev.prevKv !== undefined) e.prev = showKv(ev.prevKv);
      return e;
    }),
  }));
}

/** Takes and shows everything waiting in a stream. */
export function takeShown(st: WatchStream): Shown[] {
  return show(st.take());
}

/** An expected response: every field defaults to its zero value. */
export function resp(r: Partial<Shown>): Shown {
  return {
    revision: 0,
    watchId: 0,
    created: false,
    canceled: false,
    compactRevision: 0,
    cancelReason: '',
    fragment: false,
    events: [],
    ...r,
  };
}

export function created(revision: number, watchId = 0): Shown {
  return resp({ revision, watchId, created: true });
}

export function createdCanceled(revision: number, reason: string): Shown {
  return resp({ revision, watchId: -1, created: true, canceled: true, cancelReason: reason });
}

/** The compaction cancel of a behind watcher: no header revision, no reason (observed in etcd 3.4.23). */
export function compactCanceled(watchId: number, compactRevision: number): Shown {
  return resp({ watchId, canceled: true, compactRevision });
}

export function kvT(key: string, value: string, create: number, mod: number, version: number): ShownKv {
  return { key, value, create, mod, version };
}

export function putEv(key: string, value: string, create: number, mod: number, version: number, prev?: ShownKv): ShownEvent {
  return prev === undefined ? { type: 'PUT', kv: kvT(key, value, create, mod, version) } : { type: 'PUT', kv: kvT(key, value, create, mod, version), prev };
}

/** A DELETE event: the key and the delete's revision only. */
export function delEv(key: string, mod: number, prev?: ShownKv): ShownEvent {
  return prev === undefined ? { type: 'DELETE', kv: kvT(key, '', 0, mod, 0) } : { type: 'DELETE', kv: kvT(key, '', 0, mod, 0), prev };
}

/** Events of a list of responses, flattened, as "TYPE key@mod". */
export function flat(resps: readonly WatchResponse[]): string[] {
  const out: string[] = [];
  for (const r of resps) for (const ev of r.events) out.push(`${ev.type} ${text(ev.kv.key)}@${ev.kv.modRevision}`);
  return out;
}

/** Mod revisions of every event in a list of responses, in order. */
export function revsOf(resps: readonly WatchResponse[]): number[] {
  const out: number[] = [];
  for (const r of resps) for (const ev of r.events) out.push(ev.kv.modRevision);
  return out;
}

export function range(from: number, to: number): number[] {
  const out: number[] = [];
  for (let i = from; i <= to; i++) out.push(i);
  return out;
}
