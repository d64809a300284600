/**
 * etcd's whole backend as one bbolt file (its buckets: etcd_backend.ts; their records:
 * backend_records.ts): the bucket tree built from an EtcdBackend and read back, and the snapshot file —
 * that tree plus its SHA-256, as etcd's Snapshot RPC sends it.
 */
import { Buffer, createHash } from '../sim/index.js';
import { type KeyValue, WireWriter, keyValueSize, marshalKeyValue, writeKeyValue } from '../mvcc/index.js';
import { boltKey, childBucket, compareKeys, isBucketEntry, type BoltBucket, type BoltEntry, type BoltEntrySource } from './bbolt.js';
import { layoutBolt, type BoltLayout } from './bbolt_writer.js';
import { readBolt } from './bbolt_reader.js';
import { ProtoFormatError, asInt64 } from './proto_reader.js';
import { SnapshotFormatError, type EtcdBackend, type StoredRevision } from './etcd_backend.js';
import {
  text,
  revisionKey,
  writeRevisionKey,
  parseRevisionKey,
  u64be,
  readU64be,
  marshalLease,
  utf8,
  marshalUser,
  marshalRole,
  unmarshalKeyValue,
  EMPTY,
  unmarshalLease,
  unmarshalUser,
  unmarshalRole,
  memberJson,
  parseMember,
  parseMemberId,
  confStateJson,
  parseConfState,
  parseDowngrade,
  downgradeJson,
} from './backend_records.js';

const sorted = (entries: BoltEntry[]): BoltEntry[] => entries.sort((a, b) => compareKeys(a.key, b.key));
const bucket = (name: string, entries: BoltEntry[]): BoltEntry => ({ key: boltKey(name), bucket: { entries: sorted(entries) } });

/**
 * The key bucket as a member hands it to the writer: in key-bucket order (main, then sub), each revision's
 * main and sub revision, whether it is a delete, and its KeyValue, side by side — no object per revision
 * (a tombstone's value stores only its key).
 */
export interface KeyBucketColumns {
  readonly kvs: readonly KeyValue[];
  readonly mains: Float64Array;
  readonly subs: Uint32Array;
  /** 1 for a tombstone (a delete), else 0. */
  readonly tombstones: Uint8Array;
}

/** Where a backend built from a member keeps its KeyBucketColumns (not enumerable: a spread copy drops it). */
const COLUMNS = Symbol('etcdsim.keyBucketColumns');

/**
 * A backend whose key bucket comes as columns: `revisions` is made from them only when someone reads it
 * (Hash, a restart), while a snapshot writes the columns straight into the file. `rest` is every other
 * field of the backend.
 */
export function backendWithKeyColumns(rest: Omit<EtcdBackend, 'revisions'>, cols: KeyBucketColumns): EtcdBackend {
  let revisions: StoredRevision[] | undefined;
  const b: EtcdBackend = {
    ...rest,
    get revisions(): readonly StoredRevision[] {
      if (revisions === undefined) {
        const n = cols.kvs.length;
        revisions = new Array<StoredRevision>(n);
        for (let i = 0; i < n; i++) revisions[i] = { main: cols.mains[i]!, sub: cols.subs[i]!, tombstone: cols.tombstones[i] === 1, kv: cols.kvs[i]! };
      }
      return revisions;
    },
  };
  Object.defineProperty(b, COLUMNS, { value: cols, enumerable: false });
  return b;
}

/** A backend's key bucket as columns: those it was built with, or made from its revisions. */
function keyColumnsOf(b: EtcdBackend): KeyBucketColumns {
  const own = (b as { readonly [COLUMNS]?: KeyBucketColumns })[COLUMNS];
  if (own !== undefined) return own;
  const revs = b.revisions;
  const n = revs.length;
  const cols = { kvs: new Array<KeyValue>(n), mains: new Float64Array(n), subs: new Uint32Array(n), tombstones: new Uint8Array(n) };
  for (let i = 0; i < n; i++) {
    const r = revs[i]!;
    cols.kvs[i] = r.kv;
    cols.mains[i] = r.main;
    cols.subs[i] = r.sub;
    cols.tombstones[i] = r.tombstone ? 1 : 0;
  }
  return cols;
}

