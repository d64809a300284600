/**
 * Unary calls through the shadow: etcd's answer, and the simulator's answer to the same request asked at
 * the revision etcd answered at (follower.ts orders them), compared after normalisation. One rule per
 * compared RPC says whether its answer made a revision, how it reads when the simulator is already past
 * that revision, and what in its answer is time (the remaining TTL of a lease) and so left free.
 *
 * Lease IDs are the real etcd's: the simulator grants each lease with the ID etcd chose, as a client-chosen
 * ID, so every later request naming it means the same lease on both.
 */
import type { Buffer } from 'node:buffer';
import { serverOf } from '../client/index.js';
import { canon, sameCanon, text, type Canon } from '../diff/index.js';
import { encodeDeleteRangeResponse, encodePutResponse, encodeRangeResponse, encodeTxnResponse } from '../grpc/index.js';
import type { CallContext } from '../server/index.js';
import type * as M from '../server/messages.js';
import { isObj, NO_LEASES, outcomeText, simOutcome, type Outcome, type ShadowContext } from './context.js';
import { isCompactedError } from './compaction.js';
import type { Step } from './follower.js';
import { LOCK_ELECTION, MEMBERS } from './lock_election.js';
import { byName, fromSim, type Msg, type UnaryRule } from './rules.js';
import { headerRevision, sameWire, WireAnswer } from './wire_answer.js';
import { FollowingTokens, jwtExpiryMs } from './token_kind.js';

const LEASE_NOT_FOUND = 'etcdserver: requested lease not found';

/** A txn answer changed keys (so it made a revision): a put, or a delete that deleted something. */
function txnWrote(r: M.TxnResponse): boolean {
  return r.responses.some((op) =>
    op.response === 'response_put' ? true : op.response === 'response_delete_range' ? op.response_delete_range.deleted !== '0' : op.response === 'response_txn' ? txnWrote(op.response_txn) : false,
  );
}

/** Auth's calls (no revision made; the header is the current revision). */
const AUTH = ['AuthEnable', 'AuthDisable', 'AuthStatus', 'UserAdd', 'UserGet', 'UserList', 'UserDelete', 'UserChangePassword', 'UserGrantRole', 'UserRevokeRole', 'RoleAdd', 'RoleGet', 'RoleList', 'RoleDelete', 'RoleGrantPermission', 'RoleRevokePermission'];

