/**
 * Rules for the calls that act for a client over several revisions or over the cluster's configuration:
 * etcd's Lock and Election services (v3lock, v3election) and Cluster's member calls.
 *
 * Lock.Lock and Election.Campaign wait inside etcd until the older keys under their name are deleted, and
 * their keys come to the simulator as etcd's events (follower.ts). The simulator's own Lock would answer
 * at a revision its own timing picks, so these two are checked against the simulator's state instead: at
 * the revision etcd answered at, the simulator must hold the same key, with the same create revision and
 * lease, and for a lock, that key must be the oldest under the name — the lock etcd granted is the one the
 * simulator's keys say is held. Unlock, Proclaim, Resign and Leader are asked of the simulator's own
 * services and compared as answers; Observe streams pass through.
 *
 * Members: the simulator is the same member of the same cluster as the etcd behind the shadow (its ID,
 * name and URLs, shadow.ts), but each side chooses the ID of a member added later, so a member added
 * through the shadow is remembered as a pair and later calls naming etcd's ID ask the simulator with its
 * own. Only the IDs are left out of the comparison. The shadow is one member: in front of a member of a
 * larger cluster, the others are not the simulator's and its member lists differ.
 */
import { Buffer } from 'node:buffer';
import type { Canon } from '../diff/index.js';
import { prefixEnd } from '../mvcc/index.js';
import { isObj, type ShadowContext } from './context.js';
import { byName, simKey, type Msg, type UnaryRule } from './rules.js';

/** The answer's header revision (the step runs once the simulator is there). */
function revOf(ok: Msg | undefined): string {
  return String((ok?.['header'] as { revision?: string } | undefined)?.revision ?? '0');
}

/** The simulator's oldest key under `name/` at `rev`, and that read's header. */
function oldest(ctx: ShadowContext, name: Uint8Array, rev: string): { header: unknown; kv: { key: Uint8Array; create_revision: string; lease: string } | undefined } {
  const pfx = Buffer.concat([Buffer.from(name), Buffer.from('/')]);
  const r = ctx.sim.services.kv.range({ key: pfx, range_end: prefixEnd(pfx), sort_target: 'CREATE', sort_order: 'ASCEND', limit: 1, revision: rev }, ctx.follower.asRoot());
  return { header: r.header, kv: r.kvs[0] };
}

/** The simulator's key-value at `key` at `rev`, with that read's header. */
function keyAt(ctx: ShadowContext, key: Uint8Array, rev: string): { header: unknown; kv: { create_revision: string; lease: string } | undefined } {
  const r = ctx.sim.services.kv.range({ key, revision: rev }, ctx.follower.asRoot());
  return { header: r.header, kv: r.kvs[0] };
}

const bytes = (v: unknown): Uint8Array => (v instanceof Uint8Array ? v : Buffer.alloc(0));

/** Proclaim and Resign write when the leader key is still the one campaigned for (its create revision). */
const stillLeader = (_ok: () => Msg, r: Msg, ctx: ShadowContext): boolean => {
  const l = r['leader'] as { key?: unknown; rev?: string } | null | undefined;
  return l != null && simKey(ctx, l.key)?.create_revision === String(l.rev);
};

export const LOCK_ELECTION: ReadonlyArray<[string, UnaryRule]> = [
  [
    '/v3lockpb.Lock/Lock',
    {
      late: 'as-is',
      answersOnly: true,
      // The lock is held by the oldest key under the name: the simulator's, at etcd's revision.
      ask: (ctx, r, ok) => {
        const o = oldest(ctx, bytes(r['name']), revOf(ok()));
        return { header: o.header, key: o.kv?.key ?? Buffer.alloc(0) };
      },
    },
  ],
  ['/v3lockpb.Lock/Unlock', { makesRevision: (_ok, r, ctx) => simKey(ctx, r['key']) !== undefined, ask: byName('lock', 'Unlock') }],
  [
    '/v3electionpb.Election/Campaign',
    {
      late: 'as-is',
      answersOnly: true,
      // etcd answers with the header of the Txn that put the key: older keys may still be there at that revision.
      ask: (ctx, r, answer) => {
        const ok = answer();
        const key = bytes((ok?.['leader'] as { key?: unknown } | undefined)?.key);
        const k = keyAt(ctx, key, revOf(ok));
        return { header: k.header, leader: k.kv === undefined ? null : { name: r['name'], key, rev: k.kv.create_revision, lease: k.kv.lease } };
      },
    },
  ],
  ['/v3electionpb.Election/Proclaim', { makesRevision: stillLeader, ask: byName('election', 'Proclaim') }],
  ['/v3electionpb.Election/Resign', { makesRevision: stillLeader, ask: byName('election', 'Resign') }],
  ['/v3electionpb.Election/Leader', { ask: byName('election', 'Leader') }],
];

/** A member list without the IDs of added members (each side chose its own), in one order. */
function memberList(c: Canon): Canon {
  if (!Array.isArray(c)) return c;
  const out = c.map((m) => (isObj(m) ? { ...m, ID: null } : m));
  return out.sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
}

function membersCanonical(c: Canon): Canon {
  if (!isObj(c)) return c;
  const out = { ...c };
  if ('members' in c) out['members'] = memberList(c['members']!);
  if ('member' in c && isObj(c['member'])) out['member'] = (memberList([c['member']]) as Canon[])[0]!;
  return out;
}

/** etcd's member ID in a request, as the simulator's. */
function simMember(ctx: ShadowContext, r: Msg): Msg {
  const id = ctx.memberIds.get(String(r['ID']));
  return id === undefined ? r : { ...r, ID: id };
}

const member = (method: string): [string, UnaryRule] => [
  `/etcdserverpb.Cluster/${method}`,
  { late: 'as-is', request: simMember, ask: byName('cluster', method), canonical: membersCanonical },
];

export const MEMBERS: ReadonlyArray<[string, UnaryRule]> = [
  [
    '/etcdserverpb.Cluster/MemberAdd',
    {
      late: 'as-is',
      ask: byName('cluster', 'MemberAdd'),
      canonical: membersCanonical,
      learn: (ctx, mine, etcd) => {
        if (!('ok' in mine) || !('ok' in etcd)) return;
        const id = (m: unknown): string => String(((m as Msg)['member'] as Msg | null)?.['ID']);
        ctx.memberIds.set(id(etcd.ok), id(mine.ok));
        if (ctx.memberIds.size > 1000) ctx.memberIds.delete(ctx.memberIds.keys().next().value!);
      },
    },
  ],
  member('MemberList'),
  member('MemberRemove'),
  member('MemberUpdate'),
  member('MemberPromote'),
];
