/**
 * A member kept in its data dir (src/server/kept_member.ts) and started again on it holds what it held:
 * random requests — puts with and without leases, deletes, txns, lease grants (generated and chosen IDs)
 * and revokes, leases that expire, users, roles and permissions, auth enabled, compactions — on a member
 * whose WAL is folded into its db every few entries; then the member is dropped where it stands (what a
 * SIGKILL leaves: every answer given was synced first), sometimes with a torn half-written record at the
 * WAL's end, and a new member starts on the directory. Its revisions (the whole key bucket), compaction
 * point, leases, users, roles, permissions and auth state must be the first member's; its users' passwords
 * still authenticate (once auth is on); its raft term is one higher.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { readKeptState, startKeptMember } from '../../src/server/kept_member.js';
import type { EtcdServer } from '../../src/server/index.js';
import { VirtualClock } from '../../src/sim/index.js';
import { checkProperty, recordFailure } from '../properties/harness.js';

const FILE = 'test/server/kept_member.property.test.ts';
// fsync on tmpfs costs nothing: the property's runs stay fast (the child-process test syncs to a real disk).
const BASE = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
const te = new TextEncoder();

type Op =
  | { readonly op: 'put'; readonly key: number; readonly value: number; readonly lease: number }
  | { readonly op: 'delete'; readonly key: number; readonly prefix: boolean }
  | { readonly op: 'txn'; readonly key: number; readonly version: number; readonly value: number }
  | { readonly op: 'grant'; readonly id: number; readonly ttl: number }
  | { readonly op: 'revoke'; readonly lease: number }
  | { readonly op: 'advance'; readonly ms: number }
  | { readonly op: 'user'; readonly name: number; readonly role: number }
  | { readonly op: 'role'; readonly name: number; readonly key: number }
  | { readonly op: 'compact'; readonly back: number }
  | { readonly op: 'auth' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant('put' as const), key: fc.nat(5), value: fc.nat(99), lease: fc.nat(3) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('delete' as const), key: fc.nat(5), prefix: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('txn' as const), key: fc.nat(5), version: fc.nat(2), value: fc.nat(99) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('grant' as const), id: fc.nat(3), ttl: fc.integer({ min: 5, max: 60 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('revoke' as const), lease: fc.nat(3) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 1000, max: 20_000 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('user' as const), name: fc.nat(2), role: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('role' as const), name: fc.nat(2), key: fc.nat(5) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('compact' as const), back: fc.nat(4) }) },
  { weight: 1, arbitrary: fc.constant({ op: 'auth' as const }) },
);

/** Runs one request as root once auth is on (every request here is the admin's); a refused one is fine. */
function apply(s: EtcdServer, op: Op, leases: bigint[], token: () => string | undefined): void {
  const ctx = { token: token() };
  const key = (k: number): Uint8Array => te.encode(`k${k}`);
  try {
    switch (op.op) {
      case 'put': {
        const lease = op.lease === 0 ? 0n : (leases[op.lease - 1] ?? 0n);
        s.services.kv.put({ key: key(op.key), value: te.encode(`v${op.value}`), lease: String(lease) }, ctx);
        return;
      }
      case 'delete':
        s.services.kv.deleteRange(op.prefix ? { key: te.encode('k'), range_end: te.encode('l') } : { key: key(op.key) }, ctx);
        return;
      case 'txn':
        s.services.kv.txn(
          {
            compare: [{ key: key(op.key), target: 'VERSION', result: 'EQUAL', version: String(op.version) }],
            success: [{ request_put: { key: key(op.key), value: te.encode(`t${op.value}`) } }, { request_put: { key: key(op.key + 1), value: te.encode('x') } }],
            failure: [{ request_delete_range: { key: key(op.key) } }],
          },
          ctx,
        );
        return;
      case 'grant': {
        const r = s.services.lease.leaseGrant({ ID: op.id === 0 ? '0' : String(1000 + op.id), TTL: String(op.ttl) }, ctx);
        leases.unshift(BigInt(r.ID));
        leases.length = Math.min(leases.length, 3);
        return;
      }
      case 'revoke':
        s.services.lease.leaseRevoke({ ID: String(leases[op.lease] ?? 7) }, ctx);
        return;
      case 'advance':
        s.advance(op.ms);
        return;
      case 'user':
        s.services.auth.userAdd({ name: `u${op.name}`, password: `p${op.name}` }, ctx);
        s.services.auth.roleAdd({ name: `r${op.role}` }, ctx);
        s.services.auth.userGrantRole({ user: `u${op.name}`, role: `r${op.role}` }, ctx);
        return;
      case 'role':
        s.services.auth.roleAdd({ name: `r${op.name}` }, ctx);
        s.services.auth.roleGrantPermission({ name: `r${op.name}`, perm: { permType: 'READWRITE', key: key(op.key), range_end: key(op.key + 2) } }, ctx);
        return;
      case 'compact':
        s.services.kv.compact({ revision: String(Math.max(1, s.mvcc.currentRevision - op.back)) }, ctx);
        return;
      case 'auth':
        s.services.auth.userAdd({ name: 'root', password: 'rootpw' }, ctx);
        s.services.auth.roleAdd({ name: 'root' }, ctx);
        s.services.auth.userGrantRole({ user: 'root', role: 'root' }, ctx);
        s.services.auth.authEnable({}, ctx);
        return;
    }
  } catch {
    // refused (a missing lease, a compacted revision, an existing user...): changes nothing, as in etcd
  }
}

