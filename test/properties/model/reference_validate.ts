/**
 * etcd's checks of a request before it reaches raft, written out naively as the reference for the engine's
 * (src/mvcc/shape.ts, validate.ts, request_size.ts): first the shape protobuf's decoder guarantees (a field of
 * the wrong JavaScript type is refused naming it: the simulator's own text, etcd has none), then v3rpc's
 * checkRangeRequest / checkPutRequest / checkDeleteRequest / checkTxnRequest and checkIntervals on each
 * branch, then --max-request-bytes for a write (etcd's isTxnReadonly: a txn is a read when every op of both
 * branches is a range; a nested txn makes it a write). etcd's texts are written out here, not imported.
 *
 * A sort target no release knows is refused as an invalid sort option by every release, as the engine does
 * (etcd 3.4's checkRangeRequest looked at the key only, and its apply then had no sorter for it); an unknown
 * sort order passes on 3.4 (`sortOrderChecked` false).
 */
import { raftRequestBytes } from './reference_proto.js';
import type { TxnRequest } from '../../../src/mvcc/types.js';

export const TEXT = {
  emptyKey: 'etcdserver: key is not provided',
  keyNotFound: 'etcdserver: key not found',
  valueProvided: 'etcdserver: value is provided',
  leaseProvided: 'etcdserver: lease is provided',
  tooManyOps: 'etcdserver: too many operations in txn request',
  duplicateKey: 'etcdserver: duplicate key given in txn request',
  invalidSort: 'etcdserver: invalid sort option',
  tooLarge: 'etcdserver: request is too large',
} as const;

/** A refusal the reference expects. */
export class Refused extends Error {}

function refuse(text: string): never {
  throw new Refused(text);
}

type Obj = Record<string, unknown>;

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return v.length > 20 ? `a string (${JSON.stringify(v.slice(0, 20) + '…')})` : `a string (${JSON.stringify(v)})`;
  if (typeof v === 'object') {
    const proto = Object.getPrototypeOf(v) as { constructor?: { name?: string } } | null;
    return `an object (${proto === null ? 'null prototype' : (proto.constructor?.name ?? 'null prototype')})`;
  }
  return `${typeof v} ${String(v)}`;
}

function wrong(path: string, want: string, got: unknown): never {
  refuse(`etcdsim: ${path} must be ${want}, got ${describe(got)}`);
}

const isMessage = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v) && !ArrayBuffer.isView(v);

/** The field kinds of each message, in the order the engine reads them (a request has one wrong field at most). */
type Kind = 'bytes' | 'bytes?' | 'int' | 'int64' | 'bool';
const FIELDS: Readonly<Record<string, readonly (readonly [string, Kind])[]>> = {
  range: [
    ['key', 'bytes'],
    ['rangeEnd', 'bytes?'],
    ['limit', 'int'],
    ['revision', 'int'],
    ['minModRevision', 'int'],
    ['maxModRevision', 'int'],
    ['minCreateRevision', 'int'],
    ['maxCreateRevision', 'int'],
    ['serializable', 'bool'],
    ['keysOnly', 'bool'],
    ['countOnly', 'bool'],
  ],
  put: [
    ['key', 'bytes'],
    ['value', 'bytes?'],
    ['lease', 'int64'],
    ['prevKv', 'bool'],
    ['ignoreValue', 'bool'],
    ['ignoreLease', 'bool'],
  ],
  delete: [
    ['key', 'bytes'],
    ['rangeEnd', 'bytes?'],
    ['prevKv', 'bool'],
  ],
  compare: [
    ['key', 'bytes'],
    ['rangeEnd', 'bytes?'],
    ['version', 'int'],
    ['createRevision', 'int'],
    ['modRevision', 'int'],
    ['value', 'bytes?'],
    ['lease', 'int64'],
  ],
};

const WANT: Readonly<Record<Kind, string>> = { bytes: 'a Uint8Array', 'bytes?': 'a Uint8Array', int: 'a safe integer', int64: 'an int64 bigint', bool: 'a boolean' };

function fieldOk(kind: Kind, v: unknown): boolean {
  if (kind === 'bytes') return v instanceof Uint8Array;
  if (v === undefined) return true;
  if (kind === 'bytes?') return v instanceof Uint8Array;
  if (kind === 'int') return typeof v === 'number' && Number.isInteger(v) && Math.abs(v) <= Number.MAX_SAFE_INTEGER;
  if (kind === 'int64') return typeof v === 'bigint' && v >= -(2n ** 63n) && v < 2n ** 63n;
  return typeof v === 'boolean';
}