/** The compared unary RPCs, by gRPC path. */
export const UNARY: ReadonlyMap<string, UnaryRule> = new Map<string, UnaryRule>([
  ...AUTH.map((m): [string, UnaryRule] => [`/etcdserverpb.Auth/${m}`, { late: 'as-is', ask: byName('auth', m) }]),
  [
    '/etcdserverpb.Auth/Authenticate',
    {
      late: 'as-is',
      // A JWT from etcd: the simulator issues one too (token_kind.ts), refused alike after an auth change.
      ask: (ctx, r, answer, call) => {
        const ok = answer();
        const ask = (): unknown => byName('auth', 'Authenticate')(ctx, r, answer, call);
        const tokens = serverOf(ctx.sim).auth.tokens;
        return ok !== undefined && jwtExpiryMs(String(ok['token'])) !== undefined && tokens instanceof FollowingTokens ? tokens.jwtNext(ask) : ask();
      },
      free: fromSim('token'),
      learn: (ctx, mine, etcd) => {
        if (!('ok' in mine)) return;
        const token = String((mine.ok as Msg)['token']);
        // A token etcd did not issue (it refused the Authenticate: a divergence) has no use: not kept.
        if ('ok' in etcd) ctx.tokens.learn(String((etcd.ok as Msg)['token']), token);
        else ctx.tokens.unpaired(token);
      },
    },
  ],
  // Status: the db sizes, the leader's ID and the raft index and term are the real etcd's own; version, alarms (errors) and learner compare.
  ['/etcdserverpb.Maintenance/Status', { late: 'as-is', ask: byName('maintenance', 'Status'), free: fromSim('dbSize', 'dbSizeInUse', 'leader', 'raftIndex', 'raftTerm', 'raftAppliedIndex') }],
  ['/etcdserverpb.Maintenance/HashKV', { late: 'read', ask: byName('maintenance', 'HashKV') }],
  // Hash covers etcd's whole backend, its members and raft state too: only the header compares.
  ['/etcdserverpb.Maintenance/Hash', { late: 'as-is', ask: byName('maintenance', 'Hash'), free: fromSim('hash') }],
  ['/etcdserverpb.Maintenance/Alarm', { late: 'as-is', ask: byName('maintenance', 'Alarm') }],
  ['/etcdserverpb.Maintenance/Defragment', { late: 'as-is', ask: byName('maintenance', 'Defragment') }],
  ...MEMBERS,
  ...LOCK_ELECTION,
  // KV's answers are compared as etcd's bytes against the simulator's answer in etcd's encoding (wire_answer.ts).
  ['/etcdserverpb.KV/Range', { late: 'read', ask: byName('kv', 'Range'), encode: (a) => encodeRangeResponse(a as M.RangeResponse) }],
  ['/etcdserverpb.KV/Put', { makesRevision: () => true, ask: byName('kv', 'Put'), encode: (a) => encodePutResponse(a as M.PutResponse) }],
  ['/etcdserverpb.KV/DeleteRange', { makesRevision: (ok) => ok()['deleted'] !== '0', ask: byName('kv', 'DeleteRange'), encode: (a) => encodeDeleteRangeResponse(a as M.DeleteRangeResponse) }],
  ['/etcdserverpb.KV/Txn', { makesRevision: (ok) => txnWrote(ok() as unknown as M.TxnResponse), ask: byName('kv', 'Txn'), encode: (a) => encodeTxnResponse(a as M.TxnResponse) }],
  [
    '/etcdserverpb.KV/Compact',
    {
      ask: byName('kv', 'Compact'),
      // etcd answers a physical Compact once its deletes are done (v3_server.go waits on physc), so a later
      // Compact's answer can come first, and its step already compacted the simulator past this one, which
      // etcd had applied before it: the simulator would refuse it as compacted.
      passedBy: (ctx, r, ok) => (ok !== undefined && ctx.sim.mvcc.compactRevision >= Number(r['revision'] ?? 0) ? 'a physical Compact answered after a later compaction' : undefined),
    },
  ],
  [
    '/etcdserverpb.Lease/LeaseGrant',
    {
      late: 'as-is',
      // etcd granted this ID, so it had no such lease: nor has the simulator (one that expired there).
      follow: (ctx, _r, ok) => ctx.leaseGone(ok === undefined ? undefined : String(ok['ID'])),
      ask: (ctx, r, answer, call) => {
        const ok = answer();
        return ctx.sim.services.lease.leaseGrant(ok === undefined ? (r as M.LeaseGrantRequest) : { ...(r as M.LeaseGrantRequest), ID: String(ok['ID']) }, call);
      },
      // A granted lease is recorded with the ID etcd chose, so that a replay grants the same one.
      logged: (r, ok) => (ok === undefined ? r : { ...r, ID: ok['ID'] }),
    },
  ],
  [
    '/etcdserverpb.Lease/LeaseRevoke',
    {
      late: 'as-is',
      makesRevision: (_ok, r, ctx) => {
        const id = BigInt(String(r['ID'] ?? '0'));
        return ctx.sim.lessor.exists(id) && ctx.sim.lessor.keyStringsOf(id).length > 0;
      },
      ask: byName('lease', 'LeaseRevoke'),
    },
  ],
  [
    '/etcdserverpb.Lease/LeaseTimeToLive',
    {
      late: 'as-is',
      follow: (ctx, r, ok) => {
        if (ok !== undefined && ok['TTL'] === '-1') ctx.leaseGone(String(r['ID'] ?? '0'));
      },
      ask: byName('lease', 'LeaseTimeToLive'),
      free: ttlFree,
    },
  ],
  [
    '/etcdserverpb.Lease/LeaseLeases',
    {
      late: 'as-is',
      follow: (ctx, _r, ok) => {
        const theirs = new Set(((ok?.['leases'] ?? []) as Array<{ ID: string }>).map((l) => l.ID));
        for (const id of ctx.sim.lessor.leases()) if (!theirs.has(String(id))) ctx.leaseGone(String(id));
      },
      ask: byName('lease', 'LeaseLeases'),
    },
  ],
]);

