/**
 * Between a simulated member's state (the MVCC store's snapshot, the auth store's persistent state, the
 * lessor's leases) and etcd's backend content (etcd_backend.ts): what `etcdctl snapshot save` receives from
 * the simulator, and what a snapshot taken from a real etcd puts into a fresh simulated member.
 */
import type { AuthSnapshot, PasswordHash } from '../auth/index.js';
import { keyString, type KeyString, type KeyValue, type StoreSnapshot, type Event, isTombstone, setSubRevision, subRevision } from '../mvcc/index.js';
import type { EtcdBackend, StoredLease, StoredMember, StoredUser } from './etcd_backend.js';
import { backendWithKeyColumns, type KeyBucketColumns } from './backend_file.js';

/** What a member contributes to its snapshot, gathered by EtcdServer.etcdSnapshot(). */
export interface MemberSnapshotSource {
  /** The store's index and compaction point (the key bucket is every revision the index keeps; no log needed). */
  readonly store: Pick<StoreSnapshot, 'keys' | 'compactRev'>;
  readonly auth: AuthSnapshot;
  readonly leases: readonly StoredLease[];
  /** The member's applied Raft index (etcd's consistent_index). */
  readonly consistentIndex: bigint;
  /** The cluster's members (this one and any added) and the IDs of removed ones. */
  readonly members: readonly StoredMember[];
  readonly removedMembers: readonly bigint[];
  /** The release the member reports (e.g. "3.4.23"): the cluster bucket holds its major.minor.0. */
  readonly version: string;
  /** The member's raft term: meta/term from the 3.5 profile on (1 when not given). */
  readonly term?: bigint | undefined;
}

/**
 * The backend content of a member: every revision the store retains (what etcd's key bucket holds after
 * the same requests and compactions), the compaction point as both scheduled and finished (the simulator
 * compacts at once), leases, auth, the member itself and the cluster version.
 */
export function backendOfMember(src: MemberSnapshotSource): EtcdBackend {
  const columns = inRevisionOrder(src.store);
  const compacted = src.store.compactRev > 0 ? src.store.compactRev : undefined;
  const m = /^(\d+)\.(\d+)/.exec(src.version);
  const minor = m !== null && m[1] === '3' ? Number(m[2]) : 0;
  const byId = (a: bigint, b: bigint): number => (a < b ? -1 : a > b ? 1 : 0);
  return backendWithKeyColumns({
    // What each release adds to meta (server/storage/schema): term and confState from 3.5 on (raft's
    // ConfState lists IDs in ascending order), storageVersion ("major.minor.0") from 3.6 on.
    ...(minor >= 5
      ? {
          term: src.term ?? 1n,
          confState: {
            voters: src.members.filter((x) => !x.isLearner).map((x) => x.id).sort(byId),
            learners: src.members.filter((x) => x.isLearner).map((x) => x.id).sort(byId),
            votersOutgoing: [],
            learnersNext: [],
            autoLeave: false,
          },
        }
      : {}),
    ...(minor >= 6 ? { storageVersion: `3.${minor}.0` } : {}),
    consistentIndex: src.consistentIndex,
    scheduledCompactRev: compacted,
    finishedCompactRev: compacted,
    leases: [...src.leases].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
    authEnabled: src.auth.enabled,
    authRevision: src.auth.revision,
    users: src.auth.users.map((u) => ({ name: u.name, password: storedPassword(u.password), roles: [...u.roles].sort(), noPassword: u.noPassword })),
    roles: src.auth.roles.map((r) => ({ name: r.name, perms: r.perms })),
    members: src.members,
    removedMembers: src.removedMembers,
    clusterVersion: m === null ? undefined : `${m[1]}.${m[2]}.0`,
    alarms: [],
  }, columns);
}

/**
 * Every retained revision of the store in the key bucket's order (main, then sub), as columns (no object per
 * revision): a counting sort by main revision (they lie in [1, currentRev]), then each txn's changes by sub —
 * linear where a comparison sort of a million revisions is not.
 */