function message(kind: string, v: unknown, path: string): void {
  if (!isMessage(v)) wrong(path, 'an object', v);
  for (const [name, k] of FIELDS[kind]!) if (!fieldOk(k, v[name])) wrong(`${path}.${name}`, WANT[k], v[name]);
}

function list(v: Obj, name: string, path: string): readonly unknown[] {
  const l = v[name];
  if (l === undefined) return [];
  if (!Array.isArray(l)) wrong(`${path}.${name}`, 'an array', l);
  return l;
}

function txnShape(v: unknown, path: string): void {
  if (!isMessage(v)) wrong(path, 'an object', v);
  list(v, 'compare', path).forEach((c, i) => message('compare', c, `${path}.compare[${i}]`));
  for (const branch of ['success', 'failure']) {
    list(v, branch, path).forEach((op, i) => {
      const at = `${path}.${branch}[${i}]`;
      if (!isMessage(op)) wrong(at, 'an object', op);
      if (op['requestRange'] !== undefined) message('range', op['requestRange'], `${at}.requestRange`);
      if (op['requestPut'] !== undefined) message('put', op['requestPut'], `${at}.requestPut`);
      if (op['requestDeleteRange'] !== undefined) message('delete', op['requestDeleteRange'], `${at}.requestDeleteRange`);
      if (op['requestTxn'] !== undefined) txnShape(op['requestTxn'], `${at}.requestTxn`);
    });
  }
}

const ORDERS = new Set(['NONE', 'ASCEND', 'DESCEND']);
const TARGETS = new Set(['KEY', 'VERSION', 'CREATE', 'MOD', 'VALUE']);

const latin1 = (b: Uint8Array): string => Buffer.from(b).toString('latin1');
const bytesOf = (v: unknown): Uint8Array => v as Uint8Array;

function checkRange(r: Obj, sortOrderChecked: boolean): void {
  if (bytesOf(r['key']).length === 0) refuse(TEXT.emptyKey);
  if (sortOrderChecked && r['sortOrder'] !== undefined && !ORDERS.has(r['sortOrder'] as string)) refuse(TEXT.invalidSort);
  if (r['sortTarget'] !== undefined && !TARGETS.has(r['sortTarget'] as string)) refuse(TEXT.invalidSort);
}

function checkPut(r: Obj): void {
  if (bytesOf(r['key']).length === 0) refuse(TEXT.emptyKey);
  if (r['ignoreValue'] === true && r['value'] !== undefined && bytesOf(r['value']).length > 0) refuse(TEXT.valueProvided);
  if (r['ignoreLease'] === true && r['lease'] !== undefined && r['lease'] !== 0n) refuse(TEXT.leaseProvided);
}

function checkDelete(r: Obj): void {
  if (bytesOf(r['key']).length === 0) refuse(TEXT.emptyKey);
}

/** checkTxnRequest: the widest list against the budget, the compares' keys, then each op (a nested txn with what is left). */
function checkTxn(t: Obj, budget: number, sortOrderChecked: boolean): void {
  const compare = (t['compare'] ?? []) as Obj[];
  const success = (t['success'] ?? []) as Obj[];
  const failure = (t['failure'] ?? []) as Obj[];
  const widest = Math.max(compare.length, success.length, failure.length);
  if (widest > budget) refuse(TEXT.tooManyOps);
  for (const c of compare) if (bytesOf(c['key']).length === 0) refuse(TEXT.emptyKey);
  for (const op of [...success, ...failure]) {
    // A oneof holds one member; of an object with several, the engine reads them in the proto's order.
    if (op['requestRange'] !== undefined) checkRange(op['requestRange'] as Obj, sortOrderChecked);
    else if (op['requestPut'] !== undefined) checkPut(op['requestPut'] as Obj);
    else if (op['requestDeleteRange'] !== undefined) checkDelete(op['requestDeleteRange'] as Obj);
    else if (op['requestTxn'] !== undefined) checkTxn(op['requestTxn'] as Obj, budget - widest, sortOrderChecked);
    else refuse(TEXT.keyNotFound);
  }
}