const byName = (a: readonly unknown[], b: readonly unknown[]): number => String(a[0]).localeCompare(String(b[0]));

/** What a member's db holds, without what a restart changes on purpose (consistent index, term, password salts). */
function kept(s: EtcdServer): unknown {
  const b = s.etcdBackend();
  return {
    revisions: b.revisions.map((r) => [r.main, r.sub, r.tombstone, Buffer.from(r.kv.key).toString(), Buffer.from(r.kv.value).toString(), r.kv.createRevision, r.kv.version, String(r.kv.lease)]),
    compacted: b.finishedCompactRev,
    current: s.mvcc.currentRevision,
    leases: b.leases.map((l) => [String(l.id), l.ttl]),
    authEnabled: b.authEnabled,
    authRevision: b.authRevision,
    // (The bucket's order is the names': sorted as the db file sorts them.)
    users: b.users.map((u) => [u.name, [...u.roles]]).sort(byName),
    roles: b.roles.map((r) => [r.name, r.perms.map((p) => [p.permType, Buffer.from(p.key).toString(), Buffer.from(p.rangeEnd).toString()])]).sort(byName),
    alarms: b.alarms,
  };
}

test('a member started again on its data dir holds every revision, lease, user, role and permission it held', () => {
  checkProperty(
    fc.property(fc.array(opArb, { minLength: 1, maxLength: 40 }), fc.oneof(fc.constant(1000), fc.integer({ min: 1, max: 8 })), fc.boolean(), (ops, snapshotCount, torn) => {
      const dir = mkdtempSync(join(BASE, 'etcdsim-kept-'));
      try {
        const first = startKeptMember(readKeptState(dir), { clock: new VirtualClock(), seed: 1 }, snapshotCount).server;
        const leases: bigint[] = [];
        let rootToken: string | undefined;
        const token = (): string | undefined => {
          if (!first.auth.snapshot().enabled) return undefined;
          rootToken ??= first.services.auth.authenticate({ name: 'root', password: 'rootpw' }).token;
          return rootToken;
        };
        for (const op of ops) apply(first, op, leases, token);
        const before = kept(first);
        if (torn) {
          // A record the crash cut short: its length word says 64 bytes, 3 of them made it.
          const walDir = join(dir, 'member', 'wal');
          const last = readdirSync(walDir).filter((n) => n.endsWith('.wal')).sort().pop()!;
          appendFileSync(join(walDir, last), Uint8Array.from([64, 0, 0, 0, 0, 0, 0, 0, 8, 2, 16]));
        }
        const state = readKeptState(dir);
        assert.equal(state.kind, 'restart');
        if (state.kind === 'restart') assert.equal(state.contents.repairedFile !== undefined, torn);
        const again = startKeptMember(state, { clock: new VirtualClock(), seed: 2 }, snapshotCount);
        assert.equal(again.replayFailures, 0);
        assert.deepEqual(kept(again.server), before);
        assert.equal(again.server.member.raftTerm, first.member.raftTerm + 1n);
        assert.equal(again.server.member.memberId, first.member.memberId);
        // Passwords were hashed again with new salts when the entries were applied again: they still match.
        const users = again.server.auth.snapshot().enabled ? again.server.auth.snapshot().users : [];
        for (const u of users) {
          const password = u.name === 'root' ? 'rootpw' : `p${u.name.slice(1)}`;
          assert.ok(again.server.services.auth.authenticate({ name: u.name, password }).token !== '', `${u.name} authenticates`);
        }
        // A third start, on what the second one folded and appended, still holds the same.
        const third = startKeptMember(readKeptState(dir), { clock: new VirtualClock(), seed: 3 }, snapshotCount);
        assert.deepEqual(kept(third.server), before);
        first.close();
        again.server.close();
        third.server.close();
      } catch (err) {
        recordFailure(fc.stringify([ops, snapshotCount, torn]));
        throw err;
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }),
    { file: FILE, numRuns: 40 },
  );
});
