/**
 * Normalisation of responses before comparison — only where etcd itself is free:
 *  - header cluster_id, member_id and raft_term (cluster identity and election history; a zero value, as
 *    in nested txn headers, stays and is compared);
 *  - lease IDs the server generated, named L1, L2, ... in the order each side granted them (client-chosen
 *    IDs stay as they are);
 *  - the order of LeaseLeases' list and of LeaseTimeToLive's keys (Go map iteration order in etcd);
 *  - LeaseTimeToLive's remaining TTL within one second (see `ttlWithin`; real time passes on etcd only).
 * Everything else — revisions, kvs, more, count, deleted, prev_kvs, txn branches, watch events, errors —
 * is kept exactly. Bytes become latin1 strings so transcripts stay readable.
 */
import { Buffer } from 'node:buffer';

export type Canon = null | boolean | number | string | Canon[] | { [k: string]: Canon };

export interface LeaseNames {
  /** Actual lease ID (decimal) → canonical name. */
  readonly names: Map<string, string>;
}

const FREE_HEADER_FIELDS = new Set(['cluster_id', 'member_id', 'raft_term']);
/** Fields holding a lease ID, by message: KeyValue.lease, lease responses' ID, LeaseStatus.ID. */
const LEASE_FIELDS = new Set(['lease', 'ID']);

/** A plain, order-free form of a message: Buffers as latin1 strings, free fields normalised. */
export function canon(v: unknown, leases: LeaseNames, parentKey = ''): Canon {
  if (v === null || v === undefined) return null;
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) return Buffer.from(v).toString('latin1');
  if (typeof v === 'boolean' || typeof v === 'number' || typeof v === 'string') return v;
  if (typeof v === 'bigint') return String(v);
  if (Array.isArray(v)) {
    const arr = v.map((x) => canon(x, leases, parentKey));
    // LeaseLeases' list and LeaseTimeToLive's keys come in Go map order
    if (parentKey === 'leases' || parentKey === 'keys') arr.sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
    return arr;
  }
  if (typeof v === 'object') {
    const out: { [k: string]: Canon } = {};
    const isHeader = parentKey === 'header';
    for (const k of Object.keys(v as object).sort()) {
      const x = (v as Record<string, unknown>)[k];
      if (isHeader && FREE_HEADER_FIELDS.has(k) && x !== '0') {
        out[k] = '*';
      } else if (LEASE_FIELDS.has(k) && typeof x === 'string') {
        out[k] = leases.names.get(x) ?? x;
      } else {
        out[k] = canon(x, leases, k);
      }
    }
    return out;
  }
  return String(v);
}

/**
 * Whether `canon(a, leases)` and `canon(b, leases)` are equal, read off the two messages in step without
 * building either form — the shadow compares every answer of an application's traffic, and two equal
 * answers are the common case, where building and printing both canonical forms was a quarter of its work.
 * It answers false when it cannot tell cheaply (a list canon sorts, mixed representations such as a Buffer
 * against a string): the caller then compares the texts. True only when the canonical texts are equal.
 */
export function sameCanon(a: unknown, b: unknown, leases: LeaseNames, parentKey = ''): boolean {
  if (a === null || a === undefined) return b === null || b === undefined;
  if (b === null || b === undefined) return false;
  if (Buffer.isBuffer(a) || a instanceof Uint8Array) return (Buffer.isBuffer(b) || b instanceof Uint8Array) && Buffer.compare(a, b) === 0;
  if (typeof a === 'boolean' || typeof a === 'string' || typeof a === 'bigint') return a === b;
  if (typeof a === 'number') return a === b && Number.isFinite(a);
  if (typeof a !== 'object' || typeof b !== 'object' || Buffer.isBuffer(b) || b instanceof Uint8Array) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length || parentKey === 'leases' || parentKey === 'keys') return false;
    for (let i = 0; i < a.length; i++) if (!sameCanon(a[i], b[i], leases, parentKey)) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  // canon sorts the keys: the same set in any order (as many keys, each of a's an enumerable own key of b's).
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  const isHeader = parentKey === 'header';
  for (const k of ka) {
    if (!Object.prototype.propertyIsEnumerable.call(b, k)) return false;
    const x = (a as Record<string, unknown>)[k];
    const y = (b as Record<string, unknown>)[k];
    if (isHeader && FREE_HEADER_FIELDS.has(k)) {
      if ((x !== '0') !== (y !== '0')) return false;
      if (x !== '0') continue; // '*' on both sides
    }
    if (LEASE_FIELDS.has(k) && (typeof x === 'string' || typeof y === 'string')) {
      if (typeof x !== 'string' || typeof y !== 'string' || (leases.names.get(x) ?? x) !== (leases.names.get(y) ?? y)) return false;
      continue;
    }
    if (!sameCanon(x, y, leases, k)) return false;
  }
  return true;
}

/** Canonical JSON text: equal texts, equal messages. */
export function text(c: Canon): string {
  return JSON.stringify(c);
}

/**
 * LeaseTimeToLive's TTL is read at different moments (etcd's clock runs, the simulator's stands still):
 * equal when within one second; then etcd's TTL is replaced by the simulator's so the rest compares exactly.
 */
export function ttlWithin(sim: Canon, etcd: Canon): Canon {
  if (!isObj(sim) || !isObj(etcd)) return etcd;
  const a = Number(sim['TTL']);
  const b = Number(etcd['TTL']);
  if (typeof sim['grantedTTL'] !== 'string' || !Number.isFinite(a) || !Number.isFinite(b)) return etcd;
  if (a > 0 && b > 0 && Math.abs(a - b) <= 1) return { ...etcd, TTL: sim['TTL'] ?? null };
  return etcd;
}

function isObj(c: Canon): c is { [k: string]: Canon } {
  return typeof c === 'object' && c !== null && !Array.isArray(c);
}