/**
 * checkIntervals, naively: within a branch no key is put twice or put inside a range the branch deletes
 * (a delete's range is [key, rangeEnd), or the key alone without an end; an end of "\0" holds nothing, etcd's
 * interval quirk); a nested txn's puts count with the branch's, its then and else may put the same key.
 * Of an op with several members (no protobuf decoder makes one; a JavaScript caller can) each member counts
 * here, where checkTxn above checks the first only.
 */
function intervals(ops: readonly Obj[]): { puts: Set<string>; dels: [string, string][] } {
  const dels: [string, string][] = [];
  const puts = new Set<string>();
  const covered = (k: string): boolean => dels.some(([b, e]) => b <= k && k < e);
  for (const op of ops) {
    const d = op['requestDeleteRange'] as Obj | undefined;
    if (d === undefined) continue;
    const b = latin1(bytesOf(d['key']));
    const end = d['rangeEnd'] as Uint8Array | undefined;
    dels.push([b, end === undefined || end.length === 0 ? b + '\0' : latin1(end)]);
  }
  for (const op of ops) {
    const t = op['requestTxn'] as Obj | undefined;
    if (t === undefined) continue;
    const then = intervals((t['success'] ?? []) as Obj[]);
    const otherwise = intervals((t['failure'] ?? []) as Obj[]);
    for (const k of then.puts) {
      if (puts.has(k) || covered(k)) refuse(TEXT.duplicateKey);
      puts.add(k);
    }
    for (const k of otherwise.puts) {
      if ((puts.has(k) && !then.puts.has(k)) || covered(k)) refuse(TEXT.duplicateKey);
      puts.add(k);
    }
    dels.push(...then.dels, ...otherwise.dels);
  }
  for (const op of ops) {
    const p = op['requestPut'] as Obj | undefined;
    if (p === undefined) continue;
    const k = latin1(bytesOf(p['key']));
    if (puts.has(k) || covered(k)) refuse(TEXT.duplicateKey);
    puts.add(k);
  }
  return { puts, dels };
}

/** etcd's isTxnReadonly: every op of both branches is a range (a nested txn is not looked into). */
export function txnReadonly(t: TxnRequest): boolean {
  return [...(t.success ?? []), ...(t.failure ?? [])].every((op) => op.requestRange !== undefined);
}

/** A revision argument (Compact, Hash, HashKV): an integer, or refused naming the argument. */
export function referenceRevisionRefusal(field: string, v: unknown): string | undefined {
  return v !== undefined && fieldOk('int', v) ? undefined : `etcdsim: ${field} must be a safe integer, got ${describe(v)}`;
}

export type RequestKind = 'range' | 'put' | 'delete' | 'txn';

export interface Limits {
  readonly maxTxnOps: number;
  readonly maxRequestBytes: number;
  readonly sortOrderChecked: boolean;
}

const ROOT: Readonly<Record<RequestKind, string>> = { range: 'RangeRequest', put: 'PutRequest', delete: 'DeleteRangeRequest', txn: 'TxnRequest' };

/** The text of the first check `req` fails, in etcd's order, or undefined when it passes them all. */
export function referenceRefusal(kind: RequestKind, req: unknown, limits: Limits): string | undefined {
  try {
    if (kind === 'txn') txnShape(req, ROOT.txn);
    else message(kind, req, ROOT[kind]);
    const r = req as Obj;
    if (kind === 'range') checkRange(r, limits.sortOrderChecked);
    if (kind === 'put') checkPut(r);
    if (kind === 'delete') checkDelete(r);
    if (kind === 'txn') {
      checkTxn(r, limits.maxTxnOps, limits.sortOrderChecked);
      intervals((r['success'] ?? []) as Obj[]);
      intervals((r['failure'] ?? []) as Obj[]);
    }
    const body = kind === 'put' ? { put: req as never } : kind === 'delete' ? { deleteRange: req as never } : kind === 'txn' ? { txn: req as never } : undefined;
    if (body !== undefined && !(kind === 'txn' && txnReadonly(req as TxnRequest)) && raftRequestBytes(body) > limits.maxRequestBytes) refuse(TEXT.tooLarge);
    return undefined;
  } catch (err) {
    if (err instanceof Refused) return err.message;
    throw err;
  }
}