/**
 * The key bucket for writing: revision keys and marshalled KeyValues laid out straight into bbolt's pages,
 * with no object per revision (a snapshot of a million revisions otherwise spends most of its time
 * collecting them). Revisions must be in strictly ascending order, as the key bucket sorts them.
 */
function keyBucketSource(b: EtcdBackend): BoltEntrySource {
  const { kvs, mains, subs, tombstones } = keyColumnsOf(b);
  const n = kvs.length;
  // Each value's size once (the writer asks for it when planning and again when writing).
  const valueSizes = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const kv = kvs[i]!;
    if (i > 0 && (mains[i - 1]! > mains[i]! || (mains[i - 1] === mains[i] && subs[i - 1]! >= subs[i]!))) throw new RangeError(`snapshot: revisions out of order at ${mains[i]}_${subs[i]}`);
    valueSizes[i] = tombstones[i] === 1 ? keyValueSize(kv.key, 0, 0, 0, EMPTY, 0) : keyValueSize(kv.key, kv.createRevision, kv.modRevision, kv.version, kv.value, kv.lease);
  }
  // Values are encoded straight into the page being laid out (the file, or a piece of it; see bbolt_writer.ts
  // BoltLayout) through one cursor over the buffer it lives in: no buffer per value, no copy.
  let cursor: WireWriter | undefined;
  return {
    count: n,
    keySize: (i) => (tombstones[i] === 1 ? 18 : 17),
    valueSize: (i) => valueSizes[i]!,
    writeKey: (i, dst, at) => writeRevisionKey(dst, at, mains[i]!, subs[i]!, tombstones[i] === 1),
    writeValue: (i, dst, at) => {
      const kv = kvs[i]!;
      if (cursor === undefined || cursor.buf.buffer !== dst.buffer) cursor = new WireWriter(0, Buffer.from(dst.buffer, 0, dst.buffer.byteLength));
      cursor.pos = dst.byteOffset + at;
      if (tombstones[i] === 1) writeKeyValue(cursor, kv.key, 0, 0, 0, EMPTY, 0);
      else writeKeyValue(cursor, kv.key, kv.createRevision, kv.modRevision, kv.version, kv.value, kv.lease);
    },
  };
}

/**
 * The bucket tree of a backend, in etcd's layout. With `lazyKeys` the key bucket is a source for
 * writeBolt (no entries to iterate): what writeEtcdSnapshot uses; without, every bucket has its entries.
 */
