/**
 * Runs one workload (ops.ts) against the simulator and a real etcd in lockstep and compares every answer:
 * each unary response or error, then every stream's responses after the op settled (target.ts). Stops at
 * the first divergence. The transcript records each step on both sides.
 *
 * Both sides start from the same state (see reset.ts): equal current and compaction revisions and an empty
 * keyspace, so revisions are compared as they are, without any offset.
 */
import { Buffer } from 'node:buffer';
import type { CallContext } from '../server/index.js';
import type * as M from '../server/messages.js';
import { prefixEnd } from '../mvcc/index.js';
import { canon, text, ttlWithin, type Canon, type LeaseNames } from './normalise.js';
import {
  BOGUS_CALLER,
  BOGUS_TOKEN,
  passwordOf,
  type CompareSpec,
  type DeleteOp,
  type EndSpec,
  type LeaseRef,
  type Op,
  type PermSpec,
  type PutOp,
  type RangeOp,
  type RevSpec,
  type TxnOpSpec,
  type TxnSpec,
} from './ops.js';
import type { DiffStream, DiffTarget } from './target.js';
import { hostNow } from '../sim/index.js';

/** Revisions of the simulator, used to resolve relative revisions identically for both sides. */
export interface Revisions {
  current(): number;
  compacted(): number;
}

export interface TranscriptStep {
  readonly index: number;
  readonly op: Op;
  readonly sim: string;
  readonly etcd: string;
  /** New stream responses per stream after this op, each side. */
  readonly streams: ReadonlyArray<{ readonly stream: string; readonly sim: string[]; readonly etcd: string[] }>;
}

export interface Divergence {
  readonly step: number;
  readonly op: Op;
  /** What differed: "response" or a stream name. */
  readonly where: string;
  readonly sim: string;
  readonly etcd: string;
}

export interface RunResult {
  readonly ops: number;
  /** Responses compared (unary answers and stream responses). */
  readonly compared: number;
  readonly divergence: Divergence | undefined;
  readonly transcript: TranscriptStep[];
}

interface Side {
  readonly target: DiffTarget;
  readonly leases: string[];
  readonly names: LeaseNames;
  /** Watch streams by index and caller (a stream carries its caller's token from its opening on). */
  readonly watch: Map<string, DiffStream<M.WatchRequest, M.WatchResponse>>;
  readonly keepAlive: Map<string, DiffStream<M.LeaseKeepAliveRequest, M.LeaseKeepAliveResponse>>;
  /** This side's token per user: the last one its Authenticate returned. */
  readonly tokens: Map<string, string>;
  /** Every stream, in opening order, with its name. */
  readonly streams: Array<{ name: string; stream: DiffStream<unknown, unknown> }>;
}

type Outcome = { ok: unknown } | { err: { code: number; details: string } };

const bytes = (s: string): Buffer => Buffer.from(s, 'latin1');
const NUL = Buffer.from([0]);

/** Whether a watch from `start` begins behind the current revision (etcd: an unsynced watcher). */
function behind(start: RevSpec | undefined, revs: Revisions): boolean {
  if (start === undefined) return false;
  const r = rev(start, revs);
  return r !== 0 && r <= revs.current();
}

export interface EngineOptions {
  /** How long etcd gets to catch up watchers from the past before a compaction (default 300 ms). */
  readonly catchUpWaitMs?: number | undefined;
  /** Grace period at the end of a run for late stream responses of etcd (default 50 ms). */
  readonly graceMs?: number | undefined;
}