/**
 * One unary call etcd answered, as a step for the follower: the simulator is asked and the answers compared.
 * etcd's answer may come as its bytes (a WireAnswer: decoded only when read); a rule with `encode` compares
 * them with the simulator's answer in etcd's encoding first. Unless the answers already agree (sameWire, or
 * sameOutcome on the decoded forms), the simulator's answer goes through the wire form (`wire`: encoded and
 * decoded as etcd's message), so both are read as a client reads them, fields left at their defaults included.
 */
export function unaryStep(ctx: ShadowContext, rule: UnaryRule, rpc: string, req: Msg, etcd: Outcome, call: CallContext | undefined, wire: (m: unknown) => unknown): Step {
  const answered = 'ok' in etcd;
  // etcd's answer, read (and so decoded, for a WireAnswer) only by what needs more than its revision.
  const ok = (): (Msg & { header?: { revision?: string } }) | undefined => (answered ? (etcd.ok as Msg) : undefined);
  const bytes = etcd instanceof WireAnswer ? etcd.bytes : undefined;
  const header = bytes === undefined ? undefined : headerRevision(bytes);
  const said = header ?? (ok()?.header?.revision === undefined ? undefined : Number(ok()!.header!.revision));
  const rev = answered ? said : undefined;
  const leaseNotFound = 'err' in etcd && etcd.err.details === LEASE_NOT_FOUND;
  return {
    rev,
    skip: () => ctx.report.notCompared(rpc, "its revision came first from etcd's events"),
    makesRevision: () => answered && rule.makesRevision !== undefined && rule.makesRevision(() => ok()!, req, ctx),
    run: (late) => {
      const cur = ctx.sim.mvcc.currentRevision;
      if (late && rule.late === undefined) {
        ctx.report.notCompared(rpc, 'answered at a revision already passed');
        ctx.log.add(rpc, req, etcd);
        return;
      }
      const passed = rule.passedBy?.(ctx, req, ok());
      if (passed !== undefined) {
        ctx.report.notCompared(rpc, passed);
        return;
      }
      if ('err' in etcd && rule.answersOnly === true) {
        ctx.report.notCompared(rpc, 'an error answer');
        ctx.log.add(rpc, req, etcd);
        return;
      }
      const asked = rule.request?.(ctx, req) ?? req;
      const sreq = late && rule.late === 'read' ? { ...asked, revision: asked['revision'] === '0' || asked['revision'] === undefined ? String(rev) : asked['revision'] } : asked;
      if (leaseNotFound) ctx.leaseGone(String(req['lease'] ?? req['ID'] ?? '0'));
      rule.follow?.(ctx, req, ok());
      const answer = simOutcome(() => rule.ask(ctx, sreq, ok, call));
      if ('err' in etcd && isCompactedError(etcd.err.details) && 'ok' in answer) {
        // etcd compacted beyond the simulator without a Compact through the shadow: not a difference of
        // theirs, a compaction it has yet to follow (compaction.ts), asked for now.
        ctx.report.notCompared(rpc, 'etcd compacted beyond the simulator');
        ctx.log.add(rpc, req, etcd);
        ctx.compactionSeen();
        return;
      }
      // The same bytes as etcd's (the common case, nothing decoded); else the simulator's answer as it is,
      // when it already agrees with etcd's decoded one; else in wire form.
      const same = (bytes !== undefined && sameBytes(answer, bytes, rule, late)) || (!late && sameOutcome(answer, etcd, rule));
      const mine = same || !('ok' in answer) ? answer : simOutcome(() => wire(answer.ok));
      rule.learn?.(ctx, mine, etcd);
      ctx.log.add(rpc, rule.logged?.(req, ok()) ?? req, etcd);
      ctx.report.compared(rpc);
      if (same) return;
      const [a, b] = compareTexts(mine, etcd, late ? rev : undefined, rule);
      if (a !== b) ctx.diverge(rpc, `${rpc} at revision ${rev ?? cur}`, req, b, a, rev);
    },
  };
}

