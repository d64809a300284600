/**
 * Unary calls through the shadow: etcd's answer, and the simulator's answer to the same request asked at
 * the revision etcd answered at (follower.ts orders them), compared after normalisation. One rule per
 * compared RPC says whether its answer made a revision, how it reads when the simulator is already past
 * that revision, and what in its answer is time (the remaining TTL of a lease) and so left free.
 *
 * Lease IDs are the real etcd's: the simulator grants each lease with the ID etcd chose, as a client-chosen
 * ID, so every later request naming it means the same lease on both.
 */
import { canon, sameCanon, text, type Canon } from '../diff/index.js';
import type { CallContext } from '../server/index.js';
import type * as M from '../server/messages.js';
import { isObj, NO_LEASES, outcomeText, simOutcome, type Outcome, type ShadowContext } from './context.js';
import { isCompactedError } from './compaction.js';
import type { Step } from './follower.js';
import { LOCK_ELECTION, MEMBERS } from './lock_election.js';
import { byName, fromSim, type Msg, type UnaryRule } from './rules.js';

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
      ask: byName('auth', 'Authenticate'),
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
  ['/etcdserverpb.KV/Range', { late: 'read', ask: byName('kv', 'Range') }],
  ['/etcdserverpb.KV/Put', { makesRevision: () => true, ask: byName('kv', 'Put') }],
  ['/etcdserverpb.KV/DeleteRange', { makesRevision: (ok) => ok['deleted'] !== '0', ask: byName('kv', 'DeleteRange') }],
  ['/etcdserverpb.KV/Txn', { makesRevision: (ok) => txnWrote(ok as unknown as M.TxnResponse), ask: byName('kv', 'Txn') }],
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
      ask: (ctx, r, ok, call) => ctx.sim.services.lease.leaseGrant(ok === undefined ? (r as M.LeaseGrantRequest) : { ...(r as M.LeaseGrantRequest), ID: String(ok['ID']) }, call),
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
 * Unless it already agrees (sameOutcome), the simulator's answer goes through the wire form first (`wire`:
 * encoded and decoded as etcd's message), so both are read as a client reads them, fields left at their
 * defaults included.
 */
export function unaryStep(ctx: ShadowContext, rule: UnaryRule, rpc: string, req: Msg, etcd: Outcome, call: CallContext | undefined, wire: (m: unknown) => unknown): Step {
  const ok = 'ok' in etcd ? (etcd.ok as { header?: { revision?: string } } & Msg) : undefined;
  const rev = ok?.header?.revision === undefined ? undefined : Number(ok.header.revision);
  const leaseNotFound = 'err' in etcd && etcd.err.details === LEASE_NOT_FOUND;
  return {
    rev,
    skip: () => ctx.report.notCompared(rpc, "its revision came first from etcd's events"),
    makesRevision: () => ok !== undefined && rule.makesRevision !== undefined && rule.makesRevision(ok, req, ctx),
    run: (late) => {
      const cur = ctx.sim.mvcc.currentRevision;
      if (late && rule.late === undefined) {
        ctx.report.notCompared(rpc, 'answered at a revision already passed');
        ctx.log.add(rpc, req, etcd);
        return;
      }
      const passed = rule.passedBy?.(ctx, req, ok);
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
      rule.follow?.(ctx, req, ok);
      const answer = simOutcome(() => rule.ask(ctx, sreq, ok, call));
      if ('err' in etcd && isCompactedError(etcd.err.details) && 'ok' in answer) {
        // etcd compacted beyond the simulator without a Compact through the shadow: not a difference of
        // theirs, a compaction it has yet to follow (compaction.ts), asked for now.
        ctx.report.notCompared(rpc, 'etcd compacted beyond the simulator');
        ctx.log.add(rpc, req, etcd);
        ctx.compactionSeen();
        return;
      }
      // The simulator's answer as it is, when it already agrees with etcd's decoded one; else in wire form.
      const same = !late && sameOutcome(answer, etcd, rule);
      const mine = same || !('ok' in answer) ? answer : simOutcome(() => wire(answer.ok));
      rule.learn?.(ctx, mine, etcd);
      ctx.log.add(rpc, rule.logged?.(req, ok) ?? req, etcd);
      ctx.report.compared(rpc);
      if (same) return;
      const [a, b] = compareTexts(mine, etcd, late ? rev : undefined, rule);
      if (a !== b) ctx.diverge(rpc, `${rpc} at revision ${rev ?? cur}`, req, b, a, rev);
    },
  };
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
