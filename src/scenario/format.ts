/**
 * What etcdctl 3.4 prints for each response, in its `simple` and `json` output formats (checked against
 * etcdctl 3.4.23 on a real etcd 3.4.23: put/get/del/txn/compact/lease/watch). Input is the services'
 * message form (src/server/messages.ts).
 */
import { Buffer } from '../sim/index.js';
import type * as M from '../server/messages.js';

/** Bytes as etcdctl prints them: raw (UTF-8 here, so a transcript stays text). */
export function str(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8');
}

/** A lease ID (decimal int64 string) as etcdctl prints it: %016x. */
export function leaseHex(id: string | bigint): string {
  return BigInt(id).toString(16).padStart(16, '0');
}

/** Values longer than this are shortened in a transcript (etcdctl prints them whole). */
const LONG_VALUE = 256;

/**
 * A value as the transcript shows it: whole, as etcdctl prints it, unless longer than LONG_VALUE bytes; then
 * its start and its length (a lab that makes megabyte values stays readable), marked so nobody mistakes it
 * for etcdctl's output.
 */
export function shownValue(b: Uint8Array): string {
  if (b.byteLength <= LONG_VALUE) return str(b);
  return `${str(b.subarray(0, 16))}… [${b.byteLength} bytes; the transcript shortens values over ${LONG_VALUE} bytes]`;
}

/** printKV: key line, value line (etcdctl prints an empty value line for --keys-only). */
function kvLines(kv: M.KeyValue, valueOnly = false): string[] {
  return valueOnly ? [shownValue(kv.value)] : [str(kv.key), shownValue(kv.value)];
}

export function putSimple(r: M.PutResponse): string[] {
  return ['OK', ...(r.prev_kv !== null ? kvLines(r.prev_kv) : [])];
}

export function getSimple(r: M.RangeResponse, printValueOnly: boolean): string[] {
  return r.kvs.flatMap((kv) => kvLines(kv, printValueOnly));
}

export function delSimple(r: M.DeleteRangeResponse): string[] {
  return [r.deleted, ...r.prev_kvs.flatMap((kv) => kvLines(kv))];
}

/** etcdctl's txn printer: SUCCESS/FAILURE, then each response after an empty line. */
export function txnSimple(r: M.TxnResponse): string[] {
  const out = [r.succeeded ? 'SUCCESS' : 'FAILURE'];
  for (const op of r.responses) {
    out.push('');
    switch (op.response) {
      case 'response_put':
        out.push(...putSimple(op.response_put));
        break;
      case 'response_range':
        out.push(...getSimple(op.response_range, false));
        break;
      case 'response_delete_range':
        out.push(...delSimple(op.response_delete_range));
        break;
      case 'response_txn':
        out.push(...txnSimple(op.response_txn));
        break;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// -w json: Go's encoding/json over the protobuf structs (int64 as numbers, bytes as base64, omitempty).

function headerJson(h: M.ResponseHeader): string {
  return `{"cluster_id":${h.cluster_id},"member_id":${h.member_id},"revision":${h.revision},"raft_term":${h.raft_term}}`;
}

function kvJson(kv: M.KeyValue): string {
  const parts = [`"key":${JSON.stringify(Buffer.from(kv.key).toString('base64'))}`];
  for (const [name, v] of [
    ['create_revision', kv.create_revision],
    ['mod_revision', kv.mod_revision],
    ['version', kv.version],
  ] as const) {
    if (v !== '0') parts.push(`"${name}":${v}`);
  }
  if (kv.value.byteLength > 0) parts.push(`"value":${JSON.stringify(Buffer.from(kv.value).toString('base64'))}`);
  if (kv.lease !== '0') parts.push(`"lease":${kv.lease}`);
  return `{${parts.join(',')}}`;
}

export function getJson(r: M.RangeResponse): string {
  const parts = [`"header":${headerJson(r.header)}`];
  if (r.kvs.length > 0) parts.push(`"kvs":[${r.kvs.map(kvJson).join(',')}]`);
  if (r.more) parts.push('"more":true');
  if (r.count !== '0') parts.push(`"count":${r.count}`);
  return `{${parts.join(',')}}`;
}

export function putJson(r: M.PutResponse): string {
  const parts = [`"header":${headerJson(r.header)}`];
  if (r.prev_kv !== null) parts.push(`"prev_kv":${kvJson(r.prev_kv)}`);
  return `{${parts.join(',')}}`;
}

export function delJson(r: M.DeleteRangeResponse): string {
  const parts = [`"header":${headerJson(r.header)}`];
  if (r.deleted !== '0') parts.push(`"deleted":${r.deleted}`);
  if (r.prev_kvs.length > 0) parts.push(`"prev_kvs":[${r.prev_kvs.map(kvJson).join(',')}]`);
  return `{${parts.join(',')}}`;
}

// ---------------------------------------------------------------------------------------------------
// Leases

export function leaseGrantLine(r: M.LeaseGrantResponse): string {
  return `lease ${leaseHex(r.ID)} granted with TTL(${r.TTL}s)`;
}

export function keepAliveLine(r: M.LeaseKeepAliveResponse): string {
  return `lease ${leaseHex(r.ID)} keepalived with TTL(${r.TTL})`;
}

export function timeToLiveLine(r: M.LeaseTimeToLiveResponse, withKeys: boolean): string {
  if (r.grantedTTL === '0' && r.TTL === '-1') return `lease ${leaseHex(r.ID)} already expired`;
  let s = `lease ${leaseHex(r.ID)} granted with TTL(${r.grantedTTL}s), remaining(${r.TTL}s)`;
  if (withKeys) s += `, attached keys([${r.keys.map(str).join(' ')}])`;
  return s;
}

// ---------------------------------------------------------------------------------------------------
// Watch (etcdctl's printWatchCh and simple printer)

export function watchEventLines(ev: M.Event): string[] {
  return [ev.type, ...(ev.prev_kv !== null ? kvLines(ev.prev_kv) : []), ...kvLines(ev.kv)];
}

/** Quotes a word for display when the shell would need it. */
export function shellQuote(s: string): string {
  if (s !== '' && /^[A-Za-z0-9_\-./:=@%+,${}()*]+$/.test(s)) return s;
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(s)) {
    // eslint-disable-next-line no-control-regex
    return `$'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/[\x00-\x1f\x7f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)}'`;
  }
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * Whether a shell-quoted word holds a NUL byte. A process's arguments are C strings, so no shell can pass a
 * NUL to etcdctl: bash drops it from `$'/p/b\x00'`, and the pasted command would read from /p/b again.
 */
export function hasNul(quoted: string): boolean {
  return /\$'(?:[^'\\]|\\.)*\\x00/.test(quoted);
}

/** The transcript's mark on a captured value that holds a NUL byte (see hasNul), with what to do instead. */
export const NOT_PASTEABLE = 'not pasteable: a shell cannot pass a NUL byte to etcdctl (bash drops it); from a shell, start the page at the last key and skip it';

/** The shorter mark on each command line that uses such a value. */
export const NOT_PASTEABLE_SHORT = 'not pasteable (a NUL byte)';

/** Virtual time for the transcript: seconds with millisecond precision. */
export function showTime(ms: number): string {
  return `${(ms / 1000).toFixed(3).replace(/\.?0+$/, '') || '0'}s`;
}