function inRevisionOrder(store: Pick<StoreSnapshot, 'keys'>): KeyBucketColumns {
  let total = 0;
  let lo = Infinity;
  let hi = 0;
  for (const k of store.keys) {
    const revs = k.revs;
    total += revs.length;
    // A key's revisions are in revision order: its first and last bound them.
    if (revs.length > 0) {
      if (revs[0]!.modRevision < lo) lo = revs[0]!.modRevision;
      if (revs[revs.length - 1]!.modRevision > hi) hi = revs[revs.length - 1]!.modRevision;
    }
  }
  const kvs = new Array<KeyValue>(total);
  const mains = new Float64Array(total);
  const subs = new Uint32Array(total);
  const tombstones = new Uint8Array(total);
  if (total === 0) return { kvs, mains, subs, tombstones };
  const start = new Int32Array(hi - lo + 2);
  for (const k of store.keys) for (const kv of k.revs) start[kv.modRevision - lo + 1]!++;
  for (let i = 1; i < start.length; i++) start[i]! += start[i - 1]!;
  const next = start.slice();
  for (const k of store.keys) {
    for (const kv of k.revs) {
      const at = next[kv.modRevision - lo]!++;
      kvs[at] = kv;
      mains[at] = kv.modRevision;
      subs[at] = subRevision(kv);
      tombstones[at] = isTombstone(kv) ? 1 : 0;
    }
  }
  // A txn's changes sit together; order them by sub where the key order did not.
  for (let m = 0; m < start.length - 1; m++) {
    const a = start[m]!;
    const b = start[m + 1]!;
    if (b - a < 2) continue;
    let ordered = true;
    for (let i = a + 1; i < b && ordered; i++) ordered = subs[i - 1]! < subs[i]!;
    if (ordered) continue;
    const order = Array.from({ length: b - a }, (_, j) => a + j).sort((x, y) => subs[x]! - subs[y]!);
    const runKvs = order.map((j) => kvs[j]!);
    const runSubs = order.map((j) => subs[j]!);
    const runTombs = order.map((j) => tombstones[j]!);
    for (let j = 0; j < order.length; j++) {
      kvs[a + j] = runKvs[j]!;
      subs[a + j] = runSubs[j]!;
      tombstones[a + j] = runTombs[j]!;
    }
  }
  return { kvs, mains, subs, tombstones };
}

/** What loading a backend gives a fresh member. */
export interface LoadedMember {
  readonly store: StoreSnapshot;
  readonly auth: AuthSnapshot;
  readonly leases: readonly StoredLease[];
  /** A compaction etcd had scheduled but not finished: the member finishes it after loading, as etcd's restore does. */
  readonly pendingCompactRev: number | undefined;
  /**
   * Keys whose first stored revision is a tombstone (all their older revisions compacted away), with that
   * tombstone: in the index as `{tombstone}{empty}` (etcd's restoreTombstone), or left out of it by the
   * rebuild before etcd PR #19188 (`restoreLoneTombstone: false`).
   */
  readonly loneTombstones: readonly KeyValue[];
}

/** How a member rebuilds its index from a backend. */
export interface RebuildOptions {
  /**
   * etcd PR #19188 (issue #19179; see Compat.restoreLoneTombstone): a key whose first stored revision is a
   * tombstone enters the index. `false` reproduces the older rebuild, which skipped that tombstone (it stays
   * in the backend and in the watch history, but nothing in the index keeps it). Default true.
   */
  readonly restoreLoneTombstone?: boolean | undefined;
}

/**
 * A store snapshot from a backend, as etcd's mvcc restore rebuilds its index: each key's revisions in
 * order, the current revision the newest stored one (never below the compaction point), the compaction
 * point the finished one. The watch log covers revisions from the compaction point on.
 */
