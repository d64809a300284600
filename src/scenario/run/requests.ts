/**
 * What etcdctl 3.4 sends for each command: the v3 request messages (Put, Range, DeleteRange, Txn with its
 * compares, Watch create), built from a command's words once they are expanded. Key ranges follow
 * etcdctl's flags: `--prefix` ends at the key's prefix end (an empty key: the whole keyspace, `\0`),
 * `--from-key` at `\0`; lease IDs are taken in hex, as etcdctl prints them.
 */
import { Buffer } from '../../sim/index.js';
import type * as M from '../../server/messages.js';
import { prefixEnd } from '../../mvcc/index.js';
import type { DelCmd, GetCmd, KeyRangeArgs, PutCmd, TxnCmd, TxnCompare, TxnOp, WatchCmd } from '../parse/commands.js';
import { INTEGER_RE, type Word } from '../parse/lexer.js';
import { RunError } from '../run_error.js';
import type { ShellVariables } from '../shell/expand.js';

/** A word's bytes as etcdctl sends them (UTF-8 of the expanded text). */
export function bytes(vars: ShellVariables, w: Word): Buffer {
  return Buffer.from(vars.expand(w), 'utf8');
}

/** A lease ID as etcdctl takes it: hexadecimal. Returns the decimal int64 string. */
export function leaseId(vars: ShellVariables, w: Word): string {
  const s = vars.expand(w).replace(/^0x/i, '');
  if (!/^[0-9a-fA-F]{1,16}$/.test(s)) throw new RunError('error', `expected a lease ID in hex (as etcdctl prints it), got ${JSON.stringify(s)} (from ${w.raw})`);
  return BigInt(`0x${s}`).toString();
}

/** `KEY [RANGE_END] [--prefix] [--from-key]` → key and range_end. */
function keyRange(vars: ShellVariables, c: KeyRangeArgs): { key: Buffer; range_end?: Buffer } {
  const key = bytes(vars, c.key);
  if (c.prefix) return { key: key.byteLength === 0 ? Buffer.from([0]) : key, range_end: Buffer.from(key.byteLength === 0 ? [0] : prefixEnd(key)) };
  if (c.fromKey) return { key: key.byteLength === 0 ? Buffer.from([0]) : key, range_end: Buffer.from([0]) };
  if (c.rangeEnd !== undefined) return { key, range_end: bytes(vars, c.rangeEnd) };
  return { key };
}

export function putRequest(vars: ShellVariables, c: PutCmd): M.PutRequest {
  return { key: bytes(vars, c.key), value: bytes(vars, c.value), lease: c.lease === undefined ? undefined : leaseId(vars, c.lease), prev_kv: c.prevKv };
}

export function rangeRequest(vars: ShellVariables, c: GetCmd): M.RangeRequest {
  return {
    ...keyRange(vars, c),
    revision: c.rev === undefined ? undefined : vars.int(c.rev, '--rev'),
    limit: c.limit === undefined ? undefined : vars.int(c.limit, '--limit'),
    keys_only: c.keysOnly,
    ...(c.serializable ? { serializable: true } : {}),
  };
}

export function deleteRangeRequest(vars: ShellVariables, c: DelCmd): M.DeleteRangeRequest {
  return { ...keyRange(vars, c), prev_kv: c.prevKv };
}

function requestOp(vars: ShellVariables, op: TxnOp): M.RequestOp {
  switch (op.kind) {
    case 'put':
      return { request: 'request_put', request_put: putRequest(vars, op) };
    case 'get':
      return { request: 'request_range', request_range: rangeRequest(vars, op) };
    case 'del':
      return { request: 'request_delete_range', request_delete_range: deleteRangeRequest(vars, op) };
  }
}

/** A compare as etcdctl's txn sends it: the operand is a value, a lease ID in hex, or an integer revision/version. */
function compare(vars: ShellVariables, cmp: TxnCompare): M.Compare {
  const key = bytes(vars, cmp.key);
  const result = ({ '=': 'EQUAL', '!=': 'NOT_EQUAL', '>': 'GREATER', '<': 'LESS' } as const)[cmp.op];
  const operand = vars.expand(cmp.operand);
  switch (cmp.target) {
    case 'VALUE':
      return { key, result, target: 'VALUE', target_union: 'value', value: Buffer.from(operand, 'utf8') };
    case 'LEASE':
      return { key, result, target: 'LEASE', target_union: 'lease', lease: leaseId(vars, cmp.operand) };
    default: {
      if (!INTEGER_RE.test(operand)) throw new RunError('error', `txn compare ${cmp.raw}: expected an integer, got ${JSON.stringify(operand)}`);
      const field = cmp.target === 'MOD' ? 'mod_revision' : cmp.target === 'CREATE' ? 'create_revision' : 'version';
      return { key, result, target: cmp.target, target_union: field, [field]: operand };
    }
  }
}

export function txnRequest(vars: ShellVariables, c: TxnCmd): M.TxnRequest {
  return {
    compare: c.compares.map((cmp) => compare(vars, cmp)),
    success: c.success.map((op) => requestOp(vars, op)),
    failure: c.failure.map((op) => requestOp(vars, op)),
  };
}

/** The Watch create request of `etcdctl watch` (its start revision is set when the stream opens). */
export function watchCreateRequest(vars: ShellVariables, c: WatchCmd): M.WatchCreateRequest {
  return { ...keyRange(vars, { key: c.key, rangeEnd: c.rangeEnd, prefix: c.prefix, fromKey: false }), prev_kv: c.prevKv, progress_notify: c.progressNotify, ...(c.fragment ? { fragment: true } : {}) };
}