export function encodeEtcdBackend(b: EtcdBackend, opts: { readonly lazyKeys?: boolean } = {}): BoltBucket {
  const keys: BoltEntry[] = opts.lazyKeys === true ? [] : b.revisions.map((r) => ({ key: revisionKey(r.main, r.sub, r.tombstone), value: marshalKeyValue(r.kv, r.tombstone) }));
  const meta: BoltEntry[] = [{ key: boltKey('consistent_index'), value: u64be(b.consistentIndex) }];
  if (b.scheduledCompactRev !== undefined) meta.push({ key: boltKey('scheduledCompactRev'), value: revisionKey(b.scheduledCompactRev, 0, false) });
  if (b.finishedCompactRev !== undefined) meta.push({ key: boltKey('finishedCompactRev'), value: revisionKey(b.finishedCompactRev, 0, false) });
  if (b.term !== undefined) meta.push({ key: boltKey('term'), value: u64be(b.term) });
  if (b.confState !== undefined) meta.push({ key: boltKey('confState'), value: utf8(confStateJson(b.confState)) });
  if (b.storageVersion !== undefined) meta.push({ key: boltKey('storageVersion'), value: utf8(b.storageVersion) });
  const cluster: BoltEntry[] = [];
  if (b.clusterVersion !== undefined) cluster.push({ key: boltKey('clusterVersion'), value: utf8(b.clusterVersion) });
  if (b.downgrade !== undefined) cluster.push({ key: boltKey('downgrade'), value: utf8(downgradeJson(b.downgrade)) });
  const root: BoltEntry[] = [
    bucket('alarm', b.alarms.map((a) => ({ key: a, value: new Uint8Array(0) }))),
    // etcd writes authEnabled the first time auth is enabled or disabled; a store never enabled has none.
    bucket('auth', [
      ...(b.authEnabled ? [{ key: boltKey('authEnabled'), value: Uint8Array.of(1) }] : []),
      { key: boltKey('authRevision'), value: u64be(BigInt(b.authRevision)) },
    ]),
    bucket('authRoles', b.roles.map((r) => ({ key: utf8(r.name), value: marshalRole(r) }))),
    bucket('authUsers', b.users.map((u) => ({ key: utf8(u.name), value: marshalUser(u) }))),
    bucket('cluster', cluster),
    // Revision keys sort as revisions do: main, then sub (fixed width, big-endian).
    { key: boltKey('key'), bucket: { entries: keys, source: opts.lazyKeys === true ? keyBucketSource(b) : undefined } },
    bucket('lease', b.leases.map((l) => ({ key: u64be(l.id), value: marshalLease(l) }))),
    bucket('members', b.members.map((m) => ({ key: utf8(m.id.toString(16)), value: utf8(memberJson(m)) }))),
    bucket('members_removed', b.removedMembers.map((id) => ({ key: utf8(id.toString(16)), value: utf8('removed') }))),
    bucket('meta', meta),
  ];
  return { entries: root };
}

/** Decodes a backend's bucket tree; a bucket etcd 3.4 always has but that is missing reads as empty. */
export function decodeEtcdBackend(root: BoltBucket): EtcdBackend {
  const values = (name: string): { key: Uint8Array; value: Uint8Array }[] => {
    const b = childBucket(root, name);
    if (b === undefined) return [];
    return b.entries.map((e) => {
      if (isBucketEntry(e)) throw new SnapshotFormatError(`bucket ${name}: unexpected nested bucket ${JSON.stringify(text.decode(e.key))}`);
      return e;
    });
  };
  const at = (name: string, key: string): Uint8Array | undefined => values(name).find((e) => compareKeys(e.key, boltKey(key)) === 0)?.value;
  if (childBucket(root, 'key') === undefined || childBucket(root, 'meta') === undefined) {
    throw new SnapshotFormatError('not an etcd backend: no "key" or "meta" bucket');
  }
  const keyEntries = values('key');
  const revisions: StoredRevision[] = new Array<StoredRevision>(keyEntries.length);
  for (let i = 0; i < keyEntries.length; i++) {
    const e = keyEntries[i]!;
    const rev = parseRevisionKey(e.key, 'bucket key');
    revisions[i] = { main: rev.main, sub: rev.sub, tombstone: rev.tombstone, kv: unmarshalKeyValue(e.value, rev) };
  }
  const compactRev = (name: string): number | undefined => {
    const v = at('meta', name);
    return v === undefined ? undefined : parseRevisionKey(v, `meta ${name}`).main;
  };
  const ci = at('meta', 'consistent_index');
  const enabled = at('auth', 'authEnabled');
  const authRev = at('auth', 'authRevision');
  const cv = at('cluster', 'clusterVersion');
  const term = at('meta', 'term');
  const confState = at('meta', 'confState');
  const storageVersion = at('meta', 'storageVersion');
  const downgrade = at('cluster', 'downgrade');
  try {
    return {
      revisions,
      consistentIndex: ci === undefined ? 0n : readU64be(ci, 'meta consistent_index'),
      scheduledCompactRev: compactRev('scheduledCompactRev'),
      finishedCompactRev: compactRev('finishedCompactRev'),
      leases: values('lease').map(({ key, value }) => {
        const l = unmarshalLease(value, 'bucket lease');
        if (l.id !== asInt64(readU64be(key, 'bucket lease key'))) throw new SnapshotFormatError(`bucket lease: lease ${l.id} stored under another ID`);
        return l;
      }),
      authEnabled: enabled !== undefined && enabled.length === 1 && enabled[0] === 1,
      authRevision: authRev === undefined ? 0 : Number(readU64be(authRev, 'auth authRevision')),
      users: values('authUsers').map(({ value }) => unmarshalUser(value, 'bucket authUsers')),
      roles: values('authRoles').map(({ value }) => unmarshalRole(value, 'bucket authRoles')),
      members: values('members').map(({ key, value }) => parseMember(key, value, 'bucket members')),
      removedMembers: values('members_removed').map(({ key }) => parseMemberId(key, 'bucket members_removed')),
      clusterVersion: cv === undefined ? undefined : text.decode(cv),
      alarms: values('alarm').map(({ key }) => key),
      term: term === undefined ? undefined : readU64be(term, 'meta term'),
      confState: confState === undefined ? undefined : parseConfState(confState),
      // 3.6 writes an empty storageVersion first (its migration's placeholder), then "3.6.0".
      storageVersion: storageVersion === undefined ? undefined : text.decode(storageVersion),
      downgrade: downgrade === undefined ? undefined : parseDowngrade(downgrade),
    };
  } catch (err) {
    if (err instanceof ProtoFormatError) throw new SnapshotFormatError(err.message);
    throw err;
  }
}