export function memberOfBackend(b: EtcdBackend, opts: RebuildOptions = {}): LoadedMember {
  const restoreLone = opts.restoreLoneTombstone ?? true;
  const byKey = new Map<KeyString, { keyBytes: Uint8Array; revs: KeyValue[] }>();
  const loneTombstones: KeyValue[] = [];
  let maxRev = 1;
  const finished = b.finishedCompactRev ?? -1;
  const logStart = finished > 0 ? finished : 2;
  // The key bucket is in revision order, so the log (one array per revision from logStart on) and each
  // key's revisions come out in order as they are read: nothing to sort but the keys.
  const logList: Event[][] = [];
  let logRev = logStart - 1;
  for (const r of b.revisions) {
    const ks = keyString(r.kv.key);
    let k = byKey.get(ks);
    if (k === undefined) {
      k = { keyBytes: r.kv.key, revs: [] };
      byKey.set(ks, k);
    }
    // A key's revisions share one key object (the store relies on it); KeyValues are immutable.
    const d = r.kv;
    const kv: KeyValue = d.key === k.keyBytes ? d : { key: k.keyBytes, createRevision: d.createRevision, modRevision: d.modRevision, version: d.version, value: d.value, lease: d.lease };
    if (r.sub > 0) setSubRevision(kv, r.sub);
    // etcd's restoreIntoIndex: a tombstone is added to the keyIndex the key already has; a key that starts
    // with one (its older revisions compacted away) gets a keyIndex of that tombstone alone since PR #19188,
    // and none before it (the tombstone then lives in the backend only, and the log below).
    const lone = r.tombstone && k.revs.length === 0;
    if (lone) loneTombstones.push(kv);
    if (!lone || restoreLone) k.revs.push(kv);
    if (r.main > maxRev) maxRev = r.main;
    if (r.main >= logStart) {
      while (logRev < r.main) {
        logList.push([]);
        logRev++;
      }
      logList[logList.length - 1]!.push({ type: r.tombstone ? 'DELETE' : 'PUT', kv });
    }
  }
  // Never below the compaction point (etcd PR #6633), nor below a compaction scheduled but unfinished: its
  // deletions may have removed the newest revisions, tombstones at its revision (etcd issue #17780).
  const scheduled = b.scheduledCompactRev;
  const currentRev = Math.max(maxRev, finished, scheduled ?? -1);
  while (logRev < currentRev) {
    logList.push([]);
    logRev++;
  }
  // KeyStrings are latin1: their order is the keys' byte order.
  const keys = [...byKey.entries()]
    .filter(([, k]) => k.revs.length > 0)
    .sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0))
    .map(([key, k]) => ({ key, keyBytes: k.keyBytes, revs: k.revs }));
  return {
    store: { currentRev, compactRev: finished, keys, log: logList, logStart },
    auth: {
      enabled: b.authEnabled,
      revision: b.authRevision,
      users: b.users.map((u) => ({ name: u.name, password: simPassword(u), roles: [...u.roles], noPassword: u.noPassword })),
      roles: b.roles.map((r) => ({ name: r.name, perms: r.perms })),
    },
    leases: b.leases,
    pendingCompactRev: scheduled !== undefined && scheduled > finished ? scheduled : undefined,
    loneTombstones,
  };
}

// ---------------------------------------------------------------------------------------------------
// Passwords

/**
 * A user's password travels as etcd stores it, the bcrypt hash text (src/auth/password.ts), byte for byte
 * both ways: the simulator's hashes are real bcrypt at the member's cost, so a real etcd restored from its
 * snapshot authenticates its users, and a real etcd's hashes authenticate here. A hash bcrypt cannot read
 * is loaded as it is, as etcd restores it: that user's passwords are then all wrong (etcd's
 * `authentication failed`), and a snapshot saved again still holds the same bytes.
 */
function storedPassword(h: PasswordHash | undefined): Uint8Array {
  if (h === undefined) return new Uint8Array(0);
  return Uint8Array.from(h, (c) => c.charCodeAt(0));
}

function simPassword(u: StoredUser): PasswordHash | undefined {
  if (u.noPassword || u.password.length === 0) return undefined;
  let text = '';
  for (const b of u.password) text += String.fromCharCode(b);
  return text;
}