export async function runWorkload(ops: readonly Op[], sim: DiffTarget, etcd: DiffTarget, revs: Revisions, opts: EngineOptions = {}): Promise<RunResult> {
  const mk = (target: DiffTarget): Side => ({ target, leases: [], names: { names: new Map() }, watch: new Map(), keepAlive: new Map(), tokens: new Map(), streams: [] });
  const a = mk(sim);
  const b = mk(etcd);
  const transcript: TranscriptStep[] = [];
  let compared = 0;
  const seen = new Map<string, number>(); // responses of each stream already shown in the transcript
  let divergence: Divergence | undefined;
  let lastCatchUpWatch: number | undefined;
  try {
    for (let i = 0; i < ops.length && divergence === undefined; i++) {
      const op = ops[i]!;
      const inner = unwrap(op);
      // Both requests are built from the revisions before the op (the simulator runs it first).
      const cur = revs.current();
      const compacted = revs.compacted();
      const before: Revisions = { current: () => cur, compacted: () => compacted };
      const ra = await exec(op, a, before);
      if (inner.op === 'watch' && behind(inner.watch.start, before)) lastCatchUpWatch = hostNow();
      if (inner.op === 'compact' && lastCatchUpWatch !== undefined) {
        // etcd catches up a watcher from the past in a sync loop every 100 ms; a compaction before that
        // cancels it, after it does not — let etcd's loop run first, as the simulator's already did.
        const wait = (opts.catchUpWaitMs ?? 300) - (hostNow() - lastCatchUpWatch);
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        lastCatchUpWatch = undefined;
      }
      const rb = await exec(op, b, before);
      const ca = outcomeCanon(op, ra, a);
      let cb = outcomeCanon(op, rb, b);
      if (inner.op === 'timeToLive' && 'ok' in ra && 'ok' in rb) cb = ttlWithin(ca, cb);
      const ta = text(ca);
      const tb = text(cb);
      compared++;
      if (ta !== tb) divergence = { step: i, op, where: 'response', sim: ta, etcd: tb };
      await a.target.settle(a.streams.map((s) => s.stream), []);
      await b.target.settle(b.streams.map((s) => s.stream), a.streams.map((s) => s.stream.responses.length));
      const streamDiff = compareStreams(a, b, i, op);
      compared += streamDiff.compared;
      divergence ??= streamDiff.divergence;
      transcript.push({ index: i, op, sim: ta, etcd: tb, streams: newResponses(a, b, seen) });
    }
    if (divergence === undefined && b.streams.length > 0) {
      // Late responses of etcd: one round trip on the same channel, then a short grace period.
      await b.target.lease.leaseLeases({}).catch(() => undefined);
      await new Promise((r) => setTimeout(r, opts.graceMs ?? 50));
      const last = compareStreams(a, b, ops.length - 1, ops[ops.length - 1] ?? { op: 'leases' });
      if (last.divergence !== undefined) {
        divergence = { ...last.divergence, where: `${last.divergence.where} (after the last op)` };
        const streams = newResponses(a, b, seen);
        if (streams.length > 0) transcript.push({ index: ops.length, op: { op: 'leases' }, sim: '(end of run)', etcd: '(end of run)', streams });
      }
    }
  } finally {
    for (const s of [...a.streams, ...b.streams]) s.stream.close();
  }
  return { ops: transcript.length, compared, divergence, transcript };
}

// ---------------------------------------------------------------------------------------------------
// Streams

function streamCanon(s: { name: string; stream: DiffStream<unknown, unknown> }, side: Side): Map<string, string[]> {
  // etcd orders responses per watcher only (watchers of one stream are notified in map order): group by watch ID.
  const groups = new Map<string, string[]>();
  for (const r of s.stream.responses) {
    const id = s.name.startsWith('watch') ? String((r as M.WatchResponse).watch_id) : '';
    const g = groups.get(id) ?? [];
    g.push(text(canon(r, side.names)));
    groups.set(id, g);
  }
  const end = s.stream.ended;
  if (end !== undefined) groups.set('end', [end.err === undefined ? 'ended' : `error ${end.err.code} ${end.err.details}`]);
  return groups;
}

function compareStreams(a: Side, b: Side, step: number, op: Op): { compared: number; divergence: Divergence | undefined } {
  let compared = 0;
  const names = new Set([...a.streams.map((s) => s.name), ...b.streams.map((s) => s.name)]);
  for (const name of names) {
    const sa = a.streams.find((s) => s.name === name);
    const sb = b.streams.find((s) => s.name === name);
    const ga = sa === undefined ? new Map<string, string[]>() : streamCanon(sa, a);
    const gb = sb === undefined ? new Map<string, string[]>() : streamCanon(sb, b);
    const ids = [...new Set([...ga.keys(), ...gb.keys()])].sort();
    for (const id of ids) {
      const xa = ga.get(id) ?? [];
      const xb = gb.get(id) ?? [];
      compared += xa.length;
      const n = Math.max(xa.length, xb.length);
      for (let k = 0; k < n; k++) {
        if (xa[k] !== xb[k]) {
          const where = `${name}${id === '' ? '' : id === 'end' ? ' end' : ` watch_id ${id}`} response #${k + 1}`;
          return { compared, divergence: { step, op, where, sim: xa[k] ?? '(none)', etcd: xb[k] ?? '(none)' } };
        }
      }
    }
  }
  return { compared, divergence: undefined };
}

