/** Shared helpers for the MVCC store tests. */
import assert from 'node:assert/strict';
import {
  EtcdError,
  MvccStore,
  text,
  utf8,
  type EtcdErrorKind,
  type KeyValue,
  type LeaseHook,
  type RangeResponse,
} from '../../src/index.js';
import { keyString } from '../../src/mvcc/bytes.js';

/** UTF-8 bytes of a string. */
export const b = utf8;
/** etcd's range_end "\0": every key >= key (and, with key "\0", every key). */
export const NUL = new Uint8Array([0]);

/** Runs `fn`, expecting an EtcdError of exactly `kind` (code and message included). */
export function expectError(fn: () => unknown, kind: EtcdErrorKind): EtcdError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof EtcdError, `expected EtcdError "${kind.message}", got ${String(caught)}`);
  assert.equal(caught.kind, kind);
  assert.equal(caught.code, kind.code);
  assert.equal(caught.message, kind.message);
  return caught;
}

/** Everything observable about a store that a rejected request must not change. */
export function observe(store: MvccStore): {
  rev: number;
  compact: number;
  hash: number;
  all: RangeResponse;
  events: (readonly unknown[])[];
} {
  const events: (readonly unknown[])[] = [];
  for (let r = 0; r <= store.currentRevision + 1; r++) events.push(store.eventsAt(r));
  return {
    rev: store.currentRevision,
    compact: store.compactRevision,
    hash: store.hash(),
    all: store.range({ key: NUL, rangeEnd: NUL }),
    events,
  };
}

/**
 * Bad input changes nothing: runs `fn` expecting an EtcdError of `kind`, then checks that the current and
 * compacted revisions, the hash, a full range and the event log are exactly as before.
 */
export function assertUnchanged(store: MvccStore, kind: EtcdErrorKind, fn: () => unknown, lessor?: FakeLessor): EtcdError {
  const before = observe(store);
  const lessorLog = lessor?.log.length;
  const err = expectError(fn, kind);
  assert.deepStrictEqual(observe(store), before, `store changed by a rejected request (${kind.message})`);
  if (lessor !== undefined) assert.equal(lessor.log.length, lessorLog, 'lessor touched by a rejected request');
  assert.equal(store.checkValid(), undefined);
  return err;
}

/** Key texts of a list of KeyValues. */
export function keysOf(kvs: readonly KeyValue[]): string[] {
  return kvs.map((kv) => text(kv.key));
}

/** Value texts of a list of KeyValues. */
export function valuesOf(kvs: readonly KeyValue[]): string[] {
  return kvs.map((kv) => text(kv.value));
}

/** An expected KeyValue. */
export function kv(key: string | Uint8Array, value: string, createRevision: number, modRevision: number, version: number, lease = 0n): KeyValue {
  return { key: typeof key === 'string' ? b(key) : key, value: b(value), createRevision, modRevision, version, lease };
}

/** The single key's KeyValue at `revision` (0 = current) read through Range, or undefined. */
export function get(store: MvccStore, key: string, revision = 0): KeyValue | undefined {
  const r = store.range({ key: b(key), revision });
  assert.ok(r.kvs.length <= 1);
  return r.kvs[0];
}

/** A lessor stand-in that knows a fixed set of leases and records attach/detach calls. */
export class FakeLessor implements LeaseHook {
  readonly leases: Set<bigint>;
  readonly log: string[] = [];
  readonly attached = new Map<bigint, Set<string>>();
  constructor(ids: readonly bigint[]) {
    this.leases = new Set(ids);
  }
  exists(id: bigint): boolean {
    return this.leases.has(id);
  }
  attach(id: bigint, key: Uint8Array): void {
    this.log.push(`attach ${id} ${text(key)}`);
    let set = this.attached.get(id);
    if (set === undefined) this.attached.set(id, (set = new Set()));
    set.add(text(key));
  }
  detach(id: bigint, key: Uint8Array): void {
    this.log.push(`detach ${id} ${text(key)}`);
    this.attached.get(id)?.delete(text(key));
  }
  keys(id: bigint): string[] {
    return [...(this.attached.get(id) ?? [])].sort();
  }
}

/** Modification revisions of each generation of `key` in the index, tombstones marked with a "t". */
export function generations(store: MvccStore, key: string | Uint8Array): string[][] | undefined {
  const ki = store.storage.index.get(keyString(typeof key === 'string' ? b(key) : key));
  if (ki === undefined) return undefined;
  return ki.generations.map((g) => g.map((e) => (e.createRevision === 0 ? `${e.modRevision}t` : `${e.modRevision}`)));
}