const SHA256_SIZE = 32;

/**
 * A snapshot as etcd's Snapshot RPC sends it (and `etcdctl snapshot save` stores it): the bbolt file followed
 * by the SHA-256 of the file.
 */
export function writeEtcdSnapshot(b: EtcdBackend): Uint8Array {
  const layout = layoutEtcdBackend(b);
  const out = new Uint8Array(layout.size + SHA256_SIZE);
  layout.writeTo(out);
  out.set(createHash('sha256').update(out.subarray(0, layout.size)).digest(), layout.size);
  return out;
}

/**
 * A backend's bbolt file laid out, its key bucket's leaves still to be written (bbolt_writer.ts BoltLayout): what
 * the Snapshot stream sends piece by piece, with the same bytes as writeEtcdSnapshot's file.
 */
export function layoutEtcdBackend(b: EtcdBackend): BoltLayout {
  return layoutBolt(encodeEtcdBackend(b, { lazyKeys: true }));
}

/**
 * Reads a snapshot file: a bbolt database in etcd's layout, with or without the SHA-256 trailer (etcd's
 * restore tells them apart the same way: a trailer makes the size 32 more than a multiple of 512). A trailer
 * that does not match, a bad bbolt file or an entry etcd's layout does not explain is a SnapshotFormatError.
 */
export function readEtcdSnapshot(file: Uint8Array): EtcdBackend {
  // One copy of the whole file: what is read from it (keys, values) are views into this copy, which the
  // caller's buffer can then no longer change.
  let db = file.slice();
  if (file.length % 512 === SHA256_SIZE) {
    db = db.subarray(0, file.length - SHA256_SIZE);
    const want = file.subarray(file.length - SHA256_SIZE);
    const got = createHash('sha256').update(db).digest();
    if (compareKeys(got, want) !== 0) throw new SnapshotFormatError('SHA-256 trailer does not match the database (corrupt or truncated file)');
  } else if (file.length % 512 !== 0) {
    throw new SnapshotFormatError(`size ${file.length} is neither whole pages nor pages plus a SHA-256 trailer (truncated?)`);
  }
  try {
    return decodeEtcdBackend(readBolt(db).root);
  } catch (err) {
    if (err instanceof Error && err.name === 'BoltFormatError') throw new SnapshotFormatError(err.message);
    throw err;
  }
}