function newResponses(a: Side, b: Side, seen: Map<string, number>): TranscriptStep['streams'] {
  const out: Array<{ stream: string; sim: string[]; etcd: string[] }> = [];
  const names = new Set([...a.streams.map((s) => s.name), ...b.streams.map((s) => s.name)]);
  for (const name of names) {
    const pick = (side: Side, tag: string): string[] => {
      const s = side.streams.find((x) => x.name === name);
      if (s === undefined) return [];
      const all = s.stream.responses.map((r) => text(canon(r, side.names)));
      if (s.stream.ended !== undefined) all.push(s.stream.ended.err === undefined ? 'ended' : `error ${s.stream.ended.err.code} ${s.stream.ended.err.details}`);
      const from = seen.get(`${tag}:${name}`) ?? 0;
      seen.set(`${tag}:${name}`, all.length);
      return all.slice(from);
    };
    const sim = pick(a, 'sim');
    const etcd = pick(b, 'etcd');
    if (sim.length > 0 || etcd.length > 0) out.push({ stream: name, sim, etcd });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Executing one op on one side

/** The request an op issues (an `as` op: the request it wraps). */
function unwrap(op: Op): Op {
  return op.op === 'as' ? unwrap(op.req) : op;
}

function outcomeCanon(op: Op, r: Outcome, side: Side): Canon {
  if ('err' in r) return { error: { code: r.err.code, details: r.err.details } };
  if (r.ok === 'sent') return 'sent';
  const c = canon(r.ok, side.names);
  // Simple tokens are random: the only thing normalised for auth.
  if (unwrap(op).op === 'authenticate' && typeof c === 'object' && c !== null && !Array.isArray(c) && typeof c['token'] === 'string' && c['token'] !== '') {
    return { ...c, token: '<token>' };
  }
  return c;
}

/** The caller's context on this side: its token for `user`, none, or a token nobody issued. */
function callerCtx(side: Side, user: string | undefined): CallContext | undefined {
  if (user === undefined) return undefined;
  if (user === BOGUS_CALLER) return { token: BOGUS_TOKEN };
  const token = side.tokens.get(user);
  return token === undefined ? undefined : { token };
}

function permReq(p: PermSpec): M.PermissionInput {
  return { permType: p.type, ...keyRange(p.key, p.end) };
}

async function exec(op: Op, side: Side, revs: Revisions, caller?: string): Promise<Outcome> {
  const t = side.target;
  const ctx = callerCtx(side, caller);
  try {
    switch (op.op) {
      case 'as':
        return await exec(op.req, side, revs, op.user);
      case 'put':
        return { ok: await t.kv.put(putReq(op.put, side), ctx) };
      case 'range':
        return { ok: await t.kv.range(rangeReq(op.range, revs), ctx) };
      case 'delete':
        return { ok: await t.kv.deleteRange(deleteReq(op.del), ctx) };
      case 'txn':
        return { ok: await t.kv.txn(txnReq(op.txn, side, revs), ctx) };
      case 'bigTxn':
        return { ok: await t.kv.txn({ success: Array.from({ length: op.count }, () => ({ request_range: { key: bytes('a') } })) }, ctx) };
      case 'compact':
        return { ok: await t.kv.compact({ revision: String(rev(op.rev, revs)), physical: op.physical }, ctx) };
      case 'userAdd':
        return { ok: await t.auth.userAdd({ name: op.name, password: passwordOf(op.name), ...(op.noPassword === true ? { options: { no_password: true } } : {}) }, ctx) };
      case 'userDelete':
        return { ok: await t.auth.userDelete({ name: op.name }, ctx) };
      case 'userGet':
        return { ok: await t.auth.userGet({ name: op.name }, ctx) };
      case 'userList':
        return { ok: await t.auth.userList({}, ctx) };
      case 'userGrantRole':
        return { ok: await t.auth.userGrantRole({ user: op.user, role: op.role }, ctx) };
      case 'userRevokeRole':
        return { ok: await t.auth.userRevokeRole({ name: op.user, role: op.role }, ctx) };
      case 'roleAdd':
        return { ok: await t.auth.roleAdd({ name: op.name }, ctx) };
      case 'roleDelete':
        return { ok: await t.auth.roleDelete({ role: op.name }, ctx) };
      case 'roleGet':
        return { ok: await t.auth.roleGet({ role: op.name }, ctx) };
      case 'roleList':
        return { ok: await t.auth.roleList({}, ctx) };
      case 'roleGrantPermission':
        return { ok: await t.auth.roleGrantPermission({ name: op.role, perm: permReq(op.perm) }, ctx) };
      case 'roleRevokePermission': {
        const kr = keyRange(op.key, op.end);
        return { ok: await t.auth.roleRevokePermission({ role: op.role, ...kr }, ctx) };
      }
      case 'authEnable':
        return { ok: await t.auth.authEnable({}, ctx) };
      case 'authDisable':
        return { ok: await t.auth.authDisable({}, ctx) };
      case 'authenticate': {
        const res = await t.auth.authenticate({ name: op.user, password: op.wrongPassword === true ? 'wrong' : passwordOf(op.user) }, ctx);
        side.tokens.set(op.user, res.token);
        return { ok: res };
      }
      case 'watch': {
        const w = op.watch;
        const filters: M.FilterType[] = [];
        if (w.noPut === true) filters.push('NOPUT');
        if (w.noDelete === true) filters.push('NODELETE');
        const create: M.WatchCreateRequest = {
          ...keyRange(w.key, w.end),
          start_revision: w.start === undefined ? '0' : String(rev(w.start, revs)),
          filters,
          prev_kv: w.prevKv === true,
          progress_notify: w.progressNotify === true,
          watch_id: String(w.watchId ?? 0),
        };
        watchStream(side, w.stream, caller).write({ create_request: create });
        return { ok: 'sent' };
      }
      case 'watchCancel':
        watchStream(side, op.stream, caller).write({ cancel_request: { watch_id: String(op.watchId) } });
        return { ok: 'sent' };
      case 'watchProgress':
        watchStream(side, op.stream, caller).write({ progress_request: {} });
        return { ok: 'sent' };
      case 'grant': {
        const res = await t.lease.leaseGrant({ TTL: String(op.ttl), ID: op.id ?? '0' }, ctx);
        side.leases.push(res.ID);
        if ((op.id ?? '0') === '0' && !side.names.names.has(res.ID)) side.names.names.set(res.ID, `L${side.names.names.size + 1}`);
        return { ok: res };
      }
      case 'revoke':
        return { ok: await t.lease.leaseRevoke({ ID: leaseId(op.lease, side) }, ctx) };
      case 'keepAlive': {
        const key = caller ?? '';
        let ka = side.keepAlive.get(key);
        if (ka === undefined) {
          ka = t.openKeepAlive(ctx);
          side.keepAlive.set(key, ka);
          side.streams.push({ name: caller === undefined ? 'keepalive' : `keepalive as ${caller}`, stream: ka as DiffStream<unknown, unknown> });
        }
        ka.write({ ID: leaseId(op.lease, side) });
        return { ok: 'sent' };
      }
      case 'timeToLive':
        return { ok: await t.lease.leaseTimeToLive({ ID: leaseId(op.lease, side), keys: op.keys }, ctx) };
      case 'leases':
        return { ok: await t.lease.leaseLeases({}, ctx) };
    }
  } catch (err) {
    const e = err as { code?: unknown; details?: unknown; message?: unknown };
    if (typeof e.code === 'number' && typeof e.details === 'string') return { err: { code: e.code, details: e.details } };
    throw err;
  }
}

/** Watch stream `i` of `caller` (opened with the caller's token of the moment, on first use). */
function watchStream(side: Side, i: number, caller: string | undefined): DiffStream<M.WatchRequest, M.WatchResponse> {
  const name = caller === undefined ? `watch stream ${i}` : `watch stream ${i} as ${caller}`;
  let s = side.watch.get(name);
  if (s === undefined) {
    s = side.target.openWatch(callerCtx(side, caller));
    side.watch.set(name, s);
    side.streams.push({ name, stream: s as DiffStream<unknown, unknown> });
  }
  return s;
}

function rev(r: RevSpec, revs: Revisions): number {
  switch (r.from) {
    case 'cur':
      return revs.current() + r.delta;
    case 'compact':
      return revs.compacted() + r.delta;
    case 'abs':
      return r.rev;
  }
}

function leaseId(ref: LeaseRef, side: Side): string {
  if ('id' in ref) return ref.id;
  if (side.leases.length === 0) return '0';
  return side.leases[ref.granted % side.leases.length]!;
}

/**
 * A single key leaves range_end out: etcd 3.4.23 reads a range_end that is present on the wire but empty
 * (which protobufjs sends for an explicit empty Buffer) as "from key" — its decoder makes it a non-nil
 * empty slice and treeIndex tests `end == nil` (observed; docs/version-differences.md). Go clients never
 * send an empty bytes field, so neither do we.
 */
function keyRange(key: string, end: EndSpec): { key: Buffer; range_end?: Buffer } {
  const k = bytes(key);
  if (end === 'single') return { key: k };
  if (end === 'fromKey') return { key: k, range_end: NUL };
  if (end === 'prefix') return { key: k, range_end: Buffer.from(prefixEnd(k)) };
  return { key: k, range_end: bytes(end.end) };
}

function putReq(p: PutOp, side: Side): M.PutRequest {
  const value = typeof p.value === 'string' ? bytes(p.value) : Buffer.alloc(p.value.size, 'x');
  return {
    key: bytes(p.key),
    value,
    lease: p.lease === undefined ? '0' : leaseId(p.lease, side),
    prev_kv: p.prevKv === true,
    ignore_value: p.ignoreValue === true,
    ignore_lease: p.ignoreLease === true,
  };
}

function rangeReq(r: RangeOp, revs: Revisions): M.RangeRequest {
  const opt = (x: RevSpec | undefined): string => (x === undefined ? '0' : String(rev(x, revs)));
  return {
    ...keyRange(r.key, r.end),
    limit: String(r.limit ?? 0),
    revision: opt(r.revision),
    sort_order: r.sortOrder ?? 'NONE',
    sort_target: r.sortTarget ?? 'KEY',
    serializable: r.serializable === true,
    keys_only: r.keysOnly === true,
    count_only: r.countOnly === true,
    min_mod_revision: opt(r.minMod),
    max_mod_revision: opt(r.maxMod),
    min_create_revision: opt(r.minCreate),
    max_create_revision: opt(r.maxCreate),
  };
}

function deleteReq(d: DeleteOp): M.DeleteRangeRequest {
  return { ...keyRange(d.key, d.end), prev_kv: d.prevKv === true };
}

function compareReq(c: CompareSpec, side: Side, revs: Revisions): M.Compare {
  const base = { ...keyRange(c.key, c.end ?? 'single'), target: c.target, result: c.result };
  switch (c.target) {
    case 'VERSION':
      return { ...base, target_union: 'version', version: String(c.operand as number) };
    case 'CREATE':
      return { ...base, target_union: 'create_revision', create_revision: String(rev(c.operand as RevSpec, revs)) };
    case 'MOD':
      return { ...base, target_union: 'mod_revision', mod_revision: String(rev(c.operand as RevSpec, revs)) };
    case 'VALUE':
      return { ...base, target_union: 'value', value: bytes(c.operand as string) };
    case 'LEASE':
      return { ...base, target_union: 'lease', lease: leaseId(c.operand as LeaseRef, side) };
  }
}

function txnOpReq(o: TxnOpSpec, side: Side, revs: Revisions): M.RequestOp {
  if ('range' in o) return { request_range: rangeReq(o.range, revs) };
  if ('put' in o) return { request_put: putReq(o.put, side) };
  if ('del' in o) return { request_delete_range: deleteReq(o.del) };
  return { request_txn: txnReq(o.txn, side, revs) };
}

function txnReq(t: TxnSpec, side: Side, revs: Revisions): M.TxnRequest {
  return {
    compare: t.compare.map((c) => compareReq(c, side, revs)),
    success: t.success.map((o) => txnOpReq(o, side, revs)),
    failure: t.failure.map((o) => txnOpReq(o, side, revs)),
  };
}
