/**
 * Every workload run starts both sides from the same empty state, on one long-lived etcd.
 *
 * Why not a revision offset: revisions are global, and so is compaction — after an earlier run compacted at
 * C, a fresh simulator (revision 1, nothing compacted) and the etcd (revision R ≥ C, compacted at C)
 * answer compactions, reads and watches at old revisions differently, whatever offset one subtracts. Why not
 * a fresh etcd per run: about 150 ms each plus connection setup, for runs of a few dozen ops.
 *
 * Instead: the etcd is emptied (every lease revoked, every key deleted) and compacted at its current
 * revision R; the simulator is created fresh and restored to exactly that state (revision R, compacted at
 * R, no keys). Then both hold the same revisions and compare exactly, with no offset at all.
 *
 * Auth state persists on the etcd too: the reset first turns auth off (as root, whose password a workload
 * always sets to passwordOf('root')) and deletes every user and role, so each run starts, like a fresh
 * simulator, with auth disabled and no users or roles. (The auth revision is not reset — nothing in the
 * workload compares it: etcd 3.4 has no AuthStatus.)
 */
import { createEtcdSim, type EtcdSim } from '../client/index.js';
import type { EtcdGrpcClient } from '../grpc/index.js';
import type { EtcdVersion } from '../etcd/index.js';
import { DIFF_ELECTION_MS, DIFF_HEARTBEAT_MS } from './etcd_process.js';
import { passwordOf } from './ops.js';

const ALL = { key: Buffer.from([0]), range_end: Buffer.from([0]) };

/** etcd's error text for compacting at or below the compaction revision. */
const COMPACTED = 'etcdserver: mvcc: required revision has been compacted';

/** etcd's answer to a token-less admin call while auth is enabled. */
const USER_EMPTY = 'etcdserver: user name is empty';

/** Turns auth off on the etcd (as root) and deletes every user and role. */
export async function resetAuth(c: EtcdGrpcClient): Promise<void> {
  try {
    await c.auth.authDisable({}); // succeeds (a no-op) while auth is disabled
  } catch (err) {
    if ((err as { details?: unknown }).details !== USER_EMPTY) throw err;
    const { token } = await c.auth.authenticate({ name: 'root', password: passwordOf('root') }).catch((e: unknown) => {
      throw new Error(`diff: auth is enabled on the etcd and root's password is not the workload's (${String(e)})`);
    });
    await c.auth.authDisable({}, { token });
  }
  for (const name of (await c.auth.userList({})).users) await c.auth.userDelete({ name });
  for (const role of (await c.auth.roleList({})).roles) await c.auth.roleDelete({ role });
}

/** Empties the etcd (auth included, see resetAuth) and compacts it at its current revision; returns that revision. */
export async function resetEtcd(c: EtcdGrpcClient): Promise<number> {
  await resetAuth(c);
  const leases = await c.lease.leaseLeases({});
  for (const l of leases.leases) {
    await c.lease.leaseRevoke({ ID: l.ID }).catch(() => undefined); // may have expired meanwhile
  }
  await c.kv.deleteRange(ALL);
  const r = await c.kv.range({ ...ALL, count_only: true });
  if (r.count !== '0') throw new Error(`diff: etcd still holds ${r.count} keys after the reset`);
  const rev = Number(r.header.revision);
  try {
    await c.kv.compact({ revision: String(rev), physical: true });
  } catch (err) {
    // already compacted at exactly this revision (the previous run ended with nothing after a compaction)
    if ((err as { details?: unknown }).details !== COMPACTED) throw err;
  }
  return rev;
}

/** Whether the etcd's keyspace is empty (the diff command refuses to touch one that is not). */
export async function keyspaceEmpty(c: EtcdGrpcClient): Promise<{ empty: boolean; keys: number; leases: number }> {
  const r = await c.kv.range({ ...ALL, count_only: true });
  const l = await c.lease.leaseLeases({});
  return { empty: r.count === '0' && l.leases.length === 0, keys: Number(r.count), leases: l.leases.length };
}

export interface SimOptions {
  readonly etcdVersion: EtcdVersion;
  /** Status version string (default 3.4.23 for 3.4). */
  readonly version?: string | undefined;
  readonly seed?: number | undefined;
}

/** A simulator with the diff etcd's timing flags, restored to revision `rev`, compacted at `rev`, empty. */
export function simAt(rev: number, opts: SimOptions): EtcdSim {
  const sim = createEtcdSim({
    time: 'virtual',
    etcdVersion: opts.etcdVersion,
    version: opts.version,
    seed: opts.seed ?? 1,
    heartbeatIntervalMs: DIFF_HEARTBEAT_MS,
    electionTicks: DIFF_ELECTION_MS / DIFF_HEARTBEAT_MS,
  });
  sim.restore({ currentRev: rev, compactRev: rev, keys: [], log: [[]], logStart: rev });
  return sim;
}