/**
 * The simulator's answer, in etcd's encoding, has etcd's bytes (wire_answer.ts): the same message but for what
 * etcd leaves free in the header — and for a late read the header's revision, which compareTexts sets to
 * etcd's. Only for a rule that compares its answers whole (no `free`, no `canonical`).
 */
function sameBytes(mine: Outcome, etcd: Buffer, rule: Pick<UnaryRule, 'free' | 'canonical' | 'encode'>, late: boolean): boolean {
  if (!('ok' in mine) || rule.encode === undefined || rule.free !== undefined || rule.canonical !== undefined) return false;
  let encoded: Buffer;
  try {
    encoded = rule.encode(mine.ok);
  } catch {
    return false;
  }
  return sameWire(encoded, etcd, late);
}

/**
 * Two answers that agree as they are — the common case — without printing either (sameCanon), and without
 * putting the simulator's answer through the wire form first: an answer whose fields and values are already
 * those of etcd's decoded one has that wire form too (the encoder turns equal values into equal bytes). False
 * sends them the long way — wire form, then compareTexts, which also decides rules that adjust a side
 * (`free`, `canonical`) — where a default the simulator left out, or a value in another representation, is
 * made equal by the wire form before the texts are compared. Together the two steps were 40% of the tap's
 * CPU per serializable range in a profile (docs/performance.md, "The shadow's overhead").
 */
function sameOutcome(mine: Outcome, etcd: Outcome, rule: Pick<UnaryRule, 'free' | 'canonical'>): boolean {
  return 'ok' in mine && 'ok' in etcd && rule.free === undefined && rule.canonical === undefined && sameCanon(mine.ok, etcd.ok, NO_LEASES);
}

/** Both answers as canonical text: [simulator, etcd]; a late read's header says etcd's revision on both. */
export function compareTexts(mine: Outcome, etcd: Outcome, lateRev: number | undefined, rule: Pick<UnaryRule, 'free' | 'canonical'> = {}): [string, string] {
  if (!('ok' in mine) || !('ok' in etcd)) return [outcomeText(mine), outcomeText(etcd)];
  const { free, canonical = (c: Canon) => c } = rule;
  let cm = canonical(canon(mine.ok, NO_LEASES));
  let ce = canonical(canon(etcd.ok, NO_LEASES));
  const h = isObj(cm) ? cm['header'] : undefined;
  if (lateRev !== undefined && isObj(cm) && h !== undefined && isObj(h)) cm = { ...cm, header: { ...h, revision: String(lateRev) } };
  if (free !== undefined) ce = free(cm, ce);
  return [text(cm), text(ce)];
}

/** LeaseTimeToLive's remaining TTL is time, which the simulator does not follow: any TTL from 0 to the granted one agrees. */
function ttlFree(sim: Canon, etcd: Canon): Canon {
  if (!isObj(sim) || !isObj(etcd)) return etcd;
  const ttl = Number(etcd['TTL']);
  const granted = Number(etcd['grantedTTL']);
  if (ttl >= 0 && ttl <= granted && Number(sim['TTL']) > 0) return { ...etcd, TTL: sim['TTL'] ?? null };
  return etcd;
}
